// LogKeeper: the kept output of every attempt (issue 18), and its live readers.
//
// Workers send their running attempts' output as LogChunks (proto/files.proto): stdout and
// stderr interleaved, each chunk at an offset into the attempt's output. The session service
// fences them first (only an attempt running on that worker's current session, see
// core::Scheduler::RunningOn) and hands them to Append. The keeper appends each chunk to
// DATA_DIR/logs/JOB/ATTEMPT.log, at most `cap_bytes` of output per attempt (then one line says
// the rest is not kept); output a worker dropped (an offset past the last one) becomes a line
// "[idlepool: N bytes of output dropped]" in the file, written with the next chunk that carries
// output (an empty chunk changes nothing), at most kMaxGapLines per attempt (then one line says
// later gaps are not marked): a worker sending tiny chunks at scattered offsets cannot grow a
// file past the cap by gap lines. ATTEMPT.pos holds the next offset, so an attempt re-adopted
// after a coordinator restart continues its file. Files stay until DeleteJob (`idlepool delete`).
//
// Followers (Jobs.TaskLogs with follow) get every chunk of their task's attempts as it arrives,
// also past the cap. Each has a bounded buffer (follower_buffer_bytes): a reader that falls
// behind skips what does not fit, and is told how much with an event; at most max_followers
// at once (more: kResourceExhausted).
//
// Thread safety: every method from any thread (one mutex; a follower's own queue has its own).
// Append never throws and never fails the caller: a chunk it cannot use (too big, overflowing
// offsets, a file it cannot write) is dropped with a warning. Units: bytes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/types.h"
#include "idlepool.pb.h"

namespace idlepool::coordinator {

// Output kept per attempt by default (docs/limits.md): enough for a task's progress lines and
// its errors, small enough that 10,000 attempts keep at most 10 GiB.
inline constexpr uint64_t kDefaultLogCapBytes = uint64_t{1} << 20;
// The most output one LogChunk may carry (proto: LogChunk.data); a bigger one is dropped.
inline constexpr size_t kMaxLogChunkBytes = size_t{64} << 10;
inline constexpr size_t kDefaultMaxFollowers = 64;
// Gap lines written per attempt file; past it one GapsUnmarkedLine, then gaps are not marked.
inline constexpr uint32_t kMaxGapLines = 64;
inline constexpr size_t kDefaultFollowerBufferBytes = size_t{1} << 20;

struct LogKeeperOptions {
  std::string dir;  // DATA_DIR/logs; created on the first chunk
  uint64_t cap_bytes = kDefaultLogCapBytes;
  size_t max_followers = kDefaultMaxFollowers;
  size_t follower_buffer_bytes = kDefaultFollowerBufferBytes;
};

// One reader of a task's live output. Created by LogKeeper::Follow; the keeper pushes, the
// reader takes. Thread-safe.
class LogFollower {
 public:
  explicit LogFollower(core::TaskKey task, size_t buffer_bytes)
      : task_(task), buffer_bytes_(buffer_bytes) {}
  core::TaskKey task() const { return task_; }
  // What arrived since the last call, in order; waits up to `timeout` when nothing has. Empty
  // once closed (DeleteJob) or on timeout.
  std::vector<v1::LogData> Take(std::chrono::milliseconds timeout);
  bool closed() const;

  // The keeper's side.
  void Push(v1::LogData d);
  void Close();

 private:
  const core::TaskKey task_;
  const size_t buffer_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::LogData> queue_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t skipped_ ABSL_GUARDED_BY(mu_) = 0;  // bytes not queued since the last queued one
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class LogKeeper {
 public:
  explicit LogKeeper(LogKeeperOptions options) : options_(std::move(options)) {}

  // Appends a fenced chunk of `attempt` (of `task`) at `offset` (see above). Returns false when
  // it was dropped as malformed (too big, offsets overflowing): the caller may log the worker.
  bool Append(core::TaskKey task, core::AttemptId attempt, uint64_t offset, std::string_view data);

  // The kept log of `attempt` of job `job` as stored (output with its gap lines), its first
  // `max_bytes`; kNotFound when nothing of it was kept (no output yet, or none at all).
  [[nodiscard]] absl::StatusOr<std::string> Kept(core::JobId job, core::AttemptId attempt,
                                                 uint64_t max_bytes) const;

  // Starts following `task`: every chunk of its attempts appended from now on is pushed to the
  // follower. `backlog` gets, atomically with the start, the kept log of `attempt` (0: none).
  // kResourceExhausted when max_followers follow already.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<LogFollower>> Follow(core::TaskKey task,
                                                                    core::AttemptId attempt,
                                                                    std::string* backlog);
  void Unfollow(const std::shared_ptr<LogFollower>& follower);

  // Removes job `job`'s logs (its directory) and ends its followers. For `idlepool delete`
  // (issue 18, piece D). OK when it had none.
  absl::Status DeleteJob(core::JobId job);

  uint64_t cap_bytes() const { return options_.cap_bytes; }
  const std::string& dir() const { return options_.dir; }

 private:
  struct AttemptLog {
    core::JobId job = 0;
    uint64_t next = 0;  // the offset the next chunk should start at
    uint64_t kept = 0;  // output bytes in the file (gap lines not counted)
    uint32_t gaps = 0;  // gap lines in the file (kMaxGapLines + 1: the last said "no more")
  };
  std::string PathOf(core::JobId job, core::AttemptId attempt, const char* ext) const;
  // The attempt's state: in memory, else from its .pos file, else new.
  AttemptLog& StateOf(core::JobId job, core::AttemptId attempt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What `chunk` adds to the file (gap lines, the part under the cap, the cap line).
  std::string FileBytes(AttemptLog& log, uint64_t offset, std::string_view data) const;
  void Fanout(core::TaskKey task, core::AttemptId attempt, uint64_t offset, std::string_view data,
              uint64_t gap) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LogKeeperOptions options_;
  mutable std::mutex mu_;
  std::map<core::AttemptId, AttemptLog> attempts_ ABSL_GUARDED_BY(mu_);
  std::map<core::TaskKey, std::vector<std::shared_ptr<LogFollower>>> followers_
      ABSL_GUARDED_BY(mu_);
  size_t follower_count_ ABSL_GUARDED_BY(mu_) = 0;
};

// The line a reader sees for output dropped between two chunks, and for output over the cap.
std::string GapLine(uint64_t bytes);
std::string CapLine(uint64_t cap);
std::string GapsUnmarkedLine();

}  // namespace idlepool::coordinator
