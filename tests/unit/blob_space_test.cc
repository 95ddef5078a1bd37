// Disk space of a blob store (blob/space.h, blob/partial_ledger.h, BlobStore's space keeping):
// the reserve, the room check with the partials' promises, which partials are abandoned, and a
// store that counts sparse partials by what they declared and removes the abandoned ones.
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "blob/partial_ledger.h"
#include "blob/space.h"
#include "blob/store.h"
#include "gtest/gtest.h"
#include "platform/clock.h"
#include "platform/random.h"

namespace idlepool::blob {
namespace {
namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

std::string ZeroChunkHash() {
  const std::string zeros(kChunkBytes, '\0');
  Sha256 h;
  h.Update(zeros.data(), zeros.size());
  return h.RawDigest();
}

DiskReading Disk(uint64_t total, uint64_t free) {
  return DiskReading{total, free, /*total_inodes=*/0, /*free_inodes=*/0};
}

TEST(Space, TheReserveIsSixtyFourMibOrOnePercent) {
  EXPECT_EQ(ReserveBytes(Disk(1 * kGiB, 0)), 64 * kMiB);
  EXPECT_EQ(ReserveBytes(Disk(100 * kGiB, 0)), 1 * kGiB);
  EXPECT_EQ(ReserveInodes(DiskReading{0, 0, 50000, 0}), kMinReserveInodes);
  EXPECT_EQ(ReserveInodes(DiskReading{0, 0, 1000000, 0}), 10000u);
}

TEST(Space, RoomCountsThePromisesAndKeepsTheReserve) {
  const DiskReading disk = Disk(1 * kGiB, 200 * kMiB);  // reserve 64 MiB
  RoomRequest req{"upload of blob ab", 100 * kMiB, 36 * kMiB, 3};
  EXPECT_TRUE(CheckRoom("/data/blobs", disk, req).ok());  // 200 - 36 - 100 = 64: just fits
  req.bytes += 1;
  absl::Status st = CheckRoom("/data/blobs", disk, req);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(st.message(),
            "upload of blob ab refused: the disk of /data/blobs is nearly full: 200.0 MiB free, "
            "36.0 MiB promised to 3 partial uploads, 100.0 MiB wanted, 64.0 MiB kept for the "
            "coordinator's own store");
  // Nothing wanted still needs the reserve free.
  EXPECT_FALSE(CheckRoom("/d", Disk(1 * kGiB, 63 * kMiB), RoomRequest{"job 'x'", 0, 0, 0}).ok());
  // Out of inodes (each partial takes two).
  DiskReading inodes{1 * kGiB, 1 * kGiB, 100000, kMinReserveInodes + 1};
  st = CheckRoom("/d", inodes, RoomRequest{"upload", 1, 0, 0});
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("out of inodes"), std::string::npos) << st;
  inodes.free_inodes += 1;
  EXPECT_TRUE(CheckRoom("/d", inodes, RoomRequest{"upload", 1, 0, 0}).ok());
}

TEST(Space, AWriteNeverEatsIntoTheReserve) {
  EXPECT_TRUE(CheckWrite("/d", Disk(1 * kGiB, 65 * kMiB), "upload", kMiB).ok());
  absl::Status st = CheckWrite("/d", Disk(1 * kGiB, 65 * kMiB - 1), "upload", kMiB);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("upload stopped: the disk of /d is nearly full"), std::string::npos)
      << st;
}

TEST(Space, APartialIsAbandonedOnlyAfterTheIdleLimit) {
  const std::chrono::milliseconds idle(120000);
  const std::vector<PartialState> partials = {{"written-now", 1000000},
                                              {"at-the-limit", 1000000 - 120000},
                                              {"past-the-limit", 1000000 - 120001},
                                              {"never-written", 0},
                                              {"in-the-future", 2000000}};
  EXPECT_EQ(AbandonedPartials(partials, 1000000, idle),
            (std::vector<std::string>{"past-the-limit", "never-written"}));
  EXPECT_TRUE(AbandonedPartials({}, 1000000, idle).empty());
}

TEST(PartialLedger, AdmitsAgainstEveryPromiseAndRecordsInTheSameStep) {
  PartialLedger ledger;
  const DiskReading disk = Disk(1 * kGiB, 200 * kMiB);  // room for 136 MiB above the reserve
  ASSERT_TRUE(ledger.Admit("/d", disk, "a", "a", 100 * kMiB).ok());
  EXPECT_EQ(ledger.Promised(), 100 * kMiB);
  // A sparse partial that holds 1 MiB of its 100 still promises 99: a second of 100 is refused.
  ledger.Set("a", 100 * kMiB, 1 * kMiB);
  EXPECT_EQ(ledger.Promised(), 99 * kMiB);
  absl::Status st = ledger.Admit("/d", Disk(1 * kGiB, 199 * kMiB), "b", "b", 100 * kMiB);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_EQ(ledger.size(), 1u);
  // Resuming "a" is admitted against what it still promises, not twice.
  EXPECT_TRUE(ledger.Admit("/d", Disk(1 * kGiB, 199 * kMiB), "a", "a", 100 * kMiB).ok());
  EXPECT_EQ(ledger.Promised(), 99 * kMiB);
  ledger.Forget("a");
  EXPECT_EQ(ledger.Promised(), 0u);
  EXPECT_TRUE(ledger.Admit("/d", Disk(1 * kGiB, 199 * kMiB), "b", "b", 100 * kMiB).ok());
  EXPECT_EQ(ledger.Partials(), std::vector<std::string>{"b"});
}

TEST(PartialLedger, KeepsAtMostKMaxPartials) {
  PartialLedger ledger;
  const DiskReading disk = Disk(1 << 30, 1 << 30);
  for (size_t i = 0; i < kMaxPartials; ++i) ledger.Set(std::to_string(i), 0, 0);
  absl::Status st = ledger.Admit("/d", disk, "upload of blob x", "x", 1);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("10000 partial uploads in /d already"), std::string::npos) << st;
  EXPECT_TRUE(ledger.Admit("/d", disk, "resume", "7", 1).ok());  // one already there may go on
}

class StoreSpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("blob-space-test-" + platform::RandomHex(6));
  }
  void TearDown() override { fs::remove_all(root_); }
  // The first `send` chunks of a made-up `chunks`-chunk blob of zeros (never complete: its
  // whole hash is made up), as one PutBlob stream cut after them.
  absl::Status Abandon(BlobStore& store, const std::string& sha, uint32_t chunks, uint32_t send) {
    const std::string zeros(kChunkBytes, '\0');
    const std::string zero_hash = ZeroChunkHash();
    uint32_t sent = 0;
    auto got = store.ReceiveUpload([&](v1::BlobChunk* m) {
      if (sent == send) return false;
      m->Clear();
      if (sent == 0) {
        m->set_sha256(sha);
        m->set_size(uint64_t{chunks} * kChunkBytes);
        for (uint32_t i = 0; i < chunks; ++i) m->add_chunk_sha256(zero_hash);
      }
      m->set_data(zeros);
      ++sent;
      return true;
    });
    return got.status();
  }
  fs::path root_;
};

TEST_F(StoreSpaceTest, ASparsePartialPromisesItsDeclaredSizeAcrossARestart) {
  const std::string dir = (root_ / "store").string();
  const std::string sha(64, 'a');
  const int64_t now = platform::SystemClock().WallMs();
  {
    BlobStore store(dir);
    ASSERT_TRUE(store.Init(now).ok());
    EXPECT_EQ(Abandon(store, sha, 8, 1).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(store.partial_count(), 1u);
    EXPECT_EQ(store.promised_bytes(), 7 * kChunkBytes);
  }
  struct stat st;
  ASSERT_EQ(::stat((root_ / "store" / "partial" / (sha + ".data")).c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8 * kChunkBytes);          // apparent: the declared size
  EXPECT_LT(st.st_blocks * 512, 2 * kChunkBytes);  // allocated: the one chunk written
  // A restart counts it by its allocated blocks, not its apparent size.
  BlobStore again(dir);
  ASSERT_TRUE(again.Init(now).ok());
  EXPECT_EQ(again.partial_count(), 1u);
  EXPECT_GE(again.promised_bytes(), 6 * kChunkBytes);
  EXPECT_LE(again.promised_bytes(), 7 * kChunkBytes);
}

TEST_F(StoreSpaceTest, AbandonedPartialsAreRemovedAndATransferHoldingOneFails) {
  const std::string dir = (root_ / "store").string();
  BlobStore store(dir, StoreOptions{.partial_max_age = std::chrono::seconds(120)});
  const int64_t now = platform::SystemClock().WallMs();
  ASSERT_TRUE(store.Init(now).ok());
  ASSERT_EQ(Abandon(store, std::string(64, 'a'), 4, 2).code(),
            absl::StatusCode::kFailedPrecondition);
  // A partial opened by a transfer that still holds it (a stalled stream).
  Manifest m;
  m.sha256 = std::string(64, 'b');
  m.size = 2 * kChunkBytes;
  m.chunk_sha256.assign(2, ZeroChunkHash());
  auto held = store.OpenPartial(m);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(store.partial_count(), 2u);
  // Idle times count from the files' last writes: from after them, however long the writes took
  // on a loaded machine (a fresh chroot once took over a second and nothing was idle yet).
  const int64_t written = platform::SystemClock().WallMs();

  EXPECT_EQ(store.RemoveAbandonedPartials(written + 60000).partials, 0u);  // not idle long enough
  const BlobStore::Removed removed = store.RemoveAbandonedPartials(written + 121000);
  EXPECT_EQ(removed.partials, 2u);
  EXPECT_GE(removed.bytes, 2 * kChunkBytes);
  EXPECT_EQ(store.partial_count(), 0u);
  EXPECT_EQ(store.promised_bytes(), 0u);
  EXPECT_TRUE(fs::is_empty(fs::path(dir) / "partial"));
  EXPECT_EQ((*held)->PutChunk(0, std::string(kChunkBytes, '\0')).code(),
            absl::StatusCode::kFailedPrecondition);
  // Init removes them too when they are found idle at a start.
  ASSERT_EQ(Abandon(store, std::string(64, 'c'), 4, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  BlobStore later(dir, StoreOptions{.partial_max_age = std::chrono::seconds(120)});
  ASSERT_TRUE(later.Init(platform::SystemClock().WallMs() + 121000).ok());
  EXPECT_EQ(later.partial_count(), 0u);
  EXPECT_TRUE(fs::is_empty(fs::path(dir) / "partial"));
}

TEST_F(StoreSpaceTest, CheckRoomNamesTheDirectory) {
  BlobStore store((root_ / "store").string());
  ASSERT_TRUE(store.Init(platform::SystemClock().WallMs()).ok());
  EXPECT_TRUE(store.CheckRoom(0, "job 'x'").ok());  // this machine has 64 MiB free
  absl::Status st = store.CheckRoom(uint64_t{1} << 62, "job 'x'");
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("job 'x' refused: the disk of " + (root_ / "store").string()),
            std::string::npos)
      << st;
}

}  // namespace
}  // namespace idlepool::blob
