// Opening a task's files beneath its dir (platform/beneath.h): every case runs through openat2
// and through the component walk that stands in for it on older kernels. A "secret" lives next
// to the dir, outside it, as the owner's key would.
#include "platform/beneath.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "platform/random.h"

namespace idlepool::platform {
namespace {

namespace fs = std::filesystem;

constexpr char kSecret[] = "-----BEGIN OPENSSH PRIVATE KEY----- owner's";

void Write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (off_t off = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return out;
}

class BeneathTest : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("beneath-test-" + RandomHex(6));
    dir_ = root_ / "task";
    fs::create_directories(dir_);
    secret_ = root_ / "home" / ".ssh" / "id_rsa";
    Write(secret_, kSecret);
    auto fd = OpenDirectory(dir_.string());
    ASSERT_TRUE(fd.ok()) << fd.status();
    dir_fd_ = std::move(*fd);
  }
  void TearDown() override { fs::remove_all(root_); }

  absl::StatusOr<OpenedFile> Open(std::string_view rel) {
    return OpenFileBeneath(dir_fd_.get(), rel, GetParam());
  }

  fs::path root_, dir_, secret_;
  UniqueFd dir_fd_;
};

TEST_P(BeneathTest, ARegularFileOpensAtTopLevelAndNested) {
  Write(dir_ / "out.txt", "top");
  Write(dir_ / "a" / "b" / "frame.png", "nested");
  auto top = Open("out.txt");
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(ReadAll(top->fd.get()), "top");
  EXPECT_TRUE(S_ISREG(top->st.st_mode));
  EXPECT_EQ(top->st.st_size, 3);
  auto nested = Open("a/b/frame.png");
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(ReadAll(nested->fd.get()), "nested");
  EXPECT_EQ(Open("missing.txt").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Open("a/missing/x").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(BeneathTest, ASymlinkAtTheEndIsRefusedWhereverItPoints) {
  fs::create_symlink(secret_, dir_ / "out.txt");
  auto st = Open("out.txt");
  EXPECT_EQ(st.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.status().message(), "'out.txt' is a symbolic link");
  // Inside the dir too: a link is never an output.
  Write(dir_ / "frame10.png", "frame");
  fs::create_symlink("frame10.png", dir_ / "latest.png");
  EXPECT_EQ(Open("latest.png").status().message(), "'latest.png' is a symbolic link");
}

TEST_P(BeneathTest, ASymlinkInTheMiddleIsRefusedAndNamed) {
  fs::create_directory_symlink(secret_.parent_path(), dir_ / "outdir");
  auto st = Open("outdir/id_rsa");
  EXPECT_EQ(st.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.status().message(), "'outdir' is a symbolic link");
  fs::create_directories(dir_ / "a");
  fs::create_directory_symlink("/etc", dir_ / "a" / "etc");
  EXPECT_EQ(Open("a/etc/passwd").status().message(), "'a/etc' is a symbolic link");
  // A link to a dir inside the task dir is refused all the same.
  fs::create_directories(dir_ / "real");
  Write(dir_ / "real" / "x", "x");
  fs::create_directory_symlink("real", dir_ / "alias");
  EXPECT_EQ(Open("alias/x").status().message(), "'alias' is a symbolic link");
  Write(dir_ / "file", "f");
  EXPECT_EQ(Open("file/x").status().message(), "'file' is not a directory");
}

TEST_P(BeneathTest, DotDotAbsoluteAndUnnormalizedPathsAreRefusedBeforeAnyLookup) {
  for (const char* rel : {"../home/.ssh/id_rsa", "a/../../home/.ssh/id_rsa", "..", "/etc/passwd",
                          "./out.txt", "a//b", "a/", ""}) {
    auto st = Open(rel);
    EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument) << rel << ": " << st.status();
  }
  EXPECT_EQ(Open(std::string("a\0b", 3)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Open(std::string(5000, 'a')).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(BeneathTest, AHardLinkToAFileOutsideIsRefused) {
  ASSERT_EQ(::link(secret_.c_str(), (dir_ / "out.txt").c_str()), 0) << std::strerror(errno);
  auto st = Open("out.txt");
  EXPECT_EQ(st.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.status().message(), "'out.txt' has 2 hard links");
  // Two names inside the dir are refused as well: the count is all the worker can see.
  Write(dir_ / "a.txt", "a");
  ASSERT_EQ(::link((dir_ / "a.txt").c_str(), (dir_ / "b.txt").c_str()), 0);
  EXPECT_EQ(Open("a.txt").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(BeneathTest, DirectoriesFifosSocketsAndDevicesAreRefusedWithoutBlocking) {
  fs::create_directories(dir_ / "sub");
  EXPECT_EQ(Open("sub").status().message(), "'sub' is a directory");
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(Open("fifo").status().message(), "'fifo' is a FIFO");  // would block without O_NONBLOCK
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = (dir_ / "sock").string();
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(Open("sock").status().message(), "'sock' is a socket");
  ::close(s);
  // Device nodes need CAP_MKNOD: checked where the test runs as root.
  if (::mknod((dir_ / "null").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) {
    EXPECT_EQ(Open("null").status().message(), "'null' is a device");
  }
}

// The check is on the descriptor: a swap after one open cannot change what it reads, and the
// next open sees the link.
TEST_P(BeneathTest, ASwapToASymlinkBetweenCallsIsSeenByTheNextOpen) {
  Write(dir_ / "out.txt", "the task's work");
  auto first = Open("out.txt");
  ASSERT_TRUE(first.ok()) << first.status();
  fs::create_symlink(secret_, dir_ / "swap.tmp");
  fs::rename(dir_ / "swap.tmp", dir_ / "out.txt");  // atomic, as a hostile task would do it
  EXPECT_EQ(ReadAll(first->fd.get()), "the task's work");
  EXPECT_EQ(Open("out.txt").status().message(), "'out.txt' is a symbolic link");
}

// A task swapping a file and a link to the secret as fast as it can, while the worker opens:
// every open that succeeds is the task's file, never the secret.
TEST_P(BeneathTest, ARacingSwapNeverYieldsTheSecret) {
  Write(dir_ / "real", "the task's work");
  fs::create_directories(dir_ / "sub");
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string out = (dir_ / "sub" / "out.txt").string();
    const std::string lnk = (dir_ / "lnk.tmp").string();
    const std::string reg = (dir_ / "reg.tmp").string();
    const std::string sub = (dir_ / "sub").string();
    const std::string sublink = (dir_ / "sublink.tmp").string();
    while (!stop.load()) {
      ::symlink(secret_.c_str(), lnk.c_str());
      ::rename(lnk.c_str(), out.c_str());
      std::ofstream(reg) << "the task's work";
      ::rename(reg.c_str(), out.c_str());
      // The parent dir too: replaced by a link to the secret's dir for a moment.
      ::rename(sub.c_str(), (dir_ / "sub.away").c_str());
      ::symlink(secret_.parent_path().c_str(), sublink.c_str());
      ::rename(sublink.c_str(), sub.c_str());
      ::unlink(sub.c_str());
      ::rename((dir_ / "sub.away").c_str(), sub.c_str());
    }
  });
  // Until both outcomes were seen many times (bounded): a pass means the race was run.
  int opened = 0, links = 0;
  std::string leaked;
  for (int i = 0; i < 200000 && leaked.empty() && (opened < 200 || links < 200); ++i) {
    for (const char* rel : {"sub/out.txt", "sub/id_rsa"}) {
      auto f = Open(rel);
      if (f.ok()) {
        ++opened;
        if (ReadAll(f->fd.get()) != "the task's work") leaked = rel;
      } else if (absl::StrContains(f.status().message(), "symbolic link")) {
        ++links;
      }
    }
  }
  stop.store(true);
  swapper.join();
  EXPECT_EQ(leaked, "") << "read the secret through " << leaked;
  EXPECT_GE(opened, 200);
  EXPECT_GE(links, 200);
}

TEST_P(BeneathTest, DirectoriesOpenBeneathAndLinksToDirectoriesAreRefused) {
  fs::create_directories(dir_ / "a" / "b");
  auto ok = OpenDirectoryBeneath(dir_fd_.get(), "a/b", GetParam());
  ASSERT_TRUE(ok.ok()) << ok.status();
  fs::create_directory_symlink("/etc", dir_ / "a" / "etc");
  EXPECT_EQ(OpenDirectoryBeneath(dir_fd_.get(), "a/etc", GetParam()).status().message(),
            "'a/etc' is a symbolic link");
  Write(dir_ / "a" / "f", "f");
  EXPECT_EQ(OpenDirectoryBeneath(dir_fd_.get(), "a/f", GetParam()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(OpenDirectoryBeneath(dir_fd_.get(), "../home", GetParam()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Resolvers, BeneathTest,
                         ::testing::Values(Resolver::kAuto, Resolver::kWalk), [](const auto& info) {
                           return info.param == Resolver::kAuto ? "Openat2" : "Walk";
                         });

TEST(ListDirectoryTest, KindsAsLstatSeesThemSortedWithoutDotEntries) {
  const fs::path dir = fs::temp_directory_path() / ("beneath-list-" + RandomHex(6));
  fs::create_directories(dir / "d");
  Write(dir / "b.txt", "b");
  fs::create_symlink("/etc", dir / "a-link");
  ASSERT_EQ(::mkfifo((dir / "c.fifo").c_str(), 0600), 0);
  auto fd = OpenDirectory(dir.string());
  ASSERT_TRUE(fd.ok());
  auto entries = ListDirectory(fd->get());
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].name, "a-link");
  EXPECT_EQ((*entries)[0].kind, EntryKind::kSymlink);
  EXPECT_EQ((*entries)[1].name, "b.txt");
  EXPECT_EQ((*entries)[1].kind, EntryKind::kRegular);
  EXPECT_EQ((*entries)[2].kind, EntryKind::kOther);
  EXPECT_EQ((*entries)[3].name, "d");
  EXPECT_EQ((*entries)[3].kind, EntryKind::kDirectory);
  // Listing twice through the same fd sees the same (it reads through a fresh descriptor).
  EXPECT_EQ(ListDirectory(fd->get())->size(), 4u);
  EXPECT_EQ(KindOf(fd->get(), "a-link").value(), EntryKind::kSymlink);
  EXPECT_EQ(KindOf(fd->get(), "nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(KindOf(fd->get(), "..").status().code(), absl::StatusCode::kInvalidArgument);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace idlepool::platform
