// How an attempt ends early, and the one classifier that maps a phase's failure to it.
//
// Every phase of the attempt runner (attempt_runner.h) either lets the attempt go on (nullopt)
// or ends it with an AttemptEnd; the runner turns that into the report in one place
// (AttemptRunner::Conclude). The rules, as the worker has always applied them:
//   - the disk is full (kResourceExhausted: ENOSPC, EDQUOT, a full cache; or, where the phase
//     says so, any failure while free space is below the minimum): MACHINE_FAULT, never counted
//     against the task, and the worker takes no work until space frees;
//   - the worker is out of file descriptors or processes (the spawn says so, or any failure of
//     the worker's own steps, not the task's exit, while descriptors are short): MACHINE_FAULT
//     too (Fault::kResources), without the disk's pause;
//   - the command could not start (exec failed: no such program, not executable; or the dynamic
//     loader's exit 127 for a missing shared library): MACHINE_FAULT with cannot_start
//     (Fault::kCannotStart), the machine's fault for that job, which goes elsewhere;
//   - the attempt is being vacated: PREEMPTED, with its final checkpoint;
//   - the deadline passed: TIMED_OUT;
//   - anything else: FAILED, with the reason.
// Pure functions: any thread. Messages are cut to 1024 bytes on UTF-8 boundaries when reported.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "platform/process.h"

namespace idlepool::worker {

enum class Ending {
  kFailed,        // FAILED: the task's fault (or its spec's)
  kMachineFault,  // MACHINE_FAULT: the disk is full, or descriptors ran out (see Fault)
  kPreempted,     // PREEMPTED: vacated (owner, or the worker stopping)
  kTimedOut,      // TIMED_OUT
  kUndelivered,   // filed in the outbox, the worker stopped before uploading: no report now
};

// What the machine lacked, for kMachineFault.
enum class Fault : uint8_t {
  kDisk,         // the worker takes no work until space frees
  kResources,    // file descriptors or processes: this attempt only
  kCannotStart,  // the command could not start here (AttemptReport.cannot_start)
};

struct AttemptEnd {
  Ending ending = Ending::kFailed;
  std::string message;
  Fault fault = Fault::kDisk;
};

// What a phase returns: nullopt = go on.
using PhaseResult = std::optional<AttemptEnd>;

[[nodiscard]] inline AttemptEnd Failed(std::string message) {
  return AttemptEnd{Ending::kFailed, std::move(message)};
}
[[nodiscard]] inline AttemptEnd MachineFault(std::string message) {
  return AttemptEnd{Ending::kMachineFault, std::move(message)};
}
[[nodiscard]] inline AttemptEnd OutOfResources(std::string message) {
  return AttemptEnd{Ending::kMachineFault, std::move(message), Fault::kResources};
}
// `message` names the program; `worker` is added so every failure line names the machine.
[[nodiscard]] inline AttemptEnd CannotStart(const std::string& message, const std::string& worker) {
  return AttemptEnd{Ending::kMachineFault, message + " (on worker " + worker + ")",
                    Fault::kCannotStart};
}
// Whether `program` (argv[0]) names a file of the job's own, in the task dir `task_dir` (a
// relative path with a '/', or an absolute one beneath it): one that cannot start there is the
// job's fault (not executable, a bad interpreter line), the same on every worker.
[[nodiscard]] bool JobsOwnProgram(const std::string& program, const std::string& task_dir);
// A process that exited 127 with the dynamic loader's complaint on its stderr (`tail`): its
// program could not start for want of a shared library.
[[nodiscard]] bool LibraryMissing(int exit_code, const std::string& tail);
[[nodiscard]] inline AttemptEnd Preempted() { return AttemptEnd{Ending::kPreempted, ""}; }

// A failure of the worker's own steps (not the task's exit) while it is out of descriptors is
// the machine's: OutOfResources, saying so. Anything else is returned as it is.
[[nodiscard]] PhaseResult MachineFaultIfShortOfFds(PhaseResult end, bool short_of_fds);

// A failed step of staging, collecting or filing: MACHINE_FAULT when `st` says the disk is full
// (kResourceExhausted) or `disk_low`, else FAILED. `message` is what the report says.
[[nodiscard]] AttemptEnd Classify(const absl::Status& st, std::string message, bool disk_low);

// The end of a process that exited: nullopt when it succeeded (exit code 0). `timeout_s`: the
// assignment's (for the message); `disk_low` is asked only when the task failed.
[[nodiscard]] PhaseResult ClassifyExit(const platform::ExitInfo& exit, uint32_t timeout_s,
                                       const std::function<bool()>& disk_low,
                                       const std::function<std::string()>& disk_reason);

// For a sandboxed attempt that failed: what in its stderr tail (`tail`) says the sandbox hid
// something it needed, and how to ask for it; "" when nothing does. `host_network`: the job
// asked for the host's network. Looks for the C library's and common tools' words: no network
// (unreachable, name resolution), a read-only file system, a hidden home or mount dir.
[[nodiscard]] std::string SandboxHint(const std::string& tail, bool host_network);

}  // namespace idlepool::worker
