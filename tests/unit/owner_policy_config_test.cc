#include "owner/owner_policy_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "owner/owner_policy.h"

namespace idlepool::owner {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kFile[] = "policy.toml";

absl::StatusOr<PolicyConfig> P(const std::string& toml) { return ParsePolicyConfig(toml, kFile); }

// The error message of parsing `toml`; fails the test when parsing succeeds.
std::string Err(const std::string& toml) {
  absl::StatusOr<PolicyConfig> r = P(toml);
  EXPECT_FALSE(r.ok()) << toml;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  return std::string(r.status().message());
}

void ExpectDefaults(const PolicyConfig& c) {
  const PolicyConfig d;
  EXPECT_EQ(c.start_idle_s, d.start_idle_s);
  EXPECT_EQ(c.resume_idle_s, d.resume_idle_s);
  EXPECT_EQ(c.vacate_after_suspend_s, d.vacate_after_suspend_s);
  EXPECT_EQ(c.on_battery, d.on_battery);
  EXPECT_EQ(c.max_temperature_c, d.max_temperature_c);
  EXPECT_EQ(c.max_owner_cpu_load, d.max_owner_cpu_load);
  EXPECT_EQ(c.vacate_grace_s, d.vacate_grace_s);
  EXPECT_EQ(c.checkpoint_interval_s, d.checkpoint_interval_s);
  EXPECT_EQ(c.gpu.owner_use, d.gpu.owner_use);
  EXPECT_EQ(c.gpu.max_temperature_c, d.gpu.max_temperature_c);
  EXPECT_EQ(c.allow_host_network, d.allow_host_network);
  EXPECT_EQ(c.task_path, d.task_path);
  EXPECT_EQ(c.pass_env, d.pass_env);
  EXPECT_TRUE(c.windows.empty());
}

uint8_t Days(const std::string& days) {
  absl::StatusOr<PolicyConfig> r =
      P("[owner]\nwindows = [{days = \"" + days + "\", start = \"08:00\", end = \"17:00\"}]\n");
  EXPECT_TRUE(r.ok()) << days << ": " << r.status();
  if (!r.ok() || r->windows.size() != 1) return 0;
  return r->windows[0].days;
}

// ---------------------------------------------------------------- defaults, round trip

TEST(PolicyConfigParse, EmptyFileAndEmptyTableGiveDefaults) {
  absl::StatusOr<PolicyConfig> a = P("");
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectDefaults(*a);
  absl::StatusOr<PolicyConfig> b = P("[owner]\n");
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectDefaults(*b);
}

TEST(PolicyConfigParse, DefaultConfigTomlRoundTrips) {
  const std::string toml = DefaultConfigToml();
  EXPECT_NE(toml.find("[owner]\n"), std::string::npos) << toml;
  absl::StatusOr<PolicyConfig> r = P(toml);
  ASSERT_TRUE(r.ok()) << r.status() << "\n" << toml;
  ExpectDefaults(*r);
}

TEST(PolicyConfigParse, DefaultConfigTomlExampleWindowParsesWhenUncommented) {
  std::string toml = DefaultConfigToml();
  const std::string example =
      "# windows = [{days = \"mon-fri\", start = \"19:00\", end = \"07:00\"}]\n";
  const size_t at = toml.find(example);
  ASSERT_NE(at, std::string::npos) << toml;
  toml.erase(at, 2);  // uncomment: drop "# "
  absl::StatusOr<PolicyConfig> r = P(toml);
  ASSERT_TRUE(r.ok()) << r.status() << "\n" << toml;
  ASSERT_EQ(r->windows.size(), 1u);
  EXPECT_EQ(r->windows[0].days, kWeekdays);
  EXPECT_EQ(r->windows[0].start_minute, 19 * 60);
  EXPECT_EQ(r->windows[0].end_minute, 7 * 60);
  EXPECT_EQ(r->start_idle_s, PolicyConfig{}.start_idle_s);
}

// ---------------------------------------------------------------- every key

TEST(PolicyConfigParse, EveryKey) {
  absl::StatusOr<PolicyConfig> r = P(
      "[owner]\n"
      "start_idle_minutes = 2.5\n"
      "resume_idle_seconds = 30\n"
      "vacate_after_suspend_seconds = 600\n"
      "on_battery = \"suspend\"\n"
      "max_temperature_c = 85.5\n"
      "max_owner_cpu_load = 1\n"
      "vacate_grace_seconds = 3\n"
      "checkpoint_interval_seconds = 15\n"
      "windows = [\n"
      "  {days = \"mon-fri\", start = \"19:00\", end = \"07:00\"},\n"
      "  {days = \"sat,sun\", start = \"00:00\", end = \"00:00\"},\n"
      "]\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->start_idle_s, 150);
  EXPECT_EQ(r->resume_idle_s, 30);
  EXPECT_EQ(r->vacate_after_suspend_s, 600);
  EXPECT_EQ(r->on_battery, BatteryAction::kSuspend);
  EXPECT_EQ(r->max_temperature_c, 85.5);
  EXPECT_EQ(r->max_owner_cpu_load, 1);
  EXPECT_EQ(r->vacate_grace_s, 3);
  EXPECT_EQ(r->checkpoint_interval_s, 15);
  ASSERT_EQ(r->windows.size(), 2u);
  EXPECT_EQ(r->windows[0].days, kWeekdays);
  EXPECT_EQ(r->windows[0].start_minute, 1140);
  EXPECT_EQ(r->windows[0].end_minute, 420);
  EXPECT_EQ(r->windows[1].days, kSaturday | kSunday);
  EXPECT_EQ(r->windows[1].start_minute, 0);
  EXPECT_EQ(r->windows[1].end_minute, 0);
}

TEST(PolicyConfigParse, GraceAndCheckpointIntervalRanges) {
  EXPECT_THAT(Err("[owner]\ncheckpoint_interval_seconds = 0\n"),
              HasSubstr("owner.checkpoint_interval_seconds"));
  EXPECT_THAT(Err("[owner]\nvacate_grace_seconds = -1\n"), HasSubstr("owner.vacate_grace_seconds"));
  EXPECT_THAT(Err("[owner]\nvacate_grace_seconds = \"10\"\n"),
              HasSubstr("owner.vacate_grace_seconds"));
}

TEST(PolicyConfigParse, AbsentKeysKeepDefaults) {
  absl::StatusOr<PolicyConfig> r = P("[owner]\nresume_idle_seconds = 5\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->resume_idle_s, 5);
  EXPECT_EQ(r->start_idle_s, PolicyConfig{}.start_idle_s);
  EXPECT_EQ(r->on_battery, PolicyConfig{}.on_battery);
}

TEST(PolicyConfigParse, OnBatteryValues) {
  EXPECT_EQ(P("[owner]\non_battery = \"run\"\n")->on_battery, BatteryAction::kRun);
  EXPECT_EQ(P("[owner]\non_battery = \"suspend\"\n")->on_battery, BatteryAction::kSuspend);
  EXPECT_EQ(P("[owner]\non_battery = \"vacate\"\n")->on_battery, BatteryAction::kVacate);
}

TEST(PolicyConfigParse, ZeroAndBoundsAccepted) {
  absl::StatusOr<PolicyConfig> r = P(
      "[owner]\nstart_idle_minutes = 0\nresume_idle_seconds = 0\n"
      "vacate_after_suspend_seconds = 0\nmax_temperature_c = 30\nmax_owner_cpu_load = 0\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->start_idle_s, 0);
  EXPECT_EQ(r->max_temperature_c, 30);
  EXPECT_EQ(r->max_owner_cpu_load, 0);
  EXPECT_EQ(P("[owner]\nmax_temperature_c = 150\n")->max_temperature_c, 150);
}

TEST(PolicyConfigParse, ArrayOfTablesSyntaxAlsoWorks) {
  absl::StatusOr<PolicyConfig> r =
      P("[[owner.windows]]\ndays = \"daily\"\nstart = \"09:30\"\nend = \"18:15\"\n");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->windows.size(), 1u);
  EXPECT_EQ(r->windows[0].days, kEveryDay);
  EXPECT_EQ(r->windows[0].start_minute, 570);
  EXPECT_EQ(r->windows[0].end_minute, 1095);
}

// ---------------------------------------------------------------- days

TEST(PolicyConfigDays, Variants) {
  EXPECT_EQ(Days("daily"), kEveryDay);
  EXPECT_EQ(Days("mon-fri"), kWeekdays);
  EXPECT_EQ(Days("sat,sun"), kSaturday | kSunday);
  EXPECT_EQ(Days("mon,wed,fri"), kMonday | kWednesday | kFriday);
  EXPECT_EQ(Days("mon-wed,fri"), kMonday | kTuesday | kWednesday | kFriday);
  EXPECT_EQ(Days("mon-sun"), kEveryDay);
  EXPECT_EQ(Days("tue"), kTuesday);
  EXPECT_EQ(Days("sat, sun"), kSaturday | kSunday);
  EXPECT_EQ(Days("thu-thu"), kThursday);
}

TEST(PolicyConfigDays, Refused) {
  for (const char* bad : {"", "monday", "Mon", "fri-mon", "mon,", ",mon", "mon--fri", "weekdays",
                          "mon-", "daily,mon"}) {
    const std::string msg = Err(std::string("[owner]\nwindows = [{days = \"") + bad +
                                "\", start = \"08:00\", end = \"17:00\"}]\n");
    EXPECT_THAT(msg, HasSubstr("policy.toml:2:")) << bad;
    EXPECT_THAT(msg, HasSubstr("key 'owner.windows[0].days'")) << bad;
  }
  EXPECT_THAT(Err("[owner]\nwindows = [{days = \"fri-mon\", start = \"08:00\", end = \"17:00\"}]\n"),
              HasSubstr("goes backwards"));
  EXPECT_THAT(Err("[owner]\nwindows = [{days = \"funday\", start = \"08:00\", end = \"17:00\"}]\n"),
              HasSubstr("unknown day 'funday'"));
}

// ---------------------------------------------------------------- HH:MM

TEST(PolicyConfigClock, Accepted) {
  absl::StatusOr<PolicyConfig> r =
      P("[owner]\nwindows = [{days = \"daily\", start = \"00:00\", end = \"23:59\"}]\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->windows[0].start_minute, 0);
  EXPECT_EQ(r->windows[0].end_minute, 1439);
}

TEST(PolicyConfigClock, Refused) {
  for (const char* bad : {"24:00", "7:5", "12:60", "07:5", "7:05", "", "12", "12:00:00", "ab:cd",
                          "-1:00", "12.30", " 12:30"}) {
    const std::string msg = Err(std::string("[owner]\nwindows = [{days = \"daily\", start = \"") +
                                bad + "\", end = \"17:00\"}]\n");
    EXPECT_THAT(msg, HasSubstr("policy.toml:2:")) << bad;
    EXPECT_THAT(msg, HasSubstr("key 'owner.windows[0].start'")) << bad;
    EXPECT_THAT(msg, HasSubstr("HH:MM")) << bad;
  }
  EXPECT_THAT(Err("[owner]\nwindows = [{days = \"daily\", start = \"08:00\", end = \"24:00\"}]\n"),
              HasSubstr("key 'owner.windows[0].end'"));
}

// ---------------------------------------------------------------- errors

TEST(PolicyConfigErrors, UnknownOwnerKeySuggests) {
  const std::string msg = Err("[owner]\nresume_idle_seconds = 5\nstart_idle_minute = 3\n");
  EXPECT_THAT(msg, HasSubstr("policy.toml:3:1: unknown key 'owner.start_idle_minute'"));
  EXPECT_THAT(msg, HasSubstr("did you mean 'start_idle_minutes'?"));
}

TEST(PolicyConfigErrors, UnknownKeyWithoutSuggestion) {
  const std::string msg = Err("[owner]\ncolour = \"blue\"\n");
  EXPECT_THAT(msg, HasSubstr("policy.toml:2:1: unknown key 'owner.colour'"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("did you mean")));
  EXPECT_THAT(msg, HasSubstr("allowed here:"));
}

TEST(PolicyConfigErrors, UnknownTopLevelKey) {
  EXPECT_THAT(Err("onwer = 1\n"), HasSubstr("policy.toml:1:1: unknown key 'onwer' (did you mean 'owner'?)"));
  EXPECT_THAT(Err("on_battery = \"run\"\n"), HasSubstr("it belongs under [owner]"));
  EXPECT_THAT(Err("[other]\n"), HasSubstr("unknown key 'other'"));
}

TEST(PolicyConfigErrors, OwnerNotATable) {
  EXPECT_THAT(Err("owner = 5\n"), HasSubstr("policy.toml:1:9: key 'owner': must be a table"));
}

TEST(PolicyConfigErrors, UnknownWindowKey) {
  const std::string msg =
      Err("[owner]\nwindows = [{day = \"daily\", start = \"08:00\", end = \"17:00\"}]\n");
  EXPECT_THAT(msg, HasSubstr("policy.toml:2:"));
  EXPECT_THAT(msg, HasSubstr("unknown key 'owner.windows[0].day' (did you mean 'days'?)"));
}

TEST(PolicyConfigErrors, MissingWindowKey) {
  for (const char* key : {"days", "start", "end"}) {
    std::string w = "{days = \"daily\", start = \"08:00\", end = \"17:00\"}";
    // The second window lacks `key`.
    std::string toml = "[owner]\nwindows = [" + w + ", {";
    bool first = true;
    for (const char* k : {"days", "start", "end"}) {
      if (std::string(k) == key) continue;
      if (!first) toml += ", ";
      first = false;
      toml += std::string(k) + (std::string(k) == "days" ? " = \"daily\"" : " = \"08:00\"");
    }
    toml += "}]\n";
    const std::string msg = Err(toml);
    EXPECT_THAT(msg, HasSubstr("policy.toml:2:"));
    EXPECT_THAT(msg, HasSubstr(std::string("key 'owner.windows[1].") + key + "': is required"));
  }
}

TEST(PolicyConfigErrors, WindowsWrongTypes) {
  EXPECT_THAT(Err("[owner]\nwindows = \"mon-fri\"\n"),
              HasSubstr("policy.toml:2:11: key 'owner.windows': must be an array of tables, got "
                        "the string \"mon-fri\""));
  EXPECT_THAT(Err("[owner]\nwindows = [1]\n"),
              HasSubstr("policy.toml:2:12: key 'owner.windows[0]': must be a table"));
  EXPECT_THAT(Err("[owner]\nwindows = [{days = 1, start = \"08:00\", end = \"17:00\"}]\n"),
              HasSubstr("key 'owner.windows[0].days': must be a string, got 1"));
  EXPECT_THAT(Err("[owner]\nwindows = [{days = \"daily\", start = 800, end = \"17:00\"}]\n"),
              HasSubstr("key 'owner.windows[0].start': must be a string"));
}

TEST(PolicyConfigErrors, NumbersWrongType) {
  for (const char* key : {"start_idle_minutes", "resume_idle_seconds",
                          "vacate_after_suspend_seconds", "max_temperature_c",
                          "max_owner_cpu_load"}) {
    const std::string msg = Err(std::string("[owner]\n") + key + " = \"5\"\n");
    EXPECT_THAT(msg, HasSubstr(std::string("policy.toml:2:")));
    EXPECT_THAT(msg, HasSubstr(std::string("key 'owner.") + key + "': must be a number"));
    EXPECT_THAT(msg, HasSubstr("got the string \"5\""));
    EXPECT_THAT(Err(std::string("[owner]\n") + key + " = true\n"), HasSubstr("got true"));
  }
}

TEST(PolicyConfigErrors, ResumeIdleAboveStartIdleWouldFreezeWorkAtOnce) {
  const std::string msg = Err("[owner]\nstart_idle_minutes = 0.01\nresume_idle_seconds = 600\n");
  EXPECT_THAT(msg, HasSubstr("policy.toml:3:"));
  EXPECT_THAT(msg, HasSubstr("key 'owner.resume_idle_seconds'"));
  EXPECT_THAT(msg, HasSubstr("frozen the moment it starts"));
  // The default resume (60 s) under a short start names start_idle_minutes.
  EXPECT_THAT(Err("[owner]\nstart_idle_minutes = 0.5\n"), HasSubstr("owner.start_idle_minutes"));
  // A dedicated machine (start 0) never waits, so any resume_idle is fine.
  EXPECT_TRUE(P("[owner]\nstart_idle_minutes = 0\nresume_idle_seconds = 600\n").ok());
}

TEST(PolicyConfigErrors, NumbersOutOfRange) {
  for (const char* key :
       {"start_idle_minutes", "resume_idle_seconds", "vacate_after_suspend_seconds"}) {
    const std::string msg = Err(std::string("[owner]\n\n") + key + " = -1\n");
    EXPECT_THAT(msg, HasSubstr("policy.toml:3:"));
    EXPECT_THAT(msg, HasSubstr(std::string("key 'owner.") + key + "': must be a number between 0"));
    EXPECT_THAT(Err(std::string("[owner]\n") + key + " = nan\n"), HasSubstr(key));
    EXPECT_THAT(Err(std::string("[owner]\n") + key + " = 1e308\n"), HasSubstr(key));
    EXPECT_THAT(Err(std::string("[owner]\n") + key + " = inf\n"), HasSubstr(key));
  }
  EXPECT_THAT(Err("[owner]\nmax_temperature_c = 29.9\n"),
              HasSubstr("policy.toml:2:21: key 'owner.max_temperature_c': must be a number "
                        "between 30 and 150, got the float 29.9"));
  EXPECT_THAT(Err("[owner]\nmax_temperature_c = 151\n"),
              HasSubstr("key 'owner.max_temperature_c': must be a number between 30 and 150"));
  EXPECT_THAT(Err("[owner]\nmax_owner_cpu_load = 1.01\n"),
              HasSubstr("key 'owner.max_owner_cpu_load': must be a number between 0 and 1"));
  EXPECT_THAT(Err("[owner]\nmax_owner_cpu_load = -0.1\n"),
              HasSubstr("key 'owner.max_owner_cpu_load'"));
}

TEST(PolicyConfigErrors, OnBatteryBad) {
  EXPECT_THAT(Err("[owner]\non_battery = \"pause\"\n"),
              HasSubstr("policy.toml:2:14: key 'owner.on_battery': must be \"run\", \"suspend\" "
                        "or \"vacate\", got the string \"pause\""));
  EXPECT_THAT(Err("[owner]\non_battery = 1\n"), HasSubstr("key 'owner.on_battery'"));
}

TEST(PolicyConfigErrors, SyntaxError) {
  EXPECT_THAT(Err("[owner]\nstart_idle_minutes = \n"),
              HasSubstr("policy.toml:2:"));
  EXPECT_THAT(Err("[owner]\nstart_idle_minutes = \n"), HasSubstr("TOML syntax error"));
}

// Deep nesting crashed toml++ (a stack overflow): it is refused before toml++ reads it, with the
// file, line and column.
TEST(PolicyConfigErrors, DeepNestingIsRefusedBeforeParsing) {
  std::string windows = "[owner]\nwindows = ";
  for (int i = 0; i < 100000; ++i) windows += "[{a = ";
  EXPECT_THAT(Err(windows + "\n"), HasSubstr("policy.toml:2:"));
  EXPECT_THAT(Err(windows + "\n"), HasSubstr("nested more than 64 levels deep"));
  std::string header = "[owner";
  for (int i = 0; i < 100000; ++i) header += ".owner";
  EXPECT_THAT(Err(header + "]\n"), HasSubstr("policy.toml:1:"));
  EXPECT_THAT(Err(header + "]\n"), HasSubstr("nested more than 64 levels deep"));
}

// A policy file of one U+FEFD reached undefined behaviour inside toml++ 3.3 (found by
// tests/fuzz): it is refused before toml++ reads it.
TEST(PolicyConfigErrors, NonAsciiOutsideStringsIsRefusedBeforeParsing) {
  EXPECT_THAT(Err("\xef\xbb\xbd"), HasSubstr("policy.toml:1:1: TOML syntax error"));
  EXPECT_THAT(Err("[owner]\non_battery = \"run\" \xc3\xa9\n"), HasSubstr("policy.toml:2:20: "));
}

// ---------------------------------------------------------------- files

TEST(PolicyConfigLoad, MissingFileIsNotFound) {
  const std::string path = "/nonexistent-dir-idlepool/policy.toml";
  absl::StatusOr<PolicyConfig> r = LoadPolicyConfig(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(path));
}

TEST(PolicyConfigLoad, ReadsFileAndNamesItInErrors) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/owner_policy_config_test_" + std::to_string(::getpid()) + ".toml";
  {
    std::ofstream out(path);
    out << "[owner]\non_battery = \"run\"\n";
  }
  absl::StatusOr<PolicyConfig> r = LoadPolicyConfig(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->on_battery, BatteryAction::kRun);
  {
    std::ofstream out(path);
    out << "[owner]\non_battery = \"never\"\n";
  }
  r = LoadPolicyConfig(path);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(path + ":2:14: key 'owner.on_battery'"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace idlepool::owner

namespace idlepool::owner {
namespace {

TEST(PolicyConfigParse, GpuTable) {
  absl::StatusOr<PolicyConfig> r =
      ParsePolicyConfig("[gpu]\nowner_use = \"vacate\"\nmax_temperature_c = 80\n", "p.toml");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->gpu.owner_use, GpuOwnerUse::kVacate);
  EXPECT_EQ(r->gpu.max_temperature_c, 80);
  EXPECT_EQ(r->max_temperature_c, PolicyConfig{}.max_temperature_c);  // the CPU's is apart
  r = ParsePolicyConfig("[gpu]\nowner_use = \"ignore\"\n", "p.toml");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->gpu.owner_use, GpuOwnerUse::kIgnore);
}

TEST(PolicyConfigParse, GpuTableErrors) {
  auto err = [](const std::string& toml) {
    absl::StatusOr<PolicyConfig> r = ParsePolicyConfig(toml, "p.toml");
    EXPECT_FALSE(r.ok()) << toml;
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_THAT(err("[gpu]\nowner_use = \"pause\"\n"), testing::HasSubstr("gpu.owner_use"));
  EXPECT_THAT(err("[gpu]\nowner_use = 1\n"), testing::HasSubstr("gpu.owner_use"));
  EXPECT_THAT(err("[gpu]\nmax_temperature_c = 200\n"),
              testing::HasSubstr("gpu.max_temperature_c"));
  EXPECT_THAT(err("[gpu]\nmax_temp = 80\n"), testing::HasSubstr("max_temp"));
  EXPECT_THAT(err("gpu = 1\n"), testing::HasSubstr("'gpu'"));
}

// [sandbox] allow_host_network (issue 19): true by default (the owner can refuse), and every
// bad value names the file, line and key.
TEST(PolicyConfigParse, SandboxTable) {
  EXPECT_TRUE(PolicyConfig{}.allow_host_network);
  absl::StatusOr<PolicyConfig> r = P("[sandbox]\nallow_host_network = false\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->allow_host_network);
  EXPECT_EQ(r->start_idle_s, PolicyConfig{}.start_idle_s);  // the rest keeps its defaults
  r = P("[sandbox]\nallow_host_network = true\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->allow_host_network);
  r = P("[owner]\nstart_idle_minutes = 1\n[sandbox]\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->allow_host_network);
  // The default file says it, and refusing it there round-trips.
  std::string toml = DefaultConfigToml();
  const std::string line = "allow_host_network = true\n";
  const size_t at = toml.find("[sandbox]\n");
  ASSERT_NE(at, std::string::npos) << toml;
  ASSERT_NE(toml.find(line, at), std::string::npos) << toml;
  toml.replace(toml.find(line, at), line.size(), "allow_host_network = false\n");
  r = P(toml);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->allow_host_network);
}

TEST(PolicyConfigErrors, SandboxTableErrors) {
  EXPECT_EQ(Err("[sandbox]\nallow_host_network = \"no\"\n"),
            "policy.toml:2:22: key 'sandbox.allow_host_network': must be true or false, got the "
            "string \"no\"");
  EXPECT_THAT(Err("[sandbox]\nallow_host_network = 0\n"),
              HasSubstr("policy.toml:2:22: key 'sandbox.allow_host_network': must be true or "
                        "false, got 0"));
  EXPECT_THAT(Err("[sandbox]\nallow_host_networks = false\n"),
              AllOf(HasSubstr("policy.toml:2:1: unknown key 'sandbox.allow_host_networks'"),
                    HasSubstr("did you mean 'allow_host_network'?")));
  EXPECT_THAT(Err("[sandbox]\nnetwork = \"host\"\n"),
              AllOf(HasSubstr("unknown key 'sandbox.network'"),
                    HasSubstr("allowed here: allow_host_network")));
  EXPECT_THAT(Err("allow_host_network = false\n"),
              HasSubstr("policy.toml:1:1: unknown key 'allow_host_network' (it belongs under "
                        "[sandbox])"));
  EXPECT_THAT(Err("sandbox = false\n"),
              HasSubstr("policy.toml:1:11: key 'sandbox': must be a table, got false"));
}

// [sandbox] memory_mb and task_dir_mb: a task's limits on this machine (0: the defaults the
// worker derives from the machine); bad values name the file, line and key.
TEST(PolicyConfigParse, SandboxTaskLimits) {
  EXPECT_EQ(PolicyConfig{}.task_memory_mb, 0u);
  EXPECT_EQ(PolicyConfig{}.task_dir_mb, 0u);
  absl::StatusOr<PolicyConfig> r = P("[sandbox]\nmemory_mb = 64\ntask_dir_mb = 32\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->task_memory_mb, 64u);
  EXPECT_EQ(r->task_dir_mb, 32u);
  EXPECT_TRUE(r->allow_host_network);
  r = P(DefaultConfigToml());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->task_memory_mb, 0u);
  EXPECT_THAT(Err("[sandbox]\nmemory_mb = -1\n"),
              testing::HasSubstr("policy.toml:2:13: key 'sandbox.memory_mb'"));
  EXPECT_THAT(Err("[sandbox]\ntask_dir_mb = \"big\"\n"),
              testing::HasSubstr("key 'sandbox.task_dir_mb'"));
}

// [sandbox] path and pass_env: what of this machine's environment the pool's tasks get.
TEST(PolicyConfigParse, SandboxPathAndPassEnv) {
  EXPECT_EQ(PolicyConfig{}.task_path, "/usr/local/bin:/usr/bin:/bin");
  EXPECT_TRUE(PolicyConfig{}.pass_env.empty());
  absl::StatusOr<PolicyConfig> r =
      P("[sandbox]\npath = \"/opt/blender:/usr/bin:/bin\"\n"
        "pass_env = [\"http_proxy\", \"https_proxy\", \"LC_ALL\"]\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->task_path, "/opt/blender:/usr/bin:/bin");
  EXPECT_EQ(r->pass_env, (std::vector<std::string>{"http_proxy", "https_proxy", "LC_ALL"}));
  // The default file names both, with their defaults.
  const std::string toml = DefaultConfigToml();
  EXPECT_NE(toml.find("path = \"/usr/local/bin:/usr/bin:/bin\"\n"), std::string::npos) << toml;
  EXPECT_NE(toml.find("pass_env = []\n"), std::string::npos) << toml;
}

TEST(PolicyConfigErrors, SandboxPathAndPassEnvErrors) {
  for (const char* bad : {"\"\"", "\"bin:/usr/bin\"", "\"/usr/bin::/bin\"", "\"/usr/bin:\"", "3"}) {
    EXPECT_THAT(Err(std::string("[sandbox]\npath = ") + bad + "\n"),
                HasSubstr("policy.toml:2:8: key 'sandbox.path': must be absolute dirs separated "
                          "by ':'"))
        << bad;
  }
  EXPECT_THAT(Err("[sandbox]\npass_env = \"http_proxy\"\n"),
              HasSubstr("policy.toml:2:12: key 'sandbox.pass_env': must be an array of at most 64 "
                        "variable names"));
  EXPECT_THAT(Err("[sandbox]\npass_env = [\"PATH\"]\n"),
              HasSubstr("policy.toml:2:13: key 'sandbox.pass_env': 'PATH' is not passed: set "
                        "[sandbox] path instead"));
  EXPECT_THAT(Err("[sandbox]\npass_env = [\"ok\", \"IDLEPOOL_TOKEN\"]\n"),
              HasSubstr("policy.toml:2:19: key 'sandbox.pass_env': 'IDLEPOOL_TOKEN' is set by the "
                        "worker"));
  EXPECT_THAT(Err("[sandbox]\npass_env = [\"A B\"]\n"), HasSubstr("'A B' is not a variable name"));
  EXPECT_THAT(Err("[sandbox]\npass_env = [1]\n"), HasSubstr("must be a variable name, got 1"));
}

// [owner] accept_users and refuse_users: whose tasks this machine runs.
TEST(PolicyConfigParse, LendUsers) {
  EXPECT_TRUE(PolicyConfig{}.accept_users.empty());
  absl::StatusOr<PolicyConfig> r =
      P("[owner]\naccept_users = [\"alice\", \"bob@lab\"]\nrefuse_users = [\"eve\"]\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->accept_users, (std::vector<std::string>{"alice", "bob@lab"}));
  EXPECT_EQ(r->refuse_users, (std::vector<std::string>{"eve"}));
  const std::string toml = DefaultConfigToml();
  EXPECT_NE(toml.find("accept_users = []\n"), std::string::npos) << toml;
  ASSERT_TRUE(P(toml).ok());  // the default file round-trips with them
  EXPECT_THAT(Err("[owner]\naccept_users = \"alice\"\n"),
              HasSubstr("policy.toml:2:16: key 'owner.accept_users': must be an array of at most "
                        "256 user names"));
  EXPECT_THAT(Err("[owner]\nrefuse_users = [\"a b\"]\n"),
              HasSubstr("policy.toml:2:17: key 'owner.refuse_users': must hold user names"));
  EXPECT_THAT(Err("accept_users = []\n"), HasSubstr("it belongs under [owner]"));
}

}  // namespace
}  // namespace idlepool::owner
