// worker/session.h HeartbeatFor: the worker honours the coordinator's --heartbeat-ms (Welcome)
// unless it was given its own, and never beats slower than three times per lease.
#include <chrono>
#include <optional>

#include "core/defaults.h"
#include "gtest/gtest.h"
#include "worker/session.h"

namespace idlepool::worker {
namespace {

using std::chrono::milliseconds;

v1::Welcome MakeWelcome(int64_t heartbeat_ms, int64_t lease_ms) {
  v1::Welcome w;
  w.set_heartbeat_ms(heartbeat_ms);
  w.set_lease_timeout_ms(lease_ms);
  return w;
}

TEST(HeartbeatFor, TheCoordinatorsUnlessTheWorkerHasItsOwn) {
  EXPECT_EQ(HeartbeatFor(std::nullopt, MakeWelcome(250, 5000)).period, milliseconds(250));
  EXPECT_EQ(HeartbeatFor(milliseconds(400), MakeWelcome(250, 5000)).period, milliseconds(400));
  EXPECT_FALSE(HeartbeatFor(std::nullopt, MakeWelcome(250, 5000)).capped_from);
}

TEST(HeartbeatFor, AnOlderCoordinatorThatSaysNothingGetsTheDefault) {
  EXPECT_EQ(HeartbeatFor(std::nullopt, MakeWelcome(0, 5000)).period, core::kDefaultHeartbeat);
}

TEST(HeartbeatFor, NeverFewerThanThreePerLease) {
  const Heartbeat own = HeartbeatFor(milliseconds(1000), MakeWelcome(250, 900));
  EXPECT_EQ(own.period, milliseconds(300));
  EXPECT_EQ(own.capped_from, milliseconds(1000));
  const Heartbeat theirs = HeartbeatFor(std::nullopt, MakeWelcome(2000, 3000));
  EXPECT_EQ(theirs.period, milliseconds(1000));
  EXPECT_EQ(theirs.capped_from, milliseconds(2000));
  // No lease stated: nothing to cap against.
  EXPECT_EQ(HeartbeatFor(milliseconds(7000), MakeWelcome(0, 0)).period, milliseconds(7000));
}

}  // namespace
}  // namespace idlepool::worker
