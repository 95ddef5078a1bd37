// The worker agent: runs on a lent machine, connects out to the coordinator (so it works behind
// NAT), keeps one session stream, heartbeats, and runs the attempts it is assigned.
//
// Per attempt: inputs are fetched once into the blob cache (WORK_DIR/cache, verified by hash)
// and linked into a fresh task dir; the command runs in its own process group with IDLEPOOL_*
// variables set and capped logs; on cancel or timeout the whole group is killed; outputs
// matching the job's globs are hashed and uploaded (retried with backoff, never dropped, never a
// reason to re-run) and only then reported. A finished attempt stays on disk until the
// coordinator acknowledges its report, across reconnects.
//
// Thread safety: Run() blocks in the calling thread; Stop() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "core/types.h"
#include "platform/clock.h"

namespace idlepool::worker {

struct Options {
  std::string coordinator;  // host:port
  std::string token;        // pool secret
  std::string name;         // unique in the pool; default: the host name
  uint32_t slots = 0;       // CPU slots offered; 0 = number of cores
  uint64_t memory_mb = 0;   // 0 = not stated
  std::string work_dir;     // task dirs, logs, blob cache
  core::Millis heartbeat{1000};
  core::Millis kill_grace{10000};  // SIGTERM -> SIGKILL on timeout (HTCondor's default is 10 s)
};

class Worker {
 public:
  explicit Worker(Options options, const platform::Clock& clock = platform::SystemClock());
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Serves until Stop(). Reconnects with backoff whenever the coordinator is unreachable.
  // Returns kPermissionDenied when the coordinator refuses the token (retrying cannot help),
  // kFailedPrecondition when the work dir is unusable or the coordinator refuses this worker's
  // hello (protocol version, bad capacity), OK after Stop().
  absl::Status Run();

  // Vacates: running attempts are killed and reported as preempted (not failures), then Run()
  // returns.
  void Stop();

  const std::string& boot_id() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idlepool::worker
