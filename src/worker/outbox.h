// The worker's durable outbox: finished attempts whose outputs and report have not yet been
// acknowledged by the coordinator. A finished 90-minute render must survive a cut link, a
// coordinator restart and a restart of the worker itself, and never be run again for any of them.
//
// Layout, under WORK_DIR/outbox (same file system as the task dirs, so moving outputs in is a
// rename, not a copy):
//   <attempt>/files/<path>   the attempt's output files, moved out of its task dir
//   <attempt>/report.pb      the serialized v1::AttemptReport (SUCCEEDED, outputs with their
//                            sizes and SHA-256), written last: temp file, rename
//   <attempt>.pb             the report of an attempt without outputs, alone (no dir to make
//                            and remove: a short task's whole outbox cost is one file)
// A report is fsynced (file, then its dir after the rename) when the attempt staged and ran for
// at least kSyncReportAfterMs: a report survives the worker's crash either way (the page cache
// does), and a power cut can only lose one whose rerun costs less than the syncs would cost
// every short task. A torn or empty report is dropped by Open() and its task requeued.
// An entry without report.pb is incomplete (the worker died while filing it) and is removed by
// Open(); the task was requeued by the coordinator anyway. An entry with report.pb is delivered:
// its files are uploaded (resumable, see blob/blob.h), then its report is sent, resent after each
// reconnect until the coordinator acknowledges it, and only then removed.
//
// Thread safety: all methods may be called from any thread; entries of different attempts are
// independent; the caller must not File and Remove the same attempt concurrently.
// Errors: kResourceExhausted when the disk is full (ENOSPC/EDQUOT: the machine's fault, not the
// task's), kNotFound for a missing output, kFailedPrecondition for an output that is no longer
// the file hashed, kInternal otherwise.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idlepool.pb.h"

namespace idlepool::worker {

// Which file an output was when it was hashed (st_dev, st_ino): filing checks that its name
// still leads to it (a task may swap the name for another file after the hash).
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileIdentity&) const = default;
};
using HashedOutputs = std::map<std::string, FileIdentity>;  // by output path

// Attempts that staged and ran at least this long get their report fsynced (see above).
inline constexpr uint64_t kSyncReportAfterMs = 1000;

class Outbox {
 public:
  explicit Outbox(std::string dir);  // WORK_DIR/outbox

  // Creates the dir, removes incomplete entries, and returns the complete ones (attempt id
  // order). A report.pb that cannot be parsed is removed with its entry (logged).
  absl::StatusOr<std::vector<v1::AttemptReport>> Open();

  // Files a finished attempt: moves each output (path relative to `task_dir`) into the entry,
  // then writes the report (fsynced as above). The move is a rename from the output's parent dir
  // opened beneath `task_dir` (platform/beneath.h), and what arrives must be the file that was
  // hashed
  // (`hashed`), still a regular file with a single link: else kFailedPrecondition naming the
  // output. On error the entry is removed with whatever it held (the attempt then fails, or is
  // the machine's fault when the disk is full).
  absl::Status File(const v1::AttemptReport& report, const std::string& task_dir,
                    const HashedOutputs& hashed);

  // Where output `rel` of `attempt` lies while it waits.
  std::string PathOf(uint64_t attempt, const std::string& rel) const;

  // Removes the entry (acknowledged, or refused by the coordinator). Idempotent.
  void Remove(uint64_t attempt);

 private:
  std::string EntryDir(uint64_t attempt) const;
  std::string BarePath(uint64_t attempt) const;  // <attempt>.pb
  std::string dir_;
};

// Bytes free for an unprivileged writer (statvfs f_bavail) on the file system holding `path`;
// nullopt when it cannot be read.
std::optional<uint64_t> FreeDiskBytes(const std::string& path);
// Inodes free for an unprivileged writer (f_favail); nullopt when unknown or when the file system
// does not count inodes (btrfs reports 0 of 0).
std::optional<uint64_t> FreeDiskInodes(const std::string& path);

}  // namespace idlepool::worker
