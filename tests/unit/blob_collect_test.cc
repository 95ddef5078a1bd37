// The mark rule of blob collection (blob/collect.h): unreferenced and past the grace, or released
// by a deleted job and untouched since it finished; and the blob store's listing and touch.
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "blob/blob.h"
#include "blob/collect.h"
#include "blob/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace idlepool::blob {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string Sha(char hex) { return std::string(64, hex); }

TEST(BlobCollect, OnlyUnreferencedBlobsPastTheGraceGo) {
  const std::vector<BlobFile> disk = {
      {Sha('a'), 1, 1000},    // referenced
      {Sha('b'), 2, 1000},    // old, unreferenced: goes
      {Sha('c'), 3, 9500},    // uploaded within the grace
      {Sha('d'), 4, 20000}};  // touched in the future (a clock step)
  MarkInput in;
  in.now_ms = 10000;
  in.grace = milliseconds(1000);
  EXPECT_THAT(Unreferenced(disk, {Sha('a')}, in), ElementsAre(BlobFile{Sha('b'), 2, 1000}));
  in.grace = milliseconds(9000);  // exactly the grace old: kept
  EXPECT_THAT(Unreferenced(disk, {Sha('a')}, in), IsEmpty());
}

TEST(BlobCollect, ADeletedJobsBlobsGoWithinTheGraceUnlessTouchedSinceItFinished) {
  const std::vector<BlobFile> disk = {{Sha('a'), 1, 5000},   // its input, not touched since
                                      {Sha('b'), 2, 8000},   // asked for after it finished
                                      {Sha('c'), 3, 5000},   // another job still uses it
                                      {Sha('e'), 4, 5000}};  // not the deleted job's
  MarkInput in;
  in.now_ms = 9000;
  in.grace = std::chrono::hours(1);
  in.released = {{Sha('a'), 7000}, {Sha('b'), 7000}, {Sha('c'), 7000}};
  EXPECT_THAT(Unreferenced(disk, {Sha('c')}, in), ElementsAre(BlobFile{Sha('a'), 1, 5000}));
}

TEST(BlobCollect, TheStoreListsCompleteBlobsAndATouchRestartsTheGrace) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "blob_collect_test";
  fs::remove_all(root);
  BlobStore store(root.string());
  ASSERT_TRUE(store.Init(0).ok());
  const std::string sha = "ab" + std::string(62, 'c');  // the listing does not hash
  fs::create_directories(root / sha.substr(0, 2));
  std::ofstream(store.PathOf(sha)) << "hello";
  std::ofstream(store.PathOf(sha) + ".manifest") << "m";
  std::ofstream(root / "partial" / (Sha('f') + ".data")) << "partial";
  struct timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, store.PathOf(sha).c_str(), old, 0), 0);
  std::vector<BlobFile> listed = store.List();
  EXPECT_THAT(listed, ElementsAre(BlobFile{sha, 5, 1000 * 1000}));
  v1::HasBlobsRequest has;
  has.add_sha256(sha);
  ASSERT_TRUE(store.Query(has).present(0));  // HasBlobs touches what it reports present
  listed = store.List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_GT(listed[0].last_touch_ms, int64_t{1000} * 1000 * 1000);  // now, not 1970
  ASSERT_TRUE(store.Remove(sha).ok());
  EXPECT_THAT(store.List(), IsEmpty());
  EXPECT_FALSE(fs::exists(store.PathOf(sha) + ".manifest"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace idlepool::blob
