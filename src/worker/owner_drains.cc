// OwnerMonitor, service replicas: they drain instead of freezing when the owner comes back
// (issue 17, point 4). See owner_monitor.h.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "worker/owner_monitor.h"

namespace idlepool::worker {

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
    const std::chrono::milliseconds wanted(uint64_t{a->assignment.service().drain_seconds()} *
                                           1000);
    const std::chrono::milliseconds drain = std::min(wanted, cap);
    a->draining = true;
    a->drain_until = now + drain;
    longest = std::max(longest, drain);
    d->add_attempts(a->id);
  }
  if (d->attempts_size() == 0) return;
  d->set_drain_ms(static_cast<uint32_t>(longest.count()));
  d->set_reason(reason);
  spdlog::info("owner policy: draining {} replicas for up to {} ms ({})", d->attempts_size(),
               longest.count(), reason);
  send_(m);  // before the owner state: the gateway stops routing to them first
}

bool OwnerMonitor::EndDrains(const AttemptList& all, core::MonoTime now) {
  bool pending = false;
  for (auto& a : all) {
    bool due;
    {
      std::lock_guard lock(a->mu);
      if (!a->draining || a->vacating || a->finished || a->killed) continue;
      due = now >= a->drain_until;
    }
    if (!due) {
      pending = true;
      continue;
    }
    Vacate(*a, VacateGrace(), "drained: its machine's owner came back", now);
  }
  return pending;
}

}  // namespace idlepool::worker
