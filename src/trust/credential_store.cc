// The credential store: one SQLite file in WAL mode with synchronous=FULL, created 0600 (SQLite
// gives its -wal and -shm files the same mode).
//
// File format (schema version 3, PRAGMA user_version; PRAGMA application_id "IPTR"):
//   tokens  (id PRIMARY KEY, kind 'join'|'access', role (RoleName), name, secret_sha256 (hex),
//            created, expires (0 never), uses_left (-1 unlimited), revoked 0|1, user ('' none),
//            rate_per_s (0 no limit), concurrency (0 no limit)) WITHOUT ROWID
// Version 2 added tokens.user, version 3 rate_per_s and concurrency; an older file is migrated
// when opened.
//   workers (name PRIMARY KEY, serial_hex, issued, not_after, revoked_at (0 never)) WITHOUT ROWID
//
// Concurrency: one connection, one mutex; each public call is one transaction (BEGIN IMMEDIATE
// when it writes), with statements prepared once at open.
#include "trust/credential_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "store/sqlite_stmt.h"
#include "text/names.h"

namespace idlepool::trust {
namespace {

constexpr int kSchemaVersion = 3;
constexpr int32_t kApplicationId = 0x49505452;  // "IPTR"
constexpr int kBusyTimeoutMs = 10000;
constexpr int kIdAttempts = 4;  // fresh ids to try when one is taken (48 random bits each)

constexpr const char* kSchema = R"sql(
CREATE TABLE tokens (
  id             TEXT    PRIMARY KEY,
  kind           TEXT    NOT NULL,
  role           TEXT    NOT NULL,
  name           TEXT    NOT NULL DEFAULT '',
  secret_sha256  TEXT    NOT NULL,
  created        INTEGER NOT NULL,
  expires        INTEGER NOT NULL DEFAULT 0,
  uses_left      INTEGER NOT NULL DEFAULT -1,
  revoked        INTEGER NOT NULL DEFAULT 0,
  user           TEXT    NOT NULL DEFAULT '',
  rate_per_s     REAL    NOT NULL DEFAULT 0,
  concurrency    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE workers (
  name        TEXT    PRIMARY KEY,
  serial_hex  TEXT    NOT NULL,
  issued      INTEGER NOT NULL,
  not_after   INTEGER NOT NULL,
  revoked_at  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
)sql";
constexpr const char* kMigrateV2 =
    "BEGIN IMMEDIATE; ALTER TABLE tokens ADD COLUMN user TEXT NOT NULL DEFAULT ''; "
    "PRAGMA user_version = 2; COMMIT;";
constexpr const char* kMigrateV3 =
    "BEGIN IMMEDIATE; ALTER TABLE tokens ADD COLUMN rate_per_s REAL NOT NULL DEFAULT 0; "
    "ALTER TABLE tokens ADD COLUMN concurrency INTEGER NOT NULL DEFAULT 0; "
    "PRAGMA user_version = 3; COMMIT;";

#define IDLEPOOL_TOKEN_COLUMNS                                                                    \
  "id, kind, role, name, secret_sha256, created, expires, uses_left, revoked, user, rate_per_s, " \
  "concurrency"
constexpr const char* kInsertTokenSql =
    "INSERT INTO tokens (" IDLEPOOL_TOKEN_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)";
constexpr const char* kGetTokenSql = "SELECT " IDLEPOOL_TOKEN_COLUMNS " FROM tokens WHERE id = ?";
constexpr const char* kListTokensSql =
    "SELECT " IDLEPOOL_TOKEN_COLUMNS " FROM tokens ORDER BY created, id";
#undef IDLEPOOL_TOKEN_COLUMNS
constexpr const char* kRevokeTokenSql = "UPDATE tokens SET revoked = 1 WHERE id = ?";
constexpr const char* kSpendTokenSql =
    "UPDATE tokens SET uses_left = uses_left - 1 WHERE id = ? AND uses_left > 0";
constexpr const char* kRecordWorkerSql =
    "INSERT INTO workers (name, serial_hex, issued, not_after) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET serial_hex = excluded.serial_hex, "
    "issued = excluded.issued, not_after = excluded.not_after";
constexpr const char* kGetWorkerSql =
    "SELECT name, serial_hex, issued, not_after, revoked_at FROM workers WHERE name = ?";
constexpr const char* kListWorkersSql =
    "SELECT name, serial_hex, issued, not_after, revoked_at FROM workers ORDER BY name";
constexpr const char* kRevokeWorkerSql =
    "UPDATE workers SET revoked_at = max(revoked_at, ?) WHERE name = ?";

using store::internal::StmtPtr;
using store::internal::Use;

int Bind1(sqlite3_stmt* s, int i, int64_t v) { return sqlite3_bind_int64(s, i, v); }
int Bind1(sqlite3_stmt* s, int i, double v) { return sqlite3_bind_double(s, i, v); }
int Bind1(sqlite3_stmt* s, int i, absl::string_view v) {
  return sqlite3_bind_text64(s, i, v.data() ? v.data() : "", v.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
}
// Binds parameters 1, 2, ... in order; the first failure's code.
template <typename... Args>
int Bind(sqlite3_stmt* s, const Args&... args) {
  int i = 0, rc = SQLITE_OK;
  ((rc = rc == SQLITE_OK ? Bind1(s, ++i, args) : rc), ...);
  return rc;
}

std::string ColText(sqlite3_stmt* s, int i) {
  const unsigned char* p = sqlite3_column_text(s, i);
  return p == nullptr ? std::string()
                      : std::string(reinterpret_cast<const char*>(p),
                                    static_cast<size_t>(sqlite3_column_bytes(s, i)));
}

absl::string_view KindName(TokenKind kind) { return kind == TokenKind::kJoin ? "join" : "access"; }

// A token id as the store's messages show it: only a well-formed id is echoed.
std::string TokenLabel(const std::string& id) {
  const bool shown = id.size() == 12 && std::all_of(id.begin(), id.end(), [](char c) {
                       return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
                     });
  return shown ? absl::StrCat("token ", id) : "token (malformed id)";
}

std::string UtcTime(int64_t unix_seconds) {
  const time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm;
  char buf[32];
  if (gmtime_r(&t, &tm) == nullptr || strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
    return absl::StrCat(unix_seconds);
  }
  return buf;
}

// A token row with what the public record leaves out.
struct StoredToken {
  TokenRecord record;
  TokenKind kind = TokenKind::kAccess;
  std::string secret_sha256;
};

// Whether `secret` opens `t` for a use of kind `want` at `now`. The secret is checked first, so
// someone without it learns nothing but that the id exists.
absl::Status CheckLive(const StoredToken& t, const std::string& secret, TokenKind want,
                       int64_t now) {
  const TokenRecord& r = t.record;
  const std::string label = TokenLabel(r.id);
  if (!SameHash(HashSecret(secret), t.secret_sha256)) {
    return absl::PermissionDeniedError(absl::StrCat("wrong secret for ", label));
  }
  if (t.kind != want) {
    return absl::PermissionDeniedError(absl::StrCat(label, " is a ", KindName(t.kind),
                                                    " token, not a ", KindName(want), " token"));
  }
  if (r.revoked) return absl::FailedPreconditionError(absl::StrCat(label, " was revoked"));
  if (r.expires != 0 && now >= r.expires) {
    return absl::DeadlineExceededError(absl::StrCat(label, " expired at ", UtcTime(r.expires)));
  }
  if (r.uses_left == 0) return absl::FailedPreconditionError(absl::StrCat(label, " is spent"));
  return absl::OkStatus();
}

absl::Status CheckNewToken(const NewTokenSpec& t, const std::string& pin) {
  const Role role = t.role;
  const bool role_fits =
      t.kind == TokenKind::kJoin
          ? role == Role::kWorker
          : (role == Role::kSubmit || role == Role::kRead || role == Role::kOperator);
  if (!role_fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", KindName(t.kind), " token cannot have role ", std::string(RoleName(role))));
  }
  if (t.kind == TokenKind::kJoin && !t.user.empty()) {
    return absl::InvalidArgumentError("a join token has no user (workers act for nobody)");
  }
  if (t.kind == TokenKind::kJoin && t.limit != KeyLimit{}) {
    return absl::InvalidArgumentError("--rate and --concurrency are for access tokens");
  }
  if (!(t.limit.rate_per_s >= 0 && t.limit.rate_per_s <= kMaxKeyRate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rate must be 0 (no limit) to ", kMaxKeyRate, " requests per second"));
  }
  if (t.limit.concurrency > kMaxKeyConcurrency) {
    return absl::InvalidArgumentError(
        absl::StrCat("--concurrency must be 0 (no limit) to ", kMaxKeyConcurrency));
  }
  if (!t.user.empty() && !IsUserName(t.user)) {
    return absl::InvalidArgumentError(
        "a user name is 1 to 64 letters, digits, '.', '_', '-' or '@'");
  }
  const int64_t ttl = t.ttl, uses = t.uses;
  if (ttl < 0) return absl::InvalidArgumentError("a token's ttl must be >= 0 (0: never expires)");
  if (uses == 0 || uses < -1) {
    return absl::InvalidArgumentError("a token's uses must be >= 1, or -1 for unlimited");
  }
  const bool pin_ok = pin.size() == 64 && std::all_of(pin.begin(), pin.end(), [](char c) {
                        return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
                      });
  if (!pin_ok) return absl::InvalidArgumentError("the CA pin should be 64 lowercase hex digits");
  return absl::OkStatus();
}

}  // namespace

bool IsUserName(std::string_view user) { return text::IsUserName(user); }

struct CredentialStore::Db {
  explicit Db(std::string p) : path(std::move(p)) {}
  ~Db() {
    // Statements first: the connection closes once none is left.
    for (const auto& [stmt, sql] : Statements()) stmt->reset();
    sqlite3_close_v2(db);
  }

  absl::Status Err(int rc, absl::string_view what) const {
    const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    return absl::InternalError(absl::StrCat("credential store ", path, ": ", what, ": ", detail,
                                            " (sqlite code ", rc, ")"));
  }
  absl::Status Exec(const char* sql, absl::string_view what) {
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? absl::OkStatus() : Err(rc, what);
  }
  absl::Status Prepare(const char* sql, StmtPtr& out) {
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    out.reset(s);
    return rc == SQLITE_OK ? absl::OkStatus() : Err(rc, absl::StrCat("prepare \"", sql, "\""));
  }
  absl::StatusOr<int64_t> QueryInt(const char* sql, absl::string_view what) {
    StmtPtr s;
    if (absl::Status st = Prepare(sql, s); !st.ok()) return st;
    const int rc = sqlite3_step(s.get());
    if (rc != SQLITE_ROW) return Err(rc, what);
    return sqlite3_column_int64(s.get(), 0);
  }
  absl::Status StepDone(sqlite3_stmt* s, absl::string_view what) {
    const int rc = sqlite3_step(s);
    return rc == SQLITE_DONE ? absl::OkStatus() : Err(rc, what);
  }

  absl::Status Open();
  absl::Status CreateFile0600();
  absl::Status CheckOrCreateSchema();
  absl::Status UseWal();
  absl::Status PrepareAll();
  // Every prepared statement with its SQL.
  std::vector<std::pair<StmtPtr*, const char*>> Statements() {
    return {{&begin_immediate, "BEGIN IMMEDIATE"},
            {&begin_deferred, "BEGIN"},
            {&commit, "COMMIT"},
            {&rollback, "ROLLBACK"},
            {&insert_token, kInsertTokenSql},
            {&get_token, kGetTokenSql},
            {&list_tokens, kListTokensSql},
            {&revoke_token, kRevokeTokenSql},
            {&spend_token, kSpendTokenSql},
            {&record_worker, kRecordWorkerSql},
            {&get_worker, kGetWorkerSql},
            {&list_workers, kListWorkersSql},
            {&revoke_worker, kRevokeWorkerSql}};
  }

  // `body` inside one transaction under the mutex; committed when it returns OK.
  template <typename F>
  auto InTransaction(bool write, F&& body) -> decltype(body()) {
    std::lock_guard<std::mutex> lock(mu);
    if (absl::Status s = StepDone(Use(write ? begin_immediate : begin_deferred), "begin");
        !s.ok()) {
      return s;
    }
    auto result = body();
    if (result.ok()) {
      const absl::Status committed = StepDone(Use(commit), "commit");
      if (committed.ok()) return result;
      result = committed;
    }
    if (!sqlite3_get_autocommit(db)) sqlite3_step(Use(rollback));
    return result;
  }

  absl::StatusOr<StoredToken> ReadToken(sqlite3_stmt* s) const;
  absl::StatusOr<StoredToken> LookupToken(const std::string& id);
  absl::Status InsertToken(const StoredToken& t);
  WorkerRecord ReadWorker(sqlite3_stmt* s) const;

  const std::string path;
  std::mutex mu;
  sqlite3* db = nullptr;
  StmtPtr begin_immediate, begin_deferred, commit, rollback;
  StmtPtr insert_token, get_token, list_tokens, revoke_token, spend_token;
  StmtPtr record_worker, get_worker, list_workers, revoke_worker;
};

absl::Status CredentialStore::Db::CreateFile0600() {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("credential store ", path, ": cannot open: ", std::strerror(errno)));
  }
  // An existing file may have been left wider by hand: tokens stay private.
  const int rc = ::fchmod(fd, 0600);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("credential store ", path, ": cannot chmod 0600: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::Status CredentialStore::Db::CheckOrCreateSchema() {
  absl::StatusOr<int64_t> objects = QueryInt("SELECT count(*) FROM sqlite_master", "read schema");
  if (!objects.ok()) return objects.status();
  absl::StatusOr<int64_t> version = QueryInt("PRAGMA user_version", "read schema version");
  if (!version.ok()) return version.status();
  absl::StatusOr<int64_t> app_id = QueryInt("PRAGMA application_id", "read application id");
  if (!app_id.ok()) return app_id.status();
  if (*objects == 0 && *version == 0 && *app_id == 0) {
    const std::string ddl =
        absl::StrCat("BEGIN IMMEDIATE;", kSchema, "PRAGMA application_id = ", kApplicationId,
                     "; PRAGMA user_version = ", kSchemaVersion, "; COMMIT;");
    absl::Status s = Exec(ddl.c_str(), "create schema");
    if (!s.ok() && !sqlite3_get_autocommit(db)) Exec("ROLLBACK", "rollback").IgnoreError();
    return s;
  }
  if (*app_id != kApplicationId) {
    return absl::DataLossError(
        absl::StrCat("credential store ", path, ": a SQLite file, but not an idlepool trust.db"));
  }
  if (*version == 1) {
    if (absl::Status s = Exec(kMigrateV2, "add tokens.user (schema version 2)"); !s.ok()) return s;
    version = 2;
  }
  if (*version == 2) {
    return Exec(kMigrateV3, "add tokens.rate_per_s and concurrency (schema version 3)");
  }
  if (*version != kSchemaVersion) {
    return absl::DataLossError(absl::StrCat("credential store ", path, ": schema version ",
                                            *version, ", this idlepool knows ", kSchemaVersion));
  }
  return absl::OkStatus();
}

absl::Status CredentialStore::Db::PrepareAll() {
  for (const auto& [stmt, sql] : Statements()) {
    if (absl::Status s = Prepare(sql, *stmt); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CredentialStore::Db::UseWal() {
  StmtPtr s;
  if (absl::Status st = Prepare("PRAGMA journal_mode = WAL", s); !st.ok()) return st;
  const int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return Err(rc, "set WAL mode");
  if (const std::string mode = ColText(s.get(), 0); mode != "wal") {
    return absl::InternalError(absl::StrCat(
        "credential store ", path, ": cannot use WAL mode (journal_mode is '", mode, "')"));
  }
  return absl::OkStatus();
}

absl::Status CredentialStore::Db::Open() {
  if (absl::Status s = CreateFile0600(); !s.ok()) return s;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) return Err(rc, "open");
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  if (absl::Status s = CheckOrCreateSchema(); !s.ok()) return s;
  if (absl::Status s = UseWal(); !s.ok()) return s;
  for (const char* pragma : {"PRAGMA synchronous = FULL", "PRAGMA secure_delete = ON"}) {
    if (absl::Status s = Exec(pragma, pragma); !s.ok()) return s;
  }
  return PrepareAll();
}

absl::StatusOr<StoredToken> CredentialStore::Db::ReadToken(sqlite3_stmt* s) const {
  StoredToken t;
  TokenRecord& r = t.record;
  r.id = ColText(s, 0);
  const std::string kind = ColText(s, 1), role = ColText(s, 2);
  std::optional<Role> parsed = ParseRole(role);
  if ((kind != "join" && kind != "access") || !parsed) {
    return absl::DataLossError(absl::StrCat("credential store ", path, ": token ", r.id,
                                            " has kind '", kind, "' and role '", role, "'"));
  }
  t.kind = kind == "join" ? TokenKind::kJoin : TokenKind::kAccess;
  r.role = *parsed;
  r.name = ColText(s, 3);
  t.secret_sha256 = ColText(s, 4);
  r.created = sqlite3_column_int64(s, 5);
  r.expires = sqlite3_column_int64(s, 6);
  r.uses_left = sqlite3_column_int64(s, 7);
  r.revoked = sqlite3_column_int64(s, 8) != 0;
  r.user = ColText(s, 9);
  r.limit.rate_per_s = sqlite3_column_double(s, 10);
  r.limit.concurrency = static_cast<uint32_t>(sqlite3_column_int64(s, 11));
  return t;
}

absl::StatusOr<StoredToken> CredentialStore::Db::LookupToken(const std::string& id) {
  Use u(get_token);
  if (int rc = Bind(u, id); rc != SQLITE_OK) return Err(rc, "bind");
  const int rc = sqlite3_step(u);
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("unknown ", TokenLabel(id)));
  if (rc != SQLITE_ROW) return Err(rc, "read token");
  return ReadToken(u);
}

absl::Status CredentialStore::Db::InsertToken(const StoredToken& t) {
  const TokenRecord& r = t.record;
  Use u(insert_token);
  int rc = Bind(u, r.id, KindName(t.kind), std::string(RoleName(r.role)), r.name, t.secret_sha256,
                r.created, r.expires, r.uses_left, r.user, r.limit.rate_per_s,
                static_cast<int64_t>(r.limit.concurrency));
  if (rc != SQLITE_OK) return Err(rc, "bind");
  rc = sqlite3_step(u);
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) return absl::AlreadyExistsError("token id taken");
  return rc == SQLITE_DONE ? absl::OkStatus() : Err(rc, "insert token");
}

WorkerRecord CredentialStore::Db::ReadWorker(sqlite3_stmt* s) const {
  return WorkerRecord{ColText(s, 0), ColText(s, 1), sqlite3_column_int64(s, 2),
                      sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4)};
}

CredentialStore::CredentialStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}
CredentialStore::~CredentialStore() = default;

absl::StatusOr<std::unique_ptr<CredentialStore>> CredentialStore::Open(const std::string& path) {
  auto db = std::make_unique<Db>(path);
  if (absl::Status s = db->Open(); !s.ok()) return s;
  return std::unique_ptr<CredentialStore>(new CredentialStore(std::move(db)));
}

absl::StatusOr<TokenParts> CredentialStore::CreateToken(const NewTokenSpec& spec,
                                                        const std::string& pin, int64_t now) {
  if (absl::Status s = CheckNewToken(spec, pin); !s.ok()) return s;
  return db_->InTransaction(true, [&]() -> absl::StatusOr<TokenParts> {
    for (int attempt = 0; attempt < kIdAttempts; ++attempt) {
      TokenParts parts = NewToken(spec.kind, pin);
      std::string user = spec.user;
      if (spec.kind == TokenKind::kAccess && user.empty()) {
        user = IsUserName(spec.name) ? spec.name : parts.id;
      }
      StoredToken t{TokenRecord{parts.id, spec.role, spec.name, std::move(user), now,
                                spec.ttl == 0 ? 0 : now + spec.ttl, spec.uses, false, spec.limit},
                    spec.kind, HashSecret(parts.secret)};
      absl::Status s = db_->InsertToken(t);
      if (s.ok()) return parts;
      if (!absl::IsAlreadyExists(s)) return s;
    }
    return absl::InternalError("no free token id after several tries");
  });
}

absl::StatusOr<TokenRecord> CredentialStore::CheckToken(const std::string& id,
                                                        const std::string& secret, int64_t now,
                                                        TokenKind kind) const {
  return db_->InTransaction(false, [&]() -> absl::StatusOr<TokenRecord> {
    absl::StatusOr<StoredToken> t = db_->LookupToken(id);
    if (!t.ok()) return t.status();
    if (absl::Status s = CheckLive(*t, secret, kind, now); !s.ok()) return s;
    return t->record;
  });
}

absl::StatusOr<TokenRecord> CredentialStore::SpendToken(const std::string& id,
                                                        const std::string& secret, int64_t now) {
  return db_->InTransaction(true, [&]() -> absl::StatusOr<TokenRecord> {
    absl::StatusOr<StoredToken> t = db_->LookupToken(id);
    if (!t.ok()) return t.status();
    if (absl::Status s = CheckLive(*t, secret, TokenKind::kJoin, now); !s.ok()) return s;
    if (t->record.uses_left > 0) {
      Use u(db_->spend_token);
      if (int rc = Bind(u, id); rc != SQLITE_OK) return db_->Err(rc, "bind");
      if (absl::Status s = db_->StepDone(u, "spend token"); !s.ok()) return s;
      --t->record.uses_left;
    }
    return t->record;
  });
}

std::vector<TokenRecord> CredentialStore::ListTokens() const {
  absl::StatusOr<std::vector<TokenRecord>> out =
      db_->InTransaction(false, [&]() -> absl::StatusOr<std::vector<TokenRecord>> {
        std::vector<TokenRecord> tokens;
        Use u(db_->list_tokens);
        int rc;
        while ((rc = sqlite3_step(u)) == SQLITE_ROW) {
          absl::StatusOr<StoredToken> t = db_->ReadToken(u);
          if (t.ok()) tokens.push_back(t->record);
        }
        if (rc != SQLITE_DONE) return db_->Err(rc, "list tokens");
        return tokens;
      });
  return out.ok() ? *std::move(out) : std::vector<TokenRecord>{};
}

absl::Status CredentialStore::RevokeToken(const std::string& id) {
  return db_->InTransaction(true, [&]() -> absl::Status {
    Use u(db_->revoke_token);
    if (int rc = Bind(u, id); rc != SQLITE_OK) return db_->Err(rc, "bind");
    if (absl::Status s = db_->StepDone(u, "revoke token"); !s.ok()) return s;
    if (sqlite3_changes(db_->db) == 0) {
      return absl::NotFoundError(absl::StrCat("unknown ", TokenLabel(id)));
    }
    return absl::OkStatus();
  });
}

absl::Status CredentialStore::RecordWorkerCert(const std::string& name,
                                               const std::string& serial_hex, int64_t issued,
                                               int64_t not_after) {
  return db_->InTransaction(true, [&]() -> absl::Status {
    Use u(db_->record_worker);
    if (int rc = Bind(u, name, serial_hex, issued, not_after); rc != SQLITE_OK) {
      return db_->Err(rc, "bind");
    }
    return db_->StepDone(u, "record worker certificate");
  });
}

std::optional<WorkerRecord> CredentialStore::FindWorker(const std::string& name) const {
  absl::StatusOr<std::optional<WorkerRecord>> out =
      db_->InTransaction(false, [&]() -> absl::StatusOr<std::optional<WorkerRecord>> {
        Use u(db_->get_worker);
        if (int rc = Bind(u, name); rc != SQLITE_OK) return db_->Err(rc, "bind");
        const int rc = sqlite3_step(u);
        if (rc == SQLITE_DONE) return std::nullopt;
        if (rc != SQLITE_ROW) return db_->Err(rc, "find worker");
        return db_->ReadWorker(u);
      });
  return out.ok() ? *std::move(out) : std::nullopt;
}

std::vector<WorkerRecord> CredentialStore::ListWorkers() const {
  absl::StatusOr<std::vector<WorkerRecord>> out =
      db_->InTransaction(false, [&]() -> absl::StatusOr<std::vector<WorkerRecord>> {
        std::vector<WorkerRecord> workers;
        Use u(db_->list_workers);
        int rc;
        while ((rc = sqlite3_step(u)) == SQLITE_ROW) workers.push_back(db_->ReadWorker(u));
        if (rc != SQLITE_DONE) return db_->Err(rc, "list workers");
        return workers;
      });
  return out.ok() ? *std::move(out) : std::vector<WorkerRecord>{};
}

absl::Status CredentialStore::RevokeWorker(const std::string& name, int64_t now) {
  return db_->InTransaction(true, [&]() -> absl::Status {
    Use u(db_->revoke_worker);
    if (int rc = Bind(u, now, name); rc != SQLITE_OK) return db_->Err(rc, "bind");
    if (absl::Status s = db_->StepDone(u, "revoke worker"); !s.ok()) return s;
    if (sqlite3_changes(db_->db) == 0) {
      return absl::NotFoundError(
          absl::StrCat("worker ", name.substr(0, 100), " was never certified by this pool"));
    }
    return absl::OkStatus();
  });
}

}  // namespace idlepool::trust
