// The real Linux SensorSource: reads the lent machine's power, temperature, lid, load and owner
// idle state from the kernel's sysfs/procfs files and from systemd-logind over D-Bus.
//
// Sources, and when each reading is unknown (nullopt, which the policy treats as "does not
// stop work"):
//   on_ac_power      <sys>/class/power_supply/*: any Mains/USB*/BrickID/Wireless supply with
//                    online == 1; with no such `online` file, the batteries' `status` (any
//                    "Discharging" = on battery). No system battery at all = a desktop = on AC.
//                    Unknown without a power_supply directory, or when batteries exist but
//                    neither adapters nor battery status can be read.
//   battery_percent  mean over system batteries of `capacity` (or energy_now/energy_full, or
//                    charge_now/charge_full); unknown without a readable battery.
//                    Supplies with `scope` == "Device" (mice, keyboards, pens) are ignored.
//   temperature_c    degrees Celsius, the hottest of <sys>/class/thermal/thermal_zone*/temp and
//                    <sys>/class/hwmon/hwmon*/temp*_input (any kind of sensor, millidegrees in
//                    the files); values outside -50..150 °C are ignored; unknown when none.
//   lid_closed       <proc>/acpi/button/lid/*/state ("closed" in any = closed); unknown when
//                    there is no such file (most desktops, kernels without ACPI button).
//   owner_cpu_load   0..1 of the whole machine: the busy share (all but idle and iowait) of the
//                    first `cpu` line of <proc>/stat between two Read() calls, minus the pool's
//                    share (pool_cpu_seconds delta over the machine's CPU seconds in the same
//                    interval), clamped to 0..1. Unknown on the first Read().
//   idle_seconds     seconds since the owner's last input. logind's Manager IdleHint and
//                    IdleSinceHint (µs of realtime): idle = now - IdleSinceHint when IdleHint
//                    is true, 0 when false. When logind is unavailable or IdleSinceHint is 0
//                    (no session can tell), the newest atime/mtime of <dev>/input/event*;
//                    unknown when there is none. logind's hint is usually set by the desktop
//                    some minutes after the last input, so it under-reports idle time.
//   sleep_imminent   true between logind's PrepareForSleep(true) and PrepareForSleep(false);
//                    false before any signal; unknown without logind.
//
// Sleep delay: with logind, LinuxSensors holds a "delay" inhibitor lock on sleep, so that after
// PrepareForSleep(true) the machine waits (up to logind's InhibitDelayMaxSec, 5 s by default)
// while the worker vacates. The worker calls ReleaseSleepDelay() once it has vacated; the lock
// is taken again when the machine resumes (PrepareForSleep(false)). A refused lock (no
// permission) leaves sleep_imminent working, only without the delay.
//
// Errors: none are reported. A missing file or bus, a refused call or a lost connection makes
// those sensors unknown; a logind failure is logged once per LinuxSensors. A lost bus is not
// reconnected.
//
// Thread safety: one thread at a time uses a LinuxSensors (all methods, ReleaseSleepDelay
// included). Read() and WaitForChange() process D-Bus messages; Read() never blocks on the bus.
// Ownership: owns its system bus connection and the inhibitor lock's file descriptor.
//
// Not implemented: the macOS counterparts (IOKit IOPowerSources for power and battery,
// IOPMrootDomain's AppleClamshellState for the lid, NSProcessInfo thermalState for heat, the
// IOHIDSystem HIDIdleTime for idle, IORegisterForSystemPower for sleep).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "owner/owner_policy.h"
#include "platform/sensors.h"

namespace idlepool::platform {

struct LinuxSensorOptions {
  // Roots of the trees read; tests point them at a fake tree.
  std::string sys_root = "/sys";
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  // Talk to systemd-logind on the system bus (DBUS_SYSTEM_BUS_ADDRESS, if set, names it).
  bool use_logind = true;
  // Cumulative CPU seconds (user + system, all threads) used so far by the pool's own tasks;
  // must not decrease. Empty = 0.
  std::function<double()> pool_cpu_seconds;
};

class LinuxSensors : public SensorSource {
 public:
  // Never fails; with use_logind, connects to the bus and waits up to about 2 s for logind's
  // idle properties (logind not answering in time is not "unavailable": they stay unknown until
  // it answers).
  explicit LinuxSensors(LinuxSensorOptions options);
  ~LinuxSensors() override;
  LinuxSensors(const LinuxSensors&) = delete;
  LinuxSensors& operator=(const LinuxSensors&) = delete;

  owner::Readings Read() override;
  // Waits on the bus up to `timeout`; true as soon as a PrepareForSleep signal arrives (also
  // one that arrived since the previous call) or the logind connection is lost; false after
  // the timeout. Without logind it just waits out the timeout.
  bool WaitForChange(std::chrono::milliseconds timeout) override;

  // Lets a pending sleep proceed: closes the inhibitor lock. No-op when none is held.
  void ReleaseSleepDelay() override;
  // "no logind session telling idle time, no readable input device (/dev/input/event*)".
  [[nodiscard]] std::string OwnerInputMissing() const override;
  // True while the delay inhibitor lock is held.
  bool SleepDelayHeld() const;

 private:
  class Logind;
  struct CpuSample {
    uint64_t total_jiffies = 0;
    uint64_t busy_jiffies = 0;
    double pool_seconds = 0;
  };

  std::optional<double> OwnerCpuLoad();
  void LogOnce(const std::string& message);

  LinuxSensorOptions options_;
  long user_hz_;
  std::optional<CpuSample> prev_cpu_;
  std::optional<double> last_load_;
  bool logged_ = false;
  std::unique_ptr<Logind> logind_;  // null when logind is unavailable
};

// A LinuxSensors with the real roots and logind.
std::unique_ptr<SensorSource> OpenDefaultSensors(std::function<double()> pool_cpu_seconds);

}  // namespace idlepool::platform
