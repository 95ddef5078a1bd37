#include "platform/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "platform/cgroup.h"
#include "platform/environment.h"
#include "platform/task_child.h"

namespace idlepool::platform {
namespace {

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// One captured stream: a head kept in the file, a tail ring kept in memory once the head cap is
// reached.
struct LogSink {
  std::string path;  // created on the first byte: a silent task costs no file
  int fd = -1;
  uint64_t head_cap = 0;
  uint64_t tail_cap = 0;
  uint64_t written = 0;
  uint64_t dropped = 0;
  std::string tail;  // last tail_cap bytes past the head

  ~LogSink() {
    if (fd >= 0) ::close(fd);
  }
  void Add(const char* data, size_t n) {
    if (written < head_cap) {
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, head_cap - written));
      WriteAll(data, take);
      written += take;
      data += take;
      n -= take;
    }
    if (n == 0) return;
    dropped += n;
    tail.append(data, n);
    if (tail.size() > tail_cap) tail.erase(0, tail.size() - tail_cap);
  }
  void Finish() {
    if (dropped > 0) {
      uint64_t lost = dropped - tail.size();
      std::string note = absl::StrCat("\n[idlepool: ", lost, " bytes dropped; last ", tail.size(),
                                      " bytes follow]\n");
      WriteAll(note.data(), note.size());
      WriteAll(tail.data(), tail.size());
    }
  }
  void WriteAll(const char* data, size_t n) {
    if (fd < 0 && n > 0) {
      fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) return;  // the log is best effort; the task must not stall on it
    }
    while (n > 0) {
      ssize_t w = ::write(fd, data, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return;  // a full disk must not stall the task; the log is best effort
      }
      data += w;
      n -= static_cast<size_t>(w);
    }
  }
};

std::string ReadTail(const std::string& path, size_t max) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  off_t size = ::lseek(fd, 0, SEEK_END);
  off_t start = size > static_cast<off_t>(max) ? size - static_cast<off_t>(max) : 0;
  std::string out(static_cast<size_t>(size - start), '\0');
  ssize_t n = ::pread(fd, out.data(), out.size(), start);
  ::close(fd);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

}  // namespace

namespace {

// The file to execute for argv[0]: itself when it has a '/' (a relative one, like "./prog", taken
// from `cwd`, the directory the command runs in, not the worker's own), else the first executable
// match in the PATH of the task's own environment `env` (as posix_spawnp and execvp would find it;
// an empty or "." entry is `cwd` too). Resolved in the parent, so the child only makes system
// calls.
std::string ResolveCommand(const std::string& name, const std::string& cwd,
                           const std::vector<std::string>& env, int* err) {
  *err = ENOENT;
  const auto in_cwd = [&](const std::string& rel) {
    return cwd.empty() || (!rel.empty() && rel[0] == '/') ? rel : cwd + "/" + rel;
  };
  if (name.find('/') != std::string::npos) {
    const std::string file = in_cwd(name);
    *err = ::access(file.c_str(), X_OK) == 0 ? 0 : errno;
    return file;
  }
  bool has_path = false;
  const std::string_view path = EnvValue(env, "PATH", &has_path);
  const std::string dirs = has_path ? std::string(path) : "/usr/local/bin:/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t colon = dirs.find(':', pos);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string dir = colon > pos ? dirs.substr(pos, colon - pos) : std::string(1, '.');
    std::string candidate = in_cwd(dir + "/" + name);
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) {
        *err = 0;
        return candidate;
      }
      *err = EACCES;
    }
    pos = colon + 1;
  }
  return name;
}

constexpr int kIoprioClassIdle = 3;
constexpr int kIoprioClassShift = 13;

// What the child of vfork needs, prepared before it: it shares the parent's memory until it
// execs, so it must only make system calls (no allocation, no locks, no return from
// Process::Start), and it writes `*cgroup_err` (the parent reads it after vfork returns) when
// it could not enter its cgroup.
struct ChildSetup {
  const char* file;
  char* const* argv;
  char* const* envp;
  const char* cwd;  // nullptr: the parent's
  int out_fd;
  int err_fd;
  int status_fd;
  int cgroup_procs_fd;
  volatile int* cgroup_err;
  bool low_priority;
  uint64_t nofile_soft;  // 0: the parent's
};

// An errno of a spawn: the process or the machine is out of descriptors or processes (or the
// user of its keyring quota: platform/task_child.h).
absl::Status SpawnError(int err, std::string message) {
  if (err == EMFILE || err == ENFILE || err == EAGAIN || err == EDQUOT) {
    return absl::ResourceExhaustedError(std::move(message));
  }
  return absl::InternalError(std::move(message));
}

[[noreturn]] void ChildExec(const ChildSetup& c) {
  // An exec failure reports its errno; a failure setting the task up before it, the errno
  // negated: only the former can mean this machine cannot run the program.
  auto fail = [&](int err) {
    (void)!::write(c.status_fd, &err, sizeof err);
    ::_exit(127);
  };
  auto setup_fail = [&](int err) { fail(-err); };
  // Enter the task's cgroup first: nothing the task runs can fork outside it.
  if (c.cgroup_procs_fd >= 0 && ::write(c.cgroup_procs_fd, "0", 1) != 1) *c.cgroup_err = errno;
  ::setsid();  // its own session and process group: kill(-pgid) reaches the tree without
              // cgroups, and the terminal of an interactive worker never signals the task
  sigset_t empty;
  sigemptyset(&empty);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // EINVAL ones ignored
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull < 0) setup_fail(errno);
  if (::dup2(devnull, 0) < 0 || ::dup2(c.out_fd, 1) < 0 || ::dup2(c.err_fd, 2) < 0)
    setup_fail(errno);
  // Nothing of the worker's but the task's stdio crosses exec (platform/task_child.h).
  if (const int err = CloseOnExecAbove2(); err != 0) setup_fail(err);
  if (const int err = JoinNewSessionKeyring(); err != 0) setup_fail(err);
  if (c.cwd != nullptr && ::chdir(c.cwd) != 0) setup_fail(errno);
  if (c.low_priority) {
    struct sched_param param {};
    param.sched_priority = 0;
    ::sched_setscheduler(0, SCHED_IDLE, &param);  // best effort, like the two below
    ::setpriority(PRIO_PROCESS, 0, 19);
    ::syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0,
              kIoprioClassIdle << kIoprioClassShift);
  }
  // Last: the worker's own descriptors may be numbered past the task's limit (they close on
  // exec).
  if (c.nofile_soft > 0) {
    struct rlimit rl {};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && c.nofile_soft < rl.rlim_cur) {
      rl.rlim_cur = c.nofile_soft;
      ::setrlimit(RLIMIT_NOFILE, &rl);  // best effort: the task then gets the worker's
    }
  }
  ::execve(c.file, c.argv, c.envp);
  fail(errno);
  ::_exit(127);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Process>> Process::Start(const SpawnOptions& opts) {
  if (opts.argv.empty() || opts.argv[0].empty()) {
    return absl::InvalidArgumentError("empty command");
  }
  int resolve_err = 0;
  const std::string file = ResolveCommand(opts.argv[0], opts.cwd, opts.env, &resolve_err);
  if (resolve_err != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot run '", opts.argv[0], "': ", std::strerror(resolve_err)));
  }
  std::unique_ptr<Process> p(new Process(opts));
  int out_pipe[2], err_pipe[2], status_pipe[2];
  auto pipe_error = [&] {
    return SpawnError(
        errno, absl::StrCat("cannot run '", opts.argv[0], "': pipe2: ", std::strerror(errno)));
  };
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return pipe_error();
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    absl::Status st = pipe_error();
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return st;
  }
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    absl::Status st = pipe_error();
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return st;
  }

  std::vector<char*> argv, envp;
  for (const auto& a : opts.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : opts.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // vfork, as posix_spawn does (copying the page tables of a large multi-threaded worker for a
  // fork costs more than the task itself for short tasks), with the cgroup entered by the child
  // before it execs. All signals are blocked around it: no handler of ours may run in the child.
  int cgroup_procs_fd = -1;
  if (opts.cgroup != nullptr) {
    cgroup_procs_fd = ::openat(opts.cgroup->dir_fd(), "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (cgroup_procs_fd < 0) p->cgroup_ = nullptr;  // group gone: process group only
  }
  volatile int cgroup_err = 0;
  const ChildSetup child{.file = file.c_str(),
                         .argv = argv.data(),
                         .envp = envp.data(),
                         .cwd = opts.cwd.empty() ? nullptr : opts.cwd.c_str(),
                         .out_fd = out_pipe[1],
                         .err_fd = err_pipe[1],
                         .status_fd = status_pipe[1],
                         .cgroup_procs_fd = cgroup_procs_fd,
                         .cgroup_err = &cgroup_err,
                         .low_priority = opts.low_priority,
                         .nofile_soft = opts.nofile_soft};
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::vfork();
  if (pid == 0) {
    ChildExec(child);
  }
  const int vfork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (cgroup_procs_fd >= 0) ::close(cgroup_procs_fd);
  // The group could not be entered (removed under us, permissions changed): the task runs,
  // contained by its process group only.
  if (cgroup_err != 0) p->cgroup_ = nullptr;
  errno = vfork_errno;
  int spawn_err = pid < 0 ? errno : 0;
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(status_pipe[1]);
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::close(status_pipe[0]);
    return SpawnError(spawn_err, absl::StrCat("cannot run '", opts.argv[0],
                                              "': vfork: ", std::strerror(spawn_err)));
  }
  // The status pipe closes on exec (CLOEXEC); an errno arrives when exec failed.
  int exec_err = 0;
  ssize_t n;
  do {
    n = ::read(status_pipe[0], &exec_err, sizeof exec_err);
  } while (n < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  p->pid_ = static_cast<pid_t>(pid);
  p->out_fd_ = out_pipe[0];
  p->err_fd_ = err_pipe[0];
  p->pidfd_ = PidfdOpen(p->pid_);
  if (n == static_cast<ssize_t>(sizeof exec_err)) {
    ::waitpid(p->pid_, nullptr, 0);
    p->reaped_ = true;
    if (exec_err < 0) {
      return SpawnError(-exec_err, absl::StrCat("cannot set up the task to run '", opts.argv[0],
                                                "': ", std::strerror(-exec_err)));
    }
    std::string why = absl::StrCat("cannot run '", opts.argv[0], "': ", std::strerror(exec_err));
    if (exec_err == ENOENT || exec_err == EACCES || exec_err == ENOEXEC) {
      return absl::NotFoundError(why);
    }
    return SpawnError(exec_err, std::move(why));
  }
  return p;
}

std::unique_ptr<Process> Process::Adopt(AdoptedChild child, const SpawnOptions& opts) {
  std::unique_ptr<Process> p(new Process(opts));
  p->pid_ = child.pid;
  p->pidfd_ = child.pidfd;
  p->out_fd_ = child.out_fd;
  p->err_fd_ = child.err_fd;
  p->control_ = std::move(child.control);
  return p;
}

ExitInfo Process::Wait(std::chrono::milliseconds timeout, std::chrono::milliseconds kill_grace) {
  using SteadyClock = std::chrono::steady_clock;
  ExitInfo info;
  LogSink out{stdout_path_, -1, head_cap_, tail_cap_, 0, 0, {}};
  LogSink err{stderr_path_, -1, head_cap_, tail_cap_, 0, 0, {}};
  const auto start = SteadyClock::now();
  std::optional<SteadyClock::time_point> deadline;
  if (timeout.count() > 0) deadline = start + timeout;
  SteadyClock::time_point hard_kill_at{};  // set when hard_kill_pending
  bool hard_kill_pending = false;
  std::optional<SteadyClock::time_point> exited_at;
  bool exited = false;
  int status = 0;
  char buf[64 * 1024];

  while (out_fd_ >= 0 || err_fd_ >= 0 || !exited) {
    struct pollfd fds[3];
    int nfds = 0;
    int out_i = -1, err_i = -1, pid_i = -1;
    if (out_fd_ >= 0) { out_i = nfds; fds[nfds++] = {out_fd_, POLLIN, 0}; }
    if (err_fd_ >= 0) { err_i = nfds; fds[nfds++] = {err_fd_, POLLIN, 0}; }
    if (!exited && pidfd_ >= 0) { pid_i = nfds; fds[nfds++] = {pidfd_, POLLIN, 0}; }

    int wait_ms = 200;  // also bounds how late a kill request without pidfd is noticed
    auto now = SteadyClock::now();
    // The timeout counts running time only: a suspended task is not timed out, and the time it
    // spent suspended moves its deadline.
    const bool suspended = suspended_at_ns_.load() != 0;
    std::optional<SteadyClock::time_point> due;
    if (deadline && !suspended) {
      due = *deadline + std::chrono::nanoseconds(suspended_total_ns_.load());
    }
    if (due && !info.timed_out) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*due - now).count();
      wait_ms = static_cast<int>(std::clamp<int64_t>(left, 0, wait_ms));
    }
    int n = nfds > 0 ? ::poll(fds, nfds, wait_ms) : 0;
    if (n < 0 && errno != EINTR) break;

    auto drain = [&](int& fd, int idx, LogSink& sink) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t r = ::read(fd, buf, sizeof buf);
      if (r > 0) {
        sink.Add(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fd);
        fd = -1;
      }
    };
    if (n > 0) {
      drain(out_fd_, out_i, out);
      drain(err_fd_, err_i, err);
    }

    if (!exited && (pid_i < 0 || (n > 0 && (fds[pid_i].revents & POLLIN)) || pidfd_ < 0)) {
      if (ReapLeader(/*poll=*/pidfd_ < 0, &status, &info)) {
        exited = true;
        reaped_ = true;
        // The leader is gone; anything it left behind in its group (and cgroup) goes too, so
        // no task ever outlives its attempt. The pgid cannot be reused while a member lives.
        SignalTree(SIGKILL);
        group_checked_ = true;
      }
    }

    now = SteadyClock::now();
    if (due && !info.timed_out && now >= *due && !exited) {
      info.timed_out = true;
      SignalTree(SIGTERM);
      hard_kill_at = now + kill_grace;
      hard_kill_pending = true;
    }
    if (hard_kill_pending && now >= hard_kill_at && !exited) {
      SignalTree(SIGKILL);
      hard_kill_pending = false;
    }
    if (const int64_t t = terminate_deadline_ns_.load(); t != 0 && !exited &&
        now.time_since_epoch() >= std::chrono::nanoseconds(t)) {
      SignalTree(SIGKILL);  // vacate grace over
      terminate_deadline_ns_ = 0;
    }
    if (exited && !exited_at) exited_at = now;
    if (exited && (out_fd_ >= 0 || err_fd_ >= 0) &&
        (n == 0 || now - *exited_at > std::chrono::seconds(1))) {
      // Leader exited and the group was killed; pipes still open after that means a process
      // outside the group (a daemon that called setsid) holds them, possibly writing forever.
      // Stop waiting for it.
      break;
    }
  }
  if (out_fd_ >= 0) { ::close(out_fd_); out_fd_ = -1; }
  if (err_fd_ >= 0) { ::close(err_fd_); err_fd_ = -1; }
  out.Finish();
  err.Finish();
  info.killed = kill_requested_.load();
  if (WIFEXITED(status)) {
    info.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
    info.exit_code = 128 + info.signal;
  }
  if (out.fd >= 0) { ::close(out.fd); out.fd = -1; }
  if (err.fd >= 0) { ::close(err.fd); err.fd = -1; }
  info.stderr_tail = ReadTail(stderr_path_, 2048);
  if (info.stderr_tail.empty()) info.stderr_tail = ReadTail(stdout_path_, 2048);
  return info;
}

bool Process::ReapLeader(bool poll, int* status, ExitInfo* info) {
  if (control_ != nullptr) {
    const ReapResult r = control_->Reap();
    *status = r.wait_status;
    info->pids_limit = r.pids_limit;
    info->memory_limit = r.memory_limit;
    info->disk_limit = r.disk_limit;
    return true;
  }
  return ::waitpid(pid_, status, poll ? WNOHANG : 0) == pid_;
}

void Process::SignalGroup(int sig) {
  if (control_ != nullptr) {
    control_->SignalTree(sig);
  } else if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, sig);
  }
}

void Process::SignalTree(int sig) {
  if (control_ != nullptr) {
    control_->SignalTree(sig);
  } else if (pid_ > 0 && (!reaped_ || !group_checked_)) {
    // Once the leader is reaped and its group empty, its pgid may be reused by an unrelated
    // process: only the kill right after reaping (Wait) may still use it.
    ::kill(-pid_, sig);
  }
  if (cgroup_ != nullptr) {
    if (sig == SIGKILL) {
      cgroup_->Kill();
    } else {
      cgroup_->Signal(sig);
    }
  }
}

void Process::Kill(int sig) {
  kill_requested_ = true;
  SignalTree(sig);
}

namespace {
int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

absl::Status Process::Suspend() {
  int64_t zero = 0;
  suspended_at_ns_.compare_exchange_strong(zero, SteadyNs());
  if (cgroup_ != nullptr) return cgroup_->Freeze(std::chrono::milliseconds(1000));
  SignalGroup(SIGSTOP);
  return absl::OkStatus();
}

void Process::Resume() {
  if (const int64_t at = suspended_at_ns_.exchange(0); at != 0) {
    suspended_total_ns_ += SteadyNs() - at;
  }
  if (cgroup_ != nullptr) cgroup_->Thaw().IgnoreError();
  SignalGroup(SIGCONT);
}

void Process::Terminate(std::chrono::milliseconds grace) {
  Resume();  // a frozen task cannot handle SIGTERM
  const auto at = std::chrono::steady_clock::now() + grace;
  int64_t expected = 0;
  // The first request sets the deadline; a later, shorter one (sleep imminent) brings it in.
  int64_t want = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  while (true) {
    if (expected != 0 && expected <= want) break;
    if (terminate_deadline_ns_.compare_exchange_weak(expected, want)) break;
  }
  SignalTree(SIGTERM);
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    SignalTree(SIGKILL);
    int status = 0;
    ExitInfo ignored;
    ReapLeader(/*poll=*/false, &status, &ignored);
  }
  for (int fd : {out_fd_, err_fd_, pidfd_}) {
    if (fd >= 0) ::close(fd);
  }
}

absl::StatusOr<std::unique_ptr<FileLock>> FileLock::Acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? absl::StrCat(" (pid ", std::string(buf, strcspn(buf, "\n")), ")")
                               : "";
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is locked by another process", holder));
  }
  std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, pid.data(), pid.size(), 0);
  return std::unique_ptr<FileLock>(new FileLock(fd));
}

FileLock::~FileLock() { ::close(fd_); }

void IgnoreSigpipe() { ::signal(SIGPIPE, SIG_IGN); }

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

std::vector<pid_t> Process::TreePids() const {
  if (pid_ <= 0 || reaped_) return {};
  if (cgroup_ != nullptr) return cgroup_->Pids();
  return ProcessGroupPids(pid_);
}

namespace {

// Every process now: the numeric entries of /proc, ascending.
std::vector<pid_t> AllPids() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ProcPath(pid_t pid, const char* file) {
  return "/proc/" + std::to_string(pid) + "/" + file;
}

}  // namespace

std::vector<pid_t> ProcessGroupPids(pid_t pgid) {
  std::vector<pid_t> out;
  for (pid_t pid : AllPids()) {
    std::ifstream in(ProcPath(pid, "stat"));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0, pgrp = 0;
    if (rest >> state >> ppid >> pgrp && pgrp == pgid) out.push_back(pid);
  }
  return out;
}

std::vector<pid_t> ProcessGroupsWithEnv(const std::string& entry) {
  std::set<pid_t> groups;
  for (pid_t pid : AllPids()) {
    if (pid == ::getpid()) continue;
    std::ifstream env(ProcPath(pid, "environ"), std::ios::binary);
    std::string var;
    while (std::getline(env, var, '\0')) {
      if (var != entry) continue;
      const pid_t pgid = ::getpgid(pid);
      if (pgid > 1 && pgid != ::getpgrp()) groups.insert(pgid);
      break;
    }
  }
  return std::vector<pid_t>(groups.begin(), groups.end());
}

void KillProcessGroup(pid_t pgid) {
  if (pgid > 1) ::kill(-pgid, SIGKILL);
}

}  // namespace idlepool::platform
