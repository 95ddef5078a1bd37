// The coordinator's core thread: the only thread that touches the Scheduler (core/scheduler.h)
// and the running jobs' specs. RPC threads post events (and functions to run on the core
// thread) to its queue; it applies them in batches, and hands each batch's decisions to the
// core driver (core_driver.h): records committed to the store in one transaction (group
// commit), then messages to the worker sessions. A store write failure stops the loop
// (fail-stop: a restart recovers from the store) and is reported through `on_fatal`, except a
// full disk (kResourceExhausted): then the batch is held, with every later batch appended, and
// its commit retried every kHeldRetry until it goes through; nothing of it (no message, no
// after_commit) goes out before. Memory runs ahead of the disk meanwhile, as within one batch;
// a crash loses only what no worker or client was told. Past kMaxHeldDecisions it stops too.
//
// Threads: Post, PostItem and Query from any thread (Query blocks until the core thread ran
// it; never call it from the core thread). sched() and jobs() on the core thread only (in
// posted functions). Start/Stop from the coordinator's thread. Locking: queue_mu_ guards the
// queue; everything else belongs to the core thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "coordinator/coordinator.h"
#include "coordinator/pool_metrics.h"
#include "coordinator/serve_bridge.h"
#include "coordinator/sessions.h"
#include "coordinator/worker_book.h"
#include "core/scheduler.h"
#include "http/http_server.h"
#include "idlepool.pb.h"
#include "platform/clock.h"
#include "spec/spec.h"
#include "store/store.h"

namespace idlepool::coordinator {

// What the coordinator needs to build assignments for a running job.
struct JobInfo {
  v1::JobSpec spec;
  std::vector<spec::TaskParams> tasks;
  // Some task may have a checkpoint in the store: only then does an assignment read it.
  bool any_checkpoint = false;
  // Some task has inputs of its own (store::Store::ListTaskInputs): only then does an
  // assignment read them.
  bool task_inputs = false;
  // Pipelines: the outputs of the jobs it runs after, staged by each of its attempts
  // (job_after.h AfterInputs), read from the store at its first assignment.
  std::optional<std::vector<v1::Input>> after_inputs{};
};

// One entry of the core queue.
struct CoreItem {
  std::optional<core::Event> event;
  std::function<void()> fn;  // runs on the core thread before `event` is applied
  // Runs once the records of the batch holding `event` are committed: an RPC that must not
  // answer before its effect is durable waits for it.
  std::function<void()> after_commit = {};
  int64_t queued_ns = 0;  // platform::SteadyNanos() when posted (scheduling latency metric)
};

// What the core loop works with; each must outlive it.
struct CoreLoopDeps {
  const Options& options;
  const platform::Clock& clock;
  store::Store& store;
  PoolMetrics& metrics;
  SessionRegistry& sessions;
  WorkerBook& book;
  http::ChangeFeed& feed;
  // Set when the coordinator begins to shut down: availability is no longer observed.
  const std::atomic<bool>& shutting_down;
  // Called once, on the core thread, with the store error that stopped the loop.
  std::function<void(absl::Status)> on_fatal;
  // Called on the core thread after a committed batch in which tasks of these jobs succeeded or
  // the jobs ended (each once, by id); must not block. Unset: nobody is told.
  std::function<void(const std::vector<core::JobId>&)> on_jobs_progressed = {};
  // Told of service replicas as they start and end (serve_bridge.h); null: nobody.
  ServeBridge* serve = nullptr;
};

class CoreLoop {
 public:
  explicit CoreLoop(CoreLoopDeps deps);
  ~CoreLoop();

  // Before Start: the store's state and the running jobs' specs.
  void Restore(const core::RestoredState& state, std::map<core::JobId, JobInfo> jobs);
  void Start();
  void Stop();  // idempotent; the queue's remaining items are dropped

  void Post(core::Event ev) { PostItem(CoreItem{std::move(ev), nullptr}); }
  void PostItem(CoreItem item);
  // Runs `fn` on the core thread and returns its result.
  template <typename T>
  T Query(std::function<T()> fn) {
    auto p = std::make_shared<std::promise<T>>();
    auto fut = p->get_future();
    PostItem(CoreItem{std::nullopt, [p, fn = std::move(fn)] { p->set_value(fn()); }});
    return fut.get();
  }

  // Core thread only.
  core::Scheduler& sched() { return sched_; }
  std::map<core::JobId, JobInfo>& jobs() { return jobs_; }

 private:
  class StoreSink;
  class SessionTarget;

  void Loop();
  void SaveUsage(core::MonoTime now);
  // Applies a batch's items to the scheduler; returns their after_commit functions.
  std::vector<std::function<void()>> ApplyItems(std::deque<CoreItem>& batch,
                                                std::vector<core::Decision>& decisions,
                                                std::vector<int64_t>& queued_ns, bool& visible);
  // Commits `decisions` (after any held ones) through `driver`, or holds them all on a full
  // disk. kStopped: a fatal store error, reported through on_fatal.
  enum class Commit { kDone, kHeld, kStopped };
  Commit CommitOrHold(class CoreDriver& driver, std::vector<core::Decision>& decisions,
                      std::vector<std::function<void()>>& committed);
  // After a core batch: its events' scheduling latency; the dashboard's state version moves
  // when the batch changed something it shows (records, or a worker/job/owner event).
  void BatchDone(const std::vector<int64_t>& queued_ns, bool changed);
  // At a tick: the availability of the workers events touched since the last one (of every
  // worker, the first time), and from time to time forgets departed workers.
  void ObserveWorkers(core::MonoTime now);
  void Touch(const core::Event& ev);

  CoreLoopDeps deps_;
  core::Scheduler sched_;
  std::map<core::JobId, JobInfo> jobs_;  // running jobs only
  // Decisions (and the after_commit of their items) whose commit failed on a full disk.
  static constexpr size_t kMaxHeldDecisions = 200000;
  static constexpr core::Millis kHeldRetry{500};
  std::vector<core::Decision> held_;
  std::vector<std::function<void()>> held_committed_;
  core::MonoTime next_retry_{};
  std::unique_ptr<StoreSink> sink_;
  std::unique_ptr<SessionTarget> target_;
  // Core thread: workers whose availability an event may have changed since the last tick.
  std::set<core::WorkerName> touched_;
  bool observed_all_ = false;
  core::MonoTime next_forget_{};

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<CoreItem> queue_ ABSL_GUARDED_BY(queue_mu_);
  bool stopping_ ABSL_GUARDED_BY(queue_mu_) = false;
  std::thread thread_;
};

}  // namespace idlepool::coordinator
