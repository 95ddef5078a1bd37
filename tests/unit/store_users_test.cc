// A shared pool in the store, on every backend (schema version 14): users' shares and quotas,
// their decayed usage balances, a job's priority changed after submit, and usage by day summed
// by user and by worker from the attempts that ended. Fixture: store_fixture.h.
#include "store_fixture.h"

namespace idlepool::store {
namespace {

class StoreUsers : public StoreConformance {
 protected:
  core::AttemptCreated Created(core::AttemptId id, core::TaskKey task, const std::string& worker) {
    core::AttemptCreated c;
    c.attempt = id;
    c.task = task;
    c.worker = worker;
    return c;
  }
  core::AttemptEnded Ended(core::AttemptId id, core::TaskKey task, const std::string& worker,
                           core::AttemptOutcome outcome) {
    core::AttemptEnded e;
    e.attempt = id;
    e.task = task;
    e.worker = worker;
    e.outcome = outcome;
    e.transfer.input_bytes = 100;
    e.transfer.output_bytes = 7;
    return e;
  }
};

TEST_P(StoreUsers, UsersAndBalancesAreKeptAcrossAReopen) {
  ASSERT_TRUE(store().PutUser(UserRow{"alice", 2.0, 4, 1, 100, 1 << 20}).ok());
  ASSERT_TRUE(store().PutUser(UserRow{"bob", 1.0}).ok());
  ASSERT_TRUE(store().PutUser(UserRow{"alice", 3.0, 0, 0, 0, 0}).ok());  // replaces
  ASSERT_TRUE(store().PutUsageBalances({{"alice", 10.5, 1.0}, {"bob", 3.0, 0}}, 5000).ok());
  ASSERT_TRUE(store().PutUsageBalances({{"bob", 4.0, 0}}, 6000).ok());  // replaces all
  REOPEN();
  absl::StatusOr<UsersState> st = store().LoadUsers();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_THAT(st->users, ::testing::ElementsAre(UserRow{"alice", 3.0}, UserRow{"bob", 1.0}));
  EXPECT_THAT(st->balances, ::testing::ElementsAre(UsageBalance{"bob", 4.0, 0}));
  EXPECT_EQ(st->balances_as_of_ms, 6000);
}

TEST_P(StoreUsers, BadUsersAreRefused) {
  EXPECT_EQ(store().PutUser(UserRow{"", 1.0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().PutUser(UserRow{"alice", 0.0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().PutUser(UserRow{"alice", -1.0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store().LoadUsers()->users.empty());
}

TEST_P(StoreUsers, APriorityChangeIsKept) {
  const core::JobId a = Insert(MakeJob("a", 1));
  ASSERT_TRUE(store().SetJobPriority(a, 9).ok());
  EXPECT_EQ(store().SetJobPriority(a + 10, 1).code(), absl::StatusCode::kNotFound);
  REOPEN();
  EXPECT_EQ(Header(a).sched.priority, 9);
  EXPECT_EQ(MustLoad().jobs[0].spec.priority, 9);
}

TEST_P(StoreUsers, UsageByDaySumsEndedAttemptsByUserAndByWorker) {
  NewJob two = MakeJob("two", 2);
  two.sched.user = "alice";
  const core::JobId a = Insert(two);
  NewJob one = MakeJob("bob's", 1);
  one.sched.user = "bob";
  const core::JobId b = Insert(one);
  ASSERT_TRUE(
      store()
          .Apply({Created(1, {a, 0}, "w1"), Created(2, {a, 1}, "w2"), Created(3, {b, 0}, "w1")},
                 1'000)
          .ok());
  ASSERT_TRUE(store()
                  .Apply({Ended(1, {a, 0}, "w1", core::AttemptOutcome::kSucceeded),
                          Ended(2, {a, 1}, "w2", core::AttemptOutcome::kPreempted),
                          Ended(3, {b, 0}, "w1", core::AttemptOutcome::kFailed)},
                         4'000)
                  .ok());
  REOPEN();
  absl::StatusOr<std::vector<UsageTotals>> users = store().ListUsage(0, UsageBy::kUser);
  ASSERT_TRUE(users.ok()) << users.status();
  // Every attempt ran 3 s; MakeJob's tasks take 2 slots and 1 GPU.
  EXPECT_THAT(*users,
              ::testing::ElementsAre(UsageTotals{"alice", 12'000, 6'000, 2, 1, 1, 200, 14, 0, 0},
                                     UsageTotals{"bob", 6'000, 3'000, 1, 0, 0, 100, 7, 0, 0}));
  absl::StatusOr<std::vector<UsageTotals>> workers = store().ListUsage(0, UsageBy::kWorker);
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_THAT(*workers,
              ::testing::ElementsAre(UsageTotals{"w1", 12'000, 6'000, 2, 1, 0, 200, 14, 0, 0},
                                     UsageTotals{"w2", 6'000, 3'000, 1, 0, 1, 100, 7, 0, 0}));
  // The day of the attempts' end is day 0: from day 1 on there is nothing; trimmed, gone.
  EXPECT_TRUE(store().ListUsage(1, UsageBy::kUser)->empty());
  ASSERT_TRUE(store().TrimUsage(0).ok());
  EXPECT_EQ(store().ListUsage(0, UsageBy::kUser)->size(), 2u);
  ASSERT_TRUE(store().TrimUsage(1).ok());
  EXPECT_TRUE(store().ListUsage(0, UsageBy::kUser)->empty());
}

TEST_P(StoreUsers, UsageStaysWhenItsJobIsDeleted) {
  NewJob j = MakeJob("gone", 1);
  j.sched.user = "carol";
  const core::JobId a = Insert(j);
  ASSERT_TRUE(store().Apply({Created(1, {a, 0}, "w1")}, 0).ok());
  core::TaskChanged done;
  done.task = {a, 0};
  done.state = core::TaskState::kSucceeded;
  done.committed_attempt = 1;
  core::JobChanged finished;
  finished.job = a;
  finished.state = core::JobState::kSucceeded;
  ASSERT_TRUE(
      store()
          .Apply({Ended(1, {a, 0}, "w1", core::AttemptOutcome::kSucceeded), done, finished}, 2'000)
          .ok());
  ASSERT_TRUE(
      store().DeleteJob(a, [](const std::string&) { return std::vector<std::string>{}; }).ok());
  EXPECT_THAT(*store().ListUsage(0, UsageBy::kUser),
              ::testing::ElementsAre(UsageTotals{"carol", 4'000, 2'000, 1, 1, 0, 100, 7, 0, 0}));
}

// A gateway's served requests and tokens add to the same days' rows as attempts, by user and by
// worker, in one transaction: a bad row refuses the whole batch.
TEST_P(StoreUsers, ServedRequestsAddToTheDaysRows) {
  ASSERT_TRUE(store().AddServed(3, {{"alice", "w1", 2, 30}, {"alice", "", 1, 5}}).ok());
  ASSERT_TRUE(store().AddServed(3, {{"alice", "w1", 1, 10}, {"bob", "w1", 4, 0}}).ok());
  ASSERT_TRUE(store().AddServed(4, {{"bob", "w2", 1, 1}}).ok());
  absl::Status bad = store().AddServed(4, {{"carol", "w1", 1, 1}, {"", "w1", 1, 1}});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  std::vector<UsageTotals> users = *store().ListUsage(0, UsageBy::kUser);
  ASSERT_EQ(users.size(), 2u);  // carol's row went with the bad one
  EXPECT_EQ(users[0].key, "alice");
  EXPECT_EQ(users[0].requests, 4u);
  EXPECT_EQ(users[0].tokens, 45u);
  EXPECT_EQ(users[0].attempts, 0u);
  EXPECT_EQ(users[1].requests, 5u);
  std::vector<UsageTotals> workers = *store().ListUsage(4, UsageBy::kWorker);
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].key, "w2");
  EXPECT_EQ(workers[0].tokens, 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreUsers, Backends(), BackendName);

}  // namespace
}  // namespace idlepool::store
