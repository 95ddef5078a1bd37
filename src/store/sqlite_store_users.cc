// SqliteStore's users (schema version 14): shares and quotas, decayed usage balances, and job
// priorities. Rare calls (an admin's `users set`, a save a minute): each prepares its statement.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "store/sqlite_schema.h"
#include "store/sqlite_store_impl.h"

namespace idlepool::store::internal {

absl::Status SqliteStore::PutUser(const UserRow& user) {
  if (std::string p = UserRowProblem(user); !p.empty()) return Invalid(p);
  std::lock_guard lock(mu_);
  StmtPtr put;
  if (absl::Status s = Prepare(
          "INSERT OR REPLACE INTO users (user, share, max_slots, max_gpus, max_queued_tasks, "
          "max_stored_bytes) VALUES (?, ?, ?, ?, ?, ?)",
          put);
      !s.ok()) {
    return s;
  }
  Use u(put);
  Binder b(u);
  b.Text(user.user)
      .Real(user.share)
      .Int(user.max_slots)
      .Int(user.max_gpus)
      .Int(static_cast<int64_t>(std::min<uint64_t>(user.max_queued_tasks, INT64_MAX)))
      .Int(static_cast<int64_t>(std::min<uint64_t>(user.max_stored_bytes, INT64_MAX)));
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "PutUser: bind");
  return Step(u, "PutUser");
}

absl::Status SqliteStore::PutUsageBalances(const std::vector<UsageBalance>& balances,
                                           int64_t as_of_ms) {
  for (const UsageBalance& b : balances) {
    if (b.user.size() > 64 || !std::isfinite(b.slot_s) || !std::isfinite(b.gpu_s)) {
      return Invalid(
          "PutUsageBalances: a balance needs a user name of at most 64 bytes and "
          "finite figures");
    }
  }
  std::lock_guard lock(mu_);
  StmtPtr clear, put;
  if (absl::Status s = Prepare("DELETE FROM user_usage", clear); !s.ok()) return s;
  if (absl::Status s = Prepare(
          "INSERT INTO user_usage (user, slot_s, gpu_s, as_of_ms) VALUES (?, ?, ?, ?)", put);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Begin(st_.begin_immediate); !s.ok()) return s;
  absl::Status s = Step(Use(clear), "PutUsageBalances: clear");
  for (const UsageBalance& balance : balances) {
    if (!s.ok()) break;
    Use u(put);
    Binder b(u);
    b.Text(balance.user).Real(balance.slot_s).Real(balance.gpu_s).Int(as_of_ms);
    s = b.rc() != SQLITE_OK ? Err(b.rc(), "PutUsageBalances: bind") : Step(u, "PutUsageBalances");
  }
  if (!s.ok()) {
    Rollback();
    return s;
  }
  return Commit();
}

absl::StatusOr<UsersState> SqliteStore::LoadUsers() {
  std::lock_guard lock(mu_);
  UsersState out;
  StmtPtr users, usage;
  if (absl::Status s =
          Prepare("SELECT user, share, max_slots, max_gpus, max_queued_tasks, max_stored_bytes "
                  "FROM users ORDER BY user",
                  users);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          Prepare("SELECT user, slot_s, gpu_s, as_of_ms FROM user_usage ORDER BY user", usage);
      !s.ok()) {
    return s;
  }
  int rc;
  for (Use u(users); (rc = sqlite3_step(u)) == SQLITE_ROW;) {
    out.users.push_back(UserRow{ColText(u, 0), sqlite3_column_double(u, 1),
                                static_cast<uint32_t>(std::max<int64_t>(ColInt(u, 2), 0)),
                                static_cast<uint32_t>(std::max<int64_t>(ColInt(u, 3), 0)),
                                static_cast<uint64_t>(std::max<int64_t>(ColInt(u, 4), 0)),
                                static_cast<uint64_t>(std::max<int64_t>(ColInt(u, 5), 0))});
  }
  if (rc != SQLITE_DONE) return Err(rc, "LoadUsers: read users");
  for (Use u(usage); (rc = sqlite3_step(u)) == SQLITE_ROW;) {
    out.balances.push_back(
        UsageBalance{ColText(u, 0), sqlite3_column_double(u, 1), sqlite3_column_double(u, 2)});
    out.balances_as_of_ms = ColInt(u, 3);
  }
  if (rc != SQLITE_DONE) return Err(rc, "LoadUsers: read usage");
  return out;
}

absl::Status SqliteStore::SetJobPriority(core::JobId job, int32_t priority) {
  std::lock_guard lock(mu_);
  absl::StatusOr<bool> exists = JobExists(job);
  if (!exists.ok()) return exists.status();
  if (!*exists) return NotFound(job);
  StmtPtr put;
  // A job from before version 13 has no row: it gets one, of user ''.
  if (absl::Status s = Prepare("INSERT INTO job_owner (job_id, user, priority) VALUES (?, '', ?) "
                               "ON CONFLICT (job_id) DO UPDATE SET priority = excluded.priority",
                               put);
      !s.ok()) {
    return s;
  }
  Use u(put);
  Binder b(u);
  b.Int(static_cast<int64_t>(job)).Int(priority);
  if (b.rc() != SQLITE_OK) return Err(b.rc(), "SetJobPriority: bind");
  return Step(u, "SetJobPriority");
}

absl::Status SqliteStore::AddUsage(core::AttemptId id) {
  Use u(st_.add_usage);
  if (int rc = sqlite3_bind_int64(u, 1, static_cast<int64_t>(id)); rc != SQLITE_OK) {
    return Err(rc, "AttemptEnded: bind usage");
  }
  return Step(u, "AttemptEnded: add usage");
}

absl::StatusOr<std::vector<UsageTotals>> SqliteStore::ListUsage(int64_t since_day, UsageBy by) {
  std::lock_guard lock(mu_);
  StmtPtr q;
  const char* sql =
      by == UsageBy::kUser
          ? "SELECT user, SUM(slot_ms), SUM(gpu_ms), SUM(attempts), SUM(tasks), SUM(preempted), "
            "SUM(bytes_in), SUM(bytes_out), SUM(requests), SUM(tokens) FROM usage_days "
            "WHERE day >= ? GROUP BY user ORDER BY user"
          : "SELECT worker, SUM(slot_ms), SUM(gpu_ms), SUM(attempts), SUM(tasks), "
            "SUM(preempted), SUM(bytes_in), SUM(bytes_out), SUM(requests), SUM(tokens) "
            "FROM usage_days WHERE day >= ? GROUP BY worker ORDER BY worker";
  if (absl::Status s = Prepare(sql, q); !s.ok()) return s;
  Use u(q);
  if (int rc = sqlite3_bind_int64(u, 1, since_day); rc != SQLITE_OK) {
    return Err(rc, "ListUsage: bind");
  }
  std::vector<UsageTotals> out;
  int rc;
  auto n = [&](int i) { return static_cast<uint64_t>(std::max<int64_t>(ColInt(u, i), 0)); };
  while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
    out.push_back(UsageTotals{ColText(u, 0), ColInt(u, 1), ColInt(u, 2), n(3), n(4), n(5), n(6),
                              n(7), n(8), n(9)});
  }
  if (rc != SQLITE_DONE) return Err(rc, "ListUsage: read");
  return out;
}

absl::Status SqliteStore::TrimUsage(int64_t before_day) {
  std::lock_guard lock(mu_);
  StmtPtr q;
  if (absl::Status s = Prepare("DELETE FROM usage_days WHERE day < ?", q); !s.ok()) return s;
  Use u(q);
  if (int rc = sqlite3_bind_int64(u, 1, before_day); rc != SQLITE_OK) {
    return Err(rc, "TrimUsage: bind");
  }
  return Step(u, "TrimUsage");
}

absl::Status SqliteStore::AddServed(int64_t day, const std::vector<ServedRow>& rows) {
  for (const ServedRow& r : rows) {
    if (r.user.empty() || r.user.size() > 64 || r.worker.size() > 64) {
      return Invalid(
          "AddServed: a row needs a user name of 1 to 64 bytes and a worker name of "
          "at most 64");
    }
  }
  std::lock_guard lock(mu_);
  StmtPtr add;
  if (absl::Status s = Prepare(kAddServedSql, add); !s.ok()) return s;
  if (absl::Status s = Begin(st_.begin_immediate); !s.ok()) return s;
  absl::Status s;
  for (const ServedRow& r : rows) {
    Use u(add);
    Binder b(u);
    b.Int(day).Text(r.user).Text(r.worker);
    b.Int(static_cast<int64_t>(std::min<uint64_t>(r.requests, INT64_MAX)));
    b.Int(static_cast<int64_t>(std::min<uint64_t>(r.tokens, INT64_MAX)));
    s = b.rc() != SQLITE_OK ? Err(b.rc(), "AddServed: bind") : Step(u, "AddServed");
    if (!s.ok()) break;
  }
  if (!s.ok()) {
    Rollback();
    return s;
  }
  return Commit();
}

}  // namespace idlepool::store::internal
