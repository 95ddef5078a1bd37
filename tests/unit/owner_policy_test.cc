#include "owner/owner_policy.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace idlepool::owner {

// Readable gtest failure messages for the enums.
void PrintTo(Action a, std::ostream* os) { *os << ToString(a); }
void PrintTo(Mode m, std::ostream* os) { *os << ToString(m); }
void PrintTo(BatteryAction b, std::ostream* os) { *os << ToString(b); }

namespace {

constexpr double kNow = 10'000;
constexpr LocalTime kTuesdayNoon{1, 12 * 60};

// Every sensor known and every reading comfortably allowing work.
Readings Good() {
  Readings r;
  r.idle_seconds = 3600;
  r.on_ac_power = true;
  r.battery_percent = 100;
  r.temperature_c = 50;
  r.lid_closed = false;
  r.owner_cpu_load = 0.05;
  r.sleep_imminent = false;
  return r;
}

PolicyState Running(double since = kNow - 1000) { return {Mode::kRunning, since}; }
PolicyState Suspended(double since = kNow - 10, Cause cause = Cause::kNone) {
  return {Mode::kSuspended, since, cause};
}
PolicyState Idle(double since = kNow - 1000) { return {Mode::kIdle, since}; }

const std::vector<PolicyState> kAllModes = {Idle(), Running(), Suspended()};

Decision D(const Readings& r, const PolicyState& prev, const PolicyConfig& c = {},
           double now = kNow, LocalTime local = kTuesdayNoon) {
  return Decide(r, c, prev, now, local);
}

int Minute(int h, int m) { return h * 60 + m; }

// ---------------------------------------------------------------- defaults

TEST(OwnerPolicyDefaults, MatchTheBrief) {
  PolicyConfig c;
  EXPECT_EQ(c.start_idle_s, 300);
  EXPECT_EQ(c.resume_idle_s, 60);
  EXPECT_EQ(c.vacate_after_suspend_s, 120);
  EXPECT_EQ(c.on_battery, BatteryAction::kVacate);
  EXPECT_EQ(c.max_temperature_c, 90);
  EXPECT_EQ(c.max_owner_cpu_load, 0.5);
  EXPECT_TRUE(c.windows.empty());
  EXPECT_EQ(PolicyState{}.mode, Mode::kIdle);
}

TEST(OwnerPolicyDefaults, TomlListsEveryKeyWithItsDefault) {
  const std::string toml = DefaultConfigToml();
  for (const char* line :
       {"start_idle_minutes = 5\n", "resume_idle_seconds = 60\n",
        "vacate_after_suspend_seconds = 120\n", "on_battery = \"vacate\"\n",
        "max_temperature_c = 90\n", "max_owner_cpu_load = 0.5\n",
        "# windows = [{days = \"mon-fri\", start = \"19:00\", end = \"07:00\"}]\n"}) {
    EXPECT_NE(toml.find(line), std::string::npos) << line << "\n---\n" << toml;
  }
}

// ---------------------------------------------------------------- baseline

TEST(OwnerPolicy, AllGoodRunsFromEveryMode) {
  for (const PolicyState& s : kAllModes) {
    Decision d = D(Good(), s);
    EXPECT_EQ(d.action, Action::kRun) << ToString(s.mode) << ": " << d.reason;
    EXPECT_EQ(d.next_mode, Mode::kRunning);
  }
}

TEST(OwnerPolicy, AllUnknownRunsFromEveryModeOnlyWhenDedicated) {
  // Even a task suspended far longer than vacate_after_suspend_s resumes: nothing says stop.
  PolicyConfig dedicated;
  MakeDedicated(&dedicated);
  for (const PolicyState& s : {Idle(), Running(), Suspended(), Suspended(kNow - 1e6)}) {
    Decision d = D(Readings{}, s, dedicated);
    EXPECT_EQ(d.action, Action::kRun) << ToString(s.mode) << ": " << d.reason;
    EXPECT_EQ(d.next_mode, Mode::kRunning);
  }
}

// Owner protection is never silently off: with no input and no load reading, a lent machine
// takes no work, and a task running there is suspended.
TEST(OwnerPolicy, AllUnknownTakesNoWork) {
  for (const PolicyState& s : {Idle(), Running(), Suspended()}) {
    Decision d = D(Readings{}, s);
    EXPECT_NE(d.action, Action::kRun) << ToString(s.mode) << ": " << d.reason;
    EXPECT_EQ(d.cause, Cause::kOwnerUnknown);
    EXPECT_NE(d.reason.find("owner activity unknown"), std::string::npos) << d.reason;
  }
  EXPECT_TRUE(OwnerInputUnknown(Readings{}, PolicyConfig{}));
  PolicyConfig dedicated;
  MakeDedicated(&dedicated);
  EXPECT_FALSE(OwnerInputUnknown(Readings{}, dedicated));
  EXPECT_FALSE(OwnerInputUnknown(Good(), PolicyConfig{}));
}

// Input unknown, load known: the load stands in for the input. Work starts once the load has
// stayed low for start_idle_s, carried in PolicyState::quiet_since_s; a load spike starts over.
TEST(OwnerPolicy, UnknownInputWaitsForTheLoadToStayLow) {
  Readings r = Good();
  r.idle_seconds.reset();
  PolicyConfig c;
  PolicyState s = Idle();
  Decision d = D(r, s, c, kNow);
  EXPECT_EQ(d.action, Action::kSuspend) << d.reason;
  EXPECT_EQ(d.cause, Cause::kOwnerUnknown);
  ASSERT_TRUE(d.quiet_since_s.has_value());
  EXPECT_EQ(*d.quiet_since_s, kNow);
  s = Advance(s, d, kNow);
  d = D(r, s, c, kNow + c.start_idle_s - 1);
  EXPECT_EQ(d.action, Action::kSuspend) << d.reason;
  s = Advance(s, d, kNow + c.start_idle_s - 1);
  d = D(r, s, c, kNow + c.start_idle_s);
  EXPECT_EQ(d.action, Action::kRun) << d.reason;
  s = Advance(s, d, kNow + c.start_idle_s);
  EXPECT_EQ(s.quiet_since_s, std::optional<double>(kNow));
  // The owner's load rises above the limit: suspended (rule 5), and the quiet time is lost.
  Readings busy = r;
  busy.owner_cpu_load = 0.9;
  d = D(busy, s, c, kNow + 400);
  EXPECT_EQ(d.action, Action::kSuspend);
  s = Advance(s, d, kNow + 400);
  EXPECT_FALSE(s.quiet_since_s.has_value());
  // Low again: it waits resume_idle_s of low load before the task resumes.
  d = D(r, s, c, kNow + 401);
  EXPECT_EQ(d.action, Action::kSuspend) << d.reason;
  EXPECT_EQ(d.cause, Cause::kOwnerUnknown);
  s = Advance(s, d, kNow + 401);
  d = D(r, s, c, kNow + 401 + c.resume_idle_s);
  EXPECT_EQ(d.action, Action::kRun) << d.reason;
}

TEST(OwnerPolicy, UnknownInputNeverLetsAHighLoadStart) {
  // max_owner_cpu_load = 1 turns rule 5 off; unknown input still needs a low load (0.5).
  Readings r = Good();
  r.idle_seconds.reset();
  r.owner_cpu_load = 0.7;
  PolicyConfig c;
  c.max_owner_cpu_load = 1;
  PolicyState quiet = Idle();
  quiet.quiet_since_s = kNow - 1e5;
  Decision d = D(r, quiet, c);
  EXPECT_EQ(d.action, Action::kSuspend) << d.reason;
  EXPECT_EQ(d.cause, Cause::kOwnerUnknown);
}

TEST(OwnerPolicy, EachUnknownSensorAloneNeverStopsWork) {
  using Clear = void (*)(Readings&);
  const std::vector<std::pair<const char*, Clear>> sensors = {
      {"idle_seconds", [](Readings& r) { r.idle_seconds.reset(); }},
      {"on_ac_power", [](Readings& r) { r.on_ac_power.reset(); }},
      {"battery_percent", [](Readings& r) { r.battery_percent.reset(); }},
      {"temperature_c", [](Readings& r) { r.temperature_c.reset(); }},
      {"lid_closed", [](Readings& r) { r.lid_closed.reset(); }},
      {"owner_cpu_load", [](Readings& r) { r.owner_cpu_load.reset(); }},
      {"sleep_imminent", [](Readings& r) { r.sleep_imminent.reset(); }},
  };
  for (const auto& [name, clear] : sensors) {
    for (PolicyState s : kAllModes) {
      s.quiet_since_s = kNow - 1e5;  // an unknown input: the load has long been low
      Readings r = Good();
      clear(r);
      EXPECT_EQ(D(r, s).action, Action::kRun) << name << " in " << ToString(s.mode);
    }
  }
}

TEST(OwnerPolicy, NanReadingsAreTreatedAsUnknown) {
  Readings r = Good();
  r.temperature_c = std::numeric_limits<double>::quiet_NaN();
  r.owner_cpu_load = std::numeric_limits<double>::quiet_NaN();
  for (const PolicyState& s : kAllModes) EXPECT_EQ(D(r, s).action, Action::kRun);
  r.idle_seconds = std::numeric_limits<double>::quiet_NaN();  // input and load unknown
  for (const PolicyState& s : kAllModes) EXPECT_NE(D(r, s).action, Action::kRun);
}

// ---------------------------------------------------------------- rule 1: lid / sleep

TEST(OwnerPolicy, LidClosedVacatesFromEveryMode) {
  for (const PolicyState& s : kAllModes) {
    Readings r = Good();
    r.lid_closed = true;
    Decision d = D(r, s);
    EXPECT_EQ(d.action, Action::kVacate) << ToString(s.mode);
    EXPECT_EQ(d.next_mode, Mode::kIdle);
    EXPECT_EQ(d.reason, "lid closed");
  }
}

TEST(OwnerPolicy, SleepImminentVacatesFromEveryMode) {
  for (const PolicyState& s : kAllModes) {
    Readings r = Good();
    r.sleep_imminent = true;
    Decision d = D(r, s);
    EXPECT_EQ(d.action, Action::kVacate) << ToString(s.mode);
    EXPECT_EQ(d.next_mode, Mode::kIdle);
    EXPECT_EQ(d.reason, "sleep imminent");
  }
}

TEST(OwnerPolicy, LidOpenAndNoSleepDoNotStopWork) {
  Readings r = Good();
  r.lid_closed = false;
  r.sleep_imminent = false;
  EXPECT_EQ(D(r, Running()).action, Action::kRun);
}

TEST(OwnerPolicy, LidBeatsEverything) {
  PolicyConfig c;
  c.on_battery = BatteryAction::kSuspend;
  c.windows = {{kWeekdays, Minute(19, 0), Minute(7, 0)}};  // noon is outside
  Readings r;
  r.lid_closed = true;
  r.sleep_imminent = true;
  r.on_ac_power = false;
  r.temperature_c = 120;
  r.owner_cpu_load = 1;
  r.idle_seconds = 0;
  for (const PolicyState& s : kAllModes) {
    Decision d = D(r, s, c);
    EXPECT_EQ(d.action, Action::kVacate);
    EXPECT_EQ(d.next_mode, Mode::kIdle);
    EXPECT_EQ(d.reason, "lid closed");
  }
}

TEST(OwnerPolicy, SleepBeatsWindowAndBatterySuspend) {
  PolicyConfig c;
  c.on_battery = BatteryAction::kSuspend;
  c.windows = {{kWeekdays, Minute(19, 0), Minute(7, 0)}};
  Readings r = Good();
  r.sleep_imminent = true;
  r.on_ac_power = false;
  EXPECT_EQ(D(r, Running(), c).reason, "sleep imminent");
}

// ---------------------------------------------------------------- rule 2: windows

TEST(OwnerPolicy, OutsideEveryWindowVacates) {
  PolicyConfig c;
  c.windows = {{kWeekdays, Minute(19, 0), Minute(7, 0)}};
  for (const PolicyState& s : kAllModes) {
    Decision d = D(Good(), s, c, kNow, kTuesdayNoon);
    EXPECT_EQ(d.action, Action::kVacate);
    EXPECT_EQ(d.next_mode, Mode::kIdle);
    EXPECT_EQ(d.reason, "outside allowed time windows");
  }
  EXPECT_EQ(D(Good(), Running(), c, kNow, {1, Minute(20, 0)}).action, Action::kRun);
}

TEST(OwnerPolicy, EmptyWindowsAllowEveryMinuteOfTheWeek) {
  PolicyConfig c;
  for (int day = 0; day < 7; ++day) {
    for (int m = 0; m < 24 * 60; ++m) {
      ASSERT_EQ(D(Good(), Running(), c, kNow, {day, m}).action, Action::kRun) << day << " " << m;
    }
  }
}

TEST(OwnerPolicy, AnyOfSeveralWindowsAllows) {
  PolicyConfig c;
  c.windows = {{kWeekdays, Minute(19, 0), Minute(7, 0)},
               {kSaturday | kSunday, Minute(0, 0), Minute(0, 0)}};  // whole weekend days
  EXPECT_EQ(D(Good(), Running(), c, kNow, {5, Minute(12, 0)}).action, Action::kRun);  // Sat
  EXPECT_EQ(D(Good(), Running(), c, kNow, {1, Minute(20, 0)}).action, Action::kRun);  // Tue
  EXPECT_EQ(D(Good(), Running(), c, kNow, {1, Minute(12, 0)}).action, Action::kVacate);
}

TEST(OwnerPolicy, WindowBeatsBattery) {
  PolicyConfig c;
  c.on_battery = BatteryAction::kSuspend;
  c.windows = {{kWeekdays, Minute(19, 0), Minute(7, 0)}};
  Readings r = Good();
  r.on_ac_power = false;
  EXPECT_EQ(D(r, Running(), c).reason, "outside allowed time windows");
}

TEST(TimeWindow, PlainWindowStartInclusiveEndExclusive) {
  const TimeWindow w{kEveryDay, Minute(9, 0), Minute(17, 0)};
  EXPECT_FALSE(InWindow(w, {2, Minute(8, 59)}));
  EXPECT_TRUE(InWindow(w, {2, Minute(9, 0)}));
  EXPECT_TRUE(InWindow(w, {2, Minute(16, 59)}));
  EXPECT_FALSE(InWindow(w, {2, Minute(17, 0)}));
}

TEST(TimeWindow, PlainWindowHonoursDays) {
  const TimeWindow w{kMonday | kWednesday, Minute(9, 0), Minute(17, 0)};
  const bool expected[7] = {true, false, true, false, false, false, false};
  for (int day = 0; day < 7; ++day) {
    EXPECT_EQ(InWindow(w, {day, Minute(12, 0)}), expected[day]) << day;
  }
}

TEST(TimeWindow, WrappedWeekdayNightsIncludingFridayIntoSaturday) {
  const TimeWindow w{kWeekdays, Minute(19, 0), Minute(7, 0)};
  constexpr int kMon = 0, kTue = 1, kFri = 4, kSat = 5, kSun = 6;
  // Evening edges.
  EXPECT_FALSE(InWindow(w, {kMon, Minute(18, 59)}));
  EXPECT_TRUE(InWindow(w, {kMon, Minute(19, 0)}));
  EXPECT_TRUE(InWindow(w, {kMon, Minute(23, 59)}));
  // Morning part belongs to the previous day's window.
  EXPECT_TRUE(InWindow(w, {kTue, Minute(0, 0)}));
  EXPECT_TRUE(InWindow(w, {kTue, Minute(6, 59)}));
  EXPECT_FALSE(InWindow(w, {kTue, Minute(7, 0)}));
  // Friday night runs into Saturday morning, and stops there.
  EXPECT_TRUE(InWindow(w, {kFri, Minute(19, 0)}));
  EXPECT_TRUE(InWindow(w, {kFri, Minute(23, 59)}));
  EXPECT_TRUE(InWindow(w, {kSat, Minute(0, 0)}));
  EXPECT_TRUE(InWindow(w, {kSat, Minute(6, 59)}));
  EXPECT_FALSE(InWindow(w, {kSat, Minute(7, 0)}));
  EXPECT_FALSE(InWindow(w, {kSat, Minute(19, 0)}));
  EXPECT_FALSE(InWindow(w, {kSat, Minute(23, 59)}));
  // Sunday night is not in mon-fri, so Monday early morning is outside.
  EXPECT_FALSE(InWindow(w, {kSun, Minute(20, 0)}));
  EXPECT_FALSE(InWindow(w, {kSun, Minute(23, 59)}));
  EXPECT_FALSE(InWindow(w, {kMon, Minute(0, 0)}));
  EXPECT_FALSE(InWindow(w, {kMon, Minute(6, 59)}));
}

TEST(TimeWindow, SundayNightWrapsIntoMonday) {
  const TimeWindow w{kSunday, Minute(22, 0), Minute(2, 0)};
  EXPECT_TRUE(InWindow(w, {6, Minute(22, 0)}));
  EXPECT_TRUE(InWindow(w, {0, Minute(1, 59)}));
  EXPECT_FALSE(InWindow(w, {0, Minute(2, 0)}));
  EXPECT_FALSE(InWindow(w, {0, Minute(22, 0)}));
  EXPECT_FALSE(InWindow(w, {6, Minute(1, 0)}));  // Saturday is not in days
}

TEST(TimeWindow, EqualStartAndEndIsTwentyFourHours) {
  const TimeWindow w{kMonday, Minute(8, 0), Minute(8, 0)};
  EXPECT_FALSE(InWindow(w, {0, Minute(7, 59)}));
  EXPECT_TRUE(InWindow(w, {0, Minute(8, 0)}));
  EXPECT_TRUE(InWindow(w, {1, Minute(7, 59)}));
  EXPECT_FALSE(InWindow(w, {1, Minute(8, 0)}));
}

TEST(TimeWindow, NoDaysNeverMatches) {
  const TimeWindow w{0, Minute(0, 0), Minute(0, 0)};
  for (int day = 0; day < 7; ++day) EXPECT_FALSE(InWindow(w, {day, Minute(12, 0)}));
}

// ---------------------------------------------------------------- rule 3: battery

TEST(OwnerPolicy, OnBatteryVacateByDefault) {
  Readings r = Good();
  r.on_ac_power = false;
  for (const PolicyState& s : kAllModes) {
    Decision d = D(r, s);
    EXPECT_EQ(d.action, Action::kVacate);
    EXPECT_EQ(d.next_mode, Mode::kIdle);
    EXPECT_EQ(d.reason, "on battery");
  }
}

TEST(OwnerPolicy, OnBatterySuspend) {
  PolicyConfig c;
  c.on_battery = BatteryAction::kSuspend;
  Readings r = Good();
  r.on_ac_power = false;
  Decision running = D(r, Running(), c);
  EXPECT_EQ(running.action, Action::kSuspend);
  EXPECT_EQ(running.next_mode, Mode::kSuspended);
  Decision suspended = D(r, Suspended(), c);
  EXPECT_EQ(suspended.action, Action::kSuspend);
  EXPECT_EQ(suspended.next_mode, Mode::kSuspended);
  Decision idle = D(r, Idle(), c);
  EXPECT_EQ(idle.action, Action::kSuspend);
  EXPECT_EQ(idle.next_mode, Mode::kIdle);  // no task, and none accepted
  // Suspended on battery for too long: vacate.
  Decision old = D(r, Suspended(kNow - c.vacate_after_suspend_s), c);
  EXPECT_EQ(old.action, Action::kVacate);
  EXPECT_EQ(old.next_mode, Mode::kIdle);
}

TEST(OwnerPolicy, OnBatteryRunIgnoresBattery) {
  PolicyConfig c;
  c.on_battery = BatteryAction::kRun;
  Readings r = Good();
  r.on_ac_power = false;
  r.battery_percent = 3;
  for (const PolicyState& s : kAllModes) EXPECT_EQ(D(r, s, c).action, Action::kRun);
}

TEST(OwnerPolicy, OnAcOrUnknownPowerIgnoresBatteryAction) {
  for (BatteryAction b : {BatteryAction::kRun, BatteryAction::kSuspend, BatteryAction::kVacate}) {
    PolicyConfig c;
    c.on_battery = b;
    Readings r = Good();
    r.on_ac_power = true;
    r.battery_percent = 1;
    EXPECT_EQ(D(r, Running(), c).action, Action::kRun) << ToString(b);
    r.on_ac_power.reset();
    EXPECT_EQ(D(r, Running(), c).action, Action::kRun) << ToString(b);
  }
}

TEST(OwnerPolicy, BatteryRunStillObeysTemperatureLoadAndOwner) {
  PolicyConfig c;
  c.on_battery = BatteryAction::kRun;
  Readings hot = Good();
  hot.on_ac_power = false;
  hot.temperature_c = 95;
  EXPECT_EQ(D(hot, Running(), c).action, Action::kSuspend);
  Readings busy = Good();
  busy.on_ac_power = false;
  busy.owner_cpu_load = 0.9;
  EXPECT_EQ(D(busy, Running(), c).action, Action::kSuspend);
  Readings owner = Good();
  owner.on_ac_power = false;
  owner.idle_seconds = 1;
  EXPECT_EQ(D(owner, Running(), c).action, Action::kSuspend);
}

TEST(OwnerPolicy, BatteryVacateBeatsTemperature) {
  Readings r = Good();
  r.on_ac_power = false;
  r.temperature_c = 120;
  EXPECT_EQ(D(r, Running()).action, Action::kVacate);
  EXPECT_EQ(D(r, Running()).reason, "on battery");
}

// ---------------------------------------------------------------- rule 4: temperature

TEST(OwnerPolicy, TemperatureAboveMaxSuspends) {
  Readings r = Good();
  r.temperature_c = 90.5;
  Decision d = D(r, Running());
  EXPECT_EQ(d.action, Action::kSuspend);
  EXPECT_EQ(d.next_mode, Mode::kSuspended);
  EXPECT_NE(d.reason.find("temperature"), std::string::npos) << d.reason;
  r.temperature_c = 90;  // at the limit: still allowed
  EXPECT_EQ(D(r, Running()).action, Action::kRun);
}

TEST(OwnerPolicy, SuspendedForHeatResumesOnlyFiveDegreesBelowTheLimit) {
  Readings r = Good();
  r.temperature_c = 88;  // under the 90 C limit, not 5 below it
  Decision d = D(r, Suspended(kNow - 10, Cause::kTemperature));
  EXPECT_EQ(d.action, Action::kSuspend) << d.reason;
  EXPECT_EQ(d.reason, "temperature 88 C, not yet down to 85 C (limit 90 C)");
  EXPECT_EQ(D(r, Running()).action, Action::kRun);  // running, the limit is 90
  r.temperature_c = 85;
  EXPECT_EQ(D(r, Suspended(kNow - 10, Cause::kTemperature)).action, Action::kRun);
  // Suspended for another reason (a keypress), 88 C does not keep the task frozen.
  r.temperature_c = 88;
  EXPECT_EQ(D(r, Suspended(kNow - 10, Cause::kOwnerInput)).action, Action::kRun);
}

TEST(OwnerPolicy, TemperatureLimitIsConfigurable) {
  PolicyConfig c;
  c.max_temperature_c = 70;
  Readings r = Good();
  r.temperature_c = 75;
  EXPECT_EQ(D(r, Running(), c).action, Action::kSuspend);
  EXPECT_EQ(D(r, Running()).action, Action::kRun);
}

TEST(OwnerPolicy, TemperatureBeatsCpuLoadInReason) {
  Readings r = Good();
  r.temperature_c = 95;
  r.owner_cpu_load = 0.9;
  r.idle_seconds = 0;
  EXPECT_NE(D(r, Running()).reason.find("temperature"), std::string::npos);
}

// ---------------------------------------------------------------- rule 5: owner CPU load

TEST(OwnerPolicy, OwnerCpuLoadAboveMaxSuspends) {
  Readings r = Good();
  r.owner_cpu_load = 0.51;
  Decision d = D(r, Running());
  EXPECT_EQ(d.action, Action::kSuspend);
  EXPECT_EQ(d.next_mode, Mode::kSuspended);
  EXPECT_NE(d.reason.find("cpu load"), std::string::npos) << d.reason;
  r.owner_cpu_load = 0.5;
  EXPECT_EQ(D(r, Running()).action, Action::kRun);
}

TEST(OwnerPolicy, SuspendedForLoadResumesOnlyWhenLoadFallsToSixTenthsOfTheLimit) {
  // Without the gap, a load hovering at the limit would thaw and freeze the task every second.
  Readings r = Good();
  r.owner_cpu_load = 0.45;
  Decision d = D(r, Suspended(kNow - 10, Cause::kOwnerLoad));
  EXPECT_EQ(d.action, Action::kSuspend) << d.reason;
  EXPECT_EQ(d.reason, "owner cpu load 0.45, not yet down to 0.3 (limit 0.5)");
  EXPECT_EQ(D(r, Running()).action, Action::kRun);
  r.owner_cpu_load = 0.3;
  d = D(r, Suspended(kNow - 10, Cause::kOwnerLoad));
  EXPECT_EQ(d.action, Action::kRun);
  EXPECT_EQ(d.reason, "resume: no rule stops work");
  // Suspended for a keypress, a load of 0.45 (under the limit) does not keep it frozen.
  r.owner_cpu_load = 0.45;
  EXPECT_EQ(D(r, Suspended(kNow - 10, Cause::kOwnerInput)).action, Action::kRun);
  // A dedicated config (limit 1) never suspends for load, suspended or not.
  PolicyConfig dedicated;
  MakeDedicated(&dedicated);
  r.owner_cpu_load = 1;
  EXPECT_EQ(D(r, Suspended(), dedicated).action, Action::kRun);
  EXPECT_EQ(D(r, Running(), dedicated).action, Action::kRun);
}

TEST(OwnerPolicy, AdvanceRecordsTheCauseOfASuspension) {
  Readings r = Good();
  r.owner_cpu_load = 0.9;
  Decision d = D(r, Running());
  EXPECT_EQ(d.cause, Cause::kOwnerLoad);
  PolicyState s = Advance(Running(), d, kNow);
  EXPECT_EQ(s.mode, Mode::kSuspended);
  EXPECT_EQ(s.cause, Cause::kOwnerLoad);
  // Still suspended, now for the owner's input: the cause follows, since_s stays.
  r = Good();
  r.idle_seconds = 0;
  d = D(r, s, {}, kNow + 5);
  PolicyState s2 = Advance(s, d, kNow + 5);
  EXPECT_EQ(s2.cause, Cause::kOwnerInput);
  EXPECT_EQ(s2.since_s, kNow);
  // Resumed: no cause.
  EXPECT_EQ(Advance(s2, D(Good(), s2, {}, kNow + 9), kNow + 9).cause, Cause::kNone);
}

TEST(OwnerPolicy, EveryDecisionSaysWhichRuleMadeIt) {
  struct Case {
    const char* name;
    Readings r;
    PolicyConfig c;
    Action action;
    Cause cause;
  };
  std::vector<Case> cases;
  auto with = [](auto set) {
    Readings r = Good();
    set(r);
    return r;
  };
  PolicyConfig night;
  night.windows = {{kEveryDay, Minute(19, 0), Minute(7, 0)}};
  PolicyConfig suspend_on_battery;
  suspend_on_battery.on_battery = BatteryAction::kSuspend;
  cases.push_back({"good", Good(), {}, Action::kRun, Cause::kNone});
  cases.push_back({"lid", with([](Readings& r) { r.lid_closed = true; }), {}, Action::kVacate,
                   Cause::kLid});
  cases.push_back({"sleep", with([](Readings& r) { r.sleep_imminent = true; }), {},
                   Action::kVacate, Cause::kSleep});
  cases.push_back({"window", Good(), night, Action::kVacate, Cause::kWindow});
  cases.push_back({"battery vacate", with([](Readings& r) { r.on_ac_power = false; }), {},
                   Action::kVacate, Cause::kBattery});
  cases.push_back({"battery suspend", with([](Readings& r) { r.on_ac_power = false; }),
                   suspend_on_battery, Action::kSuspend, Cause::kBattery});
  cases.push_back({"hot", with([](Readings& r) { r.temperature_c = 99; }), {}, Action::kSuspend,
                   Cause::kTemperature});
  cases.push_back({"load", with([](Readings& r) { r.owner_cpu_load = 0.9; }), {},
                   Action::kSuspend, Cause::kOwnerLoad});
  cases.push_back({"input", with([](Readings& r) { r.idle_seconds = 1; }), {}, Action::kSuspend,
                   Cause::kOwnerInput});
  for (const Case& c : cases) {
    Decision d = D(c.r, Running(), c.c);
    EXPECT_EQ(d.action, c.action) << c.name;
    EXPECT_EQ(d.cause, c.cause) << c.name << ": " << ToString(d.cause);
  }
  EXPECT_STREQ(ToString(Cause::kOwnerInput), "owner_input");
  EXPECT_STREQ(ToString(Cause::kWindow), "window");
}

TEST(OwnerPolicy, AVacateAfterALongSuspensionKeepsItsCauseButNotTheHysteresis) {
  Readings r = Good();
  r.temperature_c = 99;
  PolicyConfig c;
  const PolicyState long_hot = Suspended(kNow - c.vacate_after_suspend_s, Cause::kTemperature);
  Decision d = D(r, long_hot, c);
  EXPECT_EQ(d.action, Action::kVacate);
  EXPECT_EQ(d.cause, Cause::kTemperature);
  // Vacated, the machine is idle: the cause of a vacate is for reporting only, and no
  // hysteresis carries over (87 C, under the limit but within the margin, starts work).
  PolicyState s = Advance(long_hot, d, kNow);
  EXPECT_EQ(s.mode, Mode::kIdle);
  EXPECT_EQ(s.cause, Cause::kNone);
  r.temperature_c = 87;
  EXPECT_EQ(D(r, s, c, kNow + 1).action, Action::kRun);
  // A lid vacate leaves no cause in the state either.
  r = Good();
  r.lid_closed = true;
  EXPECT_EQ(Advance(Running(), D(r, Running()), kNow).cause, Cause::kNone);
}

TEST(OwnerPolicy, CpuLoadBeatsOwnerInputInReason) {
  Readings r = Good();
  r.owner_cpu_load = 0.9;
  r.idle_seconds = 0;
  EXPECT_NE(D(r, Running()).reason.find("cpu load"), std::string::npos);
}

// ---------------------------------------------------------------- rule 6: owner activity

TEST(OwnerPolicy, RunningSuspendsWhenOwnerTouchesTheMachine) {
  Readings r = Good();
  r.idle_seconds = 0;
  Decision d = D(r, Running());
  EXPECT_EQ(d.action, Action::kSuspend);
  EXPECT_EQ(d.next_mode, Mode::kSuspended);
  EXPECT_NE(d.reason.find("owner active"), std::string::npos) << d.reason;
  r.idle_seconds = 59.999;
  EXPECT_EQ(D(r, Running()).action, Action::kSuspend);
  r.idle_seconds = 60;
  EXPECT_EQ(D(r, Running()).action, Action::kRun);
}

TEST(OwnerPolicy, SuspendedResumesOnceIdleAgain) {
  Readings r = Good();
  r.idle_seconds = 59.999;
  Decision stay = D(r, Suspended());
  EXPECT_EQ(stay.action, Action::kSuspend);
  EXPECT_EQ(stay.next_mode, Mode::kSuspended);
  r.idle_seconds = 60;
  Decision resume = D(r, Suspended());
  EXPECT_EQ(resume.action, Action::kRun);
  EXPECT_EQ(resume.next_mode, Mode::kRunning);
}

TEST(OwnerPolicy, SuspendedResumesEvenAfterVacateDeadlineWhenNothingStopsWork) {
  Readings r = Good();
  EXPECT_EQ(D(r, Suspended(kNow - 1e6)).action, Action::kRun);
}

TEST(OwnerPolicy, SuspendedVacatesExactlyAtDeadlineNotOneMillisecondBefore) {
  PolicyConfig c;
  Readings r = Good();
  r.idle_seconds = 5;  // owner still at the machine
  const double since = 1000;
  Decision before = D(r, Suspended(since), c, since + c.vacate_after_suspend_s - 0.001);
  EXPECT_EQ(before.action, Action::kSuspend);
  EXPECT_EQ(before.next_mode, Mode::kSuspended);
  Decision at = D(r, Suspended(since), c, since + c.vacate_after_suspend_s);
  EXPECT_EQ(at.action, Action::kVacate);
  EXPECT_EQ(at.next_mode, Mode::kIdle);
  EXPECT_NE(at.reason.find("suspended too long"), std::string::npos) << at.reason;
  EXPECT_EQ(D(r, Suspended(since), c, since + 1e4).action, Action::kVacate);
}

TEST(OwnerPolicy, SuspensionDeadlineAppliesToEverySuspendReason) {
  PolicyConfig c;
  c.on_battery = BatteryAction::kSuspend;
  const PolicyState old = Suspended(kNow - c.vacate_after_suspend_s);
  Readings hot = Good();
  hot.temperature_c = 99;
  Readings busy = Good();
  busy.owner_cpu_load = 1;
  Readings battery = Good();
  battery.on_ac_power = false;
  for (const Readings& r : {hot, busy, battery}) {
    EXPECT_EQ(D(r, old, c).action, Action::kVacate);
    EXPECT_EQ(D(r, Suspended(), c).action, Action::kSuspend);
  }
}

TEST(OwnerPolicy, IdleStartsOnlyAfterStartIdle) {
  Readings r = Good();
  r.idle_seconds = 299.999;
  Decision wait = D(r, Idle());
  EXPECT_EQ(wait.action, Action::kSuspend);
  EXPECT_EQ(wait.next_mode, Mode::kIdle);
  r.idle_seconds = 60;  // enough to keep running, not enough to start
  EXPECT_EQ(D(r, Idle()).next_mode, Mode::kIdle);
  EXPECT_EQ(D(r, Running()).action, Action::kRun);
  r.idle_seconds = 300;
  Decision start = D(r, Idle());
  EXPECT_EQ(start.action, Action::kRun);
  EXPECT_EQ(start.next_mode, Mode::kRunning);
  // Unknown input: not at once; once the machine's load has stayed low start_idle_s.
  r.idle_seconds.reset();
  EXPECT_EQ(D(r, Idle()).cause, Cause::kOwnerUnknown);
  PolicyState quiet = Idle();
  quiet.quiet_since_s = kNow - 300;
  EXPECT_EQ(D(r, quiet).action, Action::kRun);
}

TEST(OwnerPolicy, IdleNeverVacatedForLongIdleTime) {
  // The suspension deadline is about a suspended task; an idle worker has none.
  Readings r = Good();
  r.idle_seconds = 1;
  Decision d = D(r, Idle(kNow - 1e6));
  EXPECT_EQ(d.action, Action::kSuspend);
  EXPECT_EQ(d.next_mode, Mode::kIdle);
}

TEST(OwnerPolicy, DedicatedMachineNeverWaitsForTheOwner) {
  PolicyConfig c;
  c.start_idle_s = 0;
  Readings r = Good();
  r.idle_seconds = 0;
  for (const PolicyState& s : {Idle(), Running(), Suspended(), Suspended(kNow - 1e6)}) {
    Decision d = D(r, s, c);
    EXPECT_EQ(d.action, Action::kRun) << ToString(s.mode);
    EXPECT_EQ(d.next_mode, Mode::kRunning);
  }
  // Other rules still apply on a dedicated machine.
  r.temperature_c = 95;
  EXPECT_EQ(D(r, Running(), c).action, Action::kSuspend);
}

// ---------------------------------------------------------------- state and scenario

TEST(OwnerPolicy, AdvanceKeepsSinceWhileModeIsUnchanged) {
  PolicyState s{Mode::kSuspended, 100};
  EXPECT_EQ(Advance(s, {Action::kSuspend, Mode::kSuspended, ""}, 150).since_s, 100);
  PolicyState next = Advance(s, {Action::kRun, Mode::kRunning, ""}, 150);
  EXPECT_EQ(next.mode, Mode::kRunning);
  EXPECT_EQ(next.since_s, 150);
}

TEST(OwnerPolicy, ScenarioOwnerReturnsThenLeaves) {
  PolicyConfig c;
  LocalTime t = kTuesdayNoon;
  PolicyState s;  // idle
  double now = 0;
  double last_input = 0;
  auto step = [&](double at) {
    now = at;
    Readings r = Good();
    r.idle_seconds = now - last_input;
    Decision d = Decide(r, c, s, now, t);
    s = Advance(s, d, now);
    return d.action;
  };
  EXPECT_EQ(step(299), Action::kSuspend);  // not yet idle long enough to start
  EXPECT_EQ(s.mode, Mode::kIdle);
  EXPECT_EQ(step(300), Action::kRun);
  EXPECT_EQ(s.mode, Mode::kRunning);
  last_input = 400;                        // the owner comes back
  EXPECT_EQ(step(401), Action::kSuspend);
  EXPECT_EQ(s.mode, Mode::kSuspended);
  EXPECT_EQ(s.since_s, 401);
  EXPECT_EQ(step(460), Action::kRun);      // idle 60 s: resume
  last_input = 500;                        // and again, this time for good
  EXPECT_EQ(step(500), Action::kSuspend);
  last_input = 600;                        // still at the machine
  EXPECT_EQ(step(619.999), Action::kSuspend);
  EXPECT_EQ(s.since_s, 500);
  EXPECT_EQ(step(620), Action::kVacate);   // 120 s suspended
  EXPECT_EQ(s.mode, Mode::kIdle);
  EXPECT_EQ(step(899.999), Action::kSuspend);  // start needs 300 s idle again
  EXPECT_EQ(s.mode, Mode::kIdle);
  EXPECT_EQ(step(900), Action::kRun);
  EXPECT_EQ(s.mode, Mode::kRunning);
}

// ---------------------------------------------------------------- invariants sweep

TEST(OwnerPolicySweep, BooleanSensorCombinations) {
  const std::vector<std::optional<bool>> tri = {std::nullopt, false, true};
  const std::vector<std::optional<double>> idle = {std::nullopt, 0.0, 3600.0};
  int cases = 0;
  for (BatteryAction battery :
       {BatteryAction::kRun, BatteryAction::kSuspend, BatteryAction::kVacate}) {
    for (const PolicyState& s : {Idle(), Running(), Suspended(), Suspended(kNow - 1e6)}) {
      for (const auto& lid : tri) {
        for (const auto& sleep : tri) {
          for (const auto& ac : tri) {
            for (const auto& idle_s : idle) {
              PolicyConfig c;
              c.on_battery = battery;
              Readings r;
              r.lid_closed = lid;
              r.sleep_imminent = sleep;
              r.on_ac_power = ac;
              r.idle_seconds = idle_s;
              const Decision d = D(r, s, c);
              ++cases;
              SCOPED_TRACE(::testing::Message()
                           << "battery=" << ToString(battery) << " mode=" << ToString(s.mode)
                           << " lid=" << (lid ? (*lid ? "1" : "0") : "?")
                           << " sleep=" << (sleep ? (*sleep ? "1" : "0") : "?")
                           << " ac=" << (ac ? (*ac ? "1" : "0") : "?") << " reason=" << d.reason);
              const bool lid_or_sleep = lid.value_or(false) || sleep.value_or(false);
              if (lid_or_sleep) {
                EXPECT_EQ(d.action, Action::kVacate);
              }
              // Action and mode always agree.
              if (d.action == Action::kVacate) { EXPECT_EQ(d.next_mode, Mode::kIdle); }
              if (d.action == Action::kRun) { EXPECT_EQ(d.next_mode, Mode::kRunning); }
              if (d.action == Action::kSuspend) { EXPECT_NE(d.next_mode, Mode::kRunning); }
              if (s.mode == Mode::kIdle) { EXPECT_NE(d.next_mode, Mode::kSuspended); }
              EXPECT_FALSE(d.reason.empty());
              // With no stopping signal known, work runs.
              const bool on_battery_stops =
                  ac == std::optional<bool>(false) && battery != BatteryAction::kRun;
              // An unknown input with no load reading counts as an owner who may be there.
              const bool owner_active = idle_s == std::optional<double>(0.0) || !idle_s;
              if (!lid_or_sleep && !on_battery_stops && !owner_active) {
                EXPECT_EQ(d.action, Action::kRun);
              } else {
                EXPECT_NE(d.action, Action::kRun);
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 4 * 3 * 3 * 3 * 3);
}

TEST(OwnerPolicySweep, AnySubsetOfKnownGoodSensorsRuns) {
  const Readings good = Good();
  for (int mask = 0; mask < (1 << 7); ++mask) {
    Readings r;
    if (mask & 1) r.idle_seconds = good.idle_seconds;
    if (mask & 2) r.on_ac_power = good.on_ac_power;
    if (mask & 4) r.battery_percent = good.battery_percent;
    if (mask & 8) r.temperature_c = good.temperature_c;
    if (mask & 16) r.lid_closed = good.lid_closed;
    if (mask & 32) r.owner_cpu_load = good.owner_cpu_load;
    if (mask & 64) r.sleep_imminent = good.sleep_imminent;
    for (PolicyState s : kAllModes) {
      s.quiet_since_s = kNow - 1e5;
      // Without the input, the load stands in for it: one of the two must be known.
      const bool runs = (mask & 1) || (mask & 32);
      EXPECT_EQ(D(r, s).action == Action::kRun, runs) << "mask=" << mask << " " << ToString(s.mode);
    }
  }
}

}  // namespace
}  // namespace idlepool::owner
