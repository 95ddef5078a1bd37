// BlobDir and file hashing: what a worker's cache and the coordinator's blob store rely on.
#include "blob/blob.h"

#include <fcntl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "blob/manifest.h"
#include "blob/partial.h"
#include "blob/store.h"
#include "gtest/gtest.h"
#include "platform/clock.h"
#include "platform/random.h"

namespace idlepool::blob {
namespace {
namespace fs = std::filesystem;

class BlobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("blob-test-" + platform::RandomHex(6));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Put(BlobDir& dir, const std::string& bytes) {
    const fs::path src = root_ / "src";
    std::ofstream(src, std::ios::binary) << bytes;
    auto d = HashFile(src.string());
    EXPECT_TRUE(d.ok()) << d.status();
    auto w = dir.NewWriter(d->sha256, d->size);
    EXPECT_TRUE(w.ok()) << w.status();
    EXPECT_TRUE((*w)->Append(bytes.data(), bytes.size()).ok());
    EXPECT_TRUE((*w)->Commit().ok());
    return d->sha256;
  }
  fs::path root_;
};

TEST_F(BlobTest, InitRemovesPartialDownloadsOfAKilledProcessAndKeepsBlobs) {
  BlobDir dir((root_ / "cache").string());
  ASSERT_TRUE(dir.Init().ok());
  const std::string sha = Put(dir, "hello");
  const std::string part = dir.PathOf(sha) + ".part.12345.0";
  std::ofstream(part) << "hel";  // what a SIGKILL mid-download leaves
  BlobDir again((root_ / "cache").string());
  ASSERT_TRUE(again.Init().ok());
  EXPECT_FALSE(fs::exists(part));
  EXPECT_TRUE(again.Has(sha));
}

TEST_F(BlobTest, HashFileRefusesAFifoWithoutBlockingAndASymlinkWhenAskedTo) {
  const fs::path fifo = root_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto h = HashFile(fifo.string());  // would block forever on open() without O_NONBLOCK
  EXPECT_EQ(h.status().code(), absl::StatusCode::kFailedPrecondition) << h.status();
  std::ofstream(root_ / "target") << "secret";
  fs::create_symlink(root_ / "target", root_ / "link");
  EXPECT_TRUE(HashFile((root_ / "link").string()).ok());
  EXPECT_FALSE(HashFile((root_ / "link").string(), /*follow_symlinks=*/false).ok());
  auto plain = HashFile((root_ / "target").string(), false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->size, 6u);
}

// Deterministic, non-repeating bytes: every chunk differs from every other.
std::string Bytes(size_t n, uint32_t seed = 1) {
  std::string out(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = static_cast<char>(x >> 24);
  }
  return out;
}

std::string Sha(std::string_view data) {
  Sha256 h;
  h.Update(data.data(), data.size());
  return h.RawDigest();
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Manifest ManifestOf(const std::string& bytes) {
  Manifest m;
  m.sha256 = ToHex(Sha(bytes));
  m.size = bytes.size();
  for (size_t off = 0; off < bytes.size(); off += kChunkBytes) {
    m.chunk_sha256.push_back(Sha(std::string_view(bytes).substr(off, kChunkBytes)));
  }
  return m;
}

std::string_view ChunkOf(const std::string& bytes, uint32_t i) {
  return std::string_view(bytes).substr(uint64_t{i} * kChunkBytes, kChunkBytes);
}

TEST_F(BlobTest, ManifestOfFileCoversEveryChunkBoundary) {
  for (size_t size : {size_t{0}, size_t{1}, kChunkBytes - 1, kChunkBytes, kChunkBytes + 1,
                      3 * kChunkBytes + 5}) {
    SCOPED_TRACE(size);
    const std::string bytes = Bytes(size, static_cast<uint32_t>(size));
    const fs::path file = root_ / "f";
    std::ofstream(file, std::ios::binary) << bytes;
    auto m = ManifestOfFile(file.string());
    ASSERT_TRUE(m.ok()) << m.status();
    auto d = HashFile(file.string());
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(m->sha256, d->sha256);
    EXPECT_EQ(m->size, size);
    EXPECT_EQ(m->chunk_count(), (size + kChunkBytes - 1) / kChunkBytes);
    EXPECT_EQ(*m, ManifestOf(bytes));
    for (uint32_t i = 0; i < m->chunk_count(); ++i) {
      EXPECT_EQ(m->ChunkSize(i), ChunkOf(bytes, i).size());
    }
    auto back = FromProto(ToProto(*m));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, *m);
  }
}

TEST_F(BlobTest, ManifestValidationNamesTheField) {
  const Manifest good = ManifestOf(Bytes(kChunkBytes + 1));
  v1::BlobManifest p = ToProto(good);
  p.add_chunk_sha256(std::string(32, 'x'));
  auto r = FromProto(p);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("chunk_sha256"), std::string::npos) << r.status();

  p = ToProto(good);
  p.set_chunk_sha256(1, std::string(31, 'x'));
  r = FromProto(p);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("chunk_sha256[1]"), std::string::npos) << r.status();

  p = ToProto(good);
  p.set_chunk_bytes(4096);
  EXPECT_EQ(FromProto(p).status().code(), absl::StatusCode::kInvalidArgument);
  p = ToProto(good);
  p.set_sha256("ABC");
  EXPECT_EQ(FromProto(p).status().code(), absl::StatusCode::kInvalidArgument);
  // A huge announced size with no hashes must not allocate anything.
  p = ToProto(good);
  p.set_size(uint64_t{1} << 62);
  EXPECT_FALSE(FromProto(p).ok());
}

class PartialTest : public BlobTest {
 protected:
  PartialBlob::Paths PathsFor(const std::string& name) {
    return PartialBlob::Paths{(root_ / (name + ".data")).string(),
                              (root_ / (name + ".manifest")).string(),
                              (root_ / "out" / name).string(),
                              (root_ / "out" / (name + ".manifest")).string()};
  }
};

TEST_F(PartialTest, ChunksArriveInAnyOrderAndPublishOnceComplete) {
  const std::string bytes = Bytes(3 * kChunkBytes + 100);
  const Manifest m = ManifestOf(bytes);
  auto p = PartialBlob::Open(PathsFor("b"), m);
  ASSERT_TRUE(p.ok()) << p.status();
  PartialBlob& pb = **p;
  EXPECT_EQ(pb.Publish().code(), absl::StatusCode::kFailedPrecondition);
  for (uint32_t i : {2u, 0u, 3u}) ASSERT_TRUE(pb.PutChunk(i, ChunkOf(bytes, i)).ok());
  EXPECT_EQ(pb.verified_prefix(), kChunkBytes);
  EXPECT_EQ(pb.NextMissing(), 1u);
  EXPECT_EQ(pb.Bitmap(), std::string(1, static_cast<char>(0b1101)));
  ASSERT_TRUE(pb.PutChunk(1, ChunkOf(bytes, 1)).ok());
  ASSERT_TRUE(pb.PutChunk(1, ChunkOf(bytes, 1)).ok());  // twice: harmless
  EXPECT_TRUE(pb.complete());
  ASSERT_TRUE(pb.Publish().ok());
  ASSERT_TRUE(pb.Publish().ok());  // idempotent
  EXPECT_EQ(ReadAll(pb.paths().dest), bytes);
  EXPECT_FALSE(fs::exists(pb.paths().data));
  EXPECT_FALSE(fs::exists(pb.paths().manifest));
  v1::BlobManifest stored;
  ASSERT_TRUE(stored.ParseFromString(ReadAll(pb.paths().dest_manifest)));
  EXPECT_EQ(*FromProto(stored), m);
}

TEST_F(PartialTest, ACorruptOrMisSizedChunkIsRefusedAndNotWritten) {
  const std::string bytes = Bytes(2 * kChunkBytes + 7);
  auto p = PartialBlob::Open(PathsFor("b"), ManifestOf(bytes));
  ASSERT_TRUE(p.ok());
  std::string bad(ChunkOf(bytes, 0));
  bad[1234] ^= 1;
  EXPECT_EQ((*p)->PutChunk(0, bad).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ((*p)->PutChunk(2, ChunkOf(bytes, 1)).code(), absl::StatusCode::kDataLoss);  // size
  EXPECT_EQ((*p)->PutChunk(3, "x").code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*p)->held_count(), 0u);
  EXPECT_EQ((*p)->verified_prefix(), 0u);
}

TEST_F(PartialTest, ReopenAfterRestartReverifiesAndKeepsOnlyGoodChunks) {
  const std::string bytes = Bytes(4 * kChunkBytes);
  const Manifest m = ManifestOf(bytes);
  {
    auto p = PartialBlob::Open(PathsFor("b"), m);
    ASSERT_TRUE(p.ok());
    for (uint32_t i : {0u, 1u, 2u}) ASSERT_TRUE((*p)->PutChunk(i, ChunkOf(bytes, i)).ok());
  }  // the process "dies"
  {
    // One byte of chunk 1 rots on disk.
    int fd = ::open(PathsFor("b").data.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const char c = static_cast<char>(bytes[kChunkBytes + 10] ^ 0x40);
    ASSERT_EQ(::pwrite(fd, &c, 1, kChunkBytes + 10), 1);
    ::close(fd);
  }
  auto p = PartialBlob::Open(PathsFor("b"), m);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->Has(0));
  EXPECT_FALSE((*p)->Has(1));
  EXPECT_TRUE((*p)->Has(2));
  EXPECT_FALSE((*p)->Has(3));
  EXPECT_EQ((*p)->verified_prefix(), kChunkBytes);
  ASSERT_TRUE((*p)->PutChunk(1, ChunkOf(bytes, 1)).ok());
  ASSERT_TRUE((*p)->PutChunk(3, ChunkOf(bytes, 3)).ok());
  ASSERT_TRUE((*p)->Publish().ok());
  EXPECT_EQ(ReadAll((*p)->paths().dest), bytes);
}

TEST_F(PartialTest, ReopenWithAnotherManifestStartsOver) {
  const std::string bytes = Bytes(2 * kChunkBytes);
  {
    auto p = PartialBlob::Open(PathsFor("b"), ManifestOf(bytes));
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE((*p)->PutChunk(0, ChunkOf(bytes, 0)).ok());
  }
  Manifest other = ManifestOf(bytes);
  other.chunk_sha256[1] = std::string(32, 'z');
  auto p = PartialBlob::Open(PathsFor("b"), other);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->held_count(), 0u);
}

TEST_F(PartialTest, AManifestWhoseChunksDoNotMakeTheBlobIsNeverPublished) {
  const std::string bytes = Bytes(2 * kChunkBytes + 3);
  Manifest lying = ManifestOf(bytes);
  lying.sha256 = ToHex(Sha("something else"));  // chunk hashes match the data; the blob does not
  auto p = PartialBlob::Open(PathsFor("b"), lying);
  ASSERT_TRUE(p.ok());
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE((*p)->PutChunk(i, ChunkOf(bytes, i)).ok());
  EXPECT_EQ((*p)->Publish().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(fs::exists((*p)->paths().dest));
  EXPECT_FALSE(fs::exists((*p)->paths().data));
  EXPECT_FALSE(fs::exists((*p)->paths().manifest));
  EXPECT_EQ((*p)->PutChunk(0, ChunkOf(bytes, 0)).code(), absl::StatusCode::kFailedPrecondition);
}

// Feeds ReceiveUpload a list of messages, as a PutBlob stream would.
absl::StatusOr<v1::PutBlobReply> Upload(BlobStore& store, std::vector<v1::BlobChunk> msgs) {
  size_t next = 0;
  return store.ReceiveUpload([&](v1::BlobChunk* m) {
    if (next == msgs.size()) return false;
    *m = msgs[next++];
    return true;
  });
}

std::vector<v1::BlobChunk> Messages(const std::string& bytes, const Manifest& m,
                                    uint32_t from = 0) {
  std::vector<v1::BlobChunk> out;
  for (uint32_t i = from; i < m.chunk_count() || out.empty(); ++i) {
    v1::BlobChunk c;
    if (out.empty()) {
      c.set_sha256(m.sha256);
      c.set_size(m.size);
      c.set_offset(uint64_t{from} * kChunkBytes);
      for (const auto& h : m.chunk_sha256) c.add_chunk_sha256(h);
    }
    if (i < m.chunk_count()) c.set_data(std::string(ChunkOf(bytes, i)));
    out.push_back(std::move(c));
  }
  return out;
}

TEST_F(BlobTest, StoreRefusesHostileUploadsAndKeepsVerifiedChunks) {
  BlobStore store((root_ / "store").string());
  ASSERT_TRUE(store.Init(platform::SystemClock().WallMs()).ok());
  const std::string bytes = Bytes(3 * kChunkBytes + 1);
  const Manifest m = ManifestOf(bytes);

  auto msgs = Messages(bytes, m);
  msgs[0].set_size(uint64_t{1} << 50);  // a huge announced size (no matching hashes)
  EXPECT_EQ(Upload(store, msgs).status().code(), absl::StatusCode::kInvalidArgument);
  msgs = Messages(bytes, m);
  msgs[0].set_offset(100);
  EXPECT_EQ(Upload(store, msgs).status().code(), absl::StatusCode::kInvalidArgument);
  msgs = Messages(bytes, m);
  msgs[1].mutable_data()->push_back('x');  // a chunk of the wrong size
  EXPECT_EQ(Upload(store, msgs).status().code(), absl::StatusCode::kDataLoss);
  // Chunk 0 was verified before chunk 1 was refused: an upload resumes after it.
  EXPECT_EQ(store.ResumeOffset(m.sha256), kChunkBytes);
  {
    const std::string other = Bytes(kChunkBytes + 2, 7);
    auto extra = Messages(other, ManifestOf(other));
    v1::BlobChunk again = extra.back();
    extra.push_back(again);  // one chunk too many
    EXPECT_EQ(Upload(store, extra).status().code(), absl::StatusCode::kDataLoss);
    EXPECT_FALSE(store.Has(ManifestOf(other).sha256));
  }

  // An upload cut after two chunks, then resumed from the offset the store reports.
  msgs = Messages(bytes, m);
  msgs.resize(2);
  auto cut = Upload(store, msgs);
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.ResumeOffset(m.sha256), 2 * kChunkBytes);
  v1::HasBlobsRequest q;
  q.add_sha256(m.sha256);
  v1::HasBlobsReply has = store.Query(q);
  EXPECT_FALSE(has.present(0));
  EXPECT_EQ(has.resume_offset(0), 2 * kChunkBytes);
  {
    // Another process (a coordinator restart) sees the same verified prefix.
    BlobStore again((root_ / "store").string());
    ASSERT_TRUE(again.Init(platform::SystemClock().WallMs()).ok());
    EXPECT_EQ(again.ResumeOffset(m.sha256), 2 * kChunkBytes);
  }
  auto done = Upload(store, Messages(bytes, m, 2));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(store.Has(m.sha256));
  EXPECT_EQ(ReadAll(store.PathOf(m.sha256)), bytes);
  auto got = store.GetManifest(m.sha256);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, m);
}

TEST_F(BlobTest, StoreComputesMissingManifestsAndServesRanges) {
  BlobStore store((root_ / "store").string());
  ASSERT_TRUE(store.Init(platform::SystemClock().WallMs()).ok());
  const std::string bytes = Bytes(2 * kChunkBytes + 10);
  const Manifest m = ManifestOf(bytes);
  ASSERT_TRUE(Upload(store, Messages(bytes, m)).ok());
  fs::remove(store.PathOf(m.sha256) + ".manifest");
  auto got = store.GetManifest(m.sha256);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, m);
  EXPECT_EQ(store.GetManifest(ToHex(Sha("absent"))).status().code(), absl::StatusCode::kNotFound);

  v1::GetBlobRequest req;
  req.set_sha256(m.sha256);
  req.set_offset(kChunkBytes - 5);
  req.set_length(kChunkBytes + 10);
  std::string served;
  std::vector<uint64_t> offsets;
  ASSERT_TRUE(store.ServeRange(req, [&](const v1::BlobChunk& c) {
                offsets.push_back(c.offset());
                served += c.data();
                return true;
              }).ok());
  EXPECT_EQ(served, bytes.substr(kChunkBytes - 5, kChunkBytes + 10));
  EXPECT_EQ(offsets, (std::vector<uint64_t>{kChunkBytes - 5, kChunkBytes, 2 * kChunkBytes}));
  req.set_length(bytes.size());
  EXPECT_EQ(store.ServeRange(req, [](const v1::BlobChunk&) { return true; }).code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(BlobTest, StoreSharesOnePartialPerBlobAndRefusesAConflictingManifest) {
  BlobStore store((root_ / "store").string());
  ASSERT_TRUE(store.Init(platform::SystemClock().WallMs()).ok());
  const std::string bytes = Bytes(2 * kChunkBytes);
  const Manifest m = ManifestOf(bytes);
  auto a = store.OpenPartial(m);
  auto b = store.OpenPartial(m);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  Manifest other = m;
  other.chunk_sha256[0] = std::string(32, 'q');
  EXPECT_EQ(store.OpenPartial(other).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(BlobTest, StoreInitRemovesOnlyStalePartials) {
  const std::string dir = (root_ / "store").string();
  const int64_t now = platform::SystemClock().WallMs();
  const std::string bytes = Bytes(kChunkBytes + 1);
  const Manifest m = ManifestOf(bytes);
  {
    BlobStore store(dir);
    ASSERT_TRUE(store.Init(now).ok());
    auto p = store.OpenPartial(m);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE((*p)->PutChunk(0, ChunkOf(bytes, 0)).ok());
  }
  {
    BlobStore store(dir);
    ASSERT_TRUE(store.Init(now + 3600 * 1000).ok());  // an hour later: kept
    EXPECT_EQ(store.ResumeOffset(m.sha256), kChunkBytes);
  }
  BlobStore store(dir);
  ASSERT_TRUE(store.Init(now + 25 * 3600 * 1000).ok());  // a day later: garbage
  EXPECT_EQ(store.ResumeOffset(m.sha256), 0u);
  EXPECT_TRUE(fs::is_empty(fs::path(dir) / "partial"));
}

}  // namespace
}  // namespace idlepool::blob
