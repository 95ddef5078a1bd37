// Sensors of the lent machine: what the owner policy (owner/owner_policy.h) reads.
//
// SensorSource is the interface the worker samples: Read() returns one owner::Readings, and
// WaitForChange() blocks until something may have changed (or a timeout passes), so the worker
// reacts to a change at once instead of polling at a fixed rate.
//
// FakeSensorDir is the one implementation for now: a directory of one-value text files that the
// owner's own scripts (or tests) write. This is a user-facing interface; its format is:
//
//   file name        value                         meaning
//   idle_seconds     number >= 0                   seconds since the owner's last input
//   on_ac_power      0 or 1                        1 = on mains power, 0 = on battery
//   battery_percent  number 0..100                 battery charge
//   temperature_c    number -100..200              hottest CPU sensor, degrees Celsius
//   lid_closed       0 or 1                        1 = the lid is closed
//   owner_cpu_load   number 0..1                   machine load minus the pool's own tasks
//   sleep_imminent   0 or 1                        1 = the machine is about to suspend
//
// Each file holds one value in C locale decimal notation ("42", "0.25", "1e3"); surrounding
// whitespace and a trailing newline are allowed. A missing file, an empty file, a value that
// does not parse, that is not finite, or that is out of the range above makes that sensor
// unknown (nullopt), which the policy treats as "does not stop work". Reading never fails and
// never reports an error. Files larger than 4 KiB are treated as unparsable.
//
// To change a value without the worker ever seeing a half-written file, write a temporary file
// and rename() it over the target (a direct write is also seen, but may be read mid-write, in
// which case that sensor reads as unknown until the next change).
//
// Later pieces: a real Linux SensorSource (logind IdleHint / PrepareForSleep for idle and sleep,
// /sys/class/power_supply for AC and battery, /sys/class/thermal for temperature, the lid switch
// via logind or /proc/acpi) and a macOS one (IOKit HIDIdleTime, IOPowerSources, SMC,
// IORegisterForSystemPower). The interface below is what they will implement; nothing in it is
// Linux-specific.
//
// Thread safety: a SensorSource is used by one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "owner/owner_policy.h"

namespace idlepool::platform {

class SensorSource {
 public:
  virtual ~SensorSource() = default;
  // One sample of every sensor; unknown sensors are nullopt.
  virtual owner::Readings Read() = 0;
  // Blocks up to `timeout` for a change; true if something may have changed.
  virtual bool WaitForChange(std::chrono::milliseconds timeout) = 0;
  // The worker has vacated after sleep_imminent: a source that delays the machine's sleep
  // (logind's delay inhibitor) lets it go now. Default: nothing to release.
  virtual void ReleaseSleepDelay() {}
  // What is missing when the owner's input (idle_seconds) reads unknown, for the worker's one
  // line at start: "no idle_seconds file in DIR".
  [[nodiscard]] virtual std::string OwnerInputMissing() const { return "no input reading"; }
};

// Reads the files described above from one directory; watches it with inotify.
// Ownership: owns its inotify descriptor.
class FakeSensorDir : public SensorSource {
 public:
  // kNotFound if `dir` does not exist or is not a directory; kInternal if inotify fails.
  static absl::StatusOr<std::unique_ptr<FakeSensorDir>> Open(const std::string& dir);
  ~FakeSensorDir() override;
  FakeSensorDir(const FakeSensorDir&) = delete;
  FakeSensorDir& operator=(const FakeSensorDir&) = delete;

  owner::Readings Read() override;
  // Returns true as soon as any file in the directory is created, written, renamed into it or
  // deleted (also for changes made since the previous call); false after `timeout` without one.
  bool WaitForChange(std::chrono::milliseconds timeout) override;
  [[nodiscard]] std::string OwnerInputMissing() const override;

 private:
  FakeSensorDir(std::string dir, int inotify_fd) : dir_(std::move(dir)), fd_(inotify_fd) {}
  std::string dir_;
  int fd_;
};

}  // namespace idlepool::platform
