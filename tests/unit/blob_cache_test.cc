// The worker's blob cache: LRU eviction under a byte cap, pinning, persistence across restarts,
// verification on first use, and the changes it reports.
#include "worker/blob_cache.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "blob/manifest.h"
#include "gtest/gtest.h"
#include "platform/clock.h"
#include "platform/random.h"

namespace idlepool::worker {
namespace {
namespace fs = std::filesystem;

std::string Sha(const std::string& bytes) {
  blob::Sha256 h;
  h.Update(bytes.data(), bytes.size());
  return h.HexDigest();
}

class BlobCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("blob-cache-" + platform::RandomHex(6));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Dir() const { return (root_ / "cache").string(); }
  static int64_t Now() { return platform::SystemClock().WallMs(); }

  // A blob of `n` bytes named by `c`; fetches count in `fetches_`.
  static std::string Bytes(char c, size_t n = 1000) { return std::string(n, c); }
  BlobCache::Fetch FetchOf(const std::string& bytes) {
    return [this, bytes](blob::BlobStore& store) -> absl::StatusOr<uint64_t> {
      ++fetches_;
      blob::Manifest m;
      m.sha256 = Sha(bytes);
      m.size = bytes.size();
      blob::Sha256 h;
      h.Update(bytes.data(), bytes.size());
      if (!bytes.empty()) m.chunk_sha256.push_back(h.RawDigest());
      auto p = store.OpenPartial(m);
      if (!p.ok()) return p.status();
      if (!bytes.empty()) {
        if (auto st = (*p)->PutChunk(0, bytes); !st.ok()) return st;
      }
      if (auto st = (*p)->Publish(); !st.ok()) return st;
      return bytes.size();
    };
  }
  absl::StatusOr<BlobCache::Pin> Get(BlobCache& cache, char c) {
    const std::string bytes = Bytes(c);
    return cache.Acquire(Sha(bytes), bytes.size(), FetchOf(bytes));
  }
  static std::vector<std::string> Names(const google::protobuf::RepeatedPtrField<std::string>& r) {
    return {r.begin(), r.end()};
  }

  fs::path root_;
  int fetches_ = 0;
};

TEST_F(BlobCacheTest, EvictsTheLeastRecentlyUsedBlobWhenTheCapWouldBeExceeded) {
  BlobCache cache(Dir(), 3000);
  ASSERT_TRUE(cache.Init(Now()).ok());
  for (char c : {'a', 'b', 'c'}) ASSERT_TRUE(Get(cache, c).ok());
  auto a = Get(cache, 'a');  // a is now the most recently used
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->hit());
  a = BlobCache::Pin();
  v1::CacheChange before = cache.TakeChanges();
  EXPECT_EQ(before.added_size(), 3);
  EXPECT_EQ(before.added(0).size(), 1000u);
  ASSERT_TRUE(Get(cache, 'd').ok());
  v1::CacheChange ch = cache.TakeChanges();
  EXPECT_EQ(Names(ch.removed()), std::vector<std::string>{Sha(Bytes('b'))});
  ASSERT_EQ(ch.added_size(), 1);
  EXPECT_EQ(ch.added(0).sha256(), Sha(Bytes('d')));
  EXPECT_EQ(cache.TakeChanges().added_size(), 0);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.bytes, 3000u);
  EXPECT_EQ(s.blobs, 3u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 4u);
  EXPECT_FALSE(fs::exists(cache.PathOf(Sha(Bytes('b')))));
  auto contents = cache.Contents();
  ASSERT_EQ(contents.size(), 3u);
  EXPECT_EQ(contents[0].sha256(), Sha(Bytes('d')));
  EXPECT_EQ(contents[1].sha256(), Sha(Bytes('a')));
  EXPECT_EQ(contents[2].sha256(), Sha(Bytes('c')));
  EXPECT_EQ(cache.Contents(1).size(), 1u);
}

TEST_F(BlobCacheTest, PinnedBlobsAreNeverEvictedEvenPastTheCap) {
  BlobCache cache(Dir(), 2000);
  ASSERT_TRUE(cache.Init(Now()).ok());
  auto a = Get(cache, 'a');
  auto b = Get(cache, 'b');
  auto c = Get(cache, 'c');  // nothing evictable: the cache holds 3000 > 2000 while pinned
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(cache.stats().bytes, 3000u);
  EXPECT_TRUE(fs::exists(a->path()));
  EXPECT_TRUE(fs::exists(b->path()));
  a = BlobCache::Pin();
  b = BlobCache::Pin();
  c = BlobCache::Pin();
  cache.TakeChanges();
  ASSERT_TRUE(Get(cache, 'd').ok());
  EXPECT_EQ(Names(cache.TakeChanges().removed()),
            (std::vector<std::string>{Sha(Bytes('a')), Sha(Bytes('b'))}));
  EXPECT_EQ(cache.stats().bytes, 2000u);
}

TEST_F(BlobCacheTest, SurvivesARestartWithItsOrderAndRebuildsAMissingIndex) {
  {
    BlobCache cache(Dir(), 3000);
    ASSERT_TRUE(cache.Init(Now()).ok());
    for (char c : {'a', 'b', 'c'}) ASSERT_TRUE(Get(cache, c).ok());
    ASSERT_TRUE(Get(cache, 'a').ok());
  }
  {
    BlobCache cache(Dir(), 3000);
    ASSERT_TRUE(cache.Init(Now()).ok());
    EXPECT_EQ(cache.stats().blobs, 3u);
    EXPECT_EQ(cache.Contents()[0].sha256(), Sha(Bytes('a')));
    fetches_ = 0;
    auto a = Get(cache, 'a');
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(a->hit());
    EXPECT_EQ(fetches_, 0);
    a = BlobCache::Pin();
    ASSERT_TRUE(Get(cache, 'd').ok());  // b is the least recently used across the restart
    EXPECT_EQ(Names(cache.TakeChanges().removed()), std::vector<std::string>{Sha(Bytes('b'))});
  }
  fs::remove(fs::path(Dir()) / "index");
  std::ofstream(fs::path(Dir()) / "index") << "garbage\n";
  BlobCache cache(Dir(), 3000);
  ASSERT_TRUE(cache.Init(Now()).ok());
  EXPECT_EQ(cache.stats().blobs, 3u);
  EXPECT_EQ(cache.stats().bytes, 3000u);
}

TEST_F(BlobCacheTest, ACorruptBlobIsFoundOnItsFirstUseAfterARestartAndFetchedAgain) {
  std::string path;
  {
    BlobCache cache(Dir(), 3000);
    ASSERT_TRUE(cache.Init(Now()).ok());
    auto a = Get(cache, 'a');
    ASSERT_TRUE(a.ok());
    path = a->path();
  }
  ::chmod(path.c_str(), 0644);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('X');  // same size, different bytes
  }
  BlobCache cache(Dir(), 3000);
  ASSERT_TRUE(cache.Init(Now()).ok());
  fetches_ = 0;
  auto a = Get(cache, 'a');
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->hit());
  EXPECT_EQ(fetches_, 1);
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), Bytes('a'));
  v1::CacheChange ch = cache.TakeChanges();
  EXPECT_EQ(Names(ch.removed()), std::vector<std::string>{Sha(Bytes('a'))});
  EXPECT_EQ(ch.added_size(), 1);
  // Verified once per start: the next use does not hash or fetch again.
  a = BlobCache::Pin();
  auto again = Get(cache, 'a');
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->hit());
  EXPECT_EQ(fetches_, 1);
}

TEST_F(BlobCacheTest, AFailedFetchLeavesNothingAndIsAMiss) {
  BlobCache cache(Dir(), 3000);
  ASSERT_TRUE(cache.Init(Now()).ok());
  auto r = cache.Acquire(Sha("x"), 1, [](blob::BlobStore&) -> absl::StatusOr<uint64_t> {
    return absl::UnavailableError("coordinator down");
  });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(cache.stats().blobs, 0u);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.Acquire("nothex", 1, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idlepool::worker
