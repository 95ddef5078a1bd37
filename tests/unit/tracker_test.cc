#include "coordinator/tracker.h"

#include <set>

#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

using core::Millis;
using core::MonoTime;

const std::string kA(64, 'a');
const std::string kB(64, 'b');

MonoTime At(int64_t ms) { return MonoTime(Millis(ms)); }

std::vector<uint32_t> All(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

std::set<std::string> Names(const std::vector<PeerRef>& peers) {
  std::set<std::string> out;
  for (const auto& p : peers) out.insert(p.worker);
  return out;
}

TEST(TrackerTest, HoldersComeFromHelloAndCacheChangesAndGoWithTheSession) {
  Tracker t;
  t.Connected("w1", 1, "10.0.0.1:5000", {kA});
  t.Connected("w2", 2, "10.0.0.2:5000", {});
  EXPECT_TRUE(t.IsHolder("w1", kA));
  t.CacheChanged("w2", 2, {kA}, {});
  EXPECT_TRUE(t.IsHolder("w2", kA));
  t.CacheChanged("w1", 1, {}, {kA});
  EXPECT_FALSE(t.IsHolder("w1", kA));
  // A change from a superseded session is ignored.
  t.CacheChanged("w1", 99, {kA}, {});
  EXPECT_FALSE(t.IsHolder("w1", kA));

  auto peers = t.Locate(kA, 4, "w3", At(0));
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].worker, "w2");
  EXPECT_EQ(peers[0].address, "10.0.0.2:5000");
  EXPECT_TRUE(peers[0].complete);

  t.Disconnected("w2", 2);
  EXPECT_FALSE(t.IsHolder("w2", kA));
  EXPECT_TRUE(t.Locate(kA, 4, "w3", At(1)).empty());
  // Restored at its next hello.
  t.Connected("w2", 5, "10.0.0.2:5001", {kA});
  peers = t.Locate(kA, 4, "w3", At(2));
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].address, "10.0.0.2:5001");
  // The close of an older session does not forget the newer one.
  t.Disconnected("w2", 2);
  EXPECT_TRUE(t.IsHolder("w2", kA));
}

TEST(TrackerTest, LocateListsHoldersFirstThenFetchersNeverTheAskerNorAddresslessWorkers) {
  Tracker t;
  t.Connected("holder", 1, "h:1", {kA});
  t.Connected("f1", 2, "f1:1", {});
  t.Connected("f2", 3, "", {});  // serves no peers
  t.Connected("me", 4, "me:1", {});
  t.Locate(kA, 8, "f1", At(0));
  t.Locate(kA, 8, "f2", At(0));
  auto peers = t.Locate(kA, 8, "me", At(0));
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_EQ(peers[0].worker, "holder");
  EXPECT_TRUE(peers[0].complete);
  EXPECT_EQ(peers[1].worker, "f1");
  EXPECT_FALSE(peers[1].complete);
  EXPECT_TRUE(t.IsFetcher("me", kA));
  EXPECT_EQ(Names(t.Locate(kA, 8, "holder", At(0))), (std::set<std::string>{"f1", "me"}));
}

TEST(TrackerTest, LocateCapsAndSpreadsPeers) {
  TrackerOptions o;
  o.max_peers = 4;
  Tracker t(o);
  for (int i = 0; i < 10; ++i) {
    std::string w = "w" + std::to_string(i);
    t.Connected(w, i + 1, w + ":1", {kA});
  }
  t.Connected("asker", 100, "asker:1", {});
  std::set<std::string> firsts;
  for (int i = 0; i < 10; ++i) {
    auto peers = t.Locate(kA, 8, "asker", At(i));
    ASSERT_EQ(peers.size(), 4u);
    firsts.insert(peers[0].worker);
  }
  EXPECT_EQ(firsts.size(), 10u);  // every holder was someone's first peer
}

TEST(TrackerTest, FetchersExpireWithoutActivityAndWithTheirSession) {
  TrackerOptions o;
  o.fetcher_ttl = Millis(1000);
  Tracker t(o);
  t.Connected("f", 1, "f:1", {});
  t.Connected("g", 2, "g:1", {});
  t.Locate(kA, 8, "f", At(0));
  EXPECT_TRUE(t.IsFetcher("f", kA));
  ASSERT_TRUE(t.Choose(kA, 8, {3}, "f", At(900)).ok());  // activity renews
  t.Expire(At(1800));
  EXPECT_TRUE(t.IsFetcher("f", kA));
  t.Expire(At(1900));
  EXPECT_FALSE(t.IsFetcher("f", kA));
  EXPECT_EQ(t.tracked_blobs(), 0u);

  t.Locate(kA, 8, "g", At(2000));
  t.Disconnected("g", 2);
  EXPECT_FALSE(t.IsFetcher("g", kA));
}

TEST(TrackerTest, SimultaneousAskersEachGetDistinctChunksAndEachChunkIsSentOnce) {
  Tracker t;
  const uint32_t n = 64;
  const int askers = 8;
  for (int i = 0; i < askers; ++i) {
    std::string w = "w" + std::to_string(i);
    t.Connected(w, i + 1, w + ":1", {});
    t.Locate(kA, n, w, At(0));
  }
  // Every asker wants every chunk (none known at a peer yet) and asks in turn, repeatedly.
  std::set<uint32_t> sent;
  std::set<uint32_t> first_round;
  int refusals = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < askers; ++i) {
      auto got = t.Choose(kA, n, All(n), "w" + std::to_string(i), At(10 + round));
      if (!got.ok()) {
        EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
        ++refusals;
        continue;
      }
      EXPECT_TRUE(sent.insert(*got).second) << "chunk " << *got << " sent twice";
      if (round == 0) first_round.insert(*got);
    }
  }
  EXPECT_EQ(first_round.size(), static_cast<size_t>(askers));
  EXPECT_EQ(sent.size(), n);  // all chunks went out, each once
  EXPECT_GT(refusals, 0);     // then askers are sent to their peers
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(t.SentCount(kA, i), 1u);
}

TEST(TrackerTest, LeastSentChunkIsChosenAndResentAfterTheWindowOrWithoutPeers) {
  TrackerOptions o;
  o.resend_after = Millis(5000);
  Tracker t(o);
  t.Connected("a", 1, "a:1", {});
  t.Connected("b", 2, "b:1", {});
  t.Locate(kA, 4, "b", At(0));
  ASSERT_EQ(*t.Choose(kA, 4, {2}, "a", At(0)), 2u);
  ASSERT_EQ(*t.Choose(kA, 4, {2, 3}, "a", At(1)), 3u);  // least sent wins
  // Chunk 2 again within the window while "a" has a peer: refused.
  EXPECT_EQ(t.Choose(kA, 4, {2}, "a", At(100)).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Within the window "b" says none of its peers works (e.g. their addresses are wrong from where
  // it stands): served at once, not sent back to them.
  ASSERT_EQ(*t.Choose(kA, 4, {2}, "b", At(200), /*no_usable_peer=*/true), 2u);
  EXPECT_EQ(t.SentCount(kA, 2), 2u);
  EXPECT_EQ(t.Choose(kA, 4, {2}, "b", At(300)).status().code(),
            absl::StatusCode::kResourceExhausted);  // without the flag: refused again
  // But never the same chunk to the same worker twice in the window, flag or not: its first
  // request for it may still be in flight (concurrent requests would each get it).
  EXPECT_EQ(t.Choose(kA, 4, {2}, "a", At(300), true).status().code(),
            absl::StatusCode::kResourceExhausted);
  // After the window it is sent again (its first receiver may be gone).
  ASSERT_EQ(*t.Choose(kA, 4, {2}, "a", At(5200)), 2u);
  EXPECT_EQ(t.SentCount(kA, 2), 3u);
  // Alone (no other worker with an address holds or fetches it): always served.
  t.Disconnected("b", 2);
  ASSERT_EQ(*t.Choose(kA, 4, {2}, "a", At(5201)), 2u);
}

TEST(TrackerTest, BadInputIsRefused) {
  Tracker t;
  EXPECT_EQ(t.Choose(kA, 4, {}, "a", At(0)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Choose(kA, 4, {4}, "a", At(0)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Choose(kA, 0, {0}, "a", At(0)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.SentCount(kA, 0), 0u);
  // Unknown sessions and blobs are harmless.
  t.CacheChanged("nobody", 1, {kB}, {kA});
  t.Disconnected("nobody", 1);
  EXPECT_TRUE(t.Locate(kB, 0, "a", At(0)).empty());
}

}  // namespace
}  // namespace idlepool::coordinator
