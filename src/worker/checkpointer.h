// Checkpointer: uploads attempts' checkpoint dirs ($IDLEPOOL_CHECKPOINT_DIR) to the coordinator.
//
// Periodically (its own thread, Start/Join): every running attempt whose checkpoint dir changed
// since its last upload (a cheap fingerprint: relative paths, sizes, mtimes) and whose last
// upload is at least `interval` old is uploaded and told to the coordinator
// (WorkerMessage.checkpoint). Finally (Upload with force, from a vacated attempt's runner
// thread): the dir as it is, for its PREEMPTED report. The dir is listed, and each file hashed
// and uploaded from one descriptor, beneath it (checkpoint_files.h): symbolic links, files with
// more than one link and special files are left out, named in a warning in the worker's log.
//
// Threads: Upload from the checkpoint thread and runner threads; one upload per attempt at a
// time (Attempt::ckpt_mu). Ownership: attempts are shared (attempt.h); the upload function is
// the worker's (blob uploads over the session's stub). Units: milliseconds.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "platform/clock.h"
#include "worker/attempt.h"
#include "worker/sender.h"
#include "worker/stop_signal.h"
#include "worker/transfers.h"

namespace idlepool::worker {

enum class CheckpointResult {
  kUploaded,   // the dir changed and is uploaded: `files`
  kUnchanged,  // nothing changed since the last upload (or restore): `files` are still current
  kFailed,     // not saved: `error` (a file changed under the hash, too many files, an upload)
};

struct CheckpointUpload {
  CheckpointResult result = CheckpointResult::kFailed;
  std::vector<v1::OutputFile> files;
  absl::Status error;
};

class Checkpointer {
 public:
  // Uploads `source` (an open file: see checkpoint_files.h) as blob `file` unless the
  // coordinator has it; adds the bytes sent to `*sent`.
  using UploadFn = std::function<absl::Status(
      const UploadSource& source, const v1::OutputFile& file, std::atomic<uint64_t>* sent)>;

  Checkpointer(const platform::Clock& clock, UploadFn upload)
      : clock_(clock), upload_(std::move(upload)) {}
  ~Checkpointer() { Join(); }
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Runner thread: the checkpoint dir now holds the assignment's checkpoint (restored, or none).
  void Restored(Attempt& a);

  // Uploads the attempt's checkpoint dir when it changed since the last upload (`force`: the
  // current files either way, for a final checkpoint). kUnchanged never uploads.
  [[nodiscard]] CheckpointUpload Upload(Attempt& a, bool force);

  // One periodic pass over `all`: uploads and tells (`send`) what is due.
  void Round(const AttemptList& all, std::chrono::milliseconds interval, const Sender& send);

  // Starts the periodic thread: a Round every interval/4 (between 50 ms and 1 s) until `stop`.
  void Start(std::chrono::milliseconds interval, std::function<AttemptList()> attempts, Sender send,
             StopSignal& stop);
  void Join();

  // The newest mtime (ns since the epoch) of a regular file under `dir`; 0 when none.
  [[nodiscard]] static int64_t NewestFileNs(const std::string& dir);

 private:
  const platform::Clock& clock_;
  const UploadFn upload_;
  std::thread thread_;
};

}  // namespace idlepool::worker
