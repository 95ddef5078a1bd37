// The sandbox init's loop: launch requests, the task's end, the pids limit (see agent.h).
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "platform/task_child.h"
#include "sandbox/agent.h"
#include "sandbox/channel.h"
#include "sandbox/messages.h"

namespace idlepool::sandbox::internal {
namespace {

constexpr int kIoprioClassIdle = 3;
constexpr int kIoprioClassShift = 13;
constexpr int kPidsCheckMs = 100;
constexpr unsigned long kAgentProcesses = 2;  // how often a running task's process count is read

union semun_compat {  // semctl(2)'s fourth argument, which the caller defines
  int val;
  semid_ds* buf;
  unsigned short* array;
  seminfo* info;
};

struct Task {
  pid_t leader = 0;  // 0: none running
  bool leader_done = false;
  int status = 0;
  bool pids_limit = false;
  uint64_t memory_bytes = 0;  // its limit; 0: none
  bool memory_limit = false;
  uint64_t dirs_at_start = 0;  // what its task and checkpoint dirs held when it started
  uint64_t disk_limit = 0;     // nonzero: killed when they grew past this many bytes
};

// What the init enforces, from the sandbox's Config.
struct Limits {
  unsigned long pids_max = 0;
  std::vector<std::string> scratch;   // tmpfs dirs: their contents are memory
  std::vector<std::string> writable;  // the task and checkpoint dirs
  uint64_t task_dir_bytes = 0;        // how much they may grow while a task runs; 0: no limit
};

// What the task's side of the vfork needs, built before it: the child shares the init's memory
// until it execs, so it only makes system calls.
struct ExecPlan {
  std::vector<std::string> files;  // argv[0], or each PATH candidate for a bare name
  std::vector<char*> argv, envp;
  const char* cwd = nullptr;
  int out_fd = -1, err_fd = -1, cgroup_fd = -1, status_fd = -1;
  bool low_priority = false;
  rlimit nproc{};
  uint64_t nofile_soft = 0;
};

ExecPlan PlanExec(LaunchRequest& q, const std::vector<int>& fds, int status_fd,
                  unsigned long pids_max) {
  ExecPlan p;
  const std::string& name = q.argv[0];
  if (name.find('/') != std::string::npos) {
    p.files.push_back(name);
  } else {
    const std::string dirs = q.path.empty() ? "/usr/local/bin:/usr/bin:/bin" : q.path;
    size_t pos = 0;
    while (pos <= dirs.size()) {
      size_t colon = dirs.find(':', pos);
      if (colon == std::string::npos) colon = dirs.size();
      p.files.push_back((colon > pos ? dirs.substr(pos, colon - pos) : ".") + "/" + name);
      pos = colon + 1;
    }
  }
  for (auto& a : q.argv) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
  for (auto& e : q.env) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  p.cwd = q.cwd.empty() ? nullptr : q.cwd.c_str();
  p.out_fd = fds[0];
  p.err_fd = fds[1];
  p.cgroup_fd = q.has_cgroup ? fds[2] : -1;
  p.status_fd = status_fd;
  p.low_priority = q.low_priority;
  // RLIMIT_NPROC counts this user's processes in the slot's user namespace: the task's, plus
  // the init and the outer agent.
  p.nproc = rlimit{pids_max + kAgentProcesses, pids_max + kAgentProcesses};
  p.nofile_soft = q.nofile_soft;
  return p;
}

// The task's side of the vfork: never returns. Reports an exec failure's errno on status_fd
// (negated for a failure before the exec).
[[noreturn]] void ExecTask(const ExecPlan& p) {
  // As platform/process.cc: an exec failure reports its errno, a set-up failure it negated.
  auto fail = [&](int err) {
    (void)!::write(p.status_fd, &err, sizeof err);
    ::_exit(127);
  };
  auto setup_fail = [&](int err) { fail(-err); };
  if (p.cgroup_fd >= 0 && ::write(p.cgroup_fd, "0", 1) != 1) setup_fail(errno);
  ::setsid();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(p.out_fd, 1) < 0 || ::dup2(p.err_fd, 2) < 0) {
    setup_fail(errno);
  }
  // Nothing of the init's (its channel, signalfd) or the worker's reaches the task but its stdio,
  // nor the keyring of the session the worker was started in (platform/task_child.h).
  if (const int err = platform::CloseOnExecAbove2(); err != 0) setup_fail(err);
  if (const int err = platform::JoinNewSessionKeyring(); err != 0) setup_fail(err);
  if (p.cwd != nullptr && ::chdir(p.cwd) != 0) setup_fail(errno);
  if (p.low_priority) {
    sched_param param{};
    ::sched_setscheduler(0, SCHED_IDLE, &param);  // best effort, as for unsandboxed tasks
    ::setpriority(PRIO_PROCESS, 0, 19);
    ::syscall(SYS_ioprio_set, 1, 0, kIoprioClassIdle << kIoprioClassShift);
  }
  ::setrlimit(RLIMIT_NPROC, &p.nproc);
  rlimit rl{};
  if (p.nofile_soft > 0 && ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && p.nofile_soft < rl.rlim_cur) {
    rl.rlim_cur = p.nofile_soft;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  int err = ENOENT;
  for (const std::string& file : p.files) {
    ::execve(file.c_str(), p.argv.data(), p.envp.data());
    if (errno != ENOENT && errno != ENOTDIR) err = errno;
  }
  fail(err);
  ::_exit(127);
}

// Removes what is below `dir` (not `dir`), making dirs the task closed writable again, never
// crossing into another file system (the slot dir's binds, when the work dir is under /tmp);
// what cannot go (the mount points on the way there) stays. Same user as the task: no
// capability needed.
void EmptyDir(const std::string& dir) {
  struct stat top;
  if (::lstat(dir.c_str(), &top) != 0) return;
  std::error_code ec;
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || st.st_dev != top.st_dev) continue;
    if (S_ISDIR(st.st_mode)) EmptyDir(it->path().string());
    std::filesystem::remove(it->path(), e2);
  }
}

// The dirs left in the scratch dirs after they were emptied (the roots, and the mount points on
// the way to the slot dir) with their change times: while none changed, nothing was added
// anywhere below (every new entry changes the time of the dir it is made in), and emptying them
// again is skipped.
struct ScratchSeen {
  std::vector<std::pair<std::string, std::pair<timespec, timespec>>> dirs;  // mtime, ctime
};

bool SameTimes(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool ScratchUnchanged(const ScratchSeen& seen) {
  if (seen.dirs.empty()) return false;
  for (const auto& [dir, times] : seen.dirs) {
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0 || !SameTimes(st.st_mtim, times.first) ||
        !SameTimes(st.st_ctim, times.second)) {
      return false;
    }
  }
  return true;
}

void RecordDirs(const std::string& dir, dev_t dev, ScratchSeen* seen) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || st.st_dev != dev || !S_ISDIR(st.st_mode)) return;
  seen->dirs.push_back({dir, {st.st_mtim, st.st_ctim}});
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    RecordDirs(it->path().string(), dev, seen);
  }
}

void EmptyScratch(const std::vector<std::string>& scratch, ScratchSeen* seen) {
  if (ScratchUnchanged(*seen)) return;
  seen->dirs.clear();
  for (const auto& dir : scratch) {
    EmptyDir(dir);
    struct stat st;
    if (::lstat(dir.c_str(), &st) == 0) RecordDirs(dir, st.st_dev, seen);
  }
}

// Every System V IPC object of this IPC namespace (the task's user owns them all): a task's
// shared memory, queues and semaphores never reach the slot's next task. The counts first (one
// call each), the lists only when there is something to remove.
bool AnySysvIpc() {
  shm_info shm{};
  msginfo msg{};
  seminfo sem{};
  semun_compat arg{};
  arg.info = &sem;
  const bool shm_any =
      ::shmctl(0, SHM_INFO, reinterpret_cast<shmid_ds*>(&shm)) < 0 || shm.used_ids > 0;
  const bool msg_any =
      ::msgctl(0, MSG_INFO, reinterpret_cast<msqid_ds*>(&msg)) < 0 || msg.msgpool > 0;
  const bool sem_any = ::semctl(0, 0, SEM_INFO, arg) < 0 || sem.semusz > 0;
  return shm_any || msg_any || sem_any;
}

void RemoveSysvIpc() {
  if (!AnySysvIpc()) return;
  const std::pair<const char*, int> kinds[] = {
      {"/proc/sysvipc/shm", 0}, {"/proc/sysvipc/msg", 1}, {"/proc/sysvipc/sem", 2}};
  for (const auto& [file, kind] : kinds) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      long key = 0, id = -1;
      if (std::sscanf(line.c_str(), "%ld %ld", &key, &id) != 2 || id < 0) continue;
      const int i = static_cast<int>(id);
      if (kind == 0) ::shmctl(i, IPC_RMID, nullptr);
      if (kind == 1) ::msgctl(i, IPC_RMID, nullptr);
      if (kind == 2) ::semctl(i, 0, IPC_RMID);
    }
  }
}

void SendOrExit(Channel& ch, std::string_view body, const std::vector<int>& fds = {}) {
  if (!ch.Send(body, fds).ok()) ::_exit(0);  // the worker is gone: so is this namespace
}

// Resident bytes of every process in this namespace but the init (/proc/N/statm, field 2).
uint64_t ResidentBytes() {
  uint64_t pages = 0;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 1) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/statm", pid);
    std::ifstream in(path);
    uint64_t size = 0, resident = 0;
    if (in >> size >> resident) pages += resident;
  }
  ::closedir(d);
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// Bytes held in the scratch tmpfs dirs (files there are memory, never on disk).
uint64_t ScratchBytes(const std::vector<std::string>& scratch) {
  uint64_t total = 0;
  for (const auto& dir : scratch) {
    struct statfs fs;
    if (::statfs(dir.c_str(), &fs) == 0 && fs.f_blocks >= fs.f_bfree) {
      total += static_cast<uint64_t>(fs.f_blocks - fs.f_bfree) * static_cast<uint64_t>(fs.f_bsize);
    }
  }
  return total;
}

// Disk bytes (allocated blocks) below `dir`, on its file system only, at most kMaxScanned
// entries looked at: a scan costs at most that much however many files a task makes (a task
// that makes more still counts the blocks of the first ones).
constexpr uint64_t kMaxScanned = 200000;
void AddDirBytes(const std::string& dir, dev_t dev, uint64_t* bytes, uint64_t* seen) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (++*seen > kMaxScanned) return;
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || st.st_dev != dev) continue;
    *bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    if (S_ISDIR(st.st_mode)) AddDirBytes(it->path().string(), dev, bytes, seen);
  }
}

uint64_t DirsBytes(const std::vector<std::string>& dirs) {
  uint64_t bytes = 0, seen = 0;
  for (const auto& dir : dirs) {
    struct stat top;
    if (::lstat(dir.c_str(), &top) == 0) AddDirBytes(dir, top.st_dev, &bytes, &seen);
  }
  return bytes;
}

// Processes and threads in this namespace now, the init left out (/proc/N/stat field 20).
unsigned long CountTasks() {
  unsigned long total = 0;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 1) continue;
    char path[64], buf[512];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    const char* p = std::strrchr(buf, ')');  // after comm, which may hold anything
    int field = 2;
    while (p != nullptr && *p != '\0' && field < 20) {
      if (*p++ == ' ') ++field;
    }
    total += p != nullptr ? std::strtoul(p, nullptr, 10) : 1;
  }
  ::closedir(d);
  return total;
}

// The task's processes and threads reached its limit (see ExecTask's RLIMIT_NPROC).
bool AtLimit(unsigned long pids_max) { return CountTasks() >= pids_max; }

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) ::close(fd);
}

void Launch(Channel& ch, Frame f, Task* task, const Limits& limits) {
  const unsigned long pids_max = limits.pids_max;
  auto q = DecodeLaunch(f.body);
  const size_t want = q.ok() && q->has_cgroup ? 3 : 2;
  if (!q.ok() || f.fds.size() != want || task->leader != 0) {
    CloseAll(f.fds);
    const std::string why = !q.ok()             ? std::string(q.status().message())
                            : task->leader != 0 ? "a task is already running in this sandbox"
                                                : "bad descriptors";
    return SendOrExit(ch, EncodeSimple(Msg::kError, 0, why));
  }
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    CloseAll(f.fds);
    return SendOrExit(ch, EncodeSimple(Msg::kExecFailed, static_cast<uint64_t>(errno)));
  }
  // vfork: a fork would copy the init's page tables for every task.
  const ExecPlan plan = PlanExec(*q, f.fds, status_pipe[1], pids_max);
  const pid_t pid = ::vfork();
  if (pid == 0) ExecTask(plan);
  const int fork_err = errno;
  ::close(status_pipe[1]);
  CloseAll(f.fds);
  if (pid < 0) {
    ::close(status_pipe[0]);
    return SendOrExit(ch, EncodeSimple(Msg::kExecFailed, static_cast<uint64_t>(fork_err)));
  }
  int exec_err = 0;
  ssize_t n;
  do {
    n = ::read(status_pipe[0], &exec_err, sizeof exec_err);
  } while (n < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof exec_err)) {
    ::waitpid(pid, nullptr, 0);
    return SendOrExit(ch, EncodeSimple(Msg::kExecFailed, static_cast<uint64_t>(exec_err)));
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  *task = Task{pid, false, 0, false, q->memory_bytes, false};
  // Its inputs are staged already: only what it adds counts against the quota.
  if (limits.task_dir_bytes > 0) task->dirs_at_start = DirsBytes(limits.writable);
  std::vector<int> out;
  if (pidfd >= 0) out.push_back(pidfd);
  SendOrExit(ch, EncodeSimple(Msg::kStarted, static_cast<uint64_t>(pid)), out);
  if (pidfd >= 0) ::close(pidfd);
}

// Reaps what ended. Once the leader is gone everything else is killed; once nothing is left,
// kExited.
void Reap(Channel& ch, Task* task, const Limits& limits, ScratchSeen* seen) {
  const unsigned long pids_max = limits.pids_max;
  while (true) {
    int status = 0;
    const pid_t p = ::waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      if (task->leader != 0 && p == task->leader && !task->leader_done) {
        task->leader_done = true;
        task->status = status;
        // A leader that gave up when it could not fork any more left its processes behind.
        if (AtLimit(pids_max)) task->pids_limit = true;
        ::kill(-1, SIGKILL);
      }
      continue;
    }
    if (p < 0 && errno == EINTR) continue;
    if (p < 0 && errno == ECHILD && task->leader_done) {
      // Nothing of this task reaches the slot's next one (the worker empties the task dir).
      EmptyScratch(limits.scratch, seen);
      RemoveSysvIpc();
      SendOrExit(ch, EncodeExited(ExitReport{task->status, task->pids_limit, task->memory_limit,
                                             task->disk_limit}));
      *task = Task{};
    }
    return;
  }
}

// The task's limits, checked when the poll timed out (every 100 ms while it runs) or every 64th
// wake of a busy task; its dirs only every 10th check (a scan, bounded by kMaxScanned).
void CheckLimits(Task* task, const Limits& limits, unsigned* checks) {
  if (task->leader == 0 || task->leader_done) return;
  if (AtLimit(limits.pids_max)) {
    task->pids_limit = true;
    ::kill(-1, SIGKILL);
  } else if (task->memory_bytes > 0 &&
             ResidentBytes() + ScratchBytes(limits.scratch) > task->memory_bytes) {
    task->memory_limit = true;
    ::kill(-1, SIGKILL);
  } else if (limits.task_dir_bytes > 0 && ++*checks % 10 == 0 &&
             DirsBytes(limits.writable) > task->dirs_at_start + limits.task_dir_bytes) {
    task->disk_limit = limits.task_dir_bytes;
    ::kill(-1, SIGKILL);
  }
}

}  // namespace

void RunInit(int channel_fd, const Config& c) {
  const Limits limits{c.pids_max, c.scratch, c.writable, c.task_dir_bytes};
  Channel ch(channel_fd);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) ::_exit(1);
  Task task;
  ScratchSeen seen;
  unsigned wakes = 0, checks = 0;
  while (true) {
    pollfd fds[2] = {{ch.fd(), POLLIN, 0}, {sigfd, POLLIN, 0}};
    const int n = ::poll(fds, 2, task.leader != 0 ? kPidsCheckMs : -1);
    if (n < 0 && errno != EINTR) ::_exit(1);
    if (n > 0 && (fds[1].revents & POLLIN)) {
      signalfd_siginfo info;
      while (::read(sigfd, &info, sizeof info) > 0) {
      }
      Reap(ch, &task, limits, &seen);
    }
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      auto f = ch.Receive();
      if (!f.ok()) ::_exit(0);  // the worker closed the channel: the namespace ends with us
      auto type = TypeOf(f->body);
      if (type.ok() && *type == Msg::kLaunch) {
        Launch(ch, std::move(*f), &task, limits);
      } else if (type.ok() && *type == Msg::kSignal) {
        auto s = DecodeSimple(f->body);
        if (s.ok() && task.leader != 0 && s->value > 0 && s->value < NSIG) {
          ::kill(-1, static_cast<int>(s->value));
        }
        CloseAll(f->fds);
      } else {
        CloseAll(f->fds);
      }
    }
    // Counted when the poll timed out, or every 64th wake of a busy task: never a scan per
    // event.
    if (n == 0 || (++wakes % 64) == 0) CheckLimits(&task, limits, &checks);
  }
}

}  // namespace idlepool::sandbox::internal
