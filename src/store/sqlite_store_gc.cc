// SqliteStore's collection calls (store.h, "Collection"): the referenced blobs and the removal of
// a finished job. Statements are prepared per call: collections are rare. See sqlite_store_impl.h.
#include <set>
#include <string>

#include "store/sqlite_store_impl.h"

namespace idlepool::store::internal {
namespace {

// The tables whose rows name blobs, as (sha256) or (spec) queries; `?` the job when per job.
constexpr const char* kAllBlobs[] = {"SELECT DISTINCT sha256 FROM outputs",
                                     "SELECT DISTINCT sha256 FROM checkpoints",
                                     "SELECT DISTINCT sha256 FROM task_inputs"};
constexpr const char* kJobBlobs[] = {"SELECT sha256 FROM outputs WHERE job_id = ?",
                                     "SELECT sha256 FROM checkpoints WHERE job_id = ?",
                                     "SELECT sha256 FROM task_inputs WHERE job_id = ?"};
// Every table with a job's rows, children first.
constexpr const char* kJobTables[] = {"job_after",       "outputs",  "checkpoints", "task_inputs",
                                      "job_task_inputs", "attempts", "tasks",       "job_profiles",
                                      "job_predictions", "job_gpus", "job_sandbox", "job_service",
                                      "job_owner"};

}  // namespace

absl::Status SqliteStore::AddBlobs(const char* sql, core::JobId job, const SpecBlobs* spec_blobs,
                                   std::set<std::string>& out) {
  StmtPtr stmt;
  if (absl::Status s = Prepare(sql, stmt); !s.ok()) return s;
  if (job != 0) sqlite3_bind_int64(stmt.get(), 1, static_cast<int64_t>(job));
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    if (spec_blobs == nullptr) {
      out.insert(ColText(stmt.get(), 0));
      continue;
    }
    for (std::string& sha : (*spec_blobs)(ColBlob(stmt.get(), 0))) out.insert(std::move(sha));
  }
  return rc == SQLITE_DONE ? absl::OkStatus() : Err(rc, sql);
}

absl::StatusOr<std::set<std::string>> SqliteStore::ReferencedBlobs(const SpecBlobs& spec_blobs) {
  std::lock_guard lock(mu_);
  std::set<std::string> out;
  if (absl::Status s = Begin(st_.begin_deferred); !s.ok()) return s;
  absl::Status s = AddBlobs("SELECT spec FROM jobs", 0, &spec_blobs, out);
  for (const char* sql : kAllBlobs) {
    if (s.ok()) s = AddBlobs(sql, 0, nullptr, out);
  }
  if (!s.ok()) {
    Rollback();
    return s;
  }
  if (absl::Status c = Commit(); !c.ok()) return c;
  return out;
}

absl::StatusOr<std::set<std::string>> SqliteStore::DeleteJob(core::JobId job,
                                                             const SpecBlobs& spec_blobs) {
  std::lock_guard lock(mu_);
  if (absl::Status s = Begin(st_.begin_immediate); !s.ok()) return s;
  auto fail = [this](absl::Status s) {
    Rollback();
    return s;
  };
  StmtPtr state;
  if (absl::Status s = Prepare("SELECT state FROM jobs WHERE id = ?", state); !s.ok()) {
    return fail(s);
  }
  sqlite3_bind_int64(state.get(), 1, static_cast<int64_t>(job));
  int rc = sqlite3_step(state.get());
  if (rc == SQLITE_DONE) return fail(NotFound(job));
  if (rc != SQLITE_ROW) return fail(Err(rc, "DeleteJob: read the job"));
  if (ColText(state.get(), 0) == core::ToString(core::JobState::kRunning)) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat("sqlite store ", path_, ": job ", job, " is still running")));
  }
  state.reset();
  std::set<std::string> blobs;
  absl::Status s = AddBlobs("SELECT spec FROM jobs WHERE id = ?", job, &spec_blobs, blobs);
  for (const char* sql : kJobBlobs) {
    if (s.ok()) s = AddBlobs(sql, job, nullptr, blobs);
  }
  for (const char* table : kJobTables) {
    if (!s.ok()) break;
    const std::string sql = absl::StrCat("DELETE FROM ", table, " WHERE job_id = ?");
    StmtPtr del;
    s = Prepare(sql.c_str(), del);
    if (!s.ok()) break;
    sqlite3_bind_int64(del.get(), 1, static_cast<int64_t>(job));
    s = Step(del.get(), sql);
  }
  if (s.ok()) {
    StmtPtr del;
    s = Prepare("DELETE FROM jobs WHERE id = ?", del);
    if (s.ok()) {
      sqlite3_bind_int64(del.get(), 1, static_cast<int64_t>(job));
      s = Step(del.get(), "DeleteJob: jobs");
    }
  }
  if (!s.ok()) return fail(s);
  if (absl::Status c = Commit(); !c.ok()) return c;
  return blobs;
}

}  // namespace idlepool::store::internal
