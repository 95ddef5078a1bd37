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

}  // namespace
}  // namespace idlepool::wire
