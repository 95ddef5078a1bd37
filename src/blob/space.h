// Disk space rules of a blob store's directory (the coordinator's data dir): the reserve kept
// free for the store's own commits, the check an upload or a job submission must pass, and which
// abandoned partial uploads to remove. Pure: readings and `now` come in, decisions go out.
//
// Space is counted by allocated blocks (statvfs's free blocks), never by apparent size: a sparse
// partial upload occupies only the chunks written so far, but it has promised its declared size,
// so what it still may write counts against the free space as if it were written.
//
// Thread safety: value types and functions without shared state.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace idlepool::blob {

// The reserve is max(kMinReserveBytes, total / kReserveDivisor): room for SQLite's WAL to grow
// and checkpoint (its default auto-checkpoint is about 4 MiB of pages) many times over while
// uploads and submissions are refused, so the store can still record attempts and outputs on a
// disk that uploads filled. 1% keeps a big disk's reserve in step with its store.
inline constexpr uint64_t kMinReserveBytes = uint64_t{64} << 20;
inline constexpr uint64_t kReserveDivisor = 100;
// A new job is accepted only while this many reserves stay free after its own store rows
// (issue 18: a coordinator that accepts a job and then cannot store its outputs fails it
// halfway). The reserve above the store's is room for the outputs and checkpoints of the jobs
// already running; uploads (inputs, outputs) still need only one reserve.
inline constexpr uint64_t kSubmitReserveMultiple = 2;
// Inodes are kept too (each partial upload takes two): max(kMinReserveInodes, total / 100).
inline constexpr uint64_t kMinReserveInodes = 1024;
// At most this many partial uploads at a time: the ledger's memory and the files in partial/
// stay bounded (1,000 workers with a few uploads each fit).
inline constexpr size_t kMaxPartials = 10000;
// A partial upload that received no bytes for this long is abandoned and removed (a client
// resuming later starts over). Two minutes outlast a worker's retries (backoff up to 5 s) and a
// coordinator restart, and give an attacker's abandoned uploads a short life.
inline constexpr std::chrono::milliseconds kPartialIdleLimit = std::chrono::minutes(2);

// One statvfs of the directory (bytes and inodes available to unprivileged writers).
struct DiskReading {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t total_inodes = 0;  // 0: the filesystem does not count inodes (btrfs)
  uint64_t free_inodes = 0;
};

uint64_t ReserveBytes(const DiskReading& disk);
uint64_t ReserveInodes(const DiskReading& disk);

// What asks for room: `what` names it in the error ("upload of blob ab12...", "job 'x'").
struct RoomRequest {
  std::string what;
  uint64_t bytes = 0;           // what it will write (an upload: declared size minus held)
  uint64_t promised_bytes = 0;  // what the other partial uploads may still write
  size_t partials = 0;          // how many partial uploads hold those promises
  uint64_t reserve_multiple = 1;  // reserves to keep free (kSubmitReserveMultiple for a job)
};

// OK when `req.bytes` fit above the reserve after every promise is kept:
// free - promised - bytes >= reserve x reserve_multiple (and two inodes above the inode reserve).
// Otherwise kResourceExhausted naming `dir` and every number (free, promised, wanted, reserve).
[[nodiscard]] absl::Status CheckRoom(const std::string& dir, const DiskReading& disk,
                                     const RoomRequest& req);

// OK while writing `bytes` more leaves at least the reserve free (a streaming upload's check
// before each chunk: whatever else fills the disk, no upload writes into the reserve).
// kResourceExhausted otherwise, as above.
[[nodiscard]] absl::Status CheckWrite(const std::string& dir, const DiskReading& disk,
                                      const std::string& what, uint64_t bytes);

// A partial upload on disk and when its files last changed (wall clock, Unix ms).
struct PartialState {
  std::string sha256;
  int64_t last_write_ms = 0;
};

// The partials idle for longer than `idle_limit` at `now_ms` (in the order given). A partial
// whose last write lies in the future (a clock step) is not idle.
std::vector<std::string> AbandonedPartials(const std::vector<PartialState>& partials,
                                           int64_t now_ms, std::chrono::milliseconds idle_limit);

}  // namespace idlepool::blob
