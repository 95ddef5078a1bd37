// wire/wire.h: the typed kill reason the worker acts on; a job spec as a client sends it.
#include "wire/wire.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "spec/spec.h"

namespace idlepool::wire {
namespace {

TEST(KillTest, EveryCoreReasonHasItsOwnCodeAndText) {
  const std::pair<core::KillReason, v1::KillReason> cases[] = {
      {core::KillReason::kStale, v1::KILL_REASON_STALE},
      {core::KillReason::kCancelled, v1::KILL_REASON_CANCELLED},
      {core::KillReason::kTimedOut, v1::KILL_REASON_TIMED_OUT},
      {core::KillReason::kSuperseded, v1::KILL_REASON_SUPERSEDED},
      {core::KillReason::kObsolete, v1::KILL_REASON_OBSOLETE},
  };
  std::set<std::string> texts;
  for (const auto& [reason, code] : cases) {
    v1::Kill k = ToKill(42, reason);
    EXPECT_EQ(k.attempt(), 42u);
    EXPECT_EQ(k.code(), code);
    EXPECT_FALSE(k.reason().empty());
    texts.insert(k.reason());
  }
  EXPECT_EQ(texts.size(), std::size(cases));
}

TEST(KillTest, OnlyAStaleKillKeepsFinishedOutputs) {
  EXPECT_TRUE(KeepsFinishedOutputs(ToKill(1, core::KillReason::kStale).code()));
  EXPECT_TRUE(KeepsFinishedOutputs(v1::KILL_REASON_UNSPECIFIED));  // an older coordinator
  for (auto r : {core::KillReason::kCancelled, core::KillReason::kTimedOut,
                 core::KillReason::kSuperseded, core::KillReason::kObsolete}) {
    EXPECT_FALSE(KeepsFinishedOutputs(ToKill(1, r).code())) << ToKill(1, r).reason();
  }
}

// What SubmitJob does with a client's spec (FromProto, then spec::Validate): a client that skips
// its own checks still cannot get a placeholder bomb accepted.
TEST(JobSpecTest, ABombSentAsAProtoIsRefusedByTheCoordinatorsCheck) {
  v1::JobSpec p;
  p.set_name("bomb");
  p.add_command("render");
  for (int i = 0; i < 2000; ++i) p.add_command("{frames}");
  p.mutable_frames()->set_spec("1-100000");
  p.mutable_frames()->set_chunk(100000);
  p.mutable_resources()->set_cpus(1);
  p.set_max_attempts(3);
  const absl::Status st = spec::Validate(FromProto(p));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("task 0 would start with 1.1 GiB"), std::string::npos) << st;
  p.mutable_frames()->set_chunk(1);  // one frame per task: tiny commands
  EXPECT_TRUE(spec::Validate(FromProto(p)).ok());
}

// [sandbox] network = "host" travels from the spec to the wire and back (SubmitJob), and from
// the stored spec into every assignment of the job (issue 19), with the other job fields.
TEST(JobSpecTest, HostNetworkTravelsToTheCoordinatorAndIntoEveryAssignment) {
  spec::JobSpec s;
  s.name = "net";
  s.command = {"curl", "{item}"};
  s.kind = spec::TaskKind::kItems;
  s.items = {"a", "b"};
  s.outputs = {"out.txt"};
  s.resources.cpus = 2;
  s.resources.host_network = true;
  s.timeout_s = 30;
  v1::JobSpec p = ToProto(s);
  EXPECT_TRUE(p.host_network());
  EXPECT_TRUE(FromProto(p).resources.host_network);
  EXPECT_EQ(FromProto(p).resources.cpus, 2u);
  s.resources.host_network = false;
  EXPECT_FALSE(ToProto(s).host_network());
  EXPECT_FALSE(FromProto(ToProto(s)).resources.host_network);

  spec::TaskParams task;
  task.index = 1;
  task.item = "b";
  v1::Assignment as = ToAssignment(p, 7, task, 42, {3});
  EXPECT_TRUE(as.host_network());
  EXPECT_EQ(as.attempt(), 42u);
  EXPECT_EQ(as.job(), 7u);
  EXPECT_EQ(as.job_name(), "net");
  EXPECT_EQ(as.task().index(), 1u);
  EXPECT_EQ(as.task().item(), "b");
  EXPECT_EQ(as.command_size(), 2);
  EXPECT_EQ(as.outputs(0), "out.txt");
  EXPECT_EQ(as.resources().cpus(), 2u);
  EXPECT_EQ(as.timeout_s(), 30u);
  ASSERT_EQ(as.gpus_size(), 1);
  EXPECT_EQ(as.gpus(0), 3u);
  p.set_host_network(false);
  p.set_allow_empty_outputs(true);
  as = ToAssignment(p, 7, task, 43, {});
  EXPECT_FALSE(as.host_network());
  EXPECT_TRUE(as.allow_empty_outputs());
}

// A job's env travels from the spec to the wire and back (SubmitJob, where the coordinator checks
// it again) and from the stored spec into every assignment, in order (issue 31).
TEST(JobSpecTest, EnvTravelsToTheCoordinatorAndIntoEveryAssignment) {
  spec::JobSpec s;
  s.name = "env";
  s.command = {"true"};
  s.count = 2;
  s.env = {{"A", "{index}"}, {"PATH", "/opt/x:/usr/bin"}};
  const v1::JobSpec p = ToProto(s);
  ASSERT_EQ(p.env_size(), 2);
  EXPECT_EQ(p.env(1).name(), "PATH");
  const spec::JobSpec back = FromProto(p);
  ASSERT_EQ(back.env.size(), 2u);
  EXPECT_EQ(back.env[0].name, "A");
  EXPECT_EQ(back.env[0].value, "{index}");
  EXPECT_TRUE(spec::Validate(back).ok()) << spec::Validate(back);
  const v1::Assignment as = ToAssignment(p, 7, spec::TaskParams{}, 42, {});
  ASSERT_EQ(as.env_size(), 2);
  EXPECT_EQ(as.env(0).value(), "{index}");
  // A client that skips its own checks cannot set what the worker sets.
  v1::JobSpec bad = p;
  bad.mutable_env(0)->set_name("IDLEPOOL_TASK_DIR");
  EXPECT_EQ(spec::Validate(FromProto(bad)).code(), absl::StatusCode::kInvalidArgument);
}

// A service's [service] table travels from the spec to the wire and back (SubmitJob) with every
// key (issue 17); a batch job carries none, and a service no task kind.
TEST(JobSpecTest, AServiceTravelsWithEveryKey) {
  spec::JobSpec s;
  s.name = "llama";
  s.command = {"llama-server", "--port", "{port}"};
  s.inputs = {spec::Input{"/m/model.gguf", "model.gguf"}};
  s.resources.gpus = 1;
  s.service = spec::ServiceSpec{};
  s.service->min_replicas = 0;
  s.service->max_replicas = 7;
  s.service->protocol = "openai";
  s.service->model = "org/llama:8b";
  s.service->health = "/v1/models";
  s.service->max_concurrent = 9;
  s.service->drain_seconds = 11;
  s.service->replicas_per_machine = 3;
  const v1::JobSpec p = ToProto(s);
  ASSERT_TRUE(p.has_service());
  EXPECT_EQ(p.tasks_case(), v1::JobSpec::TASKS_NOT_SET);
  EXPECT_EQ(p.service().max_replicas(), 7u);
  EXPECT_EQ(p.service().protocol(), "openai");
  // Through bytes, as the coordinator receives and stores it.
  v1::JobSpec received;
  ASSERT_TRUE(received.ParseFromString(p.SerializeAsString()));
  const spec::JobSpec back = FromProto(received);
  ASSERT_TRUE(back.service.has_value());
  EXPECT_EQ(*back.service, *s.service);
  EXPECT_EQ(back.kind, spec::TaskKind::kCount);
  EXPECT_EQ(back.count, 0u);
  EXPECT_TRUE(spec::Validate(back).ok()) << spec::Validate(back);
  EXPECT_EQ(*spec::TaskCount(back), 7u);
  // The defaults too, and a batch job has no service.
  s.service = spec::ServiceSpec{};
  EXPECT_EQ(FromProto(ToProto(s)).service, spec::ServiceSpec{});
  s.service.reset();
  s.count = 2;
  EXPECT_FALSE(ToProto(s).has_service());
  EXPECT_FALSE(FromProto(ToProto(s)).service.has_value());
  // A client that sends an empty [service] message gets each zero named, not a default.
  v1::JobSpec zero = ToProto(s);
  zero.clear_count();
  zero.mutable_service();
  EXPECT_EQ(spec::Validate(FromProto(zero)).message(),
            "job spec: field 'service.max_replicas': must be 1 to 1024, got 0");
}

}  // namespace
}  // namespace idlepool::wire
