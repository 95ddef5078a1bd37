// ServeBridge, retiring replicas: a replica the core cancelled (scaled down, its service
// cancelled) drains before it leaves the gateway. See serve_bridge.h.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/serve_bridge.h"
#include "spdlog/spdlog.h"

namespace idlepool::coordinator {

void ServeBridge::DrainInGateway(core::AttemptId attempt, Replica& r) {
  std::function<void()> drained;
  if (r.idle) drained = [idle = r.idle] { idle->store(true); };
  const serve::Status st = gateway_->Drain(attempt, std::move(drained));
  if (!st.ok()) spdlog::warn("gateway: drain {}: {}", attempt, st.message);
}

bool ServeBridge::StartRetiring(core::AttemptId attempt, Replica& r) {
  auto s = services_.find(r.job);
  if (s == services_.end() || tunnels_.count(r.worker) == 0) return false;
  const uint32_t seconds = s->second.spec.service().drain_seconds();
  if (seconds == 0) return false;
  r.retiring = true;
  r.draining = true;
  r.drain = std::chrono::milliseconds(uint64_t{seconds} * 1000);
  r.idle = std::make_shared<std::atomic<bool>>(false);
  if (gateway_ && r.added) {
    DrainInGateway(attempt, r);  // runs the callback at once when nothing is in flight
  } else {
    r.idle->store(true);  // no gateway here: nothing in flight that this one can see
  }
  spdlog::info("service {}: replica {} on {} retired; draining for up to {} s", s->second.name,
               attempt, r.worker, seconds);
  return true;
}

void ServeBridge::Sweep(serve::Time now) {
  std::vector<std::pair<std::string, core::AttemptId>> early;
  {
    std::lock_guard lock(mu_);
    early.swap(stop_now_);
    for (auto it = replicas_.begin(); it != replicas_.end();) {
      Replica& r = it->second;
      if (!r.retiring) {
        ++it;
        continue;
      }
      if (!r.retire_by) r.retire_by = now + r.drain;
      const bool over = now >= *r.retire_by;
      if (!over && !(r.idle->load() && watchers_ == 0)) {
        ++it;
        continue;
      }
      if (!over) early.emplace_back(r.worker, it->first);
      RemoveReplica(it->first, r);
      it = replicas_.erase(it);
      Changed();
    }
    for (auto s = services_.begin(); s != services_.end();) {
      bool left = false;
      for (const auto& [id, r] : replicas_) left = left || r.job == s->first;
      if (!s->second.ending || left) {
        ++s;
        continue;
      }
      if (gateway_ && s->second.added) {
        const serve::Status st = gateway_->RemoveService(s->second.name);
        if (!st.ok()) spdlog::warn("gateway: remove service {}: {}", s->second.name, st.message);
      }
      s = services_.erase(s);
      Changed();
    }
  }
  if (!retired_hook_) return;
  for (const auto& [worker, attempt] : early) retired_hook_(worker, attempt);
}

void ServeBridge::EndClashing(core::JobId job) {
  const Service& n = services_.at(job);
  const bool openai = n.spec.service().protocol() == "openai";
  for (auto o = services_.begin(); o != services_.end();) {
    const v1::ServiceSpec& os = o->second.spec.service();
    const bool clash = o->second.name == n.name || (openai && os.protocol() == "openai" &&
                                                    os.model() == n.spec.service().model());
    if (o->first == job || !o->second.ending || !clash) {
      ++o;
      continue;
    }
    for (auto r = replicas_.begin(); r != replicas_.end();) {
      if (r->second.job != o->first) {
        ++r;
        continue;
      }
      RemoveReplica(r->first, r->second);
      stop_now_.emplace_back(r->second.worker, r->first);  // Sweep tells its worker
      r = replicas_.erase(r);
    }
    if (gateway_ && o->second.added) {
      const serve::Status st = gateway_->RemoveService(o->second.name);
      if (!st.ok()) spdlog::warn("gateway: remove service {}: {}", o->second.name, st.message);
    }
    spdlog::info("service {}: its drain cut short by job {} of the same name", o->second.name, job);
    o = services_.erase(o);
  }
}

bool ServeBridge::Retiring(core::AttemptId attempt) const {
  std::lock_guard lock(mu_);
  auto it = replicas_.find(attempt);
  return it != replicas_.end() && it->second.retiring;
}

void ServeBridge::SetRetiredHook(std::function<void(const std::string&, core::AttemptId)> hook) {
  std::lock_guard lock(mu_);
  retired_hook_ = std::move(hook);
}

void ServeBridge::Watching(int delta) {
  std::lock_guard lock(mu_);
  watchers_ += delta;
}

}  // namespace idlepool::coordinator
