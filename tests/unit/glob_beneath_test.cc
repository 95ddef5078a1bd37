// Output patterns matched beneath a task dir (platform/glob_beneath.h): glob(3)'s syntax, but no
// symbolic link is ever followed out of the dir.
#include "platform/glob_beneath.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "platform/random.h"

namespace idlepool::platform {
namespace {

namespace fs = std::filesystem;

class GlobBeneathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("glob-beneath-" + RandomHex(6));
    dir_ = root_ / "task";
    fs::create_directories(dir_);
    fs::create_directories(root_ / "outside");
    Touch(root_ / "outside" / "passwd");
    Touch(root_ / "outside" / "x.txt");
    auto fd = OpenDirectory(dir_.string());
    ASSERT_TRUE(fd.ok()) << fd.status();
    fd_ = std::move(*fd);
  }
  void TearDown() override { fs::remove_all(root_); }
  static void Touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
  }
  // "rel:kind" of every match, or the error's message.
  std::vector<std::string> Glob(std::string_view pattern) {
    auto m = GlobBeneath(fd_.get(), pattern);
    if (!m.ok()) return {std::string(m.status().message())};
    std::vector<std::string> out;
    for (const auto& g : *m) {
      const char* kind = g.kind == EntryKind::kRegular     ? "file"
                         : g.kind == EntryKind::kDirectory ? "dir"
                         : g.kind == EntryKind::kSymlink   ? "link"
                                                           : "other";
      out.push_back(g.rel + ":" + kind);
    }
    return out;
  }
  using V = std::vector<std::string>;
  fs::path root_, dir_;
  UniqueFd fd_;
};

TEST_F(GlobBeneathTest, MatchesLikeGlobLevelByLevelSorted) {
  Touch(dir_ / "out" / "f2.png");
  Touch(dir_ / "out" / "f1.png");
  Touch(dir_ / "out" / "notes.txt");
  Touch(dir_ / "scene.blend.log");
  Touch(dir_ / "a*b");
  Touch(dir_ / "axb");
  fs::create_directories(dir_ / "out" / "sub.png");
  EXPECT_EQ(Glob("out/*.png"), (V{"out/f1.png:file", "out/f2.png:file", "out/sub.png:dir"}));
  EXPECT_EQ(Glob("*.blend.log"), (V{"scene.blend.log:file"}));
  EXPECT_EQ(Glob("out/f?.png"), (V{"out/f1.png:file", "out/f2.png:file"}));
  EXPECT_EQ(Glob("out/f[2].png"), (V{"out/f2.png:file"}));
  EXPECT_EQ(Glob("*/notes.txt"), (V{"out/notes.txt:file"}));
  EXPECT_EQ(Glob("a\\*b"), (V{"a*b:file"}));  // an escaped '*' is itself
  EXPECT_EQ(Glob("out/notes.txt"), (V{"out/notes.txt:file"}));
  EXPECT_EQ(Glob("nothing*"), V{});
  EXPECT_EQ(Glob("missing/x"), V{});
  EXPECT_EQ(Glob("scene.blend.log/x"), V{});  // a file is not a directory to descend into
}

TEST_F(GlobBeneathTest, HiddenNamesOnlyByAnExplicitDotAndNeverDotEntries) {
  Touch(dir_ / ".hidden");
  Touch(dir_ / "shown");
  EXPECT_EQ(Glob("*"), (V{"shown:file"}));
  EXPECT_EQ(Glob(".*"), (V{".hidden:file"}));  // not "." nor ".."
  EXPECT_EQ(Glob(".*/passwd"), V{});           // ".." is never walked into
}

TEST_F(GlobBeneathTest, ALinkedDirectoryNamedByThePatternFailsTheMatch) {
  fs::create_directory_symlink(root_ / "outside", dir_ / "outdir");
  EXPECT_EQ(Glob("outdir/*"), (V{"'outdir' is a symbolic link"}));
  fs::create_directories(dir_ / "a");
  fs::create_directory_symlink("/etc", dir_ / "a" / "etc");
  EXPECT_EQ(Glob("*/etc/passwd"), (V{"'a/etc' is a symbolic link"}));
}

TEST_F(GlobBeneathTest, AWildcardPassesOverLinkedDirectories) {
  Touch(dir_ / "real" / "x.txt");
  fs::create_directory_symlink(root_ / "outside", dir_ / "link");
  EXPECT_EQ(Glob("*/x.txt"), (V{"real/x.txt:file"}));
  EXPECT_EQ(Glob("*/*"), (V{"real/x.txt:file"}));
}

TEST_F(GlobBeneathTest, LinksAtTheEndAreReturnedAsLinksForTheCallerToRefuse) {
  Touch(dir_ / "a.txt");
  fs::create_symlink("a.txt", dir_ / "b.txt");
  fs::create_symlink(root_ / "outside" / "passwd", dir_ / "c.txt");
  EXPECT_EQ(Glob("*.txt"), (V{"a.txt:file", "b.txt:link", "c.txt:link"}));
  EXPECT_EQ(Glob("c.txt"), (V{"c.txt:link"}));
  ASSERT_EQ(::mkfifo((dir_ / "d.txt").c_str(), 0600), 0);
  EXPECT_EQ(Glob("d.txt"), (V{"d.txt:other"}));
}

TEST_F(GlobBeneathTest, PatternsThatLeaveTheDirAreInvalid) {
  for (const char* p : {"../outside/*", "/etc/*", "a/../../outside/x.txt", "./x", "a//b", ""}) {
    auto m = GlobBeneath(fd_.get(), p);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << p;
  }
}

}  // namespace
}  // namespace idlepool::platform
