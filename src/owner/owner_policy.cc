#include "owner/owner_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

namespace idlepool::owner {
namespace {

bool Is(const std::optional<bool>& v, bool want) { return v.has_value() && *v == want; }

// True only when the reading is known and strictly above the limit (NaN compares false).
bool Above(const std::optional<double>& v, double limit) { return v.has_value() && *v > limit; }

// True only when the reading is known and strictly below the threshold.
bool Below(const std::optional<double>& v, double threshold) {
  return v.has_value() && *v < threshold;
}

bool DayIn(uint8_t days, int weekday) { return (days >> (((weekday % 7) + 7) % 7)) & 1u; }

Decision Vacate(std::string reason, Cause cause) {
  return {Action::kVacate, Mode::kIdle, std::move(reason), cause, std::nullopt};
}

// A suspend-class result: an idle worker stays idle; a running one suspends; one suspended for
// vacate_after_suspend_s or longer is vacated.
Decision Suspend(const PolicyConfig& config, const PolicyState& prev, double now_s,
                 const std::string& reason, Cause cause) {
  switch (prev.mode) {
    case Mode::kIdle:
      return {Action::kSuspend, Mode::kIdle, "not starting: " + reason, cause, std::nullopt};
    case Mode::kSuspended:
      if (now_s - prev.since_s >= config.vacate_after_suspend_s) {
        return Vacate("suspended too long: " + reason, cause);
      }
      return {Action::kSuspend, Mode::kSuspended, reason, cause, std::nullopt};
    case Mode::kRunning:
      break;
  }
  return {Action::kSuspend, Mode::kSuspended, reason, cause, std::nullopt};
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool Known(const std::optional<double>& v) { return v.has_value() && !std::isnan(*v); }

// Rule 6 without an input reading: a suspend-class decision while the machine's load has not
// stayed low for `threshold` seconds, else nullopt (work may run) with the quiet time in `quiet`.
std::optional<Decision> UnknownOwner(const Readings& r, const PolicyConfig& config,
                                     const PolicyState& prev, double now_s, double threshold,
                                     std::optional<double>* quiet) {
  if (!Known(r.owner_cpu_load)) {
    return Suspend(config, prev, now_s,
                   "owner activity unknown: no input reading and no usable CPU load reading",
                   Cause::kOwnerUnknown);
  }
  const double limit = std::min(config.max_owner_cpu_load, PolicyConfig{}.max_owner_cpu_load);
  if (*r.owner_cpu_load > limit) {
    return Suspend(config, prev, now_s,
                   "owner input unknown and the machine's own cpu load " + Num(*r.owner_cpu_load) +
                       " above " + Num(limit),
                   Cause::kOwnerUnknown);
  }
  *quiet = prev.quiet_since_s.value_or(now_s);
  if (now_s - **quiet >= threshold) return std::nullopt;
  Decision d = Suspend(config, prev, now_s,
                       "owner input unknown: the machine's own cpu load low for " +
                           Num(now_s - **quiet) + " s < " + Num(threshold) + " s",
                       Cause::kOwnerUnknown);
  if (d.action != Action::kVacate) d.quiet_since_s = *quiet;
  return d;
}

}  // namespace

bool OwnerInputUnknown(const Readings& r, const PolicyConfig& config) {
  return config.start_idle_s > 0 && !Known(r.idle_seconds);
}

bool InWindow(const TimeWindow& window, LocalTime local) {
  const int m = local.minute_of_day;
  if (window.start_minute < window.end_minute) {
    return DayIn(window.days, local.weekday) && m >= window.start_minute && m < window.end_minute;
  }
  // Wraps past midnight: the evening part on its own day, the morning part on the next day.
  return (DayIn(window.days, local.weekday) && m >= window.start_minute) ||
         (DayIn(window.days, local.weekday + 6) && m < window.end_minute);
}

Decision Decide(const Readings& r, const PolicyConfig& config, const PolicyState& prev,
                double now_s, LocalTime local) {
  // 1. The machine is about to stop under us: give the task back now.
  if (Is(r.lid_closed, true)) return Vacate("lid closed", Cause::kLid);
  if (Is(r.sleep_imminent, true)) return Vacate("sleep imminent", Cause::kSleep);

  // 2. Outside every allowed window.
  if (!config.windows.empty()) {
    bool inside = false;
    for (const TimeWindow& w : config.windows) inside = inside || InWindow(w, local);
    if (!inside) return Vacate("outside allowed time windows", Cause::kWindow);
  }

  // 3. On battery.
  if (Is(r.on_ac_power, false)) {
    switch (config.on_battery) {
      case BatteryAction::kVacate:
        return Vacate("on battery", Cause::kBattery);
      case BatteryAction::kSuspend:
        return Suspend(config, prev, now_s, "on battery", Cause::kBattery);
      case BatteryAction::kRun:
        break;
    }
  }

  // 4. Too hot. Suspended, the machine must cool kTemperatureHysteresisC below the limit first.
  const bool suspended = prev.mode == Mode::kSuspended;
  const double max_temp =
      config.max_temperature_c -
      (suspended && prev.cause == Cause::kTemperature ? kTemperatureHysteresisC : 0.0);
  if (Above(r.temperature_c, max_temp)) {
    // Above the limit, or (suspended for heat) not yet cooled to where work resumes.
    const std::string why = Above(r.temperature_c, config.max_temperature_c)
                                ? "temperature " + Num(*r.temperature_c) + " C above " +
                                      Num(config.max_temperature_c) + " C"
                                : "temperature " + Num(*r.temperature_c) + " C, not yet down to " +
                                      Num(max_temp) + " C (limit " + Num(config.max_temperature_c) +
                                      " C)";
    return Suspend(config, prev, now_s, why, Cause::kTemperature);
  }

  // 5. The owner is using the CPU. Suspended, their load must fall to kLoadResumeFraction of
  // the limit first: our frozen task no longer adds to the machine's heat and contention, and
  // without the gap a load near the limit would thaw and freeze the task every second.
  const double max_load =
      config.max_owner_cpu_load *
      (suspended && prev.cause == Cause::kOwnerLoad ? kLoadResumeFraction : 1.0);
  if (config.max_owner_cpu_load < 1 && Above(r.owner_cpu_load, max_load)) {
    const std::string why = Above(r.owner_cpu_load, config.max_owner_cpu_load)
                                ? "owner cpu load " + Num(*r.owner_cpu_load) + " above " +
                                      Num(config.max_owner_cpu_load)
                                : "owner cpu load " + Num(*r.owner_cpu_load) +
                                      ", not yet down to " + Num(max_load) + " (limit " +
                                      Num(config.max_owner_cpu_load) + ")";
    return Suspend(config, prev, now_s, why, Cause::kOwnerLoad);
  }

  // 6. The owner is at the machine. start_idle_s == 0 marks a dedicated machine.
  std::optional<double> quiet;
  if (config.start_idle_s > 0) {
    const double threshold = prev.mode == Mode::kIdle ? config.start_idle_s : config.resume_idle_s;
    if (OwnerInputUnknown(r, config)) {
      if (auto d = UnknownOwner(r, config, prev, now_s, threshold, &quiet)) return *d;
    } else if (Below(r.idle_seconds, threshold)) {
      return Suspend(
          config, prev, now_s,
          "owner active (idle " + Num(*r.idle_seconds) + " s < " + Num(threshold) + " s)",
          Cause::kOwnerInput);
    }
  }

  // 7. Nothing stops work.
  Decision run{Action::kRun, Mode::kRunning, "running", Cause::kNone, std::nullopt};
  if (prev.mode == Mode::kIdle) run.reason = "start: no rule stops work";
  if (prev.mode == Mode::kSuspended) run.reason = "resume: no rule stops work";
  run.quiet_since_s = quiet;
  return run;
}

PolicyState Advance(const PolicyState& prev, const Decision& decision, double now_s) {
  PolicyState next = prev;
  if (decision.next_mode != prev.mode) next = {decision.next_mode, now_s, Cause::kNone, {}};
  next.cause = next.mode == Mode::kSuspended ? decision.cause : Cause::kNone;
  next.quiet_since_s = decision.quiet_since_s;
  return next;
}

void MakeDedicated(PolicyConfig* config) {
  config->start_idle_s = 0;
  config->max_owner_cpu_load = 1;
}

std::string DefaultConfigToml() {
  const PolicyConfig d;
  std::ostringstream out;
  out << "# idlepool worker owner policy. Values shown are the defaults.\n"
      << "\n"
      << "[owner]\n"
      << "\n"
      << "# Start work only after the owner has been idle this long (HTCondor's desktop\n"
      << "# policy waits 15). 0 = dedicated machine: never wait, owner input never suspends.\n"
      << "start_idle_minutes = " << Num(d.start_idle_s / 60) << "\n"
      << "\n"
      << "# A running task is suspended when the owner was active within this many seconds,\n"
      << "# and a suspended one resumes once the owner has been idle this long.\n"
      << "resume_idle_seconds = " << Num(d.resume_idle_s) << "\n"
      << "\n"
      << "# Vacate (give back) a task that stayed suspended this long.\n"
      << "vacate_after_suspend_seconds = " << Num(d.vacate_after_suspend_s) << "\n"
      << "\n"
      << "# On battery: \"vacate\", \"suspend\" or \"run\".\n"
      << "on_battery = \"" << ToString(d.on_battery) << "\"\n"
      << "\n"
      << "# Suspend above this CPU temperature (degrees Celsius); resume 5 degrees below it.\n"
      << "max_temperature_c = " << Num(d.max_temperature_c) << "\n"
      << "\n"
      << "# Suspend when the owner's own CPU load (0..1, the pool's tasks excluded) exceeds this;\n"
      << "# resume once it is below 0.6 x this. 1 = never suspend for load.\n"
      << "max_owner_cpu_load = " << Num(d.max_owner_cpu_load) << "\n"
      << "\n"
      << "# Work only inside these local-time windows; absent or empty = always. days is\n"
      << "# \"daily\", a range (\"mon-fri\"), a list (\"sat,sun\") or both (\"mon-wed,fri\");\n"
      << "# start and end are \"HH:MM\" (00:00..23:59). end <= start wraps past midnight, and\n"
      << "# the morning part belongs to the day the window started. For example:\n"
      << "# windows = [{days = \"mon-fri\", start = \"19:00\", end = \"07:00\"}]\n"
      << "\n"
      << "# Vacating: SIGTERM, then SIGKILL after this many seconds (" << Num(kSleepVacateGraceS)
      << " when the machine is\n"
      << "# about to sleep). A task saves its checkpoint on SIGTERM within this time.\n"
      << "vacate_grace_seconds = " << Num(d.vacate_grace_s) << "\n"
      << "\n"
      << "# Upload $IDLEPOOL_CHECKPOINT_DIR when it changed, at most this often (and on vacate).\n"
      << "checkpoint_interval_seconds = " << Num(d.checkpoint_interval_s) << "\n"
      << "\n"
      << "# Whose tasks run here (users, as `idlepool token create --user` names them): only\n"
      << "# those in accept_users (empty: everyone), never those in refuse_users.\n"
      << "accept_users = []\n"
      << "refuse_users = []\n"
      << "\n"
      << "[gpu]\n"
      << "\n"
      << "# The owner's own processes on a GPU (NVML's process list minus the pool's tasks):\n"
      << "# \"suspend\" the GPU tasks on that device, \"vacate\" them, or \"ignore\" it. Either\n"
      << "# way (unless ignored) the device gets no new GPU work until they are gone.\n"
      << "owner_use = \"" << ToString(d.gpu.owner_use) << "\"\n"
      << "\n"
      << "# Suspend the GPU tasks on a device hotter than this (degrees Celsius; resume 5 degrees\n"
      << "# below it); it gets no new GPU work meanwhile. CPU-only tasks keep running.\n"
      << "max_temperature_c = " << Num(d.gpu.max_temperature_c) << "\n"
      << "\n"
      << "[sandbox]\n"
      << "\n"
      << "# Let tasks of jobs that ask for the host network ([sandbox] network = \"host\" in the\n"
      << "# job) run here: they share this machine's network, its LAN and its localhost services.\n"
      << "# false: the pool runs such jobs on other machines. Other jobs get no network at all.\n"
      << "allow_host_network = " << (d.allow_host_network ? "true" : "false") << "\n"
      << "\n"
      << "# A task's memory (its processes' resident memory plus its files in /tmp, /var/tmp and\n"
      << "# /dev/shm) when its job states no memory_mb, MiB; past it the task is stopped and its\n"
      << "# attempt fails. 0: half this machine's memory.\n"
      << "memory_mb = " << d.task_memory_mb << "\n"
      << "\n"
      << "# What one task's dir may hold, MiB; past it the task is stopped and its attempt\n"
      << "# fails. 0: an equal share per slot of the disk's free space above the reserve.\n"
      << "task_dir_mb = " << d.task_dir_mb << "\n"
      << "\n"
      << "# The PATH of the pool's tasks here: absolute dirs separated by ':'.\n"
      << "path = \"" << d.task_path << "\"\n"
      << "\n"
      << "# Nothing of the worker's own environment reaches a task but LANG, LC_* and TZ, and\n"
      << "# the variables named here, e.g. [\"http_proxy\", \"https_proxy\", \"no_proxy\"].\n"
      << "pass_env = []\n";
  return out.str();
}

const char* ToString(Action action) {
  switch (action) {
    case Action::kRun:
      return "run";
    case Action::kSuspend:
      return "suspend";
    case Action::kVacate:
      return "vacate";
  }
  return "?";
}

const char* ToString(BatteryAction action) {
  switch (action) {
    case BatteryAction::kRun:
      return "run";
    case BatteryAction::kSuspend:
      return "suspend";
    case BatteryAction::kVacate:
      return "vacate";
  }
  return "?";
}

const char* ToString(Mode mode) {
  switch (mode) {
    case Mode::kIdle:
      return "idle";
    case Mode::kRunning:
      return "running";
    case Mode::kSuspended:
      return "suspended";
  }
  return "?";
}

const char* ToString(Cause cause) {
  switch (cause) {
    case Cause::kNone:
      return "none";
    case Cause::kBattery:
      return "battery";
    case Cause::kTemperature:
      return "temperature";
    case Cause::kOwnerLoad:
      return "owner_load";
    case Cause::kOwnerInput:
      return "owner_input";
    case Cause::kLid:
      return "lid";
    case Cause::kSleep:
      return "sleep";
    case Cause::kWindow:
      return "window";
    case Cause::kOwnerUnknown:
      return "owner_unknown";
  }
  return "?";
}

}  // namespace idlepool::owner
