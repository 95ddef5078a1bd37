// The store's paged reads, on every backend (issue 21 point 4): a job's failed tasks by index
// with a cursor, and a task's newest attempts with their count. Fixture: store_fixture.h.
#include "store_fixture.h"

namespace idlepool::store {
namespace {

class StorePaging : public StoreConformance {};

TEST_P(StorePaging, FailedTasksArePagedByIndexWithTheirLastAttempt) {
  const core::JobId job = Insert(MakeJob("fails", 6));
  const core::JobId other = Insert(MakeJob("other", 2));
  std::vector<Decision> batch;
  core::AttemptId next = 1;
  auto fail = [&](core::JobId j, uint32_t index, const std::string& tail) {
    const TaskKey t{j, index};
    batch.push_back(Created(next, t, "w1"));
    core::AttemptEnded e{next, t, "w1", AttemptOutcome::kFailed, 3, "exit code 3\n" + tail};
    e.log_tail = tail;
    batch.push_back(e);
    ++next;
  };
  fail(job, 4, "first of 4");
  fail(job, 4, "last of 4");  // the last attempt is the one listed
  fail(job, 1, "tail 1");
  fail(job, 5, "tail 5");
  fail(job, 2, "tail 2, not failed");
  fail(other, 0, "other job");
  for (uint32_t i : {1u, 4u, 5u}) batch.push_back(TaskTo({job, i}, TaskState::kFailed, 1));
  batch.push_back(TaskTo({other, 0}, TaskState::kFailed, 1));
  ASSERT_TRUE(store().Apply(batch, 100).ok());
  REOPEN();
  auto indices = [](const std::vector<AttemptRecord>& page) {
    std::vector<uint32_t> out;
    for (const auto& a : page) out.push_back(a.task.index);
    return out;
  };
  auto all = store().ListFailedTasks({job, std::nullopt, 10});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(indices(*all), ElementsAre(1u, 4u, 5u));
  EXPECT_EQ(all->at(1).attempt, 2u);
  EXPECT_EQ(all->at(1).log_tail, "last of 4");
  EXPECT_EQ(all->at(1).message, "exit code 3\nlast of 4");
  EXPECT_EQ(all->at(1).exit_code, 3);
  EXPECT_EQ(all->at(1).outcome, AttemptOutcome::kFailed);
  EXPECT_THAT(indices(*store().ListFailedTasks({job, std::nullopt, 2})), ElementsAre(1u, 4u));
  EXPECT_THAT(indices(*store().ListFailedTasks({job, 1u, 10})), ElementsAre(4u, 5u));
  EXPECT_THAT(indices(*store().ListFailedTasks({job, 0u, 1})), ElementsAre(1u));
  EXPECT_THAT(indices(*store().ListFailedTasks({job, 5u, 10})), IsEmpty());
  EXPECT_THAT(indices(*store().ListFailedTasks({other, std::nullopt, 10})), ElementsAre(0u));
  EXPECT_EQ(store().ListFailedTasks({999, std::nullopt, 10}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StorePaging, TaskAttemptsAreTheNewestWithTheirCount) {
  const core::JobId job = Insert(MakeJob("logs", 2));
  std::vector<Decision> batch;
  for (core::AttemptId a = 1; a <= 5; ++a) {
    const TaskKey t{job, a == 3 ? 1u : 0u};
    batch.push_back(Created(a, t, "w1"));
    core::AttemptEnded e{a, t, "w1", AttemptOutcome::kFailed, 1, "failed"};
    e.log_tail = "tail " + std::to_string(a);
    batch.push_back(e);
  }
  batch.push_back(TaskTo({job, 1}, TaskState::kFailed, 1));
  ASSERT_TRUE(store().Apply(batch, 100).ok());
  REOPEN();
  EXPECT_EQ(store().ListTaskAttempts({job, 1}, 10)->state, TaskState::kFailed);
  auto r = store().ListTaskAttempts({job, 0}, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->total, 4u);
  EXPECT_EQ(r->state, TaskState::kPending);
  ASSERT_EQ(r->attempts.size(), 2u);
  EXPECT_EQ(r->attempts[0].attempt, 4u);
  EXPECT_EQ(r->attempts[1].attempt, 5u);
  EXPECT_EQ(r->attempts[1].log_tail, "tail 5");
  EXPECT_EQ(store().ListTaskAttempts({job, 1}, 10)->attempts.size(), 1u);
  auto none = store().ListTaskAttempts({job, 0}, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->total, 4u);
  EXPECT_TRUE(none->attempts.empty());
  EXPECT_EQ(store().ListTaskAttempts({job, 2}, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().ListTaskAttempts({999, 0}, 10).status().code(), absl::StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Backends, StorePaging, Backends(), BackendName);

}  // namespace
}  // namespace idlepool::store
