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

}  // namespace
}  // namespace idlepool::wire
