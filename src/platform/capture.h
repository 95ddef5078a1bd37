// Running a short helper command to completion and keeping its standard output: GPU discovery's
// probe child (gpu_probe.h). Tasks are run by Process (process.h), not by this.
//
// RunCapturingStdout spawns argv with posix_spawn (safe in a multithreaded process: the child
// runs no code of ours before exec); argv[0] is a path (no PATH lookup). The child gets this
// process's environment, stdin from /dev/null, this process's stderr, every signal at its
// default action and none blocked. Its stdout is read until it has exited; a child still running
// when `timeout` has passed is SIGKILLed and reaped (timed_out). At most `max_bytes` of stdout
// are kept; the rest is read and dropped, so the child never blocks on a full pipe.
//
// Thread safety: any thread; the caller blocks until the child is reaped (never longer than
// about `timeout`). Nothing is left behind: no descriptor, no zombie. Errors: kNotFound when
// argv[0] cannot be executed, kInvalidArgument for an empty argv, kInternal for pipe or spawn
// failures.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idlepool::platform {

struct CapturedRun {
  std::string stdout_text;
  bool timed_out = false;  // killed at the deadline (exit_code and signal then say SIGKILL)
  int exit_code = -1;      // valid when signal == 0
  int signal = 0;          // the terminating signal, 0 when it exited
};

[[nodiscard]] absl::StatusOr<CapturedRun> RunCapturingStdout(const std::vector<std::string>& argv,
                                                             std::chrono::milliseconds timeout,
                                                             size_t max_bytes = size_t{1} << 20);

}  // namespace idlepool::platform
