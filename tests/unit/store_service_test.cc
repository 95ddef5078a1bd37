// A service's [service] table in the store, on every backend (issue 17): kept with its job, read
// back by every job read after a restart; a batch job has none. Fixture: store_fixture.h.
#include "store_fixture.h"

namespace idlepool::store {
namespace {

class StoreService : public StoreConformance {};

spec::ServiceSpec Llama() {
  spec::ServiceSpec s;
  s.min_replicas = 0;
  s.max_replicas = 6;
  s.protocol = "openai";
  s.model = "org/llama:8b";
  s.health = "/v1/models";
  s.max_concurrent = 3;
  s.drain_seconds = 45;
  s.replicas_per_machine = 2;
  return s;
}

TEST_P(StoreService, EveryKeyIsKeptWithTheJob) {
  NewJob svc = MakeJob("llama", 6);
  svc.service = Llama();
  const core::JobId a = Insert(svc);
  NewJob plain_svc = MakeJob("web", 1);
  plain_svc.service = spec::ServiceSpec{};  // every default
  const core::JobId b = Insert(plain_svc);
  const core::JobId c = Insert(MakeJob("batch", 2));
  REOPEN();
  ASSERT_TRUE(Header(a).service.has_value());
  EXPECT_EQ(*Header(a).service, Llama());
  EXPECT_EQ(Header(b).service, spec::ServiceSpec{});
  EXPECT_FALSE(Header(c).service.has_value());
  const JobRecord full = Job(a);
  EXPECT_EQ(full.service, Llama());
  EXPECT_EQ(full.spec, svc.spec);  // the spec still read after the service's columns
  EXPECT_EQ(full.sched.task_count, 6u);
  auto all = store().ListJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ(all->at(0).service, Llama());
  EXPECT_EQ(all->at(1).service, spec::ServiceSpec{});
  EXPECT_FALSE(all->at(2).service.has_value());
  // The replicas are tasks like any others.
  EXPECT_EQ(Tasks(a).size(), 6u);
  EXPECT_EQ(MustLoad().jobs.size(), 3u);
}

// `idlepool scale` is kept: after a restart the core gets the service's replicas as scaled
// (before any scale: its minimum, as submitted).
TEST_P(StoreService, AScaledServiceLoadsWithItsReplicas) {
  NewJob svc = MakeJob("llama", 6);
  svc.service = Llama();                         // min_replicas 0
  svc.sched.service = core::ServiceShape{0, 2};  // as the coordinator submits it
  const core::JobId a = Insert(svc);
  const core::JobId c = Insert(MakeJob("batch", 2));
  auto shape = [&](core::JobId id) -> std::optional<core::ServiceShape> {
    for (const core::RestoredJob& j : MustLoad().jobs) {
      if (j.spec.job == id) return j.spec.service;
    }
    return std::nullopt;
  };
  REOPEN();
  ASSERT_TRUE(shape(a).has_value());
  EXPECT_EQ(shape(a)->replicas, 0u);
  EXPECT_EQ(shape(a)->per_machine, 2u);
  EXPECT_FALSE(shape(c).has_value());
  ASSERT_TRUE(store().ScaleService(a, 4).ok());
  REOPEN();
  ASSERT_TRUE(shape(a).has_value());
  EXPECT_EQ(shape(a)->replicas, 4u);
  EXPECT_EQ(store().ScaleService(c, 1).code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreService, Backends(), BackendName);

}  // namespace
}  // namespace idlepool::store
