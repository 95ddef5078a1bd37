// OwnerMonitor's GPU part (owner/gpu_policy.h): the owner's use and heat of each offered GPU.
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "worker/owner_monitor.h"

namespace idlepool::worker {
namespace {

constexpr std::chrono::milliseconds kGpuReadGap{2000};  // see owner_monitor.cc
constexpr std::chrono::milliseconds kGpuSendGap{5000};

// True when `now` differs from `sent` enough to tell the coordinator (proto: GpuReadings).
bool GpusChanged(const std::vector<v1::GpuDevice>& sent, const std::vector<v1::GpuDevice>& now) {
  if (sent.size() != now.size()) return true;
  for (size_t i = 0; i < now.size(); ++i) {
    const v1::GpuDevice& a = sent[i];
    const v1::GpuDevice& b = now[i];
    if (a.unavailable() != b.unavailable()) return true;
    if (a.has_temperature_c() != b.has_temperature_c() ||
        std::abs(a.temperature_c() - b.temperature_c()) >= 1) {
      return true;
    }
    if (a.has_utilization() != b.has_utilization() ||
        std::abs(a.utilization() - b.utilization()) >= 0.05) {
      return true;
    }
    const double used_by = 0.05 * static_cast<double>(b.memory_mb());
    if (a.has_memory_used_mb() != b.has_memory_used_mb() ||
        std::abs(static_cast<double>(a.memory_used_mb()) -
                 static_cast<double>(b.memory_used_mb())) > std::max(1.0, used_by)) {
      return true;
    }
  }
  return false;
}

// Whether one of `a`'s devices is held; *cause: why.
bool Held(const Attempt& a, const std::vector<owner::GpuHold>& holds, owner::GpuCause* cause) {
  for (uint32_t i : a.gpus) {
    if (i < holds.size() && holds[i].held) {
      *cause = holds[i].cause;
      return true;
    }
  }
  return false;
}

}  // namespace

bool OwnerMonitor::AnyGpuHeld(const std::vector<uint32_t>& gpus) {
  std::lock_guard lock(mu_);
  for (uint32_t i : gpus) {
    if (i < gpu_holds_.size() && gpu_holds_[i].held) return true;
  }
  return false;
}

std::string OwnerMonitor::GpuUnavailable(uint32_t index) {
  std::lock_guard lock(mu_);
  if (index >= gpu_holds_.size() || !gpu_holds_[index].held) return "";
  return ToString(gpu_holds_[index].cause);
}

// Owner thread, every step: at most every kGpuReadGap, re-reads the offered GPUs, decides per
// device (DecideGpu: the owner's processes are the device's minus the pool's task processes),
// freezes or vacates the attempts that own a held device and thaws those whose devices are all
// free again, and sends GpuReadings (at once when a hold changed). A service replica on a held
// device is never frozen: it drains (owner_drains.cc), then is vacated.
void OwnerMonitor::GpuStep(core::MonoTime now) {
  if (!config_.gpus) return;
  if (gpu_read_at_ && now - *gpu_read_at_ < kGpuReadGap) return;
  gpu_read_at_ = now;
  const std::vector<platform::GpuDevice> devices = config_.gpus->ReadLive();
  if (devices.empty()) return;
  const AttemptList all = Snapshot();
  std::vector<owner::GpuHold> holds;
  const bool holds_changed = UpdateGpuHolds(devices, all, &holds);
  std::vector<uint64_t> frozen_now;
  AttemptList replicas;  // service replicas on a held device: they drain instead
  std::string why;
  for (auto& a : all) {
    owner::GpuCause cause = owner::GpuCause::kNone;
    if (a->assignment.has_service()) {
      if (Held(*a, holds, &cause)) {
        replicas.push_back(a);
        why = absl::StrCat("its GPU is held: ", ToString(cause));
      }
      continue;
    }
    ApplyGpuHold(*a, holds, now, &frozen_now);
  }
  if (!replicas.empty()) StartDrains(replicas, now, VacateGrace(), why);
  if (!frozen_now.empty()) SendSuspended(frozen_now);
  SendGpuReadings(devices, holds, holds_changed, now);
}

// Decides each device's hold; true when one changed. *holds: the new holds.
bool OwnerMonitor::UpdateGpuHolds(const std::vector<platform::GpuDevice>& devices,
                                  const AttemptList& all, std::vector<owner::GpuHold>* holds) {
  // The pool's own processes: every attempt's process tree (its cgroup, else its process
  // group), and this worker.
  std::vector<int64_t> pool = {static_cast<int64_t>(::getpid())};
  for (auto& a : all) {
    std::lock_guard lock(a->mu);
    if (!a->process) continue;
    for (pid_t p : a->process->TreePids()) pool.push_back(p);
  }
  bool changed = false;
  std::lock_guard lock(mu_);
  gpu_holds_.resize(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    const owner::GpuReading reading{devices[i].temperature_c,
                                    owner::OwnerProcesses(devices[i].pids, pool)};
    std::string reason;
    const owner::GpuHold next = DecideGpu(reading, config_.policy.gpu, gpu_holds_[i], &reason);
    if (next != gpu_holds_[i]) {
      changed = true;
      if (next.held) {
        spdlog::info("GPU {}: held ({}): its GPU tasks wait, it takes no new GPU work", i, reason);
      } else {
        spdlog::info("GPU {}: free again", i);
      }
    }
    gpu_holds_[i] = next;
  }
  *holds = gpu_holds_;
  return changed;
}

void OwnerMonitor::ApplyGpuHold(Attempt& a, const std::vector<owner::GpuHold>& holds,
                                core::MonoTime now, std::vector<uint64_t>* frozen_now) {
  owner::GpuCause cause = owner::GpuCause::kNone;
  const bool is_held = Held(a, holds, &cause);
  // Held by the owner with owner_use = "vacate", or frozen for its GPU for as long as the policy
  // lets any suspension last (vacate_after_suspend_s): give the task back, so it goes on
  // elsewhere instead of holding the device's memory for the owner's whole session.
  bool too_long = false;
  if (is_held) {
    std::lock_guard lock(a.mu);
    too_long = a.gpu_frozen &&
               now - a.frozen_since >=
                   std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::duration<double>(config_.policy.vacate_after_suspend_s));
  }
  if (is_held && (too_long || (cause == owner::GpuCause::kOwnerUse &&
                               config_.policy.gpu.owner_use == owner::GpuOwnerUse::kVacate))) {
    bool running;
    {
      std::lock_guard lock(a.mu);
      running = a.process && !a.finished && !a.killed && !a.vacating;
    }
    if (running) {
      Vacate(a, VacateGrace(),
             too_long ? absl::StrCat("vacated: suspended too long: ", ToString(cause))
                      : std::string("vacated: the owner uses its GPU"),
             clock_.Now());
    }
    return;
  }
  std::lock_guard lock(a.mu);
  if (!a.process || a.finished || a.killed || a.vacating) return;
  if (is_held && !a.frozen) {
    if (absl::Status st = a.process->Suspend(); !st.ok()) {
      spdlog::warn("attempt {}: {}", a.id, std::string(st.message()));
    }
    a.frozen = true;
    a.gpu_frozen = true;
    a.frozen_since = now;
    frozen_now->push_back(a.id);
    spdlog::info("attempt {}: suspended ({})", a.id, ToString(cause));
  } else if (!is_held && a.gpu_frozen) {
    a.gpu_frozen = false;
    if (suspended_) return;  // the owner policy keeps it frozen; its kRun thaws it
    a.process->Resume();
    EndFrozenSpan(a, now);
    spdlog::info("attempt {}: resumed (its GPUs are free)", a.id);
  }
}

void OwnerMonitor::SendGpuReadings(const std::vector<platform::GpuDevice>& devices,
                                   const std::vector<owner::GpuHold>& holds, bool holds_changed,
                                   core::MonoTime now) {
  std::vector<v1::GpuDevice> readings;
  for (const auto& d : devices) {
    v1::GpuDevice g;
    g.set_index(d.index);
    g.set_memory_mb(d.memory_mb);
    if (d.temperature_c) g.set_temperature_c(*d.temperature_c);
    if (d.utilization) g.set_utilization(*d.utilization);
    if (d.memory_used_mb) g.set_memory_used_mb(*d.memory_used_mb);
    if (d.index < holds.size() && holds[d.index].held) {
      g.set_unavailable(ToString(holds[d.index].cause));
    }
    readings.push_back(std::move(g));
  }
  if (!holds_changed) {
    if (!GpusChanged(gpus_sent_, readings)) return;
    if (gpus_sent_at_ && now - *gpus_sent_at_ < kGpuSendGap) return;
  }
  gpus_sent_ = readings;
  gpus_sent_at_ = now;
  v1::WorkerMessage m;
  for (auto& g : readings) *m.mutable_gpus()->add_devices() = std::move(g);
  send_(m);
}

}  // namespace idlepool::worker
