// SqliteStore's workers, job predictions and worker events. See sqlite_store_impl.h.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/sqlite_store_impl.h"

namespace idlepool::store::internal {

absl::Status SqliteStore::PutWorkers(const std::vector<WorkerRecord>& workers) {
  for (const auto& w : workers) {
    if (std::string p = WorkerRecordProblem(w); !p.empty()) return Invalid(p);
  }
  if (workers.empty()) return absl::OkStatus();
  std::lock_guard lock(mu_);
  if (absl::Status s = Begin(st_.begin_immediate); !s.ok()) return s;
  for (const auto& w : workers) {
    Use u(st_.put_worker);
    Binder b(u);
    b.Text(w.worker)
        .Text(w.hostname)
        .Int(w.link_measured_ms)
        .Int(w.rtt_us)
        .Int(w.down_bytes_per_s)
        .Int(w.up_bytes_per_s)
        .Int(w.probe_bytes)
        .Real(w.cpu_score)
        .Int(w.cores)
        .Int(w.first_seen_ms)
        .Int(w.up_ms)
        .Int(w.down_ms)
        .Int(w.up_periods)
        .Int(w.down_periods)
        .Int(w.updated_ms);
    absl::Status s = b.rc() != SQLITE_OK ? Err(b.rc(), "PutWorkers: bind") : Step(u, "PutWorkers");
    if (!s.ok()) {
      Rollback();
      return s;
    }
  }
  return Commit();
}

absl::Status SqliteStore::PutJobPrediction(core::JobId job, const std::string& bytes) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(job);
  Use u(st_.put_prediction);
  Binder b(u);
  b.Int(static_cast<int64_t>(job)).Blob(bytes);
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "PutJobPrediction: bind");
  return Step(u, "PutJobPrediction");
}

absl::StatusOr<std::string> SqliteStore::GetJobPrediction(core::JobId job) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(job);
  Use u(st_.get_prediction);
  if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(job)); rc != SQLITE_OK) {
    return Err(rc, "GetJobPrediction: bind");
  }
  int rc = sqlite3_step(u);
  if (rc == SQLITE_ROW) return ColBlob(u, 0);
  if (rc == SQLITE_DONE) return std::string();
  return Err(rc, "GetJobPrediction: read");
}

// A row of kListWorkersSql's columns.
static WorkerRecord ReadWorkerRow(sqlite3_stmt* u) {
  WorkerRecord w;
  w.worker = ColText(u, 0);
  w.hostname = ColText(u, 1);
  w.link_measured_ms = ColInt(u, 2);
  w.rtt_us = ColInt(u, 3);
  w.down_bytes_per_s = ColInt(u, 4);
  w.up_bytes_per_s = ColInt(u, 5);
  w.probe_bytes = ColInt(u, 6);
  w.cpu_score = sqlite3_column_double(u, 7);
  w.cores = static_cast<uint32_t>(ColInt(u, 8));
  w.first_seen_ms = ColInt(u, 9);
  w.up_ms = ColInt(u, 10);
  w.down_ms = ColInt(u, 11);
  w.up_periods = static_cast<uint32_t>(ColInt(u, 12));
  w.down_periods = static_cast<uint32_t>(ColInt(u, 13));
  w.updated_ms = ColInt(u, 14);
  return w;
}

absl::StatusOr<std::vector<WorkerRecord>> SqliteStore::ListWorkers() {
  std::lock_guard lock(mu_);
  Use u(st_.list_workers);
  std::vector<WorkerRecord> out;
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) out.push_back(ReadWorkerRow(u));
  if (rc != SQLITE_DONE) return Err(rc, "ListWorkers: read workers");
  return out;
}

absl::StatusOr<std::optional<WorkerRecord>> SqliteStore::GetWorker(const std::string& worker) {
  std::lock_guard lock(mu_);
  Use u(st_.get_worker);
  if (int rc = Binder(u).Text(worker).rc(); rc != SQLITE_OK) return Err(rc, "GetWorker: bind");
  const int rc = sqlite3_step(u);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) return Err(rc, "GetWorker: read worker");
  return ReadWorkerRow(u);
}

absl::Status SqliteStore::AppendWorkerEvents(const std::vector<WorkerEvent>& events) {
  for (const auto& e : events) {
    if (std::string p = WorkerEventProblem(e); !p.empty()) return Invalid(p);
  }
  if (events.empty()) return absl::OkStatus();
  std::lock_guard lock(mu_);
  if (absl::Status s = Begin(st_.begin_immediate); !s.ok()) return s;
  for (const auto& e : events) {
    Use u(st_.append_event);
    Binder b(u);
    b.Text(e.worker).Int(e.at_ms).Text(e.kind).Text(e.state).Text(e.cause).Text(e.reason);
    absl::Status s = b.rc() != SQLITE_OK ? Err(b.rc(), "AppendWorkerEvents: bind")
                                         : Step(u, "AppendWorkerEvents");
    if (!s.ok()) {
      Rollback();
      return s;
    }
  }
  return Commit();
}

absl::StatusOr<std::vector<WorkerEvent>> SqliteStore::ListWorkerEvents(const WorkerEventsQuery& q) {
  const int64_t limit = static_cast<int64_t>(std::min<size_t>(q.limit, INT64_MAX));
  std::vector<std::pair<int64_t, WorkerEvent>> rows;  // (id, event)
  std::lock_guard lock(mu_);
  // One indexed range per worker (each its newest `limit`), merged below.
  for (const std::string& worker : std::set<std::string>(q.workers.begin(), q.workers.end())) {
    Use u(st_.list_events);
    Binder b(u);
    b.Text(worker).Int(q.from_ms).Int(q.to_ms).Int(limit);
    if (b.rc() != SQLITE_OK) return Err(b.rc(), "ListWorkerEvents: bind");
    int rc;
    while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
      WorkerEvent e;
      e.worker = ColText(u, 1);
      e.at_ms = ColInt(u, 2);
      e.kind = ColText(u, 3);
      e.state = ColText(u, 4);
      e.cause = ColText(u, 5);
      e.reason = ColText(u, 6);
      rows.emplace_back(ColInt(u, 0), std::move(e));
    }
    if (rc != SQLITE_DONE) return Err(rc, "ListWorkerEvents: read events");
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.at_ms != b.second.at_ms ? a.second.at_ms < b.second.at_ms : a.first < b.first;
  });
  const size_t skip = rows.size() > q.limit ? rows.size() - q.limit : 0;
  std::vector<WorkerEvent> out;
  out.reserve(rows.size() - skip);
  for (size_t i = skip; i < rows.size(); ++i) out.push_back(std::move(rows[i].second));
  return out;
}

absl::Status SqliteStore::TrimWorkerEvents(int64_t before_ms, size_t max_rows) {
  std::lock_guard lock(mu_);
  if (absl::Status s = Begin(st_.begin_immediate); !s.ok()) return s;
  absl::Status s;
  {
    Use u(st_.trim_events_by_time);
    Binder b(u);
    b.Int(before_ms);
    s = b.rc() != SQLITE_OK ? Err(b.rc(), "TrimWorkerEvents: bind") : Step(u, "TrimWorkerEvents");
  }
  if (s.ok()) {
    Use u(st_.trim_events_by_rows);
    Binder b(u);
    b.Int(static_cast<int64_t>(std::min<size_t>(max_rows, INT64_MAX)));
    s = b.rc() != SQLITE_OK ? Err(b.rc(), "TrimWorkerEvents: bind") : Step(u, "TrimWorkerEvents");
  }
  if (!s.ok()) {
    Rollback();
    return s;
  }
  return Commit();
}

}  // namespace idlepool::store::internal
