// Task containment: one cgroup v2 group per attempt, to freeze, thaw and kill a task's whole
// process tree, including children that left its process group or session (setsid, double
// fork), which signals to a process group never reach.
//
// TaskCgroups::Open finds the cgroup v2 hierarchy in /proc/self/mounts (the "cgroup2" entry:
// /sys/fs/cgroup on a unified system, /sys/fs/cgroup/unified in hybrid mode), takes this
// process's own group from /proc/self/cgroup ("0::/path"), and creates a child group
// `idlepool-<tag>` there. Each attempt gets a child `a<attempt id>` of that. This needs
// write access to the worker's own group: root, or a systemd unit with Delegate=yes (see
// packaging/). Only the core interface files are used (cgroup.procs, cgroup.freeze,
// cgroup.events, cgroup.kill, cpu.stat), so no controller has to be enabled. Linux >= 5.14
// (cgroup.kill); on older kernels Kill() falls back to SIGKILL to each listed process.
//
// When cgroups are unavailable, Open returns nullptr with the reason; the worker then uses its
// process group (SIGSTOP/SIGCONT, kill(-pgid)), which a setsid escapee survives.
//
// Thread safety: a TaskCgroup's methods may be called from any thread (each is one or a few
// file writes). Ownership: TaskCgroups owns the `idlepool-<tag>` group; a TaskCgroup owns its
// directory fd and removes its group on destruction after killing what is left in it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace idlepool::platform {

// CPU seconds (user + system) used so far by this process, all threads.
double SelfCpuSeconds();

class TaskCgroup {
 public:
  ~TaskCgroup();
  TaskCgroup(const TaskCgroup&) = delete;
  TaskCgroup& operator=(const TaskCgroup&) = delete;

  // An O_DIRECTORY fd of the group (Process::Start opens its cgroup.procs through it).
  int dir_fd() const { return dir_fd_; }
  const std::string& path() const { return path_; }

  // Freezes every process of the group (cgroup.freeze) and waits until the kernel reports it
  // frozen, at most `wait`. kDeadlineExceeded if it did not freeze in time (it keeps trying).
  absl::Status Freeze(std::chrono::milliseconds wait);
  absl::Status Thaw();
  // The processes in the group now (cgroup.procs), ascending; empty when it cannot be read.
  std::vector<pid_t> Pids() const;
  // Sends `sig` to every process listed in cgroup.procs.
  void Signal(int sig);
  // SIGKILLs every process in the group at once (cgroup.kill), however it was started.
  void Kill();
  // True while any process is in the group (cgroup.events "populated").
  bool Populated() const;

 private:
  friend class TaskCgroups;
  TaskCgroup(std::string path, int dir_fd) : path_(std::move(path)), dir_fd_(dir_fd) {}
  absl::Status WriteFile(const char* name, const std::string& value) const;
  std::string ReadFile(const char* name) const;
  std::string path_;
  int dir_fd_;
};

class TaskCgroups {
 public:
  // nullptr (and `why` set) when cgroup v2 is not mounted or this process may not create
  // groups in its own. `tag` names this worker's parent group (e.g. a hash of its work dir),
  // so two workers on one machine never share one.
  static std::unique_ptr<TaskCgroups> Open(const std::string& tag, std::string* why);
  ~TaskCgroups();

  // Creates (or, left over from a crash, empties and reuses) the group for `name`.
  absl::StatusOr<std::unique_ptr<TaskCgroup>> Create(const std::string& name);

  // Kills and removes every group left under the parent by an earlier run (a worker that was
  // SIGKILLed leaves its tasks running). Returns how many groups held processes.
  int KillLeftovers();

  // CPU seconds used by every task ever run under the parent group (cpu.stat of the parent
  // counts its descendants, also removed ones).
  double CpuSeconds() const;

  const std::string& path() const { return path_; }

 private:
  explicit TaskCgroups(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace idlepool::platform
