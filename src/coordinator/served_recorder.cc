#include "coordinator/served_recorder.h"

#include <vector>

#include "spdlog/spdlog.h"

namespace idlepool::coordinator {

void ServedRecorder::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, kServedSaveEvery, [&] { return stop_; })) {
      lock.unlock();
      Save();
      lock.lock();
    }
  });
}

void ServedRecorder::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Save();
}

void ServedRecorder::Save() {
  std::lock_guard lock(save_mu_);
  const std::vector<serve::ServedCount> served = bridge_.TakeServed();
  if (served.empty()) return;
  std::vector<store::ServedRow> rows;
  rows.reserve(served.size());
  for (const serve::ServedCount& c : served) {
    if (c.user.empty()) continue;  // every key that checks out has one; never store a nameless row
    rows.push_back(store::ServedRow{c.user, c.worker, c.requests, c.tokens});
  }
  const int64_t day = clock_.WallMs() / 86'400'000;
  if (absl::Status s = store_.AddServed(day, rows); !s.ok()) {
    spdlog::warn("the gateway's served requests of {} users were not saved: {}", rows.size(),
                 s.ToString());
  }
}

}  // namespace idlepool::coordinator
