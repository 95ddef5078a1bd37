#include "platform/sensors.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

namespace idlepool::platform {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class SensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sensors_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    base_ = tmpl;
    dir_ = base_ / "sensors";
    fs::create_directory(dir_);
    fs::create_directory(base_ / "staging");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_, ec);
  }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << content;
  }
  void WriteAll() {
    Write("idle_seconds", "120\n");
    Write("on_ac_power", "1\n");
    Write("battery_percent", "87.5\n");
    Write("temperature_c", "64\n");
    Write("lid_closed", "0\n");
    Write("owner_cpu_load", "0.25\n");
    Write("sleep_imminent", "0\n");
  }
  std::unique_ptr<FakeSensorDir> Open() {
    auto s = FakeSensorDir::Open(dir_.string());
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return nullptr;
    // Drop events from writes made before Open (none are queued, but be safe).
    while ((*s)->WaitForChange(milliseconds(0))) {
    }
    return std::move(*s);
  }

  fs::path base_;
  fs::path dir_;
};

TEST_F(SensorsTest, MissingDirIsNotFound) {
  auto s = FakeSensorDir::Open((base_ / "nope").string());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SensorsTest, FileInsteadOfDirIsNotFound) {
  Write("idle_seconds", "1");
  auto s = FakeSensorDir::Open((dir_ / "idle_seconds").string());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SensorsTest, AllFilesPresentParse) {
  WriteAll();
  auto s = Open();
  ASSERT_NE(s, nullptr);
  owner::Readings r = s->Read();
  EXPECT_EQ(r.idle_seconds, 120.0);
  EXPECT_EQ(r.on_ac_power, true);
  EXPECT_EQ(r.battery_percent, 87.5);
  EXPECT_EQ(r.temperature_c, 64.0);
  EXPECT_EQ(r.lid_closed, false);
  EXPECT_EQ(r.owner_cpu_load, 0.25);
  EXPECT_EQ(r.sleep_imminent, false);
}

TEST_F(SensorsTest, EmptyDirAllUnknown) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  owner::Readings r = s->Read();
  EXPECT_FALSE(r.idle_seconds);
  EXPECT_FALSE(r.on_ac_power);
  EXPECT_FALSE(r.battery_percent);
  EXPECT_FALSE(r.temperature_c);
  EXPECT_FALSE(r.lid_closed);
  EXPECT_FALSE(r.owner_cpu_load);
  EXPECT_FALSE(r.sleep_imminent);
}

TEST_F(SensorsTest, EachMissingFileIsUnknownAlone) {
  const char* names[] = {"idle_seconds", "on_ac_power",    "battery_percent", "temperature_c",
                         "lid_closed",   "owner_cpu_load", "sleep_imminent"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    WriteAll();
    fs::remove(dir_ / name);
    auto s = Open();
    ASSERT_NE(s, nullptr);
    owner::Readings r = s->Read();
    std::string n = name;
    EXPECT_EQ(r.idle_seconds.has_value(), n != "idle_seconds");
    EXPECT_EQ(r.on_ac_power.has_value(), n != "on_ac_power");
    EXPECT_EQ(r.battery_percent.has_value(), n != "battery_percent");
    EXPECT_EQ(r.temperature_c.has_value(), n != "temperature_c");
    EXPECT_EQ(r.lid_closed.has_value(), n != "lid_closed");
    EXPECT_EQ(r.owner_cpu_load.has_value(), n != "owner_cpu_load");
    EXPECT_EQ(r.sleep_imminent.has_value(), n != "sleep_imminent");
  }
}

TEST_F(SensorsTest, GarbageOutOfRangeAndEmptyAreUnknown) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  const char* bad_numbers[] = {"",    "\n",  "   ", "abc", "12abc", "1 2",  "nan",
                               "inf", "-inf", "0x",  "--1", "1.2.3"};
  for (const char* v : bad_numbers) {
    SCOPED_TRACE(std::string("value '") + v + "'");
    Write("idle_seconds", v);
    Write("battery_percent", v);
    Write("temperature_c", v);
    Write("owner_cpu_load", v);
    owner::Readings r = s->Read();
    EXPECT_FALSE(r.idle_seconds);
    EXPECT_FALSE(r.battery_percent);
    EXPECT_FALSE(r.temperature_c);
    EXPECT_FALSE(r.owner_cpu_load);
  }
  Write("idle_seconds", std::string("5\0", 2));
  EXPECT_FALSE(s->Read().idle_seconds);
  // Out of range.
  Write("idle_seconds", "-1");
  Write("battery_percent", "100.5");
  Write("temperature_c", "1000");
  Write("owner_cpu_load", "1.01");
  owner::Readings r = s->Read();
  EXPECT_FALSE(r.idle_seconds);
  EXPECT_FALSE(r.battery_percent);
  EXPECT_FALSE(r.temperature_c);
  EXPECT_FALSE(r.owner_cpu_load);
  Write("battery_percent", "-0.1");
  Write("owner_cpu_load", "-0.5");
  Write("temperature_c", "-300");
  r = s->Read();
  EXPECT_FALSE(r.battery_percent);
  EXPECT_FALSE(r.owner_cpu_load);
  EXPECT_FALSE(r.temperature_c);
  // Booleans accept only 0 and 1.
  const char* bad_bools[] = {"", "2", "-1", "true", "yes", "0.0", "01", "1x"};
  for (const char* v : bad_bools) {
    SCOPED_TRACE(std::string("bool '") + v + "'");
    Write("on_ac_power", v);
    Write("lid_closed", v);
    Write("sleep_imminent", v);
    r = s->Read();
    EXPECT_FALSE(r.on_ac_power);
    EXPECT_FALSE(r.lid_closed);
    EXPECT_FALSE(r.sleep_imminent);
  }
  // A huge file is unknown, not a crash.
  Write("idle_seconds", std::string(1 << 20, '1'));
  EXPECT_FALSE(s->Read().idle_seconds);
  // A directory in place of a file is unknown.
  fs::create_directory(dir_ / "lid_closed.d");
  fs::remove(dir_ / "lid_closed");
  fs::rename(dir_ / "lid_closed.d", dir_ / "lid_closed");
  EXPECT_FALSE(s->Read().lid_closed);
}

TEST_F(SensorsTest, WhitespaceAndBoundsTolerated) {
  Write("idle_seconds", "  \t42.5 \r\n\n");
  Write("on_ac_power", "\n0\n");
  Write("battery_percent", "100");
  Write("temperature_c", "-5");
  Write("lid_closed", " 1 ");
  Write("owner_cpu_load", "+1");
  Write("sleep_imminent", "1");
  auto s = Open();
  ASSERT_NE(s, nullptr);
  owner::Readings r = s->Read();
  EXPECT_EQ(r.idle_seconds, 42.5);
  EXPECT_EQ(r.on_ac_power, false);
  EXPECT_EQ(r.battery_percent, 100.0);
  EXPECT_EQ(r.temperature_c, -5.0);
  EXPECT_EQ(r.lid_closed, true);
  EXPECT_EQ(r.owner_cpu_load, 1.0);
  EXPECT_EQ(r.sleep_imminent, true);
  Write("idle_seconds", "0");
  Write("owner_cpu_load", "0");
  Write("battery_percent", "0");
  r = s->Read();
  EXPECT_EQ(r.idle_seconds, 0.0);
  EXPECT_EQ(r.owner_cpu_load, 0.0);
  EXPECT_EQ(r.battery_percent, 0.0);
}

TEST_F(SensorsTest, WaitTimesOutWhenNothingChanges) {
  WriteAll();
  auto s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->WaitForChange(milliseconds(20)));
  s->Read();  // reading does not count as a change
  EXPECT_FALSE(s->WaitForChange(milliseconds(20)));
}

TEST_F(SensorsTest, WaitSeesWriteFromAnotherThread) {
  WriteAll();
  auto s = Open();
  ASSERT_NE(s, nullptr);
  std::promise<void> waiting;
  std::future<void> waiting_f = waiting.get_future();
  std::thread writer([&] {
    waiting_f.wait();
    Write("idle_seconds", "3\n");
  });
  waiting.set_value();
  bool changed = s->WaitForChange(milliseconds(10000));
  writer.join();
  EXPECT_TRUE(changed);
  EXPECT_EQ(s->Read().idle_seconds, 3.0);
}

TEST_F(SensorsTest, WaitSeesDelete) {
  WriteAll();
  auto s = Open();
  ASSERT_NE(s, nullptr);
  std::thread writer([&] { fs::remove(dir_ / "lid_closed"); });
  bool changed = s->WaitForChange(milliseconds(10000));
  writer.join();
  EXPECT_TRUE(changed);
  EXPECT_FALSE(s->Read().lid_closed);
  // All events were drained by that call, or arrive as one more; then it settles.
  while (s->WaitForChange(milliseconds(0))) {
  }
  EXPECT_FALSE(s->WaitForChange(milliseconds(10)));
}

TEST_F(SensorsTest, WaitSeesAtomicRename) {
  WriteAll();
  // Staged outside the watched directory, so only the rename is an event there.
  std::ofstream(base_ / "staging" / "lid_closed.tmp") << "1\n";
  auto s = Open();
  ASSERT_NE(s, nullptr);
  std::thread writer([&] { fs::rename(base_ / "staging" / "lid_closed.tmp", dir_ / "lid_closed"); });
  bool changed = s->WaitForChange(milliseconds(10000));
  writer.join();
  EXPECT_TRUE(changed);
  EXPECT_EQ(s->Read().lid_closed, true);

  // The same, staged inside the directory (the usual script idiom).
  while (s->WaitForChange(milliseconds(0))) {
  }
  std::thread writer2([&] {
    std::ofstream(dir_ / ".on_ac_power.tmp") << "0\n";
    fs::rename(dir_ / ".on_ac_power.tmp", dir_ / "on_ac_power");
  });
  changed = s->WaitForChange(milliseconds(10000));
  writer2.join();
  EXPECT_TRUE(changed);
  EXPECT_EQ(s->Read().on_ac_power, false);
}

}  // namespace
TEST_F(SensorsTest, DirDeletedAndMadeAgainIsWatchedAgain) {
  WriteAll();
  auto s = Open();
  ASSERT_NE(s, nullptr);
  fs::remove_all(dir_);
  EXPECT_TRUE(s->WaitForChange(milliseconds(10000)));
  EXPECT_FALSE(s->Read().idle_seconds.has_value());  // gone: unknown
  while (s->WaitForChange(milliseconds(0))) {
  }
  fs::create_directory(dir_);
  EXPECT_TRUE(s->WaitForChange(milliseconds(10000)));  // seen through the parent's watch
  while (s->WaitForChange(milliseconds(0))) {
  }
  Write("idle_seconds", "7\n");
  // Without a new watch on the new dir this would only time out.
  EXPECT_TRUE(s->WaitForChange(milliseconds(10000)));
  EXPECT_EQ(s->Read().idle_seconds, 7.0);
}

}  // namespace idlepool::platform
