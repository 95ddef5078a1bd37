// How a job is shown on the terminal by `status`, `wait` and `run`: its header and details as
// text, a live progress display, and the final JSON summary of `run`. Output goes to stdout
// (the job) and stderr (progress). Single-threaded.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/progress.h"
#include "core/types.h"
#include "idlepool.pb.h"
#include "nlohmann/json.hpp"

namespace idlepool::cli {

std::string Seconds(double s);  // "1.234 s", "12.3 s"
std::string Bytes(uint64_t n);  // binary units, as `ls -h` prints them: "1.5 MiB"
int64_t WallMs();               // wall clock, Unix ms (the ETA on a terminal)

// The job's first two lines (what a terminal's JobBlock replaces), then the rest: attempts,
// owners, data moved, makespan and prediction, the first failed tasks (why, made printable) and
// how to see the others and a task's output.
// Hints: whether the details end with the commands that read more of the job later
// (`idlepool failures`, `idlepool logs`); kNone for `run`, whose pool is gone once it exits.
enum class Hints { kShow, kNone };
void PrintJobHeader(const v1::JobStatus& s);
void PrintJobDetails(const v1::JobStatus& s, Hints hints = Hints::kShow);
void PrintJob(const v1::JobStatus& s, Hints hints = Hints::kShow);
// For `run`: the last kStderrTailLines lines of stderr of the newest attempt of each of the first
// kStderrTailTasks failed tasks (asked of `client` while its pool still runs), made printable.
inline constexpr int kStderrTailTasks = 3;
inline constexpr int kStderrTailLines = 10;
void PrintStderrTails(PoolClient& client, const v1::JobStatus& s);
// "  task 3 failed: exit code 1", one per task (its message made printable).
void PrintFailedTasks(const google::protobuf::RepeatedPtrField<v1::FailedTask>& tasks);

// `run --json`: the job's JSON with job_id, out_dir and the fetched outputs.
nlohmann::json RunSummary(const v1::JobStatus& s, const std::vector<std::string>& out,
                          const std::string& out_dir);

// Progress for `wait` and `run`: on a terminal (stderr) the job's bar and the pool's workers by
// activity, redrawn in place and left on screen at the end; otherwise one line per change.
class Progress {
 public:
  // `client` (may be null: no worker line) is asked for the workers at most once a second.
  Progress(bool quiet, PoolClient* client)
      : quiet_(quiet), client_(client), term_(TerminalFor(STDERR_FILENO)) {
    if (!quiet_ && term_.fancy) live_.emplace(stderr);
  }
  // Whether the bar is drawn (and left on screen), so the caller can skip repeating its header.
  bool live() const { return live_.has_value(); }
  // How often the waiter should call Update even when the job did not change (ETA, workers).
  std::chrono::milliseconds every() const {
    return live_ ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(0);
  }
  // Shows `s`: redraws the block on a terminal, else one line per call.
  void Update(const v1::JobStatus& s);

 private:
  bool quiet_;
  PoolClient* client_;
  Terminal term_;
  std::optional<LiveDisplay> live_;
  std::optional<v1::ListWorkersReply> workers_;
  core::MonoTime workers_at_{};
};

}  // namespace idlepool::cli
