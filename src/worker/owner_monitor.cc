#include "worker/owner_monitor.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "text/utf8.h"
#include "worker/outbox.h"

namespace idlepool::worker {
namespace {

// Sensor readings on their own (WorkerMessage.sensors) at most this often.
constexpr std::chrono::milliseconds kSensorsGap{5000};
// Free inodes below which the disk counts as full: room for a few attempts' dirs and logs.
constexpr uint64_t kMinFreeInodes = 64;

// The policy's clock: seconds (owner_policy.h).
double Seconds(core::MonoTime t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

v1::SensorReadings ToProto(const owner::Readings& r) {
  v1::SensorReadings out;
  if (r.temperature_c) out.set_temperature_c(*r.temperature_c);
  if (r.battery_percent) out.set_battery_percent(*r.battery_percent);
  if (r.on_ac_power) out.set_on_ac_power(*r.on_ac_power);
  if (r.lid_closed) out.set_lid_closed(*r.lid_closed);
  if (r.idle_seconds) out.set_idle_seconds(*r.idle_seconds);
  if (r.owner_cpu_load) out.set_owner_cpu_load(*r.owner_cpu_load);
  return out;
}

// True when `now` differs from `sent` enough to tell the coordinator (proto: SensorReadings):
// temperature by >= 1 C, battery by >= 1 point, a boolean flipped, or a sensor appeared or went.
// Idle time and owner load change all the time: they go with owner states only.
bool SensorsChanged(const owner::Readings& sent, const owner::Readings& now) {
  auto moved = [](const std::optional<double>& a, const std::optional<double>& b, double by) {
    if (a.has_value() != b.has_value()) return true;
    if (!a) return false;
    if (std::isnan(*a) || std::isnan(*b)) return std::isnan(*a) != std::isnan(*b);
    return std::abs(*a - *b) >= by;
  };
  return moved(sent.temperature_c, now.temperature_c, 1) ||
         moved(sent.battery_percent, now.battery_percent, 1) ||
         sent.on_ac_power != now.on_ac_power || sent.lid_closed != now.lid_closed;
}

}  // namespace

OwnerMonitor::OwnerMonitor(OwnerMonitorConfig config, const platform::Clock& clock,
                           StopSignal& stop, std::function<AttemptList()> attempts, Sender send)
    : config_(std::move(config)),
      clock_(clock),
      stop_(stop),
      attempts_(std::move(attempts)),
      send_(std::move(send)) {}

void OwnerMonitor::SetSensors(std::unique_ptr<platform::SensorSource> sensors,
                              bool trust_owner_load) {
  sensors_ = std::move(sensors);
  trust_owner_load_ = trust_owner_load;
  policy_state_ =
      owner::PolicyState{owner::Mode::kIdle, Seconds(clock_.Now()), owner::Cause::kNone, {}};
}

void OwnerMonitor::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void OwnerMonitor::Join() {
  if (thread_.joinable()) thread_.join();
}

void OwnerMonitor::Loop() {
  while (!stop_.stopping()) {
    // Woken by any sensor change; at least once a second for idle time and time windows,
    // every 100 ms while a vacate before sleep is in progress.
    sensors_->WaitForChange(sleep_pending_ || drains_pending_ ? std::chrono::milliseconds(100)
                                                              : std::chrono::milliseconds(1000));
    if (stop_.stopping()) break;
    Step();
  }
}

std::chrono::milliseconds OwnerMonitor::VacateGrace() const {
  return owner::SecondsToMillis(config_.policy.vacate_grace_s);
}

// Once, at the first step: a machine whose owner cannot be sensed says so, and what it does.
void OwnerMonitor::SayIfOwnerUnknown(const owner::Readings& r) const {
  if (!owner::OwnerInputUnknown(r, config_.policy)) return;
  const std::string missing = sensors_->OwnerInputMissing();
  if (r.owner_cpu_load.has_value()) {
    spdlog::warn(
        "owner protection: the owner's activity cannot be sensed ({}); taking work only once this "
        "machine's CPU load has stayed low for {} s (start_idle_minutes); --dedicated if it is "
        "lent full time",
        missing, config_.policy.start_idle_s);
  } else {
    spdlog::warn(
        "owner protection: the owner's activity cannot be sensed ({}), nor the owner's CPU load "
        "({}); taking no work: --dedicated if this machine is lent full time, else give it "
        "sensors (--sensors-dir)",
        missing,
        trust_owner_load_ ? "no reading" : "no cgroups to tell the pool's load from the owner's");
  }
}

void OwnerMonitor::Step() {
  owner::Readings r = sensors_->Read();
  if (!trust_owner_load_) r.owner_cpu_load.reset();
  if (!last_action_) SayIfOwnerUnknown(r);
  const core::MonoTime now = clock_.Now();
  const platform::WeekTime wt = platform::LocalWeekTime();
  const owner::Decision d = Decide(r, config_.policy, policy_state_, Seconds(now),
                                   owner::LocalTime{wt.weekday, wt.minute_of_day});
  policy_state_ = Advance(policy_state_, d, Seconds(now));
  const bool sleep = r.sleep_imminent.value_or(false);
  const AttemptList all = Snapshot();
  std::vector<uint64_t> frozen_now;
  suspended_ = d.action == owner::Action::kSuspend;
  UpdateDiskFull();
  accepting_ = d.action == owner::Action::kRun && !stop_.stopping() && !disk_full_;
  if (d.action == owner::Action::kSuspend) {
    StartDrains(all, now, VacateGrace(), d.reason);
    frozen_now = FreezeAll(all, now);
  } else if (d.action == owner::Action::kRun) {
    ThawAll(all, now);
  } else {
    StartDrains(all, now, std::chrono::milliseconds(0), d.reason);
    VacateAll(all, d, r, sleep);
  }
  drains_pending_ = EndDrains(all, now);
  Tell(d, frozen_now, r);
  SendSensorsIfChanged(r, now);
  GpuStep(now);
  LetSleep(all, sleep);
}

// A full disk takes no work until enough is free again (running attempts go on).
void OwnerMonitor::UpdateDiskFull() {
  if (disk_full_ && !LowOnDisk()) {
    disk_full_ = false;
    spdlog::info("disk space is back under {}: taking work again", config_.work_dir);
  } else if (!disk_full_ && LowOnDisk()) {
    disk_full_ = true;
    spdlog::warn("{}: taking no work", DiskReason());
  }
}

std::vector<uint64_t> OwnerMonitor::FreezeAll(const AttemptList& all, core::MonoTime now) {
  std::vector<uint64_t> frozen_now;
  for (auto& a : all) {
    std::lock_guard lock(a->mu);
    if (!a->process || a->finished || a->vacating || a->frozen || a->killed) continue;
    if (a->assignment.has_service()) continue;  // a replica drains instead (owner_drains.cc)
    if (absl::Status st = a->process->Suspend(); !st.ok()) {
      spdlog::warn("attempt {}: {}", a->id, std::string(st.message()));
    }
    a->frozen = true;
    a->frozen_since = now;
    frozen_now.push_back(a->id);
  }
  return frozen_now;
}

void OwnerMonitor::ThawAll(const AttemptList& all, core::MonoTime now) {
  for (auto& a : all) {
    std::lock_guard lock(a->mu);
    if (!a->frozen) continue;
    if (AnyGpuHeld(a->gpus)) {  // its GPU is still held: GpuStep thaws it
      a->gpu_frozen = true;
      continue;
    }
    if (a->process) a->process->Resume();
    EndFrozenSpan(*a, now);
  }
}

void OwnerMonitor::VacateAll(const AttemptList& all, const owner::Decision& d,
                             const owner::Readings& r, bool sleep) {
  // Tell the coordinator before any attempt is handed back, or it would assign it here again.
  if (d.action != last_action_) SendOwnerState(d, {}, r);
  const double grace_s = sleep ? std::min(config_.policy.vacate_grace_s, owner::kSleepVacateGraceS)
                               : config_.policy.vacate_grace_s;
  for (auto& a : all) {
    Vacate(*a, owner::SecondsToMillis(grace_s), absl::StrCat("vacated: ", d.reason), clock_.Now());
  }
}

// Told again when the rule behind it changes too (a keypress, then the heat), so the
// coordinator never shows a stale reason.
void OwnerMonitor::Tell(const owner::Decision& d, const std::vector<uint64_t>& frozen_now,
                        const owner::Readings& r) {
  bool told_otherwise;  // the coordinator was last told otherwise (DiskFull() tells it too)
  {
    std::lock_guard lock(mu_);
    told_otherwise =
        owner_sent_.has_owner_state() && owner_sent_.owner_state().accepting() != accepting_.load();
  }
  const bool disk_full = disk_full_;
  // A vacate that is new was told before the hand-backs; a vacate whose cause changed (the lid
  // closed, then the charger was pulled) is told here.
  const bool told_above = d.action == owner::Action::kVacate && d.action != last_action_;
  const bool input_unknown = owner::OwnerInputUnknown(r, config_.policy);
  const bool changed = d.action != last_action_ || d.cause != last_cause_ ||
                       disk_full != last_disk_full_ || told_otherwise ||
                       input_unknown != last_input_unknown_;
  last_cause_ = d.cause;
  last_disk_full_ = disk_full;
  last_input_unknown_ = input_unknown;
  if (!changed && frozen_now.empty()) return;
  if (changed) {
    spdlog::info(
        "owner policy: {} ({}){}", ToString(d.action), d.reason,
        frozen_now.empty() ? "" : absl::StrCat("; froze ", frozen_now.size(), " attempts"));
  }
  if (!told_above) SendOwnerState(d, frozen_now, r);
  last_action_ = d.action;
}

// The machine is about to sleep: once nothing runs any more, let it.
void OwnerMonitor::LetSleep(const AttemptList& all, bool sleep) {
  if (!sleep) {
    sleep_pending_ = false;
    return;
  }
  bool busy = false;
  for (auto& a : all) {
    std::lock_guard lock(a->mu);
    busy = busy || (!a->finished && !a->killed);
  }
  sleep_pending_ = busy;
  if (!busy) sensors_->ReleaseSleepDelay();
}

// `r`: the readings the decision was made from.
void OwnerMonitor::SendOwnerState(const owner::Decision& d, const std::vector<uint64_t>& frozen_now,
                                  const owner::Readings& r) {
  v1::WorkerMessage m;
  auto* o = m.mutable_owner_state();
  o->set_accepting(accepting_);
  // Unknown, not "run": the owner's input cannot be sensed (the decision then goes by the load).
  const bool unknown = owner::OwnerInputUnknown(r, config_.policy) &&
                       (d.action == owner::Action::kRun || d.cause == owner::Cause::kOwnerUnknown);
  o->set_state(unknown ? "unknown" : ToString(d.action));
  o->set_cause(d.action == owner::Action::kRun ? ToString(owner::Cause::kNone) : ToString(d.cause));
  *o->mutable_sensors() = ToProto(r);
  sensors_sent_ = r;
  o->set_reason(text::TruncateUtf8(
      disk_full_ && d.action == owner::Action::kRun ? DiskReason() : d.reason, 200));
  {
    std::lock_guard lock(mu_);
    owner_sent_ = m;
  }
  for (uint64_t id : frozen_now) o->add_suspended_attempts(id);
  send_(m);
}

// The readings alone when they changed noticeably since last sent (with an owner state or
// alone), at most every kSensorsGap. They also replace those of the owner state resent after
// each hello.
void OwnerMonitor::SendSensorsIfChanged(const owner::Readings& r, core::MonoTime now) {
  if (!SensorsChanged(sensors_sent_, r)) return;
  if (sensors_sent_at_ && now - *sensors_sent_at_ < kSensorsGap) return;
  sensors_sent_ = r;
  sensors_sent_at_ = now;
  v1::WorkerMessage m;
  *m.mutable_sensors() = ToProto(r);
  {
    std::lock_guard lock(mu_);
    if (owner_sent_.has_owner_state()) {
      *owner_sent_.mutable_owner_state()->mutable_sensors() = m.sensors();
    }
  }
  send_(m);
}

void OwnerMonitor::SendSuspended(const std::vector<uint64_t>& ids) {
  v1::WorkerMessage m;
  {
    std::lock_guard lock(mu_);
    m = owner_sent_;
  }
  auto* o = m.mutable_owner_state();
  for (uint64_t id : ids) o->add_suspended_attempts(id);
  send_(m);
}

std::optional<v1::WorkerMessage> OwnerMonitor::OwnerStateToResend() {
  std::lock_guard lock(mu_);
  if (!owner_sent_.has_owner_state()) return std::nullopt;
  return owner_sent_;
}

void OwnerMonitor::DiskFull(const std::string& why) {
  if (disk_full_.exchange(true)) return;
  accepting_ = false;
  spdlog::warn("disk full under {} ({}): taking no work until {} MiB are free", config_.work_dir,
               why, config_.min_free_disk_bytes >> 20);
  v1::WorkerMessage m;
  {
    std::lock_guard lock(mu_);
    m = owner_sent_;
  }
  auto* o = m.mutable_owner_state();
  o->set_accepting(false);
  if (o->state().empty()) o->set_state("run");
  o->set_reason(text::TruncateUtf8(DiskReason(), 200));
  o->clear_suspended_attempts();
  {
    std::lock_guard lock(mu_);
    owner_sent_ = m;
  }
  send_(m);
}

std::string OwnerMonitor::DiskReason() const {
  auto inodes = FreeDiskInodes(config_.work_dir);
  if (inodes && *inodes < kMinFreeInodes) {
    return absl::StrCat("disk full: ", *inodes, " free inodes under the work dir, need ",
                        kMinFreeInodes);
  }
  auto free = FreeDiskBytes(config_.work_dir);
  return absl::StrCat("disk full: ", free ? absl::StrCat(*free >> 20, " MiB") : "?",
                      " free under the work dir, need ", config_.min_free_disk_bytes >> 20, " MiB");
}

// A task that creates many small files runs out of inodes first.
bool OwnerMonitor::LowOnDisk() const {
  auto free = FreeDiskBytes(config_.work_dir);
  auto inodes = FreeDiskInodes(config_.work_dir);
  return (free && *free < config_.min_free_disk_bytes) || (inodes && *inodes < kMinFreeInodes);
}

}  // namespace idlepool::worker
