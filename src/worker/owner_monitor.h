// OwnerMonitor: the owner comes first — sensors -> policy -> actions.
//
// Its thread samples the machine's sensors whenever they change, and at least once a second
// (every 100 ms while a vacate before sleep is in progress), decides with the pure owner policy
// (owner/owner_policy.h) and acts on every attempt:
//   run     - accept work; thaw frozen attempts (unless one of their GPUs is still held).
//   suspend - accept none; freeze every running attempt's whole tree.
//   vacate  - accept none; each attempt gets SIGTERM, then SIGKILL after vacate_grace_s (2 s
//             when sleep is imminent); its runner then reports it PREEMPTED.
// When the owner's input cannot be sensed (owner::OwnerInputUnknown), it says so once at start
// (what is missing, what it does instead) and reports its owner state as "unknown".
// A service replica (issue 17) is never frozen: it drains (owner_drains.cc). The coordinator is
// told at once (ReplicaDraining), so its gateway sends the replica no new request; requests in
// flight get the service's drain_seconds, capped by vacate_grace_s on suspend and when the owner
// takes its GPU (the owner's grace), and 0 on vacate (then the vacate's own SIGTERM grace); then
// it is vacated like any attempt. A replica the coordinator retires drains too (Retire).
// The same step reads the offered GPUs (at most every 2 s) and applies the GPU policy
// (owner/gpu_policy.h) per device: attempts on a held device are frozen, or vacated; and checks
// the work dir's free space (a full disk takes no work). Every change is told to the
// coordinator (OwnerState), readings alone when they moved (SensorReadings, GpuReadings).
//
// Threads: Step() on the owner thread (and once in Worker::Run before it starts). The queries
// (accepting, suspended, AnyGpuHeld, GpuUnavailable, OwnerStateToResend, LowOnDisk,
// DiskReason) and DiskFull/SendSuspended/StopAccepting: any thread. Locking: mu_ guards what
// other threads read (the GPU holds, the last owner state sent); the rest is the owner thread's
// alone; flags are atomic. Ownership: owns the sensor source; attempts are shared (attempt.h).
// Units: milliseconds; the policy's own settings are in seconds (owner::PolicyConfig).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "owner/gpu_policy.h"
#include "owner/owner_policy.h"
#include "platform/clock.h"
#include "platform/gpu.h"
#include "platform/sensors.h"
#include "worker/attempt.h"
#include "worker/sender.h"
#include "worker/stop_signal.h"

namespace idlepool::worker {

struct OwnerMonitorConfig {
  owner::PolicyConfig policy;
  std::shared_ptr<platform::GpuInventory> gpus;  // null: no GPUs offered
  std::string work_dir;
  uint64_t min_free_disk_bytes = 0;
};

class OwnerMonitor {
 public:
  OwnerMonitor(OwnerMonitorConfig config, const platform::Clock& clock, StopSignal& stop,
               std::function<AttemptList()> attempts, Sender send);
  ~OwnerMonitor() { Join(); }
  OwnerMonitor(const OwnerMonitor&) = delete;
  OwnerMonitor& operator=(const OwnerMonitor&) = delete;

  // Before the first Step: the sensors to read (owned from now on). `trust_owner_load` false:
  // their owner CPU load is unusable (no cgroups: the pool's own load cannot be told apart from
  // the owner's) and is ignored.
  void SetSensors(std::unique_ptr<platform::SensorSource> sensors, bool trust_owner_load = true);
  // One policy evaluation: sample, decide, act, tell the coordinator what changed.
  void Step();
  void Start();  // the owner thread: Step() on every sensor change until the worker stops
  void Join();

  [[nodiscard]] bool accepting() const { return accepting_.load(); }
  [[nodiscard]] bool suspended() const { return suspended_.load(); }
  void StopAccepting() { accepting_ = false; }
  // Whether the policy holds any of `gpus` (offered indexes).
  [[nodiscard]] bool AnyGpuHeld(const std::vector<uint32_t>& gpus);
  // GpuDevice.unavailable of offered device `index` ("" when free).
  [[nodiscard]] std::string GpuUnavailable(uint32_t index);
  // The last OwnerState sent, resent after each Hello; nullopt before the first.
  [[nodiscard]] std::optional<v1::WorkerMessage> OwnerStateToResend();
  // Tells the coordinator about attempts frozen outside an owner state change.
  void SendSuspended(const std::vector<uint64_t>& ids);

  // The coordinator killed `a` with code CANCELLED (scaled down, job cancelled). A running
  // service replica with drain_seconds > 0 drains instead (kDraining): its requests in flight get
  // drain_seconds, then it is stopped (SIGTERM, SIGKILL after vacate_grace_s) with no report. A
  // second call while it drains stops it now (kStopped: the coordinator's gateway is drained);
  // so does any other kill (OnKill: from a coordinator restarted since, which drains nothing).
  // kNotAReplica: anything else; the caller kills it as usual. Any thread; takes a.mu.
  enum class Retirement { kNotAReplica, kDraining, kStopped };
  Retirement Retire(Attempt& a);

  // The disk filled during an attempt: take no work until min_free_disk_bytes are free again
  // (checked by Step). Told to the coordinator before the attempt's report, so the task is not
  // sent back.
  void DiskFull(const std::string& why);
  // True when the work dir's file system has less than the minimum free, in bytes or in inodes.
  [[nodiscard]] bool LowOnDisk() const;
  [[nodiscard]] std::string DiskReason() const;

 private:
  void Loop();
  [[nodiscard]] AttemptList Snapshot() const { return attempts_(); }
  void UpdateDiskFull();
  std::vector<uint64_t> FreezeAll(const AttemptList& all, core::MonoTime now);
  void ThawAll(const AttemptList& all, core::MonoTime now);
  void VacateAll(const AttemptList& all, const owner::Decision& d, const owner::Readings& r,
                 bool sleep);
  // Replicas (owner_drains.cc): start draining those not yet draining (at most `cap`), tell the
  // coordinator; vacate those whose drain is over. True while any drain is in progress.
  void StartDrains(const AttemptList& all, core::MonoTime now, std::chrono::milliseconds cap,
                   const std::string& reason);
  bool EndDrains(const AttemptList& all, core::MonoTime now);
  void Tell(const owner::Decision& d, const std::vector<uint64_t>& frozen_now,
            const owner::Readings& r);
  void LetSleep(const AttemptList& all, bool sleep);
  void SendOwnerState(const owner::Decision& d, const std::vector<uint64_t>& frozen_now,
                      const owner::Readings& r);
  void SayIfOwnerUnknown(const owner::Readings& r) const;
  void SendSensorsIfChanged(const owner::Readings& r, core::MonoTime now);
  // GPUs.
  void GpuStep(core::MonoTime now);
  bool UpdateGpuHolds(const std::vector<platform::GpuDevice>& devices, const AttemptList& all,
                      std::vector<owner::GpuHold>* holds);
  void ApplyGpuHold(Attempt& a, const std::vector<owner::GpuHold>& holds, core::MonoTime now,
                    std::vector<uint64_t>* frozen_now);
  void SendGpuReadings(const std::vector<platform::GpuDevice>& devices,
                       const std::vector<owner::GpuHold>& holds, bool holds_changed,
                       core::MonoTime now);
  [[nodiscard]] std::chrono::milliseconds VacateGrace() const;

  const OwnerMonitorConfig config_;
  const platform::Clock& clock_;
  StopSignal& stop_;
  const std::function<AttemptList()> attempts_;
  const Sender send_;
  std::unique_ptr<platform::SensorSource> sensors_;
  std::thread thread_;
  bool trust_owner_load_ = true;  // set before the owner thread starts

  std::atomic<bool> accepting_{true};   // the owner policy allows new work
  std::atomic<bool> suspended_{false};  // the owner policy says suspend
  std::atomic<bool> sleep_pending_{false};
  std::atomic<bool> drains_pending_{false};  // a replica drains: step every 100 ms
  std::atomic<bool> disk_full_{false};  // see DiskFull()

  // Owner thread only.
  owner::PolicyState policy_state_;
  std::optional<owner::Action> last_action_;  // none before the first step
  owner::Cause last_cause_ = owner::Cause::kNone;
  bool last_disk_full_ = false;
  bool last_input_unknown_ = false;  // the owner's input could not be sensed (state "unknown")
  owner::Readings sensors_sent_;                   // the readings last sent
  std::optional<core::MonoTime> sensors_sent_at_;  // last sent alone
  std::optional<core::MonoTime> gpu_read_at_;      // GPUs last read
  std::vector<v1::GpuDevice> gpus_sent_;           // GpuReadings last sent
  std::optional<core::MonoTime> gpus_sent_at_;

  std::mutex mu_;
  std::vector<owner::GpuHold> gpu_holds_ ABSL_GUARDED_BY(mu_);  // per offered GPU index
  v1::WorkerMessage owner_sent_ ABSL_GUARDED_BY(mu_);    // the last OwnerState sent
};

}  // namespace idlepool::worker
