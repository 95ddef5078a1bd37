// A job's rows besides jobs and tasks (store/sqlite_job_rows.h).
#include "store/sqlite_job_rows.h"

#include <algorithm>
#include <cstdint>

#include "store/sqlite_util.h"

namespace idlepool::store::internal {
namespace {

// Binds with `bind`, then steps `stmt` once; a failure names `bind_what` or `step_what`.
template <typename Bind>
std::optional<RowFailure> InsertRow(const StmtPtr& stmt, const char* bind_what,
                                    const char* step_what, Bind bind) {
  Use u(stmt);
  Binder b(u);
  bind(b);
  if (b.rc() != SQLITE_OK) return RowFailure{b.rc(), bind_what};
  if (int rc = sqlite3_step(u); rc != SQLITE_DONE) return RowFailure{rc, step_what};
  return std::nullopt;
}

int64_t Clamp(uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)); }

}  // namespace

std::optional<RowFailure> InsertJobRows(const JobRowStatements& st, core::JobId id,
                                        const NewJob& job) {
  const int64_t job_id = static_cast<int64_t>(id);
  if (auto f = InsertRow(
          st.profile, "InsertJob: bind job profile", "InsertJob: insert job profile",
          [&](Binder& b) {
            b.Int(job_id).Text(job.profile_key).Int(Clamp(job.input_bytes)).Int(job.input_files);
          })) {
    return f;
  }
  if (const core::Resources& r = job.sched.resources; r.gpu_memory_mb != 0 || !r.gpu_api.empty()) {
    if (auto f = InsertRow(
            st.gpus, "InsertJob: bind job gpus", "InsertJob: insert job gpus",
            [&](Binder& b) { b.Int(job_id).Int(Clamp(r.gpu_memory_mb)).Text(r.gpu_api); })) {
      return f;
    }
  }
  if (job.sched.resources.host_network) {  // a row only for a job that asks for more
    if (auto f = InsertRow(st.sandbox, "InsertJob: bind job sandbox",
                           "InsertJob: insert job sandbox", [&](Binder& b) { b.Int(job_id); })) {
      return f;
    }
  }
  if (auto f = InsertRow(
          st.owner, "InsertJob: bind job owner", "InsertJob: insert job owner",
          [&](Binder& b) { b.Int(job_id).Text(job.sched.user).Int(job.sched.priority); })) {
    return f;
  }
  for (const core::JobId after : job.sched.after) {
    if (auto f = InsertRow(st.after, "InsertJob: bind job after", "InsertJob: insert job after",
                           [&](Binder& b) { b.Int(job_id).Int(static_cast<int64_t>(after)); })) {
      return f;
    }
  }
  if (!job.service.has_value()) return std::nullopt;
  const spec::ServiceSpec& s = *job.service;
  return InsertRow(st.service, "InsertJob: bind job service", "InsertJob: insert job service",
                   [&](Binder& b) {
                     b.Int(job_id)
                         .Int(s.min_replicas)
                         .Int(s.max_replicas)
                         .Text(s.protocol)
                         .Text(s.model)
                         .Text(s.health)
                         .Int(s.max_concurrent)
                         .Int(s.drain_seconds)
                         .Int(s.replicas_per_machine);
                   });
}

std::optional<RowFailure> LoadJobAfter(const StmtPtr& load,
                                       const std::map<core::JobId, size_t>& pos,
                                       core::RestoredState& out) {
  Use u(load);
  int rc;
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    auto it = pos.find(static_cast<core::JobId>(ColInt(u, 0)));
    if (it == pos.end()) continue;
    out.jobs[it->second].spec.after.push_back(static_cast<core::JobId>(ColInt(u, 1)));
  }
  if (rc != SQLITE_DONE) return RowFailure{rc, "Load: read job_after"};
  return std::nullopt;
}

std::optional<spec::ServiceSpec> ColService(sqlite3_stmt* s, int first) {
  if (sqlite3_column_type(s, first) == SQLITE_NULL) return std::nullopt;
  auto u32 = [&](int k) { return static_cast<uint32_t>(ColInt(s, first + k)); };
  spec::ServiceSpec out;
  out.min_replicas = u32(1);
  out.max_replicas = u32(2);
  out.protocol = ColText(s, first + 3);
  out.model = ColText(s, first + 4);
  out.health = ColText(s, first + 5);
  out.max_concurrent = u32(6);
  out.drain_seconds = u32(7);
  out.replicas_per_machine = u32(8);
  return out;
}

}  // namespace idlepool::store::internal
