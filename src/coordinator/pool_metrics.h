// The coordinator's Prometheus metrics (docs/operations.md "Prometheus metrics"): a
// metrics::Registry with the pool's families, fed by the coordinator shell (never by the pure
// core).
//
//   idlepool_workers{state}               gauge: workers by activity (WorkerInfo.activity words)
//   idlepool_slots, idlepool_slots_busy   gauge: CPU slots of connected workers, and in use
//                                         (not "slots_total": promtool reserves _total for
//                                         counters)
//   idlepool_tasks{state}                 gauge: tasks of every job by state
//   idlepool_attempts_{started,succeeded,failed,preempted}_total   counters (failed: failed or
//                                         timed out)
//   idlepool_lease_expirations_total      counter: workers declared lost by their lease
//   idlepool_bytes_total{direction}       counter: served (blob bytes the coordinator sent:
//                                         GetBlob, FetchChunk), received (blob bytes uploaded
//                                         to it: inputs and outputs), peer (worker to worker,
//                                         as attempts reported)
//   idlepool_store_commit_seconds         histogram: each group commit of the core's records
//   idlepool_scheduling_seconds           histogram: an event entering the core queue until its
//                                         batch's decisions were sent
//   idlepool_workers_in_memory{part}      gauge: workers the coordinator holds in memory, in its
//                                         core and in its worker book (departed ones are forgotten)
//   idlepool_jobs_awaiting_prediction     gauge: jobs the predictor still waits on
//   idlepool_store_bytes                  gauge: the store's files (pool.db, its WAL and shm)
//   idlepool_blobs, idlepool_blob_bytes   gauge: complete blobs in the data dir and their bytes
//                                         (recounted at most every 10 s; partials not counted)
// Counters count since this coordinator process started.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "idlepool.pb.h"
#include "metrics/metrics.h"

namespace idlepool::coordinator {

// The bytes of the store's files in `data_dir`: pool.db, pool.db-wal, pool.db-shm.
uint64_t StoreFileBytes(const std::string& data_dir);

// Counters by user from the store's usage by day (every day kept; --keep-finished trims old days,
// which a scrape sees as a counter reset): idlepool_user_slot_seconds_total,
// idlepool_user_gpu_seconds_total, idlepool_user_attempts_total, idlepool_user_tasks_total,
// idlepool_user_preemptions_total, each with a label user ("" for work from before users).
std::string RenderUserUsage(const v1::UsageReply& by_user);

class PoolMetrics {
 public:
  PoolMetrics();

  // The records and messages of one core batch (counts attempts, lease expirations, peer bytes).
  void OnDecisions(const std::vector<core::Decision>& decisions);
  void OnCommit(double seconds) { commit_->Observe(seconds); }
  void OnScheduled(double seconds) { scheduling_->Observe(seconds); }
  void BytesServed(uint64_t n) { served_->Inc(static_cast<double>(n)); }
  void BytesReceived(uint64_t n) { received_->Inc(static_cast<double>(n)); }
  // When this coordinator started, Unix seconds (wall clock): counters count from here, so
  // rate() over a restart can tell (the convention of process_start_time_seconds).
  void SetStartTime(double unix_s) { start_time_->Set(unix_s); }

  // Sets the gauges from the pool as it is now.
  void SetPool(const v1::ListWorkersReply& workers, const std::vector<core::JobSummary>& jobs);
  // What the coordinator holds in memory (issue 21: it must shrink when workers go away).
  void SetInMemory(size_t core_workers, size_t book_workers, size_t awaiting_prediction);
  // The data dir's disk use (issue 18).
  void SetDisk(uint64_t store_bytes, uint64_t blobs, uint64_t blob_bytes);

  // The exposition text; runs the collector set with SetCollector first.
  std::string Render() const { return registry_.Render(); }
  metrics::Registry& registry() { return registry_; }

  // A worker's one-word activity: WorkerInfo.activity, or (when the coordinator did not fill it)
  // derived from state: connected -> running (an attempt runs) or idle; otherwise the state.
  static std::string ActivityOf(const v1::WorkerInfo& w);

 private:
  metrics::Registry registry_;
  metrics::Counter *started_, *succeeded_, *failed_, *preempted_, *lease_expired_;
  metrics::Counter *served_, *received_, *peer_;
  metrics::Histogram *commit_, *scheduling_;
  metrics::Gauge* start_time_;
  metrics::Gauge *slots_total_, *slots_busy_;
  metrics::Gauge *core_workers_, *book_workers_, *awaiting_prediction_;
  metrics::Gauge *store_bytes_, *blobs_, *blob_bytes_;
};

}  // namespace idlepool::coordinator
