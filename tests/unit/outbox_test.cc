// The outbox's layout: a report without outputs is one bare file, a report with outputs an entry
// dir; both come back from Open() after a restart; a torn report is dropped, not delivered.
#include "worker/outbox.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace idlepool::worker {
namespace {
namespace fs = std::filesystem;

class OutboxTest : public ::testing::Test {
 protected:
  OutboxTest()
      : dir_(fs::path(::testing::TempDir()) /
             ::testing::UnitTest::GetInstance()->current_test_info()->name()) {
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "task");
  }
  ~OutboxTest() override { fs::remove_all(dir_); }

  static v1::AttemptReport Report(uint64_t id) {
    v1::AttemptReport r;
    r.set_attempt(id);
    r.set_exit_code(0);
    r.mutable_timing()->set_run_ms(5);
    return r;
  }
  fs::path dir_;
};

TEST_F(OutboxTest, AReportWithoutOutputsIsOneFileAndSurvivesARestart) {
  Outbox box((dir_ / "outbox").string());
  ASSERT_TRUE(box.Open().ok());
  ASSERT_TRUE(box.File(Report(7), (dir_ / "task").string(), {}).ok());
  EXPECT_TRUE(fs::is_regular_file(dir_ / "outbox" / "7.pb"));
  EXPECT_FALSE(fs::exists(dir_ / "outbox" / "7"));
  auto reopened = Outbox((dir_ / "outbox").string()).Open();
  ASSERT_TRUE(reopened.ok());
  ASSERT_EQ(reopened->size(), 1u);
  EXPECT_EQ((*reopened)[0].attempt(), 7u);
  box.Remove(7);
  EXPECT_TRUE(fs::is_empty(dir_ / "outbox"));
}

TEST_F(OutboxTest, AReportWithOutputsIsAnEntryDirWithItsFiles) {
  Outbox box((dir_ / "outbox").string());
  ASSERT_TRUE(box.Open().ok());
  std::ofstream(dir_ / "task" / "out.txt") << "x";
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "task" / "out.txt").c_str(), &st), 0);
  v1::AttemptReport r = Report(8);
  r.add_outputs()->set_path("out.txt");
  ASSERT_TRUE(box.File(r, (dir_ / "task").string(), {{"out.txt", {st.st_dev, st.st_ino}}}).ok());
  EXPECT_TRUE(fs::is_regular_file(box.PathOf(8, "out.txt")));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "outbox" / "8" / "report.pb"));
  auto reopened = Outbox((dir_ / "outbox").string()).Open();
  ASSERT_TRUE(reopened.ok());
  ASSERT_EQ(reopened->size(), 1u);
  EXPECT_EQ((*reopened)[0].outputs(0).path(), "out.txt");
  box.Remove(8);
  EXPECT_TRUE(fs::is_empty(dir_ / "outbox"));
}

TEST_F(OutboxTest, TornReportsAndStrayTempsAreDroppedOnOpen) {
  fs::create_directories(dir_ / "outbox");
  std::ofstream(dir_ / "outbox" / "9.pb");                 // empty: a power cut tore it
  std::ofstream(dir_ / "outbox" / "10.pb.tmp") << "half";  // the rename never came
  Outbox box((dir_ / "outbox").string());
  ASSERT_TRUE(box.File(Report(11), (dir_ / "task").string(), {}).ok());
  auto opened = box.Open();
  ASSERT_TRUE(opened.ok());
  ASSERT_EQ(opened->size(), 1u);
  EXPECT_EQ((*opened)[0].attempt(), 11u);
  EXPECT_FALSE(fs::exists(dir_ / "outbox" / "9.pb"));
  EXPECT_FALSE(fs::exists(dir_ / "outbox" / "10.pb.tmp"));
}

}  // namespace
}  // namespace idlepool::worker
