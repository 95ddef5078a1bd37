// BlobDir and file hashing: what a worker's cache and the coordinator's blob store rely on.
#include "blob/blob.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
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

}  // namespace
}  // namespace idlepool::blob
