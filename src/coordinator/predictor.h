// The predictor: each submitted job's predicted makespan (planner.h), made in the background
// from the history of its profile key (before it runs), else from its first successes; kept in
// the store (PutJobPrediction) and in a bounded cache for GetJob. Also gathers the pool's view
// the planner needs (connected, accepting workers with their measurements), for PlanJob too.
//
// Work follows what changed, never what exists: a waiting job is looked at when it is submitted
// and when one of its tasks succeeds or it ends (JobsProgressed), at most every 500 ms, so a
// thousand jobs waiting with nothing happening cost nothing (issue 21: they cost a core query
// each every 500 ms, with a copy of every waiting spec).
//
// Threads: Await and PredictionOf from the RPC threads; JobsProgressed from the core thread
// (it never blocks on it); the predictor's own thread predicts; GatherPlanWorkers from either
// RPC or predictor threads (it queries the core thread, so never from the core thread).
// Start/Stop from the coordinator's thread; Stop before the core loop stops (it queries it).
// Locking: mu_ guards the cache and the waiting jobs. Errors are logged: a job without a
// prediction runs the same.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "coordinator/core_loop.h"
#include "coordinator/planner.h"
#include "coordinator/shared_tracker.h"
#include "coordinator/worker_book.h"
#include "idlepool.pb.h"
#include "platform/clock.h"
#include "spec/spec.h"
#include "store/store.h"

namespace idlepool::coordinator {

// The profile key of a job (spec/profile_key.h) from its spec and input hashes.
std::string ProfileKeyOf(const v1::JobSpec& proto, const spec::JobSpec& spec);
// The planner's facts of a job with `tasks` tasks.
PlanJobFacts FactsOf(const v1::JobSpec& proto, const spec::JobSpec& spec, uint64_t tasks);
// "history: 12 attempts of 2 earlier jobs ..." / "this job's first 3 attempts".
std::string HistoryBasis(const std::vector<store::AttemptRecord>& samples, core::JobId own);

class Predictor {
 public:
  // Each reference must outlive the predictor.
  Predictor(store::Store& store, const platform::Clock& clock, CoreLoop& core, WorkerBook& book,
            SharedTracker& tracker)
      : store_(store), clock_(clock), core_(core), book_(book), tracker_(tracker) {}
  ~Predictor() { Stop(); }

  void Start();
  void Stop();  // idempotent

  // A job was submitted: predict it when its history allows.
  void Await(core::JobId id, const v1::JobSpec& spec, uint64_t tasks);
  // Tasks of these jobs succeeded, or the jobs ended (a committed core batch): the waiting ones
  // among them are looked at again.
  void JobsProgressed(const std::vector<core::JobId>& ids);
  // Jobs waiting for a prediction (for tests and metrics).
  size_t awaiting() const;
  // The job's prediction, from the cache or the store; nullopt when it has none.
  std::optional<v1::Prediction> PredictionOf(core::JobId id);
  // Connected, accepting workers (all, or those named in `only`; the first named one that is
  // not such a worker goes to *unknown), with their measurements and whether their caches hold
  // every input of `proto`. `user`: only the workers whose owner policy lends to that user
  // (accept_users, refuse_users); nullopt: every worker.
  std::vector<PlanWorker> GatherPlanWorkers(const v1::JobSpec& proto,
                                            const std::vector<std::string>& only,
                                            std::string* unknown,
                                            const std::optional<std::string>& user = {});

 private:
  struct AwaitingPrediction {
    std::shared_ptr<const v1::JobSpec> spec;  // shared: a pass copies no spec
    uint64_t tasks = 0;
    bool history_tried = false;
  };

  void Loop();
  // One job of the loop's pass; returns true when the job waits no more.
  bool Try(core::JobId id, const AwaitingPrediction& job);
  // Predicts job `id` from the history of its profile key (with its own attempts unless
  // `history_only`) and keeps the prediction. Returns whether one was made.
  bool PredictAndKeep(core::JobId id, const v1::JobSpec& proto, uint64_t tasks, bool history_only);

  store::Store& store_;
  const platform::Clock& clock_;
  CoreLoop& core_;
  WorkerBook& book_;
  SharedTracker& tracker_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<core::JobId, std::optional<v1::Prediction>> predictions_ ABSL_GUARDED_BY(mu_);
  std::map<core::JobId, AwaitingPrediction> awaiting_ ABSL_GUARDED_BY(mu_);
  std::set<core::JobId> dirty_ ABSL_GUARDED_BY(mu_);  // waiting jobs to look at next pass
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace idlepool::coordinator
