// The partial sweeper: a thread that removes abandoned partial uploads from the coordinator's
// blob store (blob::BlobStore::RemoveAbandonedPartials: no bytes for the store's
// partial_max_age, kPartialIdleLimit by default) every quarter of that idle limit (at least
// every 10 s, at most every 100 ms), so that uploads cut or abandoned midway give their disk
// space back while the coordinator runs, not only at its next start. Each pass also gives the
// heaps' free pages back (platform::ReturnFreeMemory): a flood of uploads, refused or not,
// leaves the coordinator's resident memory near its idle level.
//
// Threads: Start/Stop from the coordinator's thread; the sweeper's own thread does the work.
// Holds references to the blob store (thread-safe) and the clock; both must outlive it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "blob/store.h"
#include "platform/clock.h"

namespace idlepool::coordinator {

// How often the sweeper looks, for an idle limit: a quarter of it, within [100 ms, 10 s].
std::chrono::milliseconds SweepInterval(std::chrono::milliseconds idle_limit);

class PartialSweeper {
 public:
  PartialSweeper(blob::BlobStore& blobs, const platform::Clock& clock,
                 std::chrono::milliseconds idle_limit)
      : blobs_(blobs), clock_(clock), interval_(SweepInterval(idle_limit)) {}
  ~PartialSweeper() { Stop(); }
  PartialSweeper(const PartialSweeper&) = delete;
  PartialSweeper& operator=(const PartialSweeper&) = delete;

  void Start();
  void Stop();  // idempotent

 private:
  void Loop();

  blob::BlobStore& blobs_;
  const platform::Clock& clock_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace idlepool::coordinator
