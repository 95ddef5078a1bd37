#include "coordinator/pool_metrics.h"

#include <sys/stat.h>

#include <map>

#include "absl/strings/str_cat.h"

namespace idlepool::coordinator {
namespace {

// The activity words of WorkerInfo.activity (proto/idlepool.proto), each always exported.
const char* const kActivities[] = {"running",    "idle",           "suspended", "on_battery",
                                   "hot",        "lid_closed",     "outside_window", "lost",
                                   "disconnected", "left"};
const char* const kTaskStates[] = {"pending", "running", "succeeded", "failed", "cancelled"};

constexpr const char* kWorkersHelp = "Workers known to the coordinator, by activity.";
constexpr const char* kTasksHelp = "Tasks of every job the coordinator knows, by state.";
constexpr const char* kBytesHelp =
    "Bytes moved since the coordinator started: served (blob bytes it sent), received (blob "
    "bytes uploaded to it), peer (worker to worker, as attempts reported).";

}  // namespace

PoolMetrics::PoolMetrics() {
  auto& r = registry_;
  for (const char* a : kActivities) r.AddGauge("idlepool_workers", kWorkersHelp, {{"state", a}});
  slots_total_ = &r.AddGauge("idlepool_slots",
                             "CPU slots offered by connected workers (a gauge: no _total).");
  slots_busy_ = &r.AddGauge("idlepool_slots_busy", "CPU slots of connected workers in use.");
  for (const char* s : kTaskStates) r.AddGauge("idlepool_tasks", kTasksHelp, {{"state", s}});
  started_ = &r.AddCounter("idlepool_attempts_started_total",
                           "Attempts started since the coordinator started.");
  succeeded_ = &r.AddCounter("idlepool_attempts_succeeded_total",
                             "Attempts that succeeded since the coordinator started.");
  failed_ = &r.AddCounter("idlepool_attempts_failed_total",
                          "Attempts that failed or timed out since the coordinator started.");
  preempted_ = &r.AddCounter("idlepool_attempts_preempted_total",
                             "Attempts vacated for their machine's owner since the coordinator "
                             "started.");
  lease_expired_ = &r.AddCounter("idlepool_lease_expirations_total",
                                 "Workers declared lost because their lease expired, since the "
                                 "coordinator started.");
  served_ = &r.AddCounter("idlepool_bytes_total", kBytesHelp, {{"direction", "served"}});
  received_ = &r.AddCounter("idlepool_bytes_total", kBytesHelp, {{"direction", "received"}});
  peer_ = &r.AddCounter("idlepool_bytes_total", kBytesHelp, {{"direction", "peer"}});
  constexpr const char* kInMemoryHelp =
      "Workers the coordinator holds in memory: in its core and in its worker book.";
  core_workers_ = &r.AddGauge("idlepool_workers_in_memory", kInMemoryHelp, {{"part", "core"}});
  book_workers_ = &r.AddGauge("idlepool_workers_in_memory", kInMemoryHelp, {{"part", "book"}});
  awaiting_prediction_ = &r.AddGauge("idlepool_jobs_awaiting_prediction",
                                     "Jobs the predictor still waits on (their first successes).");
  store_bytes_ = &r.AddGauge("idlepool_store_bytes",
                             "Bytes of the store's files (pool.db, its WAL and shared memory).");
  blobs_ = &r.AddGauge("idlepool_blobs", "Complete blobs in the coordinator's data dir.");
  blob_bytes_ = &r.AddGauge("idlepool_blob_bytes",
                            "Bytes of the complete blobs in the coordinator's data dir.");
  start_time_ = &r.AddGauge("idlepool_start_time_seconds",
                            "When the coordinator started, Unix seconds; counters count from "
                            "here.");
  commit_ = &r.AddHistogram("idlepool_store_commit_seconds",
                            "Duration of each group commit of the scheduler's records.",
                            metrics::LatencyBuckets());
  scheduling_ = &r.AddHistogram(
      "idlepool_scheduling_seconds",
      "From an event entering the core queue to its batch's decisions being sent.",
      metrics::LatencyBuckets());
}

void PoolMetrics::OnDecisions(const std::vector<core::Decision>& decisions) {
  for (const auto& d : decisions) {
    if (const auto* c = std::get_if<core::AttemptCreated>(&d)) {
      if (!c->revived) started_->Inc();
    } else if (const auto* e = std::get_if<core::AttemptEnded>(&d)) {
      switch (e->outcome) {
        case core::AttemptOutcome::kSucceeded: succeeded_->Inc(); break;
        case core::AttemptOutcome::kFailed:
        case core::AttemptOutcome::kTimedOut: failed_->Inc(); break;
        case core::AttemptOutcome::kPreempted: preempted_->Inc(); break;
        default: break;
      }
      peer_->Inc(static_cast<double>(e->transfer.peer_bytes));
    } else if (std::holds_alternative<core::WorkerLost>(d)) {
      lease_expired_->Inc();
    }
  }
}

std::string PoolMetrics::ActivityOf(const v1::WorkerInfo& w) {
  if (!w.activity().empty()) return w.activity();
  if (w.state() == "connected") return w.attempts_running() > 0 ? "running" : "idle";
  return w.state();
}

void PoolMetrics::SetPool(const v1::ListWorkersReply& workers,
                          const std::vector<core::JobSummary>& jobs) {
  std::map<std::string, double> by_activity;
  for (const char* a : kActivities) by_activity[a] = 0;
  double total = 0, busy = 0;
  for (const auto& w : workers.workers()) {
    by_activity[ActivityOf(w)] += 1;
    if (w.state() == "connected") {
      total += w.capacity().cpus();
      busy += w.slots_busy();
    }
  }
  for (const auto& [a, n] : by_activity) {
    registry_.AddGauge("idlepool_workers", kWorkersHelp, {{"state", a}}).Set(n);
  }
  slots_total_->Set(total);
  slots_busy_->Set(busy);
  double t[5] = {0, 0, 0, 0, 0};
  for (const auto& j : jobs) {
    t[0] += j.pending;
    t[1] += j.running;
    t[2] += j.succeeded;
    t[3] += j.failed;
    t[4] += j.cancelled;
  }
  for (int i = 0; i < 5; ++i) {
    registry_.AddGauge("idlepool_tasks", kTasksHelp, {{"state", kTaskStates[i]}}).Set(t[i]);
  }
}

void PoolMetrics::SetInMemory(size_t core_workers, size_t book_workers,
                              size_t awaiting_prediction) {
  core_workers_->Set(static_cast<double>(core_workers));
  book_workers_->Set(static_cast<double>(book_workers));
  awaiting_prediction_->Set(static_cast<double>(awaiting_prediction));
}

void PoolMetrics::SetDisk(uint64_t store_bytes, uint64_t blobs, uint64_t blob_bytes) {
  store_bytes_->Set(static_cast<double>(store_bytes));
  blobs_->Set(static_cast<double>(blobs));
  blob_bytes_->Set(static_cast<double>(blob_bytes));
}

uint64_t StoreFileBytes(const std::string& data_dir) {
  uint64_t total = 0;
  for (const char* name : {"/pool.db", "/pool.db-wal", "/pool.db-shm"}) {
    struct stat st;
    if (::stat((data_dir + name).c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

std::string RenderUserUsage(const v1::UsageReply& by_user) {
  struct Family {
    const char* name;
    const char* help;
    double (*value)(const v1::UsageRow&);
  };
  const Family families[] = {
      {"idlepool_user_slot_seconds_total", "Slots x wall time of the user's ended attempts.",
       [](const v1::UsageRow& r) { return r.slot_s(); }},
      {"idlepool_user_gpu_seconds_total", "GPUs x wall time of the user's ended attempts.",
       [](const v1::UsageRow& r) { return r.gpu_s(); }},
      {"idlepool_user_attempts_total", "The user's attempts that ended.",
       [](const v1::UsageRow& r) { return static_cast<double>(r.attempts()); }},
      {"idlepool_user_tasks_total", "The user's tasks that succeeded.",
       [](const v1::UsageRow& r) { return static_cast<double>(r.tasks()); }},
      {"idlepool_user_preemptions_total", "The user's attempts vacated (owner or fair share).",
       [](const v1::UsageRow& r) { return static_cast<double>(r.preempted()); }},
  };
  std::string out;
  for (const Family& f : families) {
    absl::StrAppend(&out, "# HELP ", f.name, " ", f.help, "\n# TYPE ", f.name, " counter\n");
    // User names are letters, digits and . _ - @ (text::IsUserName): nothing to escape.
    for (const v1::UsageRow& r : by_user.rows()) {
      absl::StrAppend(&out, f.name, "{user=\"", r.key(), "\"} ", f.value(r), "\n");
    }
  }
  return out;
}

}  // namespace idlepool::coordinator
