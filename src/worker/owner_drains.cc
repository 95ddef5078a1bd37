// OwnerMonitor, service replicas: they drain instead of freezing when the owner comes back, when
// the owner takes their GPU, and when the coordinator retires them (issue 17, point 4). See
// owner_monitor.h.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "worker/owner_monitor.h"

namespace idlepool::worker {
namespace {

std::chrono::milliseconds DrainOf(const Attempt& a) {
  return std::chrono::milliseconds(uint64_t{a.assignment.service().drain_seconds()} * 1000);
}

}  // namespace

void OwnerMonitor::StartDrains(const AttemptList& all, core::MonoTime now,
                               std::chrono::milliseconds cap, const std::string& reason) {
  v1::WorkerMessage m;
  auto* d = m.mutable_draining();
  std::chrono::milliseconds longest{0};
  for (auto& a : all) {
    std::lock_guard lock(a->mu);
    if (!a->assignment.has_service() || a->draining || a->finished || a->vacating || a->killed) {
      continue;
    }
    const std::chrono::milliseconds drain = std::min(DrainOf(*a), cap);
    a->draining = true;
    a->drain_until = now + drain;
    a->drain_reason = reason;
    longest = std::max(longest, drain);
    d->add_attempts(a->id);
  }
  if (d->attempts_size() == 0) return;
  drains_pending_ = true;
  d->set_drain_ms(static_cast<uint32_t>(longest.count()));
  d->set_reason(reason);
  spdlog::info("owner policy: draining {} replicas for up to {} ms ({})", d->attempts_size(),
               longest.count(), reason);
  send_(m);  // before the owner state: the gateway stops routing to them first
}

OwnerMonitor::Retirement OwnerMonitor::Retire(Attempt& a) {
  const core::MonoTime now = clock_.Now();
  std::lock_guard lock(a.mu);
  if (a.retiring) {
    // The coordinator's second word: its gateway has no request on the replica any more.
    spdlog::info("attempt {}: drained; stopping it now", a.id);
    a.killed = true;
    if (a.process) a.process->Terminate(VacateGrace());
    return Retirement::kStopped;
  }
  const std::chrono::milliseconds drain = DrainOf(a);
  if (!a.assignment.has_service() || drain.count() == 0 || !a.process || a.finished || a.vacating ||
      a.killed) {
    return Retirement::kNotAReplica;
  }
  a.retiring = true;
  a.drain_until = a.draining ? std::min(a.drain_until, now + drain) : now + drain;
  a.draining = true;
  a.drain_reason = "retired by the coordinator";
  drains_pending_ = true;
  spdlog::info("attempt {}: retired by the coordinator; draining for up to {} ms", a.id,
               std::chrono::duration_cast<std::chrono::milliseconds>(a.drain_until - now).count());
  return Retirement::kDraining;
}

bool OwnerMonitor::EndDrains(const AttemptList& all, core::MonoTime now) {
  bool pending = false;
  for (auto& a : all) {
    bool due;
    std::string reason;
    {
      std::lock_guard lock(a->mu);
      if (!a->draining || a->vacating || a->finished || a->killed) continue;
      due = now >= a->drain_until;
      reason = a->drain_reason;
      if (due && a->retiring) {  // stopped with no report: the coordinator ended it already
        spdlog::info("attempt {}: drain over; stopping it", a->id);
        a->killed = true;
        if (a->process) a->process->Terminate(VacateGrace());
        continue;
      }
    }
    if (!due) {
      pending = true;
      continue;
    }
    Vacate(*a, VacateGrace(), absl::StrCat("drained: ", reason), now);
  }
  return pending;
}

}  // namespace idlepool::worker
