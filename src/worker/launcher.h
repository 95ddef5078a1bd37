// The process-launcher seam: how the attempt runner starts a task's command.
//
// ProcessLauncher::Start spawns a command and hands back a TaskProcess, the handle the runner,
// the owner monitor and the session use to wait for, kill, terminate, freeze and thaw it. The
// real launcher (RealLauncher) wraps platform::Process (platform/process.h: own session and
// process group, cgroup, capped logs, tree kill); tests use a fake that scripts exits.
//
// Threads: Start is called from an attempt's runner thread. TaskProcess::Wait is called by that
// one thread; Kill, Terminate, Suspend, Resume and TreePids by any thread at any time (the same
// contract as platform::Process). Ownership: the caller owns the returned TaskProcess; the
// SpawnOptions' cgroup is not owned and must outlive it. Units: milliseconds (std::chrono).
// Errors: Start's, as platform::Process::Start (kNotFound: no such command; kInternal).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "platform/process.h"

namespace idlepool::worker {

class TaskProcess {
 public:
  virtual ~TaskProcess() = default;
  // Until the command exits; `timeout` 0 = none; SIGTERM then SIGKILL after `kill_grace`.
  virtual platform::ExitInfo Wait(std::chrono::milliseconds timeout,
                                  std::chrono::milliseconds kill_grace) = 0;
  virtual void Kill(int sig) = 0;
  virtual void Terminate(std::chrono::milliseconds grace) = 0;
  [[nodiscard]] virtual absl::Status Suspend() = 0;
  virtual void Resume() = 0;
  [[nodiscard]] virtual std::vector<pid_t> TreePids() const = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<TaskProcess>> Start(
      const platform::SpawnOptions& options) = 0;
};

// A TaskProcess over a platform::Process (started here, or adopted from a sandbox).
std::unique_ptr<TaskProcess> WrapProcess(std::unique_ptr<platform::Process> p);

// Over platform::Process. Stateless: any thread.
class RealLauncher final : public ProcessLauncher {
 public:
  [[nodiscard]] absl::StatusOr<std::unique_ptr<TaskProcess>> Start(
      const platform::SpawnOptions& options) override;
};

}  // namespace idlepool::worker
