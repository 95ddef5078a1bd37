// Locality with per-task inputs and measured links in the pure scheduler core (issue 18): a task
// goes to the worker that holds its own inputs, a measured link changes which worker's missing
// bytes cost least, and the core and the planner count the same seconds for the same worker
// (core/link.h). Explicit `now` values, no clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/link.h"
#include "core/scheduler.h"
#include "core/types.h"
#include "plan/pool_model.h"
#include "tests/unit/core_fixture.h"

namespace idlepool::core {
namespace {

using ::testing::ElementsAre;

BlobRef Blob(char c, uint64_t size) { return BlobRef{std::string(64, c), size}; }

class CoreTaskInputsTest : public CoreTest {
 protected:
  void HelloCached(const std::string& worker, SessionId session, std::vector<BlobRef> cached) {
    WorkerHello h{worker, session, "boot1", Resources{}, {}};
    h.cached = std::move(cached);
    Do(h, 0);
  }
};

TEST_F(CoreTaskInputsTest, EachTaskGoesToTheWorkerHoldingItsOwnInputs) {
  HelloCached("a", 1, {Blob('x', 50 << 20)});
  HelloCached("b", 2, {Blob('y', 50 << 20)});
  // Task 0 needs y (on b), task 1 needs x (on a): by name both would start on a.
  JobSubmitted j{1, 2};
  j.task_inputs = {TaskBlob{1, Blob('x', 50 << 20)}, TaskBlob{0, Blob('y', 50 << 20)}};
  auto out = Do(j, 1);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)),
              ElementsAre("assign #1 1/0 @b s2", "assign #2 1/1 @a s1"));
}

TEST_F(CoreTaskInputsTest, AnotherTasksInputsDoNotAttract) {
  HelloCached("a", 1, {});
  HelloCached("b", 2, {Blob('y', 50 << 20)});
  // Task 0's input is on nobody: the policy order (a by name) stands; b's blob is task 1's.
  JobSubmitted j{1, 2};
  j.task_inputs = {TaskBlob{0, Blob('x', 50 << 20)}, TaskBlob{1, Blob('y', 50 << 20)}};
  auto out = Do(j, 1);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)),
              ElementsAre("assign #1 1/0 @a s1", "assign #2 1/1 @b s2"));
}

TEST_F(CoreTaskInputsTest, AMeasuredLinkChangesTheChoice) {
  // a holds half of the task's inputs, b none. Unmeasured (100 Mbit/s both), a wins.
  HelloCached("a", 1, {Blob('x', 100 << 20)});
  HelloCached("b", 2, {});
  JobSubmitted j{1, 1};
  j.task_inputs = {TaskBlob{0, Blob('x', 100 << 20)}, TaskBlob{0, Blob('y', 100 << 20)}};
  // b measured at 10 Gbit/s and a at 10 Mbit/s: b's 200 MiB cost less than a's 100 MiB.
  Do(LinkRate{"a", 1.25e6}, 0);
  Do(LinkRate{"b", 1.25e9}, 0);
  auto out = Do(j, 1);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @b s2"));
}

TEST_F(CoreTaskInputsTest, UnmeasuredTheHolderWins) {
  HelloCached("a", 1, {});
  HelloCached("b", 2, {Blob('x', 100 << 20)});
  JobSubmitted j{1, 1};
  j.task_inputs = {TaskBlob{0, Blob('x', 100 << 20)}, TaskBlob{0, Blob('y', 100 << 20)}};
  auto out = Do(j, 1);
  EXPECT_THAT(Strs(Only<AssignAttempt>(out)), ElementsAre("assign #1 1/0 @b s2"));
}

TEST_F(CoreTaskInputsTest, TheCoreAndThePlannerCountTheSameSeconds) {
  HelloCached("a", 1, {});
  HelloCached("b", 2, {});
  Do(LinkRate{"a", 3.5e6}, 0);
  const uint64_t bytes = 700'000'000;
  plan::WorkerModel measured;
  measured.down_bytes_per_s = 3.5e6;
  plan::WorkerModel unmeasured;
  EXPECT_DOUBLE_EQ(s_.FetchMs("a", bytes), bytes / plan::DownBytesPerS(measured) * 1000);
  EXPECT_DOUBLE_EQ(s_.FetchMs("b", bytes), bytes / plan::DownBytesPerS(unmeasured) * 1000);
  EXPECT_DOUBLE_EQ(plan::DownBytesPerS(unmeasured), kAssumedLinkBytesPerS);
  EXPECT_DOUBLE_EQ(s_.FetchMs("b", bytes), TransferSeconds(bytes, 0) * 1000);
  // A rate no link has is ignored (unmeasured again).
  Do(LinkRate{"a", -1}, 0);
  EXPECT_DOUBLE_EQ(s_.FetchMs("a", bytes), TransferSeconds(bytes, 0) * 1000);
}

}  // namespace
}  // namespace idlepool::core
