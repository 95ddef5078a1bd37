#include "coordinator/sessions.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace idlepool::coordinator {

void Session::Send(v1::CoordinatorMessage m, bool end) {
  std::lock_guard lock(mu);
  if (done || cut) return;
  const size_t bytes = m.ByteSizeLong();
  if (outbox.size() >= kMaxOutboxMessages || outbox_bytes + bytes > kMaxOutboxBytes) {
    spdlog::warn("worker {} does not read its session {} ({} messages, {} bytes queued): cut",
                 worker, id, outbox.size(), outbox_bytes);
    cut = true;
    outbox.clear();
    outbox_bytes = 0;
    ctx->TryCancel();  // the writer's blocked Write and the handler's Read return
    cv.notify_one();
    return;
  }
  outbox_bytes += bytes;
  outbox.push_back(std::move(m));
  if (end) end_after_flush = true;
  cv.notify_one();
}

void Session::WriterLoop() {
  std::unique_lock lock(mu);
  while (true) {
    cv.wait(lock, [&] { return done || cut || !outbox.empty() || end_after_flush; });
    if (done || cut) return;
    while (!outbox.empty()) {
      v1::CoordinatorMessage m = std::move(outbox.front());
      outbox.pop_front();
      outbox_bytes -= std::min(outbox_bytes, m.ByteSizeLong());
      lock.unlock();
      bool ok = stream->Write(m);
      lock.lock();
      if (!ok) {
        ctx->TryCancel();
        return;
      }
    }
    if (end_after_flush) {
      ctx->TryCancel();
      return;
    }
  }
}

void Session::Finish() {
  std::lock_guard lock(mu);
  done = true;
  cv.notify_all();
}

void SessionRegistry::Add(std::shared_ptr<Session> s) {
  std::lock_guard lock(mu_);
  const core::SessionId id = s->id;
  sessions_[id] = std::move(s);
}

void SessionRegistry::Remove(core::SessionId id) {
  std::lock_guard lock(mu_);
  sessions_.erase(id);
}

std::shared_ptr<Session> SessionRegistry::Find(core::SessionId id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Session>> SessionRegistry::OpenOf(const std::string& worker) {
  std::vector<std::shared_ptr<Session>> open;
  std::lock_guard lock(mu_);
  for (auto& [id, s] : sessions_) {
    if (s->worker == worker) open.push_back(s);
  }
  return open;
}

std::vector<std::shared_ptr<Session>> SessionRegistry::All() {
  std::vector<std::shared_ptr<Session>> open;
  std::lock_guard lock(mu_);
  for (auto& [id, s] : sessions_) open.push_back(s);
  return open;
}

void SessionRegistry::Welcomed(const std::string& worker, HelloHost host,
                               std::vector<v1::GpuDevice> gpus, const std::string& peer_address) {
  std::lock_guard lock(mu_);
  hosts_[worker] = std::move(host);
  gpus_[worker] = std::move(gpus);
  if (peer_address.empty()) {
    peer_addresses_.erase(worker);
  } else {
    peer_addresses_[worker] = peer_address;
  }
}

std::optional<std::vector<GpuFlip>> SessionRegistry::UpdateGpus(
    const std::string& worker, const std::vector<v1::GpuDevice>& live) {
  std::vector<GpuFlip> flipped;
  std::lock_guard lock(mu_);
  auto g = gpus_.find(worker);
  if (g == gpus_.end()) return std::nullopt;
  for (const v1::GpuDevice& l : live) {
    for (v1::GpuDevice& d : g->second) {
      if (d.index() != l.index()) continue;
      if (d.unavailable() != l.unavailable()) flipped.emplace_back(d.index(), l.unavailable());
      d.clear_temperature_c();
      d.clear_utilization();
      d.clear_memory_used_mb();
      if (l.has_temperature_c()) d.set_temperature_c(l.temperature_c());
      if (l.has_utilization()) d.set_utilization(l.utilization());
      if (l.has_memory_used_mb()) d.set_memory_used_mb(l.memory_used_mb());
      d.set_unavailable(l.unavailable());
    }
  }
  return flipped;
}

void SessionRegistry::Describe(bool connected, v1::WorkerInfo* out) {
  std::lock_guard lock(mu_);
  if (auto it = hosts_.find(out->worker()); it != hosts_.end()) {
    out->set_hostname(it->second.hostname);
    out->set_sandbox(it->second.sandbox);
  }
  if (auto g = gpus_.find(out->worker()); g != gpus_.end()) {
    for (const v1::GpuDevice& d : g->second) *out->add_gpus() = d;
  }
  auto p = peer_addresses_.find(out->worker());
  if (p != peer_addresses_.end() && connected) {
    out->set_peer_address(p->second);  // only while it can serve
  }
}

void SessionRegistry::Forget(const std::vector<std::string>& workers) {
  std::lock_guard lock(mu_);
  for (const std::string& w : workers) {
    hosts_.erase(w);
    gpus_.erase(w);
    peer_addresses_.erase(w);
  }
}

}  // namespace idlepool::coordinator
