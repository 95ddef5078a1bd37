// The worker's measurement helpers (worker/measure.h): the adaptive probe size and
// the calibration's arithmetic with a fake thread CPU clock.
#include "worker/measure.h"

#include "gtest/gtest.h"

namespace idlepool::worker {
namespace {

TEST(NextProbeBytes, DoublesUntilSlowEnoughOrCapped) {
  LinkProbeOptions o;  // 256 KiB start, 16 MiB cap, 0.5 s target
  EXPECT_EQ(NextProbeBytes(256 << 10, 0.01, o), 512u << 10);
  EXPECT_EQ(NextProbeBytes(256 << 10, 0.5, o), 0u);  // took long enough: this one counts
  EXPECT_EQ(NextProbeBytes(12 << 20, 0.1, o), 16u << 20);  // never past the cap
  EXPECT_EQ(NextProbeBytes(16 << 20, 0.1, o), 0u);
}

TEST(Calibrate, ScoreIsBytesPerThreadCpuSecond) {
  // The fake CPU clock says the hashing took exactly 0.25 s of this thread's time.
  int calls = 0;
  CalibrationOptions o;
  o.bytes = 8 << 20;
  o.cpu_nanos = [&] { return calls++ == 0 ? int64_t{1000} : int64_t{1000} + 250000000; };
  Calibration c = Calibrate(o);
  EXPECT_EQ(calls, 2);
  EXPECT_DOUBLE_EQ(c.cpu_score, (8 << 20) / 1e6 / 0.25);
  EXPECT_GE(c.cores, 1u);
}

TEST(Calibrate, UnusableCpuClockGivesUnknown) {
  CalibrationOptions o;
  o.bytes = 1 << 20;
  o.cpu_nanos = [] { return int64_t{0}; };
  EXPECT_EQ(Calibrate(o).cpu_score, 0.0);
}

TEST(Calibrate, RealClockGivesAPositiveScore) {
  CalibrationOptions o;
  o.bytes = 4 << 20;
  EXPECT_GT(Calibrate(o).cpu_score, 0.0);
}

}  // namespace
}  // namespace idlepool::worker
