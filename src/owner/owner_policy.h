// Owner policy: decides, from what the lent machine's sensors say, whether the pool may run work
// on it now, must pause (suspend) its task, or must give the task back (vacate).
//
// Decide() is a pure function: no clocks, no I/O. The caller samples the sensors, passes the
// monotonic time `now_s` and the owner's local wall time, and carries PolicyState between calls
// (Advance() builds the next state). Standard library only.
//
// Rules, in priority order (the first that applies wins):
//   1. lid closed or sleep imminent               -> vacate at once
//   2. windows non-empty and `local` in none       -> vacate
//   3. on battery (on_ac_power == false)           -> config.on_battery (kRun: rule ignored)
//   4. temperature_c > max_temperature_c           -> suspend
//   5. owner_cpu_load > max_owner_cpu_load         -> suspend
//   6. owner active                                -> suspend
//        running:   idle_seconds < resume_idle_s   (the owner touched the machine)
//        suspended: idle_seconds < resume_idle_s   (not idle long enough to resume)
//        idle:      idle_seconds < start_idle_s    (not idle long enough to start)
//        start_idle_s == 0 marks a dedicated machine: owner input never stops work.
//      owner input unknown (idle_seconds unknown or NaN; start_idle_s > 0): the owner is not
//      assumed away. The machine's own CPU load stands in for the owner's input: work starts
//      (resumes) only once owner_cpu_load has stayed known and at or below min(0.5,
//      max_owner_cpu_load) for start_idle_s (resume_idle_s), timed from PolicyState::
//      quiet_since_s. An unknown load too never lets work start.   -> suspend (kOwnerUnknown)
//   7. otherwise                                   -> run
// Hysteresis: while suspended by rule 4, it needs the temperature to drop kTemperatureHysteresisC
// below max_temperature_c, and while suspended by rule 5 the owner's load to drop to
// kLoadResumeFraction of max_owner_cpu_load, before work resumes (HTCondor's desktop policy
// suspends above a load of 0.5 and continues below 0.3: the same 0.6). A suspend result (rules 3-6)
// from a worker that has been suspended for
// >= vacate_after_suspend_s is escalated to vacate. When no suspend rule holds, a suspended
// task resumes, whatever the time it spent suspended.
//
// An unknown sensor (nullopt) never stops work by itself: every rule that reads it does not apply,
// except the owner's input, whose absence rule 6 replaces by the machine's load (the owner comes
// first: protection is never silently off). A NaN reading is treated like an unknown one.
//
// Modes: vacating always moves to Mode::kIdle. From kIdle there is no task, so a suspend- or
// vacate-class result both mean "accept no work"; the action keeps the class for reporting
// (kSuspend: the machine may become usable soon; kVacate: not until the condition ends).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "owner/gpu_policy.h"

namespace idlepool::owner {

// One sample of the machine's sensors. nullopt = the sensor is unknown on this machine.
struct Readings {
  std::optional<double> idle_seconds;     // seconds since the owner's last keyboard/mouse input
  std::optional<bool> on_ac_power;        // false = running on battery
  std::optional<double> battery_percent;  // 0..100; informational, no rule reads it yet
  std::optional<double> temperature_c;    // hottest CPU package sensor
  std::optional<bool> lid_closed;
  std::optional<double> owner_cpu_load;  // 0..1: machine load minus the pool's own tasks
  std::optional<bool> sleep_imminent;    // the OS announced suspend/hibernate
};

enum class Action { kRun, kSuspend, kVacate };
enum class BatteryAction { kRun, kSuspend, kVacate };

// A weekly time window in the owner's local time.
struct TimeWindow {
  uint8_t days = 0;      // bit 0 = Monday .. bit 6 = Sunday
  int start_minute = 0;  // minutes since local midnight, 0..1439, inclusive
  int end_minute = 0;    // 0..1439, exclusive; end <= start wraps past midnight, and the
                         // early-morning part belongs to the day the window started
                         // (mon-fri 19:00-07:00 covers Friday night until Saturday 07:00,
                         // but not Monday 00:00-07:00). end == start: 24 hours from start.
};

inline constexpr uint8_t kMonday = 1u << 0;
inline constexpr uint8_t kTuesday = 1u << 1;
inline constexpr uint8_t kWednesday = 1u << 2;
inline constexpr uint8_t kThursday = 1u << 3;
inline constexpr uint8_t kFriday = 1u << 4;
inline constexpr uint8_t kSaturday = 1u << 5;
inline constexpr uint8_t kSunday = 1u << 6;
inline constexpr uint8_t kWeekdays = kMonday | kTuesday | kWednesday | kThursday | kFriday;
inline constexpr uint8_t kEveryDay = kWeekdays | kSaturday | kSunday;

inline constexpr double kTemperatureHysteresisC = 5;
inline constexpr double kLoadResumeFraction = 0.6;

// The PATH of the pool's tasks unless the owner's policy says otherwise ([sandbox] path).
inline constexpr char kDefaultTaskPath[] = "/usr/local/bin:/usr/bin:/bin";

struct PolicyConfig {
  // Start work only after the owner has been idle this long. HTCondor's stock desktop policy
  // (StartIdleTime) waits 15 minutes of keyboard idle; we start sooner because tasks are
  // suspended at the owner's first input anyway. 0 = dedicated machine: never wait, and owner
  // input never suspends work.
  double start_idle_s = 300;
  // Resume a suspended task once the owner has been idle this long; a running task is
  // suspended when idle_seconds drops below it. HTCondor's desktop policy uses 5 minutes
  // (ContinueIdleTime); 1 minute keeps a lent machine useful between short interruptions.
  double resume_idle_s = 60;
  // Vacate a task that has stayed suspended this long (HTCondor: MaxSuspendTime, 10 minutes);
  // shorter here so the coordinator can reschedule the attempt elsewhere sooner.
  double vacate_after_suspend_s = 120;
  // What to do on battery. BOINC's default is not to compute on batteries; we vacate rather
  // than suspend because a laptop off its charger usually stays off it for a long time.
  BatteryAction on_battery = BatteryAction::kVacate;
  // Suspend above this CPU temperature: a margin below the ~100 °C at which typical laptop CPUs
  // (Intel TjMax) throttle, so the owner's machine never runs hot because of the pool.
  double max_temperature_c = 90;
  // Suspend when the owner's own load exceeds this (HTCondor's desktop policy suspends when
  // the non-Condor load average exceeds HighLoad = 0.5). 1 turns the rule off.
  double max_owner_cpu_load = 0.5;
  // Work is allowed only inside one of these windows; empty = always allowed.
  std::vector<TimeWindow> windows;

  // Not read by Decide(); how the worker carries out a vacate and keeps checkpoints.
  // SIGTERM-to-SIGKILL grace when vacating (HTCondor's default KILL_SIG timeout is 10 s too);
  // shortened to kSleepVacateGraceS when the machine is about to sleep.
  double vacate_grace_s = 10;
  // Upload $IDLEPOOL_CHECKPOINT_DIR when it changed, at most this often (and always on vacate):
  // at most this much work is lost to a preemption that gives no warning (BOINC's default
  // "checkpoint at most every 60 s" is the same bound, but its checkpoints stay on the machine).
  double checkpoint_interval_s = 60;

  // GPUs (owner/gpu_policy.h): not read by Decide(); the worker decides per device.
  GpuPolicyConfig gpu;

  // [sandbox]: what the pool's tasks may do on this machine. Not read by Decide(); the worker
  // says it in every Hello and the coordinator places accordingly.
  // Tasks of jobs that ask for the host network (job spec `[sandbox] network = "host"`: they
  // share this machine's network, so they can reach its LAN and the services listening on its
  // localhost) may run here. Default true, as before sandboxes: only jobs that ask get it (a
  // job's default is no network), and a pool whose owners wrote no policy still runs them; an
  // owner who does not want that writes `allow_host_network = false`, and the coordinator then
  // places such jobs elsewhere.
  bool allow_host_network = true;
  // Limits of one task (docs/guide/sandbox.md, "Limits inside"), enforced by the sandbox:
  // its memory (resident memory of its processes plus its files in /tmp, /var/tmp and /dev/shm)
  // when its job states no memory_mb, MiB (0: half this machine's memory), and what its task dir
  // may hold, MiB (0: an equal share per slot of the disk's free space above the reserve, at
  // the worker's start).
  uint64_t task_memory_mb = 0;
  uint64_t task_dir_mb = 0;
  // `path`: the PATH of the pool's tasks here (where this machine's programs are), absolute dirs
  // separated by ':'. Nothing else of the worker's own environment reaches a task but LANG,
  // LC_*, TZ and the names in `pass_env` (http_proxy, ...): a laptop owner who started the worker
  // from a shell holding cloud keys lends none of them (docs/guide/job-spec.md#environment).
  std::string task_path = kDefaultTaskPath;
  std::vector<std::string> pass_env;
  // [owner] accept_users / refuse_users: the lender's choice of whose tasks run here (a machine
  // kept to its team). Not read by Decide(); the worker says them in every Hello and the
  // coordinator places only accordingly. Empty accept_users: everyone not refused.
  std::vector<std::string> accept_users;
  std::vector<std::string> refuse_users;
};

// A policy setting in seconds (vacate_grace_s, checkpoint_interval_s) as the shells' durations.
inline std::chrono::milliseconds SecondsToMillis(double seconds) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(seconds));
}

// Vacate grace when sleep is imminent: logind's default InhibitDelayMaxSec is 5 s, and the
// checkpoint upload must fit in it too.
inline constexpr double kSleepVacateGraceS = 2;

enum class Mode { kIdle, kRunning, kSuspended };

// Which rule a suspend- or vacate-class decision came from: kLid, kSleep (rule 1), kWindow
// (rule 2), kBattery (rule 3), kTemperature (4), kOwnerLoad (5), kOwnerInput (6). A vacate
// escalated from a long suspension keeps the cause of that suspension. kNone for kRun. The
// hysteresis of rules 4 and 5 applies only to a suspension they caused (PolicyState::cause,
// which Advance() keeps only while suspended).
// kOwnerUnknown: rule 6 without an input reading (no load reading, or a load not yet low long
// enough).
enum class Cause {
  kNone,
  kBattery,
  kTemperature,
  kOwnerLoad,
  kOwnerInput,
  kLid,
  kSleep,
  kWindow,
  kOwnerUnknown
};

// The previous decision, carried by the caller between calls.
struct PolicyState {
  Mode mode = Mode::kIdle;     // kIdle: no task, none accepted; kRunning; kSuspended
  double since_s = 0;          // when `mode` was entered, on the same monotonic scale as now_s
  Cause cause = Cause::kNone;  // why it is suspended (kNone unless mode == kSuspended)
  // Owner input unknown (rule 6): since when the machine's load has stayed low, on now_s's
  // scale; nullopt when it is not low (or the input is known).
  std::optional<double> quiet_since_s;
};

struct LocalTime {
  int weekday = 0;        // 0 = Monday .. 6 = Sunday
  int minute_of_day = 0;  // 0..1439
};

struct Decision {
  Action action = Action::kRun;
  Mode next_mode = Mode::kIdle;
  std::string reason;          // short, human-readable: which rule decided
  Cause cause = Cause::kNone;  // for suspend- and vacate-class decisions (kNone for kRun)
  std::optional<double> quiet_since_s;  // the next PolicyState's (rule 6, owner input unknown)
};

// Whether the owner's input is unknown to a policy that needs it (not a dedicated machine): rule
// 6 then goes by the machine's load, and the worker shows the owner state as "unknown".
bool OwnerInputUnknown(const Readings& readings, const PolicyConfig& config);

Decision Decide(const Readings& readings, const PolicyConfig& config, const PolicyState& prev,
                double now_s, LocalTime local);

// A machine lent full time (`idlepool worker --dedicated`, `idlepool run`): it has no owner at
// the keyboard, so neither owner input (start_idle_s = 0) nor other load on the machine
// (max_owner_cpu_load = 1, which no load exceeds) stops work. Battery, lid, sleep, temperature
// and time windows still apply.
void MakeDedicated(PolicyConfig* config);

// The state after applying `decision` at now_s: since_s is kept while the mode is unchanged;
// cause follows the decision while suspended.
PolicyState Advance(const PolicyState& prev, const Decision& decision, double now_s);

// True when `local` lies in `window` (start inclusive, end exclusive, see TimeWindow).
bool InWindow(const TimeWindow& window, LocalTime local);

// The defaults of PolicyConfig as commented TOML, a table [owner] with the keys
// start_idle_minutes, resume_idle_seconds, vacate_after_suspend_seconds, on_battery,
// max_temperature_c, max_owner_cpu_load and (commented out, as an example) windows.
// ParsePolicyConfig (owner_policy_config.h) reads it back to PolicyConfig{}.
std::string DefaultConfigToml();

const char* ToString(Action action);
const char* ToString(BatteryAction action);
const char* ToString(Mode mode);
// The wire name of a cause (OwnerState.cause): "none", "battery", "temperature", "owner_load",
// "owner_input", "lid", "sleep", "window", "owner_unknown".
const char* ToString(Cause cause);

}  // namespace idlepool::owner
