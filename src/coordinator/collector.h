// The blob collector: `idlepool delete` (Jobs.DeleteJob), `idlepool gc` (Jobs.CollectGarbage)
// and the retention of `idlepool coordinator --keep-finished`, so that the coordinator's disk
// holds what live jobs need and not every blob it ever received.
//
// A collection marks (Store::ReferencedBlobs: every job's inputs, outputs, checkpoints) and
// sweeps (blob::Unreferenced: unreferenced and past the grace, blob/collect.h). Safety
// (docs/design.md, "Collecting blobs"):
//  - a submission holds SubmitGuard (shared) from its check that the inputs are present until
//    its job is stored; a collection holds the same lock exclusively from its mark to the end of
//    its sweep: an input checked present is either referenced at the mark or not yet checked;
//  - blobs uploaded (or reported present by HasBlobs) within the grace are kept: outputs and
//    checkpoints uploaded before the report that references them, inputs before SubmitJob;
//  - partial uploads are not blobs yet: never swept here (the partial sweeper's, space.h);
//  - a delete removes the job's rows in one transaction first, then its blobs: a SIGKILL between
//    any two steps leaves no row naming a missing blob, at worst garbage for the next pass.
//
// Fault injection (tests only, documented in docs/design.md): IDLEPOOL_FAULT_GC_KILL_AT=N in
// the coordinator's environment makes it SIGKILL itself just before the Nth step of its
// collections (steps counted from its start: each delete's row removal, core forget and log
// removal, each mark, each blob removal).
//
// Threads: DeleteJob and Collect from RPC threads (one collection at a time), SubmitGuard from
// SubmitJob's; Start/Stop from the coordinator's thread; the retention thread of its own.
// Holds references to the store, blob store, core loop and clock (each must outlive it).
// Errors: kNotFound (no such job), kFailedPrecondition (a running job without `cancel`, or a
// job another job runs after), store errors as they come.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "blob/collect.h"
#include "blob/store.h"
#include "coordinator/core_loop.h"
#include "platform/clock.h"
#include "store/store.h"

namespace idlepool::coordinator {

struct CollectorOptions {
  std::chrono::milliseconds grace = blob::kDefaultBlobGrace;  // --blob-grace
  // --keep-finished: finished jobs older than this (by finish time) are deleted; 0 keeps all.
  std::chrono::milliseconds keep_finished{0};
  // How often the retention thread collects (retention, then unreferenced blobs past the
  // grace); the first pass comes one interval after the start.
  std::chrono::milliseconds every = std::chrono::minutes(10);
  int kill_at = 0;  // IDLEPOOL_FAULT_GC_KILL_AT; 0: off
};

// IDLEPOOL_FAULT_GC_KILL_AT from the environment (0 when unset or not a positive number).
int FaultKillAtFromEnv();

struct DeleteResult {
  uint64_t blobs_removed = 0;
  uint64_t bytes_freed = 0;
};

struct GcResult {
  std::vector<core::JobId> jobs;      // deleted (or that would be) by retention
  std::vector<blob::BlobFile> blobs;  // removed (or that would be)
  uint64_t bytes = 0;
  bool dry_run = false;
};

// Blobs in the store's directory: count and bytes (the metrics' figures).
struct BlobTotals {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

class Collector {
 public:
  Collector(store::Store& store, blob::BlobStore& blobs, CoreLoop& core,
            const platform::Clock& clock, CollectorOptions options);
  ~Collector() { Stop(); }
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Held by SubmitJob from its input check until InsertJob returned.
  std::shared_lock<std::shared_mutex> SubmitGuard() { return std::shared_lock(guard_); }

  // Deletes a finished job (with `cancel`, a running one is cancelled first), then the blobs it
  // named that nothing else references and nobody touched since it finished.
  absl::StatusOr<DeleteResult> DeleteJob(core::JobId job, bool cancel);
  // Retention (`keep_finished`; 0: the coordinator's option) then unreferenced blobs past the
  // grace. dry_run: what would go, nothing removed (the retention jobs' own blobs are then not
  // counted: they are still referenced).
  absl::StatusOr<GcResult> Collect(bool dry_run, std::chrono::milliseconds keep_finished);

  // Called after a job's rows are gone, with its id: the kept logs go too.
  void SetJobDeletedHook(std::function<void(core::JobId)> hook) { on_deleted_ = std::move(hook); }

  // The blob directory's totals, recounted at most every 10 s (a walk of the directory).
  BlobTotals Totals();

  void Start();
  void Stop();  // idempotent

  // The input blobs named by a stored spec (a serialized v1::JobSpec); none when unreadable.
  static std::vector<std::string> SpecInputs(const std::string& spec);

 private:
  // Removes job `job`'s rows (it must be finished), forgets it in the core, drops its logs;
  // adds the blobs it named to `released` with its finish time. Exclusive guard held.
  absl::Status DeleteRows(core::JobId job, std::map<std::string, int64_t>& released);
  // Mark and sweep. Exclusive guard held.
  absl::StatusOr<std::vector<blob::BlobFile>> Sweep(const std::map<std::string, int64_t>& released,
                                                    bool dry_run);
  // The running or waiting jobs that run after `job`, as "job 7, job 9"; "" when none.
  std::string Dependents(core::JobId job);
  // Cancels `job` and waits for the cancellation to commit.
  void Cancel(core::JobId job);
  // Fault injection: counts a step, and dies before the kill_at-th.
  void Step(const char* what);
  void Loop();

  store::Store& store_;
  blob::BlobStore& blobs_;
  CoreLoop& core_;
  const platform::Clock& clock_;
  const CollectorOptions options_;
  std::shared_mutex guard_;
  std::mutex collect_mu_;  // one collection at a time (before guard_)
  std::atomic<int> steps_{0};
  std::function<void(core::JobId)> on_deleted_;

  std::mutex totals_mu_;
  BlobTotals totals_ ABSL_GUARDED_BY(totals_mu_);
  int64_t totals_at_ms_ ABSL_GUARDED_BY(totals_mu_) = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace idlepool::coordinator
