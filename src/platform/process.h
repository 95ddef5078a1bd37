// Running a task's command: own session and process group (and cgroup), capped logs, tree kill.
//
// Process::Start spawns argv (PATH lookup for a bare name, no shell) in a new session with
// the given environment and working directory, stdout and stderr captured through pipes. With
// SpawnOptions::cgroup it starts inside that cgroup (the vfork child enters it before it execs:
// nothing the task runs can fork outside it), and every kill reaches the
// whole cgroup, so a child that called setsid or double-forked dies with the task. With
// low_priority the command runs as SCHED_IDLE, nice 19, I/O class idle: the owner's own
// processes always go first (BOINC runs its tasks at nice 19 and idle I/O priority too).
// Process::Wait pumps both pipes into log files until the command exits or the deadline passes,
// and always leaves no member of the group running: after the leader exits, stragglers that
// still hold the group are SIGKILLed.
//
// Thread safety: one thread calls Wait(); Kill() may be called from any thread at any time, also
// before or after Wait(). Ownership: a Process owns its pipe and pidfd descriptors.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idlepool::platform {

class TaskCgroup;

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // full environment, "KEY=VALUE"
  std::string cwd;
  std::string stdout_path;        // log files, created on the first byte written
  std::string stderr_path;
  // Bytes kept at the head of each log; beyond it output is still drained at full speed (a task
  // printing gigabytes never blocks on its pipe) but only the last tail_bytes are kept and
  // appended when the command ends, after a line saying how much was dropped.
  uint64_t log_head_bytes = 8ull << 20;
  uint64_t log_tail_bytes = 64ull << 10;
  TaskCgroup* cgroup = nullptr;  // not owned; must outlive the Process
  bool low_priority = false;
  // The command's soft RLIMIT_NOFILE (never above the hard limit); 0: this process's. A server
  // that raised its own (platform/fd_limit.h) gives its children the one it started with.
  uint64_t nofile_soft = 0;
  // Sandboxed commands only (sandbox/slot_sandbox.h): the resident memory all its processes may
  // use together, bytes (the job's memory_mb); 0: no limit.
  uint64_t memory_limit_bytes = 0;
};

struct ExitInfo {
  bool timed_out = false;
  bool pids_limit = false;    // a sandbox killed it for reaching its process limit
  bool memory_limit = false;  // a sandbox killed it for passing SpawnOptions::memory_limit_bytes
  uint64_t disk_limit = 0;    // nonzero: a sandbox killed it when its dirs passed this many bytes
  bool killed = false;       // ended by Kill()
  int exit_code = -1;        // valid when signal == 0
  int signal = 0;            // terminating signal, 0 if it exited
  std::string stderr_tail;   // last few KiB of stderr (or stdout when stderr is empty)
};

// How a Process adopted from elsewhere (a sandbox's agent, sandbox/slot_sandbox.h) is
// signalled and reaped: it is not this process's child, so neither waitpid nor a process-group
// kill by number (the number may be reused once its parent reaped it) is used on it.
struct ReapResult {
  int wait_status = 0;
  bool pids_limit = false;
  bool memory_limit = false;
  uint64_t disk_limit = 0;
};
class ChildControl {
 public:
  virtual ~ChildControl() = default;
  // Every process of the task's tree. Any thread, any time, also after it ended (a no-op then).
  virtual void SignalTree(int sig) = 0;
  // Blocks until the leader and every other process of the tree are gone. Called once, by the
  // thread that waits, after the leader's pidfd said it exited.
  virtual ReapResult Reap() = 0;
};

// A started command that is not this process's child.
struct AdoptedChild {
  pid_t pid = -1;  // in this process's PID namespace
  int pidfd = -1;  // owned by the Process from here on; so are the two pipes
  int out_fd = -1;
  int err_fd = -1;
  std::unique_ptr<ChildControl> control;
};

class Process {
 public:
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Errors: kNotFound when argv[0] cannot be found or executed, kResourceExhausted when this
  // process or the system is out of file descriptors (EMFILE, ENFILE) or processes (EAGAIN),
  // kInternal for other spawn failures.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Process>> Start(const SpawnOptions& opts);
  // Wraps a command started elsewhere; `opts` gives its log paths and caps and its cgroup.
  [[nodiscard]] static std::unique_ptr<Process> Adopt(AdoptedChild child, const SpawnOptions& opts);

  // Pumps logs until exit. `timeout` 0 means none; time spent suspended (Suspend to Resume)
  // does not count. On timeout the group gets SIGTERM, then SIGKILL after `kill_grace`.
  ExitInfo Wait(std::chrono::milliseconds timeout, std::chrono::milliseconds kill_grace);

  // Sends `sig` to the whole process group and cgroup (SIGKILL by default). Safe to call
  // repeatedly.
  void Kill(int sig = 9);

  // Asks the task to stop (vacate): SIGTERM to the whole tree now, SIGKILL once `grace` has
  // passed if the leader is still running (enforced by Wait()). Any thread.
  void Terminate(std::chrono::milliseconds grace);

  // Freezes the whole tree (cgroup freezer, waiting until the kernel reports it frozen, at most
  // 1 s), or without a cgroup sends SIGSTOP to the process group. Resume thaws it (SIGCONT).
  // Any thread; a suspended process can still be killed or terminated (Terminate resumes it).
  absl::Status Suspend();
  void Resume();

  pid_t pid() const { return pid_; }
  // The task's process tree as it is now, ascending: its cgroup's processes (cgroup.procs)
  // when it has one, else the members of its process group (scanned in /proc; a child that
  // left the group is missed). Empty once reaped. Any thread.
  std::vector<pid_t> TreePids() const;

 private:
  // Its logs' paths and caps and its cgroup, from `opts`.
  explicit Process(const SpawnOptions& opts)
      : stdout_path_(opts.stdout_path),
        stderr_path_(opts.stderr_path),
        head_cap_(opts.log_head_bytes),
        tail_cap_(opts.log_tail_bytes),
        cgroup_(opts.cgroup) {}
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int pidfd_ = -1;
  std::string stdout_path_, stderr_path_;
  uint64_t head_cap_ = 0;
  uint64_t tail_cap_ = 0;
  std::atomic<bool> reaped_{false};
  std::atomic<bool> kill_requested_{false};
  std::atomic<bool> group_checked_{false};  // the straggler kill after reaping was sent
  std::atomic<int64_t> terminate_deadline_ns_{0};  // steady clock; 0 = none
  std::atomic<int64_t> suspended_at_ns_{0};        // steady clock; 0 = running
  std::atomic<int64_t> suspended_total_ns_{0};     // time spent suspended so far
  TaskCgroup* cgroup_ = nullptr;
  std::unique_ptr<ChildControl> control_;  // set for an adopted command
  void SignalTree(int sig);
  void SignalGroup(int sig);  // its process group, or its tree through control_
  // Reaps the leader: waitpid for a child (WNOHANG when `poll`), Reap for an adopted one.
  // Returns whether it ended; fills `status` and `info`.
  bool ReapLeader(bool poll, int* status, ExitInfo* info);
};

// An exclusive advisory lock (flock) on `path`, created if missing, held until the FileLock is
// destroyed or the process dies (the kernel drops it even on SIGKILL). The holder's pid is
// written into the file for messages. Errors: kFailedPrecondition naming the holder when
// another process holds it, kInternal when the file cannot be opened.
class FileLock {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FileLock>> Acquire(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// Ignores SIGPIPE process-wide (gRPC and log pipes report EPIPE instead).
void IgnoreSigpipe();

// Blocks SIGINT and SIGTERM in the calling thread (call before starting other threads) and
// returns when one arrives. Returns the signal number.
int WaitForTerminationSignal();
void BlockTerminationSignals();

// The processes whose process group is `pgid` (from /proc/PID/stat), ascending.
std::vector<pid_t> ProcessGroupPids(pid_t pgid);

// The process groups of every process whose environment holds exactly `entry` ("NAME=value"),
// ascending, without this process's own group or groups 0 and 1. Reads /proc/PID/environ;
// processes it may not read (other users') are skipped.
std::vector<pid_t> ProcessGroupsWithEnv(const std::string& entry);

// SIGKILL to every process of group `pgid` (> 1).
void KillProcessGroup(pid_t pgid);

}  // namespace idlepool::platform
