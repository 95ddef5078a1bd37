// The log keeper (coordinator/log_keeper.h): per-attempt files with gap lines and a cap, a
// restart that continues a file, bounded followers, DeleteJob; and the scheduler's fencing of
// the chunks a worker sends (core::Scheduler::RunningOn).
#include "coordinator/log_keeper.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>

#include "core/scheduler.h"
#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class LogKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("log_keeper_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  LogKeeperOptions Options(uint64_t cap = kDefaultLogCapBytes) {
    LogKeeperOptions o;
    o.dir = (dir_ / "logs").string();
    o.cap_bytes = cap;
    return o;
  }
  std::string KeptOf(const LogKeeper& k, core::JobId job, core::AttemptId a) {
    auto s = k.Kept(job, a, 1 << 22);
    return s.ok() ? *s : "<" + std::string(s.status().message()) + ">";
  }
  fs::path dir_;
};

TEST_F(LogKeeperTest, AppendsInOrderPerAttemptFile) {
  LogKeeper k(Options());
  EXPECT_TRUE(k.Append({7, 0}, 12, 0, "hello\n"));
  EXPECT_TRUE(k.Append({7, 0}, 12, 6, "world\n"));
  EXPECT_TRUE(k.Append({7, 1}, 13, 0, "other\n"));
  EXPECT_EQ(KeptOf(k, 7, 12), "hello\nworld\n");
  EXPECT_EQ(KeptOf(k, 7, 13), "other\n");
  EXPECT_TRUE(fs::exists(dir_ / "logs" / "7" / "12.log"));
  EXPECT_FALSE(k.Kept(7, 99, 100).ok());  // nothing kept: kNotFound
}

TEST_F(LogKeeperTest, GapsBecomeLinesAndResendsAreIgnored) {
  LogKeeper k(Options());
  k.Append({1, 0}, 5, 0, "abc");
  k.Append({1, 0}, 5, 10, "xyz");  // 7 bytes dropped by the worker
  k.Append({1, 0}, 5, 0, "abc");   // a resend: already kept
  k.Append({1, 0}, 5, 11, "yzQ");  // overlapping: only "Q" is new
  EXPECT_EQ(KeptOf(k, 1, 5), "abc\n" + GapLine(7) + "\nxyzQ");
}

// A worker flooding an attempt with empty chunks at rising offsets, and with one-byte chunks
// each past a gap: the file holds the output and at most kMaxGapLines gap lines plus one saying
// later gaps are unmarked, not a line per chunk.
TEST_F(LogKeeperTest, AFloodOfEmptyAndGappedChunksKeepsFewGapLines) {
  LogKeeper k(Options());
  constexpr uint64_t kChunks = 2000;
  uint64_t offset = 0;
  for (uint64_t i = 0; i < kChunks; ++i) {
    EXPECT_TRUE(k.Append({1, 0}, 5, offset += 3, ""));  // empty: nothing to keep
  }
  EXPECT_FALSE(k.Kept(1, 5, 100).ok()) << "empty chunks wrote " << KeptOf(k, 1, 5).size();
  for (uint64_t i = 0; i < kChunks; ++i) {
    EXPECT_TRUE(k.Append({1, 0}, 5, offset += 2, "x"));  // one byte, then one dropped
  }
  const std::string kept = KeptOf(k, 1, 5);
  size_t lines = 0, gap_lines = 0;
  for (size_t at = 0; (at = kept.find("[idlepool:", at)) != std::string::npos; ++at) ++lines;
  for (size_t at = 0; (at = kept.find(" bytes of output dropped]", at)) != std::string::npos;
       ++at) {
    ++gap_lines;
  }
  EXPECT_EQ(gap_lines, kMaxGapLines);
  EXPECT_EQ(lines, kMaxGapLines + 1);
  EXPECT_NE(kept.find(GapsUnmarkedLine()), std::string::npos);
  EXPECT_EQ(std::count(kept.begin(), kept.end(), 'x'), static_cast<long>(kChunks));
  // The count survives a restart: a new keeper marks no further gaps in this file.
  LogKeeper again(Options());
  EXPECT_TRUE(again.Append({1, 0}, 5, offset + 50, "y"));
  EXPECT_EQ(KeptOf(again, 1, 5), kept + "y");
}

TEST_F(LogKeeperTest, MalformedChunksAreDropped) {
  LogKeeper k(Options());
  EXPECT_FALSE(k.Append({1, 0}, 5, 0, std::string(kMaxLogChunkBytes + 1, 'x')));
  EXPECT_FALSE(k.Append({1, 0}, 5, UINT64_MAX - 1, "abc"));  // the offset would overflow
  EXPECT_FALSE(k.Append({1, 0}, 0, 0, "abc"));               // attempt 0 does not exist
  EXPECT_FALSE(k.Kept(1, 5, 100).ok());
  // A huge (but not overflowing) offset is a gap, not a crash, and later chunks still land.
  EXPECT_TRUE(k.Append({1, 0}, 5, uint64_t{1} << 62, "late"));
  EXPECT_EQ(KeptOf(k, 1, 5), "\n" + GapLine(uint64_t{1} << 62) + "\nlate");
}

TEST_F(LogKeeperTest, KeepsAtMostTheCapThenSaysSo) {
  LogKeeper k(Options(/*cap=*/10));
  k.Append({1, 0}, 5, 0, "0123456");
  k.Append({1, 0}, 5, 7, "789abcdef");
  k.Append({1, 0}, 5, 16, "more and more");
  k.Append({1, 0}, 5, 100, "after a gap");
  EXPECT_EQ(KeptOf(k, 1, 5), "0123456789\n" + CapLine(10) + "\n");
}

TEST_F(LogKeeperTest, ARestartedKeeperContinuesTheFile) {
  {
    LogKeeper k(Options());
    k.Append({3, 2}, 40, 0, "before ");
  }
  LogKeeper again(Options());
  again.Append({3, 2}, 40, 7, "after");   // continues at the offset the file ended at
  again.Append({3, 2}, 40, 0, "before");  // a resend after the restart: already kept
  again.Append({3, 2}, 40, 20, "!");      // a gap is still seen
  EXPECT_EQ(KeptOf(again, 3, 40), "before after\n" + GapLine(8) + "\n!");
}

TEST_F(LogKeeperTest, FollowersGetBacklogThenLiveChunksAndGaps) {
  LogKeeper k(Options(/*cap=*/4));
  k.Append({1, 0}, 5, 0, "ab");
  std::string backlog;
  auto f = k.Follow({1, 0}, 5, &backlog);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(backlog, "ab");
  k.Append({1, 0}, 5, 2, "cdef");  // past the cap: not kept, but still live
  k.Append({1, 0}, 5, 9, "z");
  k.Append({1, 1}, 6, 0, "other task");  // not this follower's task
  k.Append({1, 0}, 8, 0, "next attempt");
  auto got = (*f)->Take(milliseconds(0));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].data(), "cdef");
  EXPECT_EQ(got[0].offset(), 2u);
  EXPECT_EQ(got[1].event(), GapLine(3));
  EXPECT_EQ(got[2].data(), "z");
  EXPECT_EQ(got[3].attempt(), 8u);
  EXPECT_EQ(got[3].data(), "next attempt");
  k.Unfollow(*f);
}

TEST_F(LogKeeperTest, ASlowFollowerSkipsWithinItsBuffer) {
  LogKeeperOptions o = Options();
  o.follower_buffer_bytes = 100;
  LogKeeper k(o);
  auto f = k.Follow({1, 0}, 0, nullptr);
  ASSERT_TRUE(f.ok());
  uint64_t off = 0;
  for (int i = 0; i < 50; ++i, off += 10) k.Append({1, 0}, 5, off, std::string(10, 'a' + i % 26));
  auto got = (*f)->Take(milliseconds(0));
  size_t bytes = 0;
  for (const auto& d : got) bytes += d.data().size();
  EXPECT_LE(bytes, 100u);  // never more than its buffer held
  k.Append({1, 0}, 5, off, "tail");
  got = (*f)->Take(milliseconds(0));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].event(), "[idlepool: 400 bytes skipped: this reader fell behind]");
  EXPECT_EQ(got[1].data(), "tail");
}

TEST_F(LogKeeperTest, FollowersAreCapped) {
  LogKeeperOptions o = Options();
  o.max_followers = 2;
  LogKeeper k(o);
  auto a = k.Follow({1, 0}, 0, nullptr);
  auto b = k.Follow({2, 0}, 0, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = k.Follow({1, 0}, 0, nullptr);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  k.Unfollow(*a);
  EXPECT_TRUE(k.Follow({1, 0}, 0, nullptr).ok());
}

TEST_F(LogKeeperTest, DeleteJobRemovesItsLogsAndEndsItsFollowers) {
  LogKeeper k(Options());
  k.Append({1, 0}, 5, 0, "one");
  k.Append({2, 0}, 6, 0, "two");
  auto f = k.Follow({1, 0}, 5, nullptr);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(k.DeleteJob(1).ok());
  EXPECT_TRUE((*f)->closed());
  EXPECT_TRUE((*f)->Take(milliseconds(1000)).empty());  // returns at once: closed
  EXPECT_FALSE(fs::exists(dir_ / "logs" / "1"));
  EXPECT_EQ(KeptOf(k, 2, 6), "two");
  EXPECT_TRUE(k.DeleteJob(1).ok());  // nothing left: fine
  // A chunk after the delete (a late worker) starts afresh, it does not resurrect old state.
  k.Append({1, 0}, 5, 3, "x");
  EXPECT_EQ(KeptOf(k, 1, 5), "\n" + GapLine(3) + "\nx");
}

// Fencing: only an attempt running on that worker's current session may log.
TEST(LogFencing, OnlyTheRunningAttemptOnItsWorkersCurrentSession) {
  core::Scheduler s;
  const core::MonoTime t{};
  (void)s.Apply(core::WorkerHello{"w1", 1, "boot1", core::Resources{1, 0, 0}, {}}, t);
  (void)s.Apply(core::WorkerHello{"w2", 2, "boot2", core::Resources{1, 0, 0}, {}}, t);
  (void)s.Apply(core::JobSubmitted{1, 2, core::Resources{1, 0, 0}, 3, core::Millis{0}}, t);
  const auto a0 = s.CurrentAttempt({1, 0});
  const auto a1 = s.CurrentAttempt({1, 1});
  ASSERT_TRUE(a0 && a1);
  // Which worker got which task is the scheduler's choice; find out.
  const std::string w0 = s.RunningOn(*a0, "w1", 1) ? "w1" : "w2";
  const core::SessionId s0 = w0 == "w1" ? 1 : 2;
  const std::string other = w0 == "w1" ? "w2" : "w1";
  const core::SessionId other_s = w0 == "w1" ? 2 : 1;
  ASSERT_TRUE(s.RunningOn(*a0, w0, s0).has_value());
  EXPECT_EQ(s.RunningOn(*a0, w0, s0)->index, 0u);
  EXPECT_FALSE(s.RunningOn(*a0, other, other_s));  // another worker's attempt
  EXPECT_FALSE(s.RunningOn(*a0, w0, s0 + 10));     // an old or forged session
  EXPECT_FALSE(s.RunningOn(999, w0, s0));          // an unknown attempt
  // Its session closed: nothing it sends about the attempt counts any more.
  (void)s.Apply(core::SessionClosed{w0, s0}, t);
  EXPECT_FALSE(s.RunningOn(*a0, w0, s0));
}

}  // namespace
}  // namespace idlepool::coordinator
