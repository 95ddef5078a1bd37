// Small helpers of the SQLite store (sqlite_store.cc and its query files), not part of the
// store's interface: statement ownership and reset, parameter binding, column reads and the
// mapping of SQLite result codes to canonical status codes. Thread safety: none of their own (the
// store's mutex guards every statement).
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/types.h"
#include "store/sqlite_stmt.h"

namespace idlepool::store::internal {

// Binds parameters 1, 2, 3, ... in order, remembering the first failure. Text and blobs are
// bound without copying: the caller keeps them alive until the statement is reset.
class Binder {
 public:
  explicit Binder(sqlite3_stmt* s) : s_(s) {}
  Binder& Int(int64_t v) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_int64(s_, ++i_, v);
    return *this;
  }
  Binder& Text(absl::string_view v) {
    if (rc_ == SQLITE_OK) {
      rc_ = sqlite3_bind_text64(s_, ++i_, v.data() ? v.data() : "", v.size(), SQLITE_STATIC,
                                SQLITE_UTF8);
    }
    return *this;
  }
  Binder& Real(double v) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_double(s_, ++i_, v);
    return *this;
  }
  Binder& Blob(absl::string_view v) {
    if (rc_ == SQLITE_OK) {
      rc_ = sqlite3_bind_blob64(s_, ++i_, v.data() ? v.data() : "", v.size(), SQLITE_STATIC);
    }
    return *this;
  }
  int rc() const { return rc_; }

 private:
  sqlite3_stmt* s_;
  int rc_ = SQLITE_OK;
  int i_ = 0;
};

inline int64_t ColInt(sqlite3_stmt* s, int i) { return sqlite3_column_int64(s, i); }
// The seven transfer columns (input_bytes .. cache_misses), in schema order from column `first`.
inline core::Transfer ColTransfer(sqlite3_stmt* s, int first) {
  auto u = [&](int k) { return static_cast<uint64_t>(ColInt(s, first + k)); };
  return core::Transfer{u(0), u(1), u(2), u(3), u(4), u(5), u(6)};
}

// The four timing columns (stage_ms, run_ms, upload_ms, resumed) from column `first`.
inline core::AttemptTiming ColTiming(sqlite3_stmt* s, int first) {
  auto u = [&](int k) { return static_cast<uint64_t>(std::max<int64_t>(ColInt(s, first + k), 0)); };
  return core::AttemptTiming{u(0), u(1), u(2), ColInt(s, first + 3) != 0};
}

inline std::string ColText(sqlite3_stmt* s, int i) {
  const unsigned char* p = sqlite3_column_text(s, i);
  int n = sqlite3_column_bytes(s, i);
  if (p == nullptr || n <= 0) return std::string();
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}

inline std::string ColBlob(sqlite3_stmt* s, int i) {
  const void* p = sqlite3_column_blob(s, i);
  int n = sqlite3_column_bytes(s, i);
  if (p == nullptr || n <= 0) return std::string();
  return std::string(static_cast<const char*>(p), static_cast<size_t>(n));
}

inline absl::StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return absl::StatusCode::kResourceExhausted;  // the disk is full
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
      return absl::StatusCode::kDataLoss;
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
      return absl::StatusCode::kInvalidArgument;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PROTOCOL:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace idlepool::store::internal
