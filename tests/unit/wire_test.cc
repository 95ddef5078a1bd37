// wire/wire.h: the typed kill reason the worker acts on.
#include "wire/wire.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

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

}  // namespace
}  // namespace idlepool::wire
