// The log gate (coordinator/log_gate.h): a worker session's LogChunks that reach the core
// thread, counted. A flood is cut to the rate; an honest worker's pattern passes whole.
#include "coordinator/log_gate.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

using std::chrono::milliseconds;

core::MonoTime At(int64_t ms) { return core::MonoTime{} + milliseconds(ms); }

TEST(LogGate, AFloodReachesTheCoreAtTheRateOnly) {
  const LogGateOptions o = LogGateFor(4);
  LogGate gate(o, At(0));
  uint64_t admitted = 0;
  // 100,000 chunks over 10 seconds: 10,000 a second.
  for (int64_t i = 0; i < 100000; ++i) admitted += gate.Admit(At(i / 10)) ? 1 : 0;
  EXPECT_LE(admitted, static_cast<uint64_t>(o.burst + 10 * o.per_second) + 1);
  EXPECT_GE(admitted, static_cast<uint64_t>(o.burst));
  EXPECT_EQ(gate.refused(), 100000 - admitted);
}

TEST(LogGate, AnHonestWorkerIsNeverRefused) {
  // 8 slots: one chunk per attempt per second for a minute, then all 8 attempts end at once,
  // each sending its catch-up (16 chunks of the kept MiB and its newest one).
  LogGate gate(LogGateFor(8), At(0));
  for (int64_t s = 0; s < 60; ++s) {
    for (int a = 0; a < 8; ++a) EXPECT_TRUE(gate.Admit(At(s * 1000 + a)));
  }
  for (int i = 0; i < 8 * 17; ++i) EXPECT_TRUE(gate.Admit(At(60000))) << i;
  EXPECT_EQ(gate.refused(), 0u);
}

TEST(LogGate, TheRateIsBoundedWhateverTheSlotsClaimed) {
  const LogGateOptions big = LogGateFor(4096);
  EXPECT_LE(big.per_second, 128);
  EXPECT_LE(big.burst, 2048);
  const LogGateOptions none = LogGateFor(0);
  EXPECT_GE(none.per_second, 16);
  EXPECT_GE(none.burst, none.per_second);
}

}  // namespace
}  // namespace idlepool::coordinator
