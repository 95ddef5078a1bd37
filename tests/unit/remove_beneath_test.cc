// Emptying a task's dir without following links out of it (platform/remove_beneath.h).
#include "platform/remove_beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "platform/beneath.h"
#include "platform/random.h"

namespace idlepool::platform {
namespace {

namespace fs = std::filesystem;

class RemoveBeneathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("remove-beneath-" + RandomHex(6));
    dir_ = root_ / "task";
    outside_ = root_ / "owner";
    fs::create_directories(dir_);
    fs::create_directories(outside_);
    Write(outside_ / "id_rsa", "key");
    ASSERT_EQ(::chmod(outside_.c_str(), 0550), 0);  // a chmod u+rwx through a link would show
    auto fd = OpenDirectory(dir_.string());
    ASSERT_TRUE(fd.ok()) << fd.status();
    fd_ = std::move(*fd);
  }
  void TearDown() override {
    fs::permissions(root_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(root_);
  }
  static void Write(const fs::path& p, const std::string& content) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  // The owner's dir is as it was: its file there, its mode unchanged.
  void ExpectOwnerUntouched() {
    EXPECT_TRUE(fs::exists(outside_ / "id_rsa"));
    struct stat st;
    ASSERT_EQ(::stat(outside_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0550u);
  }
  fs::path root_, dir_, outside_;
  UniqueFd fd_;
};

TEST_F(RemoveBeneathTest, EmptiesTheTreeReadOnlyDirsIncludedAndUnlinksLinksOnly) {
  Write(dir_ / "a" / "b" / "c.txt", "c");
  Write(dir_ / "ro" / "f", "f");
  ASSERT_EQ(::chmod((dir_ / "ro").c_str(), 0), 0);
  fs::create_directory_symlink(outside_, dir_ / "ssh");
  fs::create_symlink(outside_ / "id_rsa", dir_ / "key");
  ASSERT_EQ(::link((outside_ / "id_rsa").c_str(), (dir_ / "hard").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_TRUE(RemoveContentsBeneath(fd_.get()).ok());
  EXPECT_TRUE(fs::is_empty(dir_));
  ExpectOwnerUntouched();
}

// A process that outlived its task swaps a subdirectory for a link to the owner's dir while the
// worker empties the task dir, as fast as it can: nothing of the owner's is removed or chmodded.
TEST_F(RemoveBeneathTest, ARacingSwapNeverLeadsOutOfTheDir) {
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  std::thread swapper([&] {
    const std::string sub = (dir_ / "sub").string(), alt = (dir_ / "alt").string();
    while (!stop.load()) {
      // "sub" is a directory, or (exchanged atomically) a link to the owner's dir.
      ::mkdir(sub.c_str(), 0700);
      std::ofstream(sub + "/id_rsa") << "task";
      ::symlink(outside_.c_str(), alt.c_str());
      for (int i = 0; i < 20; ++i)
        ::renameat2(AT_FDCWD, sub.c_str(), AT_FDCWD, alt.c_str(), RENAME_EXCHANGE);
      ++swaps;
    }
  });
  for (int i = 0; i < 5000000 && swaps.load() < 500; ++i) {
    (void)RemoveContentsBeneath(fd_.get());
  }
  stop.store(true);
  swapper.join();
  EXPECT_GE(swaps.load(), 500);
  ExpectOwnerUntouched();
}

TEST_F(RemoveBeneathTest, StopsPastTheDepthLimit) {
  int cur = ::dup(fd_.get());
  for (int i = 0; i < kMaxRemoveDepth + 5; ++i) {
    ASSERT_EQ(::mkdirat(cur, "d", 0700), 0);
    const int next = ::openat(cur, "d", O_PATH | O_DIRECTORY | O_CLOEXEC);
    ::close(cur);
    cur = next;
  }
  ::close(cur);
  EXPECT_EQ(RemoveContentsBeneath(fd_.get()).code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace idlepool::platform
