// bench/preemption: how fast a lent machine is handed back to its owner, how fast the pool moves
// the work elsewhere, what a preemption costs in lost work, and what an idle worker costs.
//
// Everything is real and observed from outside: a `build/idlepool coordinator` and one or two
// `build/idlepool worker --sensors-dir DIR --config CFG` processes on 127.0.0.1, driven only
// through their fake sensor files (written as an owner's script would: temp file + rename) and
// the `idlepool` client commands. Times are taken from the moment before the rename that changes
// a sensor to the moment this process sees the effect:
//   1. yield, suspend: idle_seconds 0 -> the attempt's cgroup reports `frozen 1`
//      (inotify on its cgroup.events, with a 1 ms poll as backstop); also the thaw on
//      idle_seconds 1000 -> `frozen 0`;
//      yield, vacate: on_ac_power 0 -> the task's process has exited (pidfd), and the whole
//      task tree has (cgroup `populated 0`).
//   2. reassignment: two workers; on_ac_power 0 on the one running the task -> the next attempt
//      has started on the other (the task writes a marker file as its first act; inotify). The
//      direction alternates. The coordinator's attempt records (pool.db via sqlite3; wall-clock
//      milliseconds) split the time.
//   3. lost work per preemption: `idlepool status JOB --json` lost_seconds after each vacate of
//      a counting task that has run a few seconds: examples/checkpoint-count/count.sh
//      (checkpoints every step and on SIGTERM), the same count checkpointing once a second
//      without a SIGTERM handler, and the same count keeping no checkpoint.
//   4. the idle, connected worker: CPU (utime+stime from /proc/PID/stat) over a window, VmRSS.
// Percentiles are nearest-rank (with 30 samples, p99 is the maximum). Every process started is
// stopped on exit, on failure and on SIGINT/SIGTERM/SIGHUP (children get PR_SET_PDEATHSIG too),
// and each worker's task cgroups are killed through their parent's cgroup.kill.
//
//   build/bench/preemption [--repeats 30] [--quick] [--keep] [--idlepool PATH]
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

namespace {

// The owner policy under test (the same as owner_config in tests/integration/lib.sh).
constexpr const char* kOwnerToml =
    "[owner]\n"
    "start_idle_minutes = 0.02\n"
    "resume_idle_seconds = 1\n"
    "vacate_after_suspend_seconds = 600\n"
    "vacate_grace_seconds = 5\n"
    "checkpoint_interval_seconds = 1\n";
constexpr double kCheckpointIntervalS = 1;

// The targets each figure is checked against.
constexpr double kYieldP99TargetMs = 200;
constexpr double kReassignP50TargetMs = 250;
constexpr double kIdleCpuTargetPct = 1;
constexpr double kIdleRssTargetMb = 30;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// --- Percentiles -----------------------------------------------------------------------------

struct Dist {
  size_t n = 0;
  double p50 = 0, p99 = 0, max = 0;
};

// Nearest-rank percentile of a non-empty sample.
double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

Dist Summarize(const std::vector<double>& v) {
  Dist d;
  d.n = v.size();
  if (v.empty()) return d;
  d.p50 = Percentile(v, 50);
  d.p99 = Percentile(v, 99);
  d.max = *std::max_element(v.begin(), v.end());
  return d;
}

Json ToJson(const Dist& d) {
  return {{"n", d.n},
          {"p50", std::round(d.p50 * 10) / 10},
          {"p99", std::round(d.p99 * 10) / 10},
          {"max", std::round(d.max * 10) / 10}};
}

// --- Processes we start, and cleaning them up ------------------------------------------------

// Written by the main thread, read by Cleanup() on the main thread or the signal thread; both
// under g_mu.
std::mutex g_mu;
std::vector<pid_t> g_children;       // each leads its own process group
std::vector<std::string> g_cgroups;  // the workers' cgroup parents (idlepool-<tag>)

struct Run {
  std::string idlepool;  // the binary under test
  std::string dir;       // scratch dir: coordinator data, worker dirs, sensors, logs, markers
  bool keep = false;
};
Run g_run;

// SIGKILLs everything in the workers' task cgroups (cgroup.kill of a parent reaches every
// group below it) and removes the groups.
void KillCgroups() {
  for (const auto& parent : g_cgroups) {
    int fd = ::open((parent + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)::write(fd, "1", 1);
      ::close(fd);
    }
    std::error_code ec;
    for (int tries = 0; tries < 100 && fs::exists(parent, ec); ++tries) {
      for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->is_directory(ec)) ::rmdir(it->path().c_str());
      }
      if (::rmdir(parent.c_str()) == 0) break;
      SleepMs(20);
    }
  }
  g_cgroups.clear();
}

bool Exited(pid_t pid, int timeout_ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    pid_t r = ::waitpid(pid, nullptr, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (Clock::now() >= until) return false;
    SleepMs(10);
  }
}

// Stops the children, latest first (workers before the coordinator they report to): SIGTERM
// (or, with `now`, SIGKILL at once), then SIGKILL to the process group after a bound; then
// kills whatever is left in the workers' task cgroups and removes the groups and, unless kept,
// the scratch dir. Runs once; a second caller returns at once.
void Cleanup(bool now = false) {
  std::lock_guard lock(g_mu);
  static bool done = false;
  if (done) return;
  done = true;
  for (auto it = g_children.rbegin(); it != g_children.rend(); ++it) {
    const pid_t pid = *it;
    ::kill(now ? -pid : pid, now ? SIGKILL : SIGTERM);
    if (!Exited(pid, 8000)) {
      ::kill(-pid, SIGKILL);
      Exited(pid, 2000);
    }
    ::kill(-pid, SIGKILL);  // anything left in its process group
  }
  g_children.clear();
  KillCgroups();
  if (!g_run.dir.empty()) {
    if (g_run.keep) {
      std::fprintf(stderr, "kept %s\n", g_run.dir.c_str());
    } else {
      std::error_code ec;
      fs::remove_all(g_run.dir, ec);
    }
  }
}

[[noreturn]] void Die(const std::string& why) {
  std::fflush(stdout);
  std::fprintf(stderr, "bench/preemption: %s\n", why.c_str());
  g_run.keep = true;  // the logs say why
  Cleanup();
  std::exit(1);
}

// SIGINT, SIGTERM and SIGHUP are blocked in every thread of ours and taken by one thread that
// cleans up and exits; children start with an empty mask.
void HandleSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    ::sigwait(&set, &sig);
    std::fprintf(stderr, "\nbench/preemption: signal %d: stopping the processes it started\n", sig);
    Cleanup(/*now=*/true);
    ::_exit(128 + sig);
  }).detach();
}

void ResetSignalsInChild() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Starts argv[0] with stdout and stderr appended to `log`, in its own process group (so a
// Ctrl-C reaches only us, and we stop it in order), killed if we die.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) Die(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ResetSignalsInChild();
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
  std::lock_guard lock(g_mu);
  g_children.push_back(pid);
  return pid;
}

// True once `pid` (a child) has exited; reaps it.
bool ChildGone(pid_t pid) {
  int status;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

// Runs `idlepool ARGS...` to completion; returns its stdout, or nullopt when it failed.
std::optional<std::string> Client(const std::vector<std::string>& args) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) Die("pipe");
  pid_t pid = ::fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    ResetSignalsInChild();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(p[1], 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 2);
    std::vector<char*> argv{const_cast<char*>(g_run.idlepool.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

Json ClientJson(const std::vector<std::string>& args) {
  auto out = Client(args);
  if (!out) return Json();
  Json j = Json::parse(*out, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? Json() : j;
}

// --- Files and waiting -----------------------------------------------------------------------

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) Die(absl::StrCat("cannot write ", path));
}

// A secret (a token) into a new file only this user can read.
void WritePrivateFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) Die(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (::close(fd) != 0 || !ok) Die(absl::StrCat("cannot write ", path));
}

// Sets one fake sensor as an owner's script does (write a temp file, rename it over the old
// one). Returns the time just before the rename: the moment the sensor changes.
Clock::time_point Sense(const std::string& dir, const std::string& key, const std::string& v) {
  const std::string tmp = absl::StrCat(dir, "/.", key, ".tmp");
  WriteFile(tmp, v + "\n");
  const auto t = Clock::now();
  if (::rename(tmp.c_str(), absl::StrCat(dir, "/", key).c_str()) != 0) {
    Die(absl::StrCat("rename into ", dir, ": ", std::strerror(errno)));
  }
  return t;
}

// Calls `done` until it returns true: after each inotify event on the watched paths, and every
// `poll_ms` regardless (a backstop for events inotify does not report). Returns the time at
// which `done` first returned true, or nullopt after `timeout_ms`.
class Waiter {
 public:
  Waiter() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ < 0) Die("inotify_init1");
  }
  ~Waiter() {
    if (fd_ >= 0) ::close(fd_);
  }
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // Watches `path` for the events in `mask` (a missing path is skipped: the 1 ms poll covers it).
  void Watch(const std::string& path, uint32_t mask) {
    (void)::inotify_add_watch(fd_, path.c_str(), mask);
  }

  std::optional<Clock::time_point> Until(const std::function<bool()>& done, int timeout_ms,
                                         int poll_ms = 1) {
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      if (done()) return Clock::now();
      if (Clock::now() >= until) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, poll_ms) > 0) {
        alignas(inotify_event) char buf[4096];
        while (::read(fd_, buf, sizeof buf) > 0) {
        }
      }
    }
  }

 private:
  int fd_;
};

// The marker an attempt writes as the first thing it does: "WORKER ATTEMPT PID JOB".
struct Marker {
  std::string worker;
  uint64_t attempt = 0;
  pid_t pid = 0;
  uint64_t job = 0;
};

// Reads the markers of M/started.<attempt> that are complete (newline-terminated).
class Markers {
 public:
  explicit Markers(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // The newest complete marker of `job` with an attempt id above `after` (and, when given,
  // written on `worker`).
  std::optional<Marker> Newest(uint64_t job, uint64_t after, const std::string& worker = "") {
    Scan();
    std::optional<Marker> best;
    for (const auto& [id, m] : seen_) {
      if (m.job != job || id <= after || (!worker.empty() && m.worker != worker)) continue;
      best = m;
    }
    return best;
  }

 private:
  void Scan() {
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) return;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("started.", 0) != 0) continue;
      uint64_t id = std::strtoull(name.c_str() + 8, nullptr, 10);
      if (id == 0 || seen_.count(id)) continue;
      std::string text = Slurp(dir_ + "/" + name);
      if (text.empty() || text.back() != '\n') continue;  // still being written
      Marker m;
      std::istringstream in(text);
      in >> m.worker >> m.attempt >> m.pid >> m.job;
      if (in.fail() || m.attempt != id) continue;
      seen_[id] = m;
    }
    ::closedir(d);
  }

  std::string dir_;
  std::map<uint64_t, Marker> seen_;  // by attempt id: iteration is in attempt order
};

// The first argument of every bench task: record who runs it, then do the work.
std::string MarkerPrefix(const std::string& markers_dir) {
  return absl::StrCat("echo $IDLEPOOL_WORKER $IDLEPOOL_ATTEMPT_ID $$ $IDLEPOOL_JOB_ID > ",
                      markers_dir, "/started.$IDLEPOOL_ATTEMPT_ID; ");
}

// The loop condition of the bench's endless tasks: they end once their worker is gone (the
// worker is their parent; `kill` is a shell builtin), so a worker killed with the bench (by
// PR_SET_PDEATHSIG) leaves no task behind in its cgroup.
constexpr const char* kWorkerAlive = "kill -0 $PPID 2>/dev/null";

// A pidfd for `pid`; readable once the process has exited. -1 when it is already gone.
int PidFd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

bool PidFdExited(int fd) {
  if (fd < 0) return true;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// "key value" lines of a cgroup interface file (cgroup.events).
int KeyValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  long long v;
  while (in >> k >> v) {
    if (k == key) return static_cast<int>(v);
  }
  return -1;
}

// One worker process and its owner's sensor files.
struct WorkerProc {
  std::string name;
  std::string sensors;
  std::string log;
  pid_t pid = 0;
  std::string cgroup_parent;  // empty: the worker runs tasks without cgroups
};

// The task cgroup of a running attempt, from its process (the worker reuses its groups, so
// their names say nothing about the attempt). Empty without cgroups.
std::string AttemptCgroup(const WorkerProc& w, pid_t task_pid) {
  if (w.cgroup_parent.empty()) return "";
  std::istringstream in(Slurp(absl::StrCat("/proc/", task_pid, "/cgroup")));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    const size_t slash = line.rfind('/');
    if (slash == std::string::npos || slash + 1 >= line.size()) break;
    return absl::StrCat(w.cgroup_parent, "/", line.substr(slash + 1));
  }
  Die(absl::StrCat("task ", task_pid, " is in no task cgroup of ", w.cgroup_parent));
}

// The task is frozen: its cgroup says so; without cgroups the worker SIGSTOPs its process group.
bool Frozen(const std::string& cgroup, pid_t pid) {
  if (!cgroup.empty()) return KeyValue(Slurp(cgroup + "/cgroup.events"), "frozen") == 1;
  std::string stat = Slurp(absl::StrCat("/proc/", pid, "/stat"));
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
}

bool Thawed(const std::string& cgroup, pid_t pid) {
  if (!cgroup.empty()) return KeyValue(Slurp(cgroup + "/cgroup.events"), "frozen") == 0;
  return !Frozen(cgroup, pid);
}

// Nothing of the task is left: its cgroup is empty or gone (without cgroups: its process).
bool TreeGone(const std::string& cgroup, int pidfd) {
  if (cgroup.empty()) return PidFdExited(pidfd);
  return KeyValue(Slurp(cgroup + "/cgroup.events"), "populated") != 1;
}

// --- The pool --------------------------------------------------------------------------------

struct Pool {
  std::string data_dir;
  pid_t coordinator = 0;
  std::string addr;
  std::string config;
  std::string join_token_file;     // a join token for any number of workers (0600)
  std::deque<WorkerProc> workers;  // a deque: references stay valid as workers are added
};

Pool g_pool;

void StartCoordinator() {
  g_pool.data_dir = g_run.dir + "/coordinator";
  const std::string log = g_run.dir + "/logs/coordinator.log";
  g_pool.coordinator = Spawn(
      {g_run.idlepool, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", g_pool.data_dir},
      log);
  Waiter w;
  std::string port;
  auto ok = w.Until(
      [&] {
        if (ChildGone(g_pool.coordinator)) Die("the coordinator exited (see logs/coordinator.log)");
        std::string text = Slurp(log);
        size_t at = text.find("listening on 127.0.0.1:");
        if (at == std::string::npos) return false;
        at += std::strlen("listening on 127.0.0.1:");
        size_t end = text.find_first_not_of("0123456789", at);
        port = text.substr(at, end - at);
        return !port.empty() && fs::exists(g_pool.data_dir + "/admin.sock");
      },
      20000, 20);
  if (!ok) Die("the coordinator did not start (see logs/coordinator.log)");
  g_pool.addr = "127.0.0.1:" + port;
  // The credentials, as a pool's admin hands them out: tokens made through the coordinator's
  // admin socket, into files in the scratch dir. The workers join with the join token (from
  // their --token-file); the client commands use the login made here with the access token
  // (kept under the scratch dir, not in the user's own login). No secret goes into any
  // process's argv or environment.
  ::setenv("IDLEPOOL_COORDINATOR", g_pool.addr.c_str(), 1);
  ::setenv("XDG_CONFIG_HOME", (g_run.dir + "/config").c_str(), 1);
  ::unsetenv("IDLEPOOL_TOKEN");
  ::unsetenv("IDLEPOOL_JOIN_TOKEN");
  auto join = Client(
      {"token", "create", "--role", "worker", "--ttl", "24h", "--data-dir", g_pool.data_dir});
  auto access = Client({"token", "create", "--role", "submit", "--name", "bench-preemption",
                        "--data-dir", g_pool.data_dir});
  if (!join || !access) Die("idlepool token create failed");
  g_pool.join_token_file = g_run.dir + "/join.token";
  WritePrivateFile(g_pool.join_token_file, *join);
  const std::string access_file = g_run.dir + "/submit.token";
  WritePrivateFile(access_file, *access);
  if (!Client({"login", g_pool.addr, "--token-file", access_file})) Die("idlepool login failed");
}

Json WorkerInfo(const std::string& name) {
  Json j = ClientJson({"workers", "--json"});
  if (!j.is_object() || !j.contains("workers")) return Json();
  for (const auto& w : j["workers"]) {
    if (w.value("worker", "") == name) return w;
  }
  return Json();
}

void WaitAccepting(const WorkerProc& w) {
  Waiter waiter;
  auto ok = waiter.Until(
      [&] {
        Json info = WorkerInfo(w.name);
        return info.is_object() && info.value("state", "") == "connected" &&
               info.value("accepting", false) && info.value("attempts_running", 0) == 0;
      },
      20000, 20);
  if (!ok) {
    Die(absl::StrCat("worker ", w.name, " is not accepting work after 20 s (see logs/", w.name,
                     ".log)"));
  }
}

WorkerProc& StartWorker(const std::string& name) {
  WorkerProc w;
  w.name = name;
  w.sensors = absl::StrCat(g_run.dir, "/sensors-", name);
  w.log = absl::StrCat(g_run.dir, "/logs/", name, ".log");
  fs::create_directories(w.sensors);
  Sense(w.sensors, "idle_seconds", "1000");
  Sense(w.sensors, "on_ac_power", "1");
  w.pid = Spawn({g_run.idlepool, "worker", "--name", name, "--join", g_pool.addr, "--token-file",
                 g_pool.join_token_file, "--work-dir", absl::StrCat(g_run.dir, "/work-", name),
                 "--slots", "1", "--sensors-dir", w.sensors, "--config", g_pool.config},
                w.log);
  // The worker names its cgroup parent in its log before it connects.
  Waiter waiter;
  const std::string kUnder = "own cgroups under ";
  bool no_cgroups = false;
  auto ok = waiter.Until(
      [&] {
        if (ChildGone(w.pid)) {
          Die(absl::StrCat("worker ", name, " exited (see logs/", name, ".log)"));
        }
        std::string text = Slurp(w.log);
        if (text.find("no cgroups for tasks") != std::string::npos) {
          no_cgroups = true;
          return true;
        }
        size_t at = text.find(kUnder);
        if (at == std::string::npos) return false;
        size_t end = text.find('\n', at);
        if (end == std::string::npos) return false;
        w.cgroup_parent = text.substr(at + kUnder.size(), end - at - kUnder.size());
        return true;
      },
      20000, 10);
  if (!ok) Die(absl::StrCat("worker ", name, " did not start (see logs/", name, ".log)"));
  if (no_cgroups) {
    std::printf("  note: worker %s runs tasks without cgroups (SIGSTOP instead of the freezer)\n",
                name.c_str());
  } else {
    std::lock_guard lock(g_mu);
    g_cgroups.push_back(w.cgroup_parent);
  }
  g_pool.workers.push_back(w);
  WaitAccepting(g_pool.workers.back());
  return g_pool.workers.back();
}

WorkerProc& WorkerNamed(const std::string& name) {
  for (auto& w : g_pool.workers) {
    if (w.name == name) return w;
  }
  Die("unknown worker " + name);
}

// Submits a one-task job running `sh -c SCRIPT`; returns its id.
uint64_t Submit(const std::string& name, const std::string& script) {
  const std::string path = absl::StrCat(g_run.dir, "/", name, ".toml");
  // A JSON string is a valid TOML basic string.
  WriteFile(path, absl::StrCat("name = ", Json(name).dump(), "\ncommand = [\"sh\", \"-c\", ",
                               Json(script).dump(), "]\ncount = 1\n"));
  auto out = Client({"submit", path});
  if (!out) Die(absl::StrCat("submit ", path, " failed"));
  uint64_t id = std::strtoull(out->c_str(), nullptr, 10);
  if (id == 0) Die(absl::StrCat("submit printed '", *out, "'"));
  return id;
}

Json JobStatus(uint64_t job) { return ClientJson({"status", std::to_string(job), "--json"}); }

void Cancel(uint64_t job) {
  if (!Client({"cancel", std::to_string(job)})) Die(absl::StrCat("cancel ", job, " failed"));
}

// Waits for the first attempt of `job` after `after` to start (on `worker`, when given).
Marker WaitStarted(Markers& markers, uint64_t job, uint64_t after, const std::string& worker = "",
                   int timeout_ms = 30000) {
  Waiter w;
  w.Watch(markers.dir(), IN_CLOSE_WRITE | IN_MOVED_TO);
  std::optional<Marker> m;
  auto ok = w.Until(
      [&] {
        m = markers.Newest(job, after, worker);
        return m.has_value();
      },
      timeout_ms);
  if (!ok) {
    Die(absl::StrCat("no attempt of job ", job, " started", worker.empty() ? "" : " on ", worker,
                     " within ", timeout_ms / 1000, " s"));
  }
  return *m;
}

// Cancels `job` and waits until the task's process (attempt `m`) has exited.
void CancelAndDrain(uint64_t job, const Marker& m) {
  int fd = PidFd(m.pid);
  Cancel(job);
  Waiter w;
  if (!w.Until([&] { return PidFdExited(fd); }, 20000, 5)) {
    Die(absl::StrCat("job ", job, ": task pid ", m.pid, " still runs 20 s after cancel"));
  }
  if (fd >= 0) ::close(fd);
}

// --- 1. Yield --------------------------------------------------------------------------------

struct YieldResult {
  std::vector<double> freeze_ms, thaw_ms, vacate_pid_ms, vacate_tree_ms;
};

YieldResult MeasureYield(Markers& markers, int repeats) {
  YieldResult r;
  WorkerProc& a = g_pool.workers.at(0);
  uint64_t job = Submit(
      "yield", MarkerPrefix(markers.dir()) + "while " + kWorkerAlive + "; do sleep 0.01; done");
  Marker m = WaitStarted(markers, job, 0, a.name);
  SleepMs(300);

  // Suspend: owner active -> frozen; owner idle again -> thawed.
  const std::string cg = AttemptCgroup(a, m.pid);
  for (int i = 0; i < repeats; ++i) {
    Waiter w;
    if (!cg.empty()) w.Watch(cg + "/cgroup.events", IN_MODIFY);
    const auto t0 = Sense(a.sensors, "idle_seconds", "0");
    auto t1 = w.Until([&] { return Frozen(cg, m.pid); }, 10000);
    if (!t1) Die(absl::StrCat("attempt ", m.attempt, " not frozen 10 s after idle_seconds = 0"));
    r.freeze_ms.push_back(Ms(t0, *t1));
    SleepMs(30);
    const auto t2 = Sense(a.sensors, "idle_seconds", "1000");
    auto t3 = w.Until([&] { return Thawed(cg, m.pid); }, 10000);
    if (!t3) {
      Die(absl::StrCat("attempt ", m.attempt, " still frozen 10 s after idle_seconds = 1000"));
    }
    r.thaw_ms.push_back(Ms(t2, *t3));
    SleepMs(50);
  }
  std::printf("  suspend: %d freezes and thaws of attempt %llu\n", repeats,
              static_cast<unsigned long long>(m.attempt));
  std::fflush(stdout);

  // Vacate: on battery -> the task's process exits (SIGTERM); back on AC -> the next attempt
  // starts here again (the only worker).
  for (int i = 0; i < repeats; ++i) {
    SleepMs(100);
    const std::string tcg = AttemptCgroup(a, m.pid);
    int fd = PidFd(m.pid);
    if (fd < 0) Die(absl::StrCat("task pid ", m.pid, " gone before the vacate"));
    Waiter w;
    if (!tcg.empty()) w.Watch(tcg + "/cgroup.events", IN_MODIFY);
    std::optional<Clock::time_point> pid_gone;
    const auto t0 = Sense(a.sensors, "on_ac_power", "0");
    auto t1 = w.Until(
        [&] {
          if (!pid_gone && PidFdExited(fd)) pid_gone = Clock::now();
          return pid_gone.has_value() && TreeGone(tcg, fd);
        },
        15000);
    if (!t1) Die(absl::StrCat("attempt ", m.attempt, " still running 15 s after on_ac_power = 0"));
    r.vacate_pid_ms.push_back(Ms(t0, *pid_gone));
    r.vacate_tree_ms.push_back(Ms(t0, *t1));
    ::close(fd);
    Sense(a.sensors, "on_ac_power", "1");
    m = WaitStarted(markers, job, m.attempt, a.name);
  }
  std::printf("  vacate: %d vacates (and restarts) of job %llu\n", repeats,
              static_cast<unsigned long long>(job));
  std::fflush(stdout);
  CancelAndDrain(job, m);
  return r;
}

// --- 2. Reassignment -------------------------------------------------------------------------

struct ReassignSample {
  double total_ms = 0;     // on_ac_power 0 on the holder -> the task's marker on the other
  double gone_ms = -1;     // -> the old attempt's process exited
  int64_t t0_wall_ms = 0;  // the sensor change, wall clock (to line up with pool.db)
  uint64_t old_attempt = 0, new_attempt = 0;
};

struct ReassignResult {
  std::vector<ReassignSample> samples;
  uint64_t job = 0;
  // From the coordinator's attempt records (ms after the sensor change, medians).
  std::vector<double> ended_ms, assigned_ms;
  std::vector<double> start_ms;  // assigned -> the task's first line ran on the other worker
};

// Vacates the holder of `m`'s task by pulling its charger; waits until the task runs on the
// other worker. Returns the sample and (through `m`) the new attempt.
ReassignSample MoveOnce(Markers& markers, uint64_t job, Marker& m) {
  WorkerProc& from = WorkerNamed(m.worker);
  WorkerProc& to = &from == &g_pool.workers[0] ? g_pool.workers[1] : g_pool.workers[0];
  WaitAccepting(to);
  SleepMs(100);
  ReassignSample s;
  s.old_attempt = m.attempt;
  int fd = PidFd(m.pid);
  if (fd < 0) Die(absl::StrCat("task pid ", m.pid, " gone before the vacate"));
  Waiter w;
  w.Watch(markers.dir(), IN_CLOSE_WRITE | IN_MOVED_TO);
  std::optional<Clock::time_point> gone;
  std::optional<Marker> next;
  s.t0_wall_ms = WallMs();
  const auto t0 = Sense(from.sensors, "on_ac_power", "0");
  auto t1 = w.Until(
      [&] {
        if (!gone && PidFdExited(fd)) gone = Clock::now();
        next = markers.Newest(job, m.attempt, to.name);
        return next.has_value();
      },
      30000);
  if (!t1) {
    Die(absl::StrCat("job ", job, " not running on ", to.name, " 30 s after ", from.name,
                     " went on battery"));
  }
  ::close(fd);
  s.total_ms = Ms(t0, *t1);
  if (gone) s.gone_ms = Ms(t0, *gone);
  s.new_attempt = next->attempt;
  Sense(from.sensors, "on_ac_power", "1");
  m = *next;
  return s;
}

ReassignResult MeasureReassign(Markers& markers, int repeats) {
  ReassignResult r;
  r.job = Submit("reassign",
                 MarkerPrefix(markers.dir()) + "while " + kWorkerAlive + "; do sleep 0.5; done");
  Marker m = WaitStarted(markers, r.job, 0);
  SleepMs(200);
  for (int i = 0; i < repeats; ++i) r.samples.push_back(MoveOnce(markers, r.job, m));
  CancelAndDrain(r.job, m);

  // Where the time went, from the coordinator's records: when it recorded the old attempt's end
  // (the worker's PREEMPTED report) and when it assigned the new one.
  std::string db = g_pool.data_dir + "/pool.db";
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) Die("pipe");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 2);
    std::string q = absl::StrCat(
        "SELECT id, started_ms, ended_ms FROM attempts WHERE job_id = ", r.job, " ORDER BY id");
    ::execlp("sqlite3", "sqlite3", "-readonly", "-json", db.c_str(), q.c_str(),
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  ::waitpid(pid, nullptr, 0);
  Json j = Json::parse(out, nullptr, false);
  if (!j.is_array()) {
    std::printf("  note: no breakdown (sqlite3 could not read %s)\n", db.c_str());
    return r;
  }
  std::map<uint64_t, std::pair<int64_t, int64_t>> at;  // id -> (started_ms, ended_ms)
  for (const auto& row : j) {
    at[row.value("id", uint64_t{0})] = {row.value("started_ms", int64_t{0}),
                                        row.value("ended_ms", int64_t{0})};
  }
  for (const auto& s : r.samples) {
    auto o = at.find(s.old_attempt), nw = at.find(s.new_attempt);
    if (o == at.end() || nw == at.end() || o->second.second == 0) continue;
    r.ended_ms.push_back(static_cast<double>(o->second.second - s.t0_wall_ms));
    r.assigned_ms.push_back(static_cast<double>(nw->second.first - s.t0_wall_ms));
    r.start_ms.push_back(s.total_ms - r.assigned_ms.back());
  }
  return r;
}

// --- 3. Lost work ----------------------------------------------------------------------------

struct LostVariant {
  LostVariant(std::string n, std::string w, std::string s, bool c)
      : name(std::move(n)), what(std::move(w)), script(std::move(s)), checkpoints(c) {}
  std::string name;
  std::string what;
  std::string script;  // after the marker prefix
  bool checkpoints;    // the task keeps its state in $IDLEPOOL_CHECKPOINT_DIR
  std::vector<double> lost_s;
  std::vector<double> ran_s;  // how long each attempt ran before its vacate
};

// Each attempt runs `run_ms` plus a fraction of a second that differs per repeat ((i + 0.5) /
// repeats of 1 s), so the vacates fall at different points of a 1 s checkpoint period rather
// than always just after a checkpoint.
void MeasureLost(Markers& markers, LostVariant& v, int repeats, int run_ms) {
  uint64_t job = Submit(absl::StrCat("lost-", v.name), MarkerPrefix(markers.dir()) + v.script);
  Marker m = WaitStarted(markers, job, 0);
  auto started = Clock::now();
  double lost_before = 0;
  for (int i = 0; i < repeats; ++i) {
    SleepMs(run_ms + 1000 * (2 * i + 1) / (2 * repeats));
    WorkerProc& from = WorkerNamed(m.worker);
    v.ran_s.push_back(Ms(started, Sense(from.sensors, "on_ac_power", "0")) / 1000.0);
    Json st;
    Waiter w;
    auto ok = w.Until(
        [&] {
          st = JobStatus(job);
          return st.is_object() && st.value("preemptions", 0) >= i + 1;
        },
        30000, 20);
    if (!ok) Die(absl::StrCat("job ", job, ": preemption ", i + 1, " not recorded within 30 s"));
    const double lost = st.value("lost_seconds", 0.0);
    v.lost_s.push_back(lost - lost_before);
    lost_before = lost;
    Sense(from.sensors, "on_ac_power", "1");
    m = WaitStarted(markers, job, m.attempt);
    started = Clock::now();
  }
  CancelAndDrain(job, m);
}

// --- 4. The idle worker ----------------------------------------------------------------------

// utime + stime of `pid`, in clock ticks.
long long CpuTicks(pid_t pid) {
  std::string stat = Slurp(absl::StrCat("/proc/", pid, "/stat"));
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) Die(absl::StrCat("cannot read /proc/", pid, "/stat"));
  std::istringstream in(stat.substr(paren + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) stime = std::atoll(field.c_str());
  }
  return utime + stime;
}

double RssMb(pid_t pid) {
  std::istringstream in(Slurp(absl::StrCat("/proc/", pid, "/status")));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return -1;
}

struct IdleFigure {
  std::string name;
  double cpu_pct = 0;
  double rss_mb = 0;
};

std::vector<IdleFigure> MeasureIdle(int window_ms) {
  std::vector<std::pair<std::string, pid_t>> procs;
  for (const auto& w : g_pool.workers) procs.emplace_back("worker " + w.name, w.pid);
  procs.emplace_back("coordinator", g_pool.coordinator);
  std::vector<long long> before;
  for (const auto& [name, pid] : procs) before.push_back(CpuTicks(pid));
  const auto t0 = Clock::now();
  SleepMs(window_ms);
  const double wall_s = Ms(t0, Clock::now()) / 1000.0;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::vector<IdleFigure> out;
  for (size_t i = 0; i < procs.size(); ++i) {
    IdleFigure f;
    f.name = procs[i].first;
    f.cpu_pct = 100.0 * static_cast<double>(CpuTicks(procs[i].second) - before[i]) / tick / wall_s;
    f.rss_mb = RssMb(procs[i].second);
    out.push_back(f);
  }
  return out;
}

// --- Report ----------------------------------------------------------------------------------

const char* Met(bool ok) { return ok ? "met" : "MISSED"; }

void PrintRow(const char* what, const Dist& d, const std::string& target, const char* verdict) {
  std::printf("  %-42s %4zu  %8.1f  %8.1f  %8.1f   %-16s %s\n", what, d.n, d.p50, d.p99, d.max,
              target.c_str(), verdict);
}

// The 1-minute load average: other work on the machine shows in the tails.
std::string LoadAverage() {
  std::istringstream in(Slurp("/proc/loadavg"));
  std::string one;
  in >> one;
  return one;
}

std::string SelfDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 30;
  bool quick = false;
  bool repeats_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--keep") {
      g_run.keep = true;
    } else if (a == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
      repeats_set = true;
    } else if (a == "--idlepool" && i + 1 < argc) {
      g_run.idlepool = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--repeats N (30)] [--quick] [--keep] [--idlepool PATH]\n"
                   "  --quick: 10 repeats, 2 lost-work vacates per task, a 5 s idle window\n"
                   "  --keep: keep the scratch dir (logs, pool.db) after the run\n",
                   argv[0]);
      return 2;
    }
  }
  if (quick && !repeats_set) repeats = 10;
  const int lost_repeats = quick ? 2 : 3;
  const int lost_run_ms = quick ? 2000 : 3000;
  const int idle_window_ms = quick ? 5000 : 10000;

  if (g_run.idlepool.empty()) g_run.idlepool = (fs::path(SelfDir()) / ".." / "idlepool").string();
  if (::access(g_run.idlepool.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bench/preemption: %s is not executable (pass --idlepool PATH)\n",
                 g_run.idlepool.c_str());
    return 2;
  }
  g_run.idlepool = fs::canonical(g_run.idlepool).string();
  const std::string count_sh = IDLEPOOL_SOURCE_DIR "/examples/checkpoint-count/count.sh";
  if (::access(count_sh.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "bench/preemption: %s not found\n", count_sh.c_str());
    return 2;
  }

  HandleSignals();
  ::signal(SIGPIPE, SIG_IGN);

  char tmpl[] = "/tmp/idlepool-bench-preemption.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) Die("mkdtemp");
  g_run.dir = tmpl;
  fs::create_directories(g_run.dir + "/logs");
  fs::create_directories(g_run.dir + "/markers");
  g_pool.config = g_run.dir + "/owner.toml";
  WriteFile(g_pool.config, kOwnerToml);
  Markers markers(g_run.dir + "/markers");

  std::printf("bench/preemption: %s, %u cores, loopback; %d repeats%s; load average %s\n",
              g_run.idlepool.c_str(), std::thread::hardware_concurrency(), repeats,
              quick ? " (--quick)" : "", LoadAverage().c_str());
  std::fflush(stdout);
  const auto bench_start = Clock::now();

  StartCoordinator();
  StartWorker("a");

  std::printf("[1/4] yield on worker a (task: sh loop of sleep 0.01)\n");
  std::fflush(stdout);
  YieldResult y = MeasureYield(markers, repeats);

  StartWorker("b");
  std::printf("[2/4] reassignment between workers a and b (task: sh loop of sleep 0.5)\n");
  std::fflush(stdout);
  ReassignResult re = MeasureReassign(markers, repeats);

  std::printf("[3/4] lost work per vacate after %.0f-%.0f s of running, %d vacates per task\n",
              lost_run_ms / 1000.0, lost_run_ms / 1000.0 + 1, lost_repeats);
  std::fflush(stdout);
  // The same count, 0.1 s per step (1 s per step for the periodic one).
  std::vector<LostVariant> variants = {
      {"checkpoint", "count.sh: checkpoint each 0.1 s step + on SIGTERM",
       absl::StrCat("exec sh ", count_sh, " 600 0.1"), true},
      {"periodic", "checkpoint each 1 s step, no SIGTERM handler",
       absl::StrCat("CK=$IDLEPOOL_CHECKPOINT_DIR/step; i=0; [ -s $CK ] && i=$(cat $CK); while ",
                    kWorkerAlive,
                    "; do sleep 1; i=$((i + 1)); echo $i > $CK.tmp && mv $CK.tmp $CK; done"),
       true},
      {"none", "same count, no checkpoint (state in task dir)",
       absl::StrCat("S=$IDLEPOOL_TASK_DIR/step; i=0; while ", kWorkerAlive,
                    "; do sleep 0.1; i=$((i + 1)); echo $i > $S.tmp && mv $S.tmp $S; done"),
       false},
  };
  for (auto& v : variants) {
    MeasureLost(markers, v, lost_repeats, lost_run_ms);
    std::string runs;
    for (size_t k = 0; k < v.lost_s.size(); ++k) {
      absl::StrAppend(&runs, k ? ", " : "",
                      absl::StrFormat("%.2f of %.2f", v.lost_s[k], v.ran_s[k]));
    }
    std::printf("  %s: lost %s s run\n", v.name.c_str(), runs.c_str());
    std::fflush(stdout);
  }

  std::printf("[4/4] idle workers, connected, no work: %.0f s window\n", idle_window_ms / 1000.0);
  std::fflush(stdout);
  SleepMs(1000);  // let the last cancel settle
  std::vector<IdleFigure> idle = MeasureIdle(idle_window_ms);
  const double bench_s = Ms(bench_start, Clock::now()) / 1000.0;

  // --- The table ---
  Dist freeze = Summarize(y.freeze_ms), thaw = Summarize(y.thaw_ms);
  Dist vac_pid = Summarize(y.vacate_pid_ms), vac_tree = Summarize(y.vacate_tree_ms);
  std::vector<double> total, gone;
  for (const auto& s : re.samples) {
    total.push_back(s.total_ms);
    if (s.gone_ms >= 0) gone.push_back(s.gone_ms);
  }
  Dist reassign = Summarize(total), reassign_gone = Summarize(gone);
  Dist reassign_ended = Summarize(re.ended_ms), reassign_assigned = Summarize(re.assigned_ms);
  Dist reassign_start = Summarize(re.start_ms);

  const bool yield_ok = freeze.p99 <= kYieldP99TargetMs && vac_pid.p99 <= kYieldP99TargetMs;
  const bool reassign_ok = reassign.p50 <= kReassignP50TargetMs;

  std::printf("\nlatency (ms, from the sensor file's rename)  %4s  %8s  %8s  %8s   %-16s %s\n", "n",
              "p50", "p99", "max", "target", "");
  PrintRow("yield, suspend: idle_seconds 0 -> frozen", freeze,
           absl::StrFormat("p99 <= %.0f", kYieldP99TargetMs), Met(freeze.p99 <= kYieldP99TargetMs));
  PrintRow("yield, vacate: on_ac_power 0 -> pid exited", vac_pid,
           absl::StrFormat("p99 <= %.0f", kYieldP99TargetMs),
           Met(vac_pid.p99 <= kYieldP99TargetMs));
  PrintRow("  vacate: -> whole task tree gone", vac_tree, "", "");
  PrintRow("resume: idle_seconds 1000 -> thawed", thaw, "", "");
  PrintRow("reassign: on battery -> running on other", reassign,
           absl::StrFormat("p50 <= %.0f", kReassignP50TargetMs), Met(reassign_ok));
  PrintRow("  old task's process exited", reassign_gone, "", "");
  PrintRow("  coordinator recorded the preemption", reassign_ended, "", "");
  PrintRow("  coordinator assigned the next attempt", reassign_assigned, "", "");
  PrintRow("  (assigned -> task's first line ran)", reassign_start, "", "");

  std::printf(
      "\nlost work per vacate (s; %d vacates per task, each after %.0f-%.0f s of running; "
      "checkpoint_interval_seconds = %.0f)\n",
      lost_repeats, lost_run_ms / 1000.0, lost_run_ms / 1000.0 + 1, kCheckpointIntervalS);
  bool lost_ok = true;
  Json lost_json = Json::object();
  for (const auto& v : variants) {
    Dist d = Summarize(v.lost_s);
    const bool ok = d.max <= kCheckpointIntervalS;
    if (v.checkpoints) lost_ok = lost_ok && ok;
    std::printf("  %-11s %-50s median %5.2f  max %5.2f   %s\n", v.name.c_str(), v.what.c_str(),
                d.p50, d.max,
                v.checkpoints
                    ? absl::StrFormat("target <= %.0f s: %s", kCheckpointIntervalS, Met(ok)).c_str()
                    : "(no checkpoint: loses its run)");
    auto ms = [](const std::vector<double>& xs) {
      Json a = Json::array();
      for (double x : xs) a.push_back(std::round(x * 1000) / 1000);
      return a;
    };
    lost_json[v.name] = {{"median_s", std::round(d.p50 * 1000) / 1000},
                         {"max_s", std::round(d.max * 1000) / 1000},
                         {"samples_s", ms(v.lost_s)},
                         {"ran_s", ms(v.ran_s)}};
  }

  std::printf("\nidle, connected, no work (%.0f s window; CPU resolution %.2f %%)\n",
              idle_window_ms / 1000.0,
              100.0 / static_cast<double>(::sysconf(_SC_CLK_TCK)) / (idle_window_ms / 1000.0));
  bool idle_ok = true;
  Json idle_json = Json::object();
  for (const auto& f : idle) {
    const bool is_worker = f.name.rfind("worker", 0) == 0;
    const bool ok = f.cpu_pct < kIdleCpuTargetPct && f.rss_mb < kIdleRssTargetMb;
    if (is_worker) idle_ok = idle_ok && ok;
    std::printf("  %-12s CPU %5.2f %% of a core  RSS %5.1f MB   %s\n", f.name.c_str(), f.cpu_pct,
                f.rss_mb,
                is_worker ? absl::StrFormat("target < %.0f %%, < %.0f MB: %s", kIdleCpuTargetPct,
                                            kIdleRssTargetMb, Met(ok))
                                .c_str()
                          : "");
    idle_json[f.name] = {{"cpu_pct", std::round(f.cpu_pct * 100) / 100},
                         {"rss_mb", std::round(f.rss_mb * 10) / 10}};
  }
  std::printf("\n(%.0f s in all; load average at the end %s)\n", bench_s, LoadAverage().c_str());

  Json j = {
      {"bench", "preemption"},
      {"cores", std::thread::hardware_concurrency()},
      {"repeats", repeats},
      {"yield_suspend_ms", ToJson(freeze)},
      {"yield_vacate_pid_ms", ToJson(vac_pid)},
      {"yield_vacate_tree_ms", ToJson(vac_tree)},
      {"resume_ms", ToJson(thaw)},
      {"reassign_ms", ToJson(reassign)},
      {"reassign_old_exited_ms", ToJson(reassign_gone)},
      {"reassign_preemption_recorded_ms", ToJson(reassign_ended)},
      {"reassign_next_assigned_ms", ToJson(reassign_assigned)},
      {"reassign_assigned_to_started_ms", ToJson(reassign_start)},
      {"lost", lost_json},
      {"checkpoint_interval_s", kCheckpointIntervalS},
      {"idle", idle_json},
      {"targets",
       {{"yield_p99_le_200ms", yield_ok},
        {"reassign_p50_le_250ms", reassign_ok},
        {"lost_le_checkpoint_interval", lost_ok},
        {"idle_worker_lt_1pct_30mb", idle_ok}}},
      {"seconds", std::round(bench_s)},
  };
  std::fflush(stdout);
  Cleanup();
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
