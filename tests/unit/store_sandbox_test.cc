// A job's sandbox needs and its owner in the store, on every backend (issue 19): a job that asks
// for the host network (Resources::host_network) is restored asking for it after a restart, and
// every read of the job says so; one that does not, does not. Fixture: store_fixture.h.
#include "store_fixture.h"

namespace idlepool::store {
namespace {

class StoreSandbox : public StoreConformance {};

TEST_P(StoreSandbox, HostNetworkIsKeptWithTheJob) {
  NewJob host = MakeJob("host", 2);
  host.sched.resources.host_network = true;
  const core::JobId a = Insert(host);
  const core::JobId b = Insert(MakeJob("plain", 1));
  REOPEN();
  core::RestoredState s = MustLoad();
  ASSERT_EQ(s.jobs.size(), 2u);
  EXPECT_TRUE(s.jobs[0].spec.resources.host_network);
  EXPECT_FALSE(s.jobs[1].spec.resources.host_network);
  EXPECT_EQ(s.jobs[0].spec.resources.cpus, 2u);  // the rest as before
  EXPECT_TRUE(Header(a).sched.resources.host_network);
  EXPECT_FALSE(Header(b).sched.resources.host_network);
  auto full = store().GetJob(a);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_TRUE(full->sched.resources.host_network);
  auto all = store().ListJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_TRUE(all->at(0).sched.resources.host_network);
  EXPECT_FALSE(all->at(1).sched.resources.host_network);
}

// Who submitted a job and its priority (schema version 13): kept through a restart and on every
// read; a job from before (none recorded) reads as user "" and priority 0.
TEST_P(StoreSandbox, TheUserAndPriorityAreKeptWithTheJob) {
  NewJob mine = MakeJob("mine", 1);
  mine.sched.user = "alice";
  mine.sched.priority = -7;
  const core::JobId a = Insert(mine);
  const core::JobId b = Insert(MakeJob("anyone's", 1));
  REOPEN();
  core::RestoredState s = MustLoad();
  ASSERT_EQ(s.jobs.size(), 2u);
  EXPECT_EQ(s.jobs[0].spec.user, "alice");
  EXPECT_EQ(s.jobs[0].spec.priority, -7);
  EXPECT_EQ(s.jobs[1].spec.user, "");
  EXPECT_EQ(Header(a).sched.user, "alice");
  EXPECT_EQ(Header(a).sched.priority, -7);
  EXPECT_EQ(Header(b).sched.user, "");
  auto full = store().GetJob(a);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->sched.user, "alice");
  auto all = store().ListJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).sched.user, "alice");
  EXPECT_EQ(all->at(1).sched.priority, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreSandbox, Backends(), BackendName);

}  // namespace
}  // namespace idlepool::store
