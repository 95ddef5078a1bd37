#include "worker/attempt_error.h"

#include "absl/strings/str_cat.h"

namespace idlepool::worker {

AttemptEnd Classify(const absl::Status& st, std::string message, bool disk_low) {
  if (st.code() == absl::StatusCode::kResourceExhausted || disk_low) {
    return MachineFault(std::move(message));
  }
  return Failed(std::move(message));
}

bool JobsOwnProgram(const std::string& program, const std::string& task_dir) {
  if (program.find('/') == std::string::npos) return false;  // looked up in the task's PATH
  if (program[0] != '/') return true;
  const std::string dir = task_dir.empty() || task_dir.back() == '/' ? task_dir : task_dir + "/";
  return !dir.empty() && program.compare(0, dir.size(), dir) == 0;
}

bool LibraryMissing(int exit_code, const std::string& tail) {
  return exit_code == 127 && tail.find("error while loading shared libraries") != std::string::npos;
}

PhaseResult MachineFaultIfShortOfFds(PhaseResult end, bool short_of_fds) {
  if (!end || end->ending != Ending::kFailed || !short_of_fds) return end;
  return OutOfResources(absl::StrCat(end->message, " (the worker was out of file descriptors)"));
}

PhaseResult ClassifyExit(const platform::ExitInfo& exit, uint32_t timeout_s,
                         const std::function<bool()>& disk_low,
                         const std::function<std::string()>& disk_reason) {
  if (exit.timed_out) {
    return AttemptEnd{Ending::kTimedOut, absl::StrCat("timed out after ", timeout_s, " s")};
  }
  if (exit.memory_limit) {
    return Failed(
        "stopped for using more memory than its limit: the job's memory_mb, else the worker's "
        "[sandbox] memory_mb (resident memory of all its processes together, plus its files in "
        "/tmp, /var/tmp and /dev/shm)");
  }
  if (exit.disk_limit > 0) {
    return Failed(absl::StrCat("stopped: its task dir grew past the worker's quota of ",
                               exit.disk_limit >> 20,
                               " MB per task ([sandbox] task_dir_mb of the worker's policy)"));
  }
  if (exit.pids_limit) {
    return Failed(
        "stopped at the sandbox's limit on processes and threads (a fork bomb, or a task that "
        "needs more: the worker's --task-pids-max)");
  }
  if ((exit.signal != 0 || exit.exit_code != 0) && disk_low()) {
    // The task most likely failed for want of space: the machine's fault, not the task's.
    return MachineFault(absl::StrCat("the task failed (",
                                     exit.signal != 0 ? absl::StrCat("signal ", exit.signal)
                                                      : absl::StrCat("exit code ", exit.exit_code),
                                     ") while the disk was full: ", disk_reason()));
  }
  if (exit.signal != 0) return Failed(absl::StrCat("killed by signal ", exit.signal));
  if (exit.exit_code != 0) return Failed(absl::StrCat("exit code ", exit.exit_code));
  return std::nullopt;
}

std::string SandboxHint(const std::string& tail, bool host_network) {
  auto has = [&](const char* word) { return tail.find(word) != std::string::npos; };
  if (!host_network &&
      (has("Network is unreachable") || has("Temporary failure in name resolution") ||
       has("Could not resolve host") || has("Name or service not known") ||
       has("No address associated with hostname") || has("getaddrinfo"))) {
    return "the task runs without network (sandbox): a job that needs it asks with "
           "[sandbox] network = \"host\"";
  }
  if (has("Read-only file system")) {
    return "in the sandbox only the task dir ($IDLEPOOL_TASK_DIR), the checkpoint dir and /tmp "
           "are writable";
  }
  if (has("/home/") || has("/root/") || has("/mnt/") || has("/media/")) {
    return "the sandbox hides the machine's home and mount dirs: give the task its files as the "
           "job's inputs";
  }
  return "";
}

}  // namespace idlepool::worker
