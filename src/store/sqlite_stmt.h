// Prepared statements of SQLite: owned (StmtPtr) and used once at a time (Use). Shared by the
// pool's store (sqlite_store.cc) and the credential store (trust/credential_store.cc).
// Header-only; a statement is used by one thread at a time, as its connection is.
#pragma once

#include <sqlite3.h>

#include <memory>

namespace idlepool::store::internal {

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

// Resets a cached statement (and drops its bindings) when a use of it ends, however it ends.
class Use {
 public:
  explicit Use(const StmtPtr& s) : s_(s.get()) {}
  ~Use() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;
  sqlite3_stmt* get() const { return s_; }
  operator sqlite3_stmt*() const { return s_; }

 private:
  sqlite3_stmt* s_;
};

}  // namespace idlepool::store::internal
