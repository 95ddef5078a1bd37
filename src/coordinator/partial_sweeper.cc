#include "coordinator/partial_sweeper.h"

#include <algorithm>

#include "platform/memory.h"
#include "spdlog/spdlog.h"

namespace idlepool::coordinator {

std::chrono::milliseconds SweepInterval(std::chrono::milliseconds idle_limit) {
  return std::clamp<std::chrono::milliseconds>(idle_limit / 4, std::chrono::milliseconds(100),
                                               std::chrono::seconds(10));
}

void PartialSweeper::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void PartialSweeper::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void PartialSweeper::Loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, interval_, [&] { return stop_; })) {
    lock.unlock();
    const blob::BlobStore::Removed removed = blobs_.RemoveAbandonedPartials(clock_.WallMs());
    if (removed.partials > 0) {
      spdlog::info("blobs: removed {} abandoned partial uploads ({} bytes on disk); {} left",
                   removed.partials, removed.bytes, blobs_.partial_count());
    }
    platform::ReturnFreeMemory();
    lock.lock();
  }
}

}  // namespace idlepool::coordinator
