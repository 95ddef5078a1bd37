#include "coordinator/timeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace idlepool::coordinator {
namespace {

using ::testing::ElementsAre;

std::string A(std::string_view state, std::string_view owner, std::string_view cause,
              uint32_t running = 0) {
  return WorkerActivity({state, owner, cause, running});
}

TEST(WorkerActivity, AWorkerThatIsNotConnectedShowsItsState) {
  EXPECT_EQ(A("lost", "suspend", "owner_input", 2), "lost");
  EXPECT_EQ(A("left", "vacate", "lid"), "left");
  EXPECT_EQ(A("disconnected", "run", "none", 1), "disconnected");
  EXPECT_EQ(A("", "", ""), "disconnected");
}

TEST(WorkerActivity, SuspendAndVacateShowTheirCause) {
  for (const char* state : {"suspend", "vacate"}) {
    EXPECT_EQ(A("connected", state, "owner_input", 1), "suspended") << state;
    EXPECT_EQ(A("connected", state, "owner_load"), "suspended") << state;
    EXPECT_EQ(A("connected", state, "battery"), "on_battery") << state;
    EXPECT_EQ(A("connected", state, "temperature", 3), "hot") << state;
    EXPECT_EQ(A("connected", state, "lid"), "lid_closed") << state;
    EXPECT_EQ(A("connected", state, "sleep"), "lid_closed") << state;
    EXPECT_EQ(A("connected", state, "window"), "outside_window") << state;
    // No cause (a worker stopping, an older worker) or a word we do not know.
    EXPECT_EQ(A("connected", state, ""), "suspended") << state;
    EXPECT_EQ(A("connected", state, "gremlins"), "suspended") << state;
  }
}

TEST(WorkerActivity, OtherwiseRunningOrIdle) {
  EXPECT_EQ(A("connected", "run", "none", 1), "running");
  EXPECT_EQ(A("connected", "run", "none", 0), "idle");
  EXPECT_EQ(A("connected", "", "", 0), "idle");  // said nothing yet
  EXPECT_EQ(A("connected", "", "", 4), "running");
}

store::AttemptRecord At(uint64_t id, uint32_t task, int64_t started, int64_t ended) {
  store::AttemptRecord a;
  a.attempt = id;
  a.task = {1, task};
  a.started_ms = started;
  a.ended_ms = ended;
  return a;
}

TEST(NextAttempts, ARequeuedTaskPointsToItsNextAttempt) {
  // Task 0: 1 preempted at 200, 3 started in the same batch (200), 5 later after 3 failed.
  // Task 1: 2 runs; 4 is a backup started while 2 ran (not its next); 2 still running.
  const std::vector<store::AttemptRecord> a = {
      At(1, 0, 100, 200), At(2, 1, 100, 0), At(3, 0, 200, 300),
      At(4, 1, 150, 0),   At(5, 0, 400, 0),
  };
  EXPECT_THAT(NextAttempts(a), ElementsAre(3, 0, 5, 0, 0));
}

TEST(NextAttempts, ABackupThatStartedBeforeTheEndIsSkippedForALaterOne) {
  // 1 ran 100..500; 2 was its backup (started 300), 3 started after 1 ended.
  const std::vector<store::AttemptRecord> a = {At(3, 7, 600, 0), At(1, 7, 100, 500),
                                               At(2, 7, 300, 550)};
  EXPECT_THAT(NextAttempts(a), ElementsAre(0, 3, 3));
}

TEST(NextAttempts, NothingForNoAttempts) { EXPECT_TRUE(NextAttempts({}).empty()); }

}  // namespace
}  // namespace idlepool::coordinator
