// Attempt: the shared record of one attempt on this worker, from assignment to acknowledgement.
//
// Held by shared_ptr in the worker's attempt table (worker.cc) and shared with the units that
// act on it: its runner thread (attempt_runner.h) stages, runs, collects and uploads; the owner
// monitor (owner_monitor.h) freezes, thaws and vacates; the checkpointer (checkpointer.h)
// uploads its checkpoint dir; the worker drops it on a kill or an acknowledgement (worker.cc).
//
// Locking: `mu` guards the run state (process, flags, times, pins); `ckpt_mu` serialises
// checkpoint uploads and guards the ckpt_* fields (taken before `mu` when both are needed, never
// the other way round). `id`, `assignment`, `paths`, `gpu_env` and `gpus` are set before the
// attempt is shared and then only read. Times are monotonic (core::MonoTime, milliseconds).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "idlepool.pb.h"
#include "platform/cgroup.h"
#include "worker/attempt_paths.h"
#include "worker/blob_cache.h"
#include "worker/launcher.h"

namespace idlepool::worker {

// Bytes an attempt moved (AttemptReport.transfer). Updated by the threads that stage and upload
// for the attempt, hence atomic.
struct TransferFigures {
  std::atomic<uint64_t> input_bytes{0}, cached_bytes{0}, coordinator_bytes{0}, peer_bytes{0},
      output_bytes{0};
  std::atomic<uint32_t> cache_hits{0}, cache_misses{0};

  // `from_coordinator` and `from_peers`: bytes this attempt's fetch received from each.
  void Staged(uint64_t size, bool hit, uint64_t from_coordinator, uint64_t from_peers);
  void ToProto(v1::Transfer* t) const;
};

using Span = std::pair<core::MonoTime, core::MonoTime>;

struct Attempt {
  uint64_t id = 0;
  v1::Assignment assignment;
  AttemptPaths paths;
  int slot = -1;  // its sandbox slot (worker/sandbox_slots.h); -1: not sandboxed
  uint16_t port = 0;  // a service replica's ({port}, IDLEPOOL_PORT; set at launch); 0: a task
  std::vector<std::string> device_nodes;  // its GPUs' device nodes, shown in its sandbox
  // Its GPUs' environment (worker/gpu_binding.h), bound when it was assigned.
  std::vector<std::pair<std::string, std::string>> gpu_env;
  std::vector<uint32_t> gpus;  // its devices (Assignment.gpus)
  std::mutex mu;
  std::unique_ptr<TaskProcess> process;  // set while the command runs
  bool killed = false;                   // killed by the coordinator: no report
  bool finished = false;                 // report built, awaiting acknowledgement
  bool filed = false;        // its outputs are in the outbox: a stale kill no longer drops them
  bool undelivered = false;  // filed, but the worker stopped before it was uploaded
  v1::AttemptReport report;
  std::unique_ptr<platform::TaskCgroup> cgroup;  // outlives `process`
  // Timing (AttemptReport.timing): the assignment arrived, the process started, it ended.
  core::MonoTime assigned{};
  core::MonoTime started{};
  core::MonoTime exited{};
  // Owner actions.
  bool vacating = false;
  std::string vacate_reason;
  core::MonoTime vacate_at{};
  bool frozen = false;
  bool gpu_frozen = false;  // frozen because one of its GPUs is held (owner monitor)
  core::MonoTime frozen_since{};
  // A service replica drains instead of freezing (owner_drains.cc): the gateway gives it no new
  // request, and it is vacated at drain_until.
  bool draining = false;
  core::MonoTime drain_until{};
  std::string drain_reason;  // why it drains (logs, the vacate's reason)
  // Draining because the coordinator no longer wants it (scaled down, cancelled): at
  // drain_until (or at the coordinator's second kill, once the gateway is drained) it is
  // stopped like a killed attempt, with no report.
  bool retiring = false;
  std::vector<Span> frozen_spans;
  // Blobs staged from the cache stay pinned (never evicted) while the attempt exists.
  std::vector<BlobCache::Pin> pins;
  TransferFigures transfer;
  // Checkpoints: what was last uploaded (or restored).
  std::mutex ckpt_mu;  // one upload at a time; guards the fields below
  std::string ckpt_fingerprint;
  std::vector<v1::OutputFile> ckpt_files;
  core::MonoTime ckpt_uploaded_at{};
};

using AttemptList = std::vector<std::shared_ptr<Attempt>>;

// Starts vacating `a` (no-op when it is finished, killed, filed or already vacating): SIGTERM
// now, SIGKILL after `grace`; its runner thread then uploads the checkpoint and reports
// PREEMPTED. An attempt still staging is handed back before it starts. True when started (or
// already vacating). Any thread; takes a.mu.
bool Vacate(Attempt& a, std::chrono::milliseconds grace, const std::string& reason,
            core::MonoTime now);

// Thaws `a` if frozen, closing its frozen span at `now`. Caller holds a.mu.
void EndFrozenSpan(Attempt& a, core::MonoTime now);

// Where the attempt's time went as of `now`: staging from the assignment's arrival to the
// process's start (all of it when the process never started), running until it ended less the
// time it was frozen for the owner, and from its end until now (hashing, uploading) when
// `with_upload`. Any thread; takes a.mu.
void FillTiming(Attempt& a, bool with_upload, core::MonoTime now, v1::AttemptTiming* t);

}  // namespace idlepool::worker
