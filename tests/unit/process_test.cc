// Process: own process group, capped logs, whole-tree kill, timeouts.
#include "platform/process.h"

#include <fcntl.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "platform/cgroup.h"
#include "platform/random.h"

namespace idlepool::platform {
namespace {
namespace fs = std::filesystem;

// True once `pid` is gone or a zombie. Polls for up to 10 s: a SIGKILLed process dies
// asynchronously, but one that was never signalled (sleep 30) stays alive past the bound.
bool DiesSoon(pid_t pid) {
  for (int i = 0; i < 1000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line) || line.find(") Z") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class ProcessTest : public ::testing::Test {
 public:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("process-test-" + RandomHex(6));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  SpawnOptions Opts(std::vector<std::string> argv) {
    SpawnOptions o;
    o.argv = std::move(argv);
    o.env = {"PATH=/usr/bin:/bin"};
    o.cwd = dir_.string();
    o.stdout_path = (dir_ / "stdout.log").string();
    o.stderr_path = (dir_ / "stderr.log").string();
    return o;
  }
  std::string Read(const std::string& name) {
    std::ifstream in(dir_ / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  const fs::path& dir() const { return dir_; }

 protected:
  fs::path dir_;
};

TEST_F(ProcessTest, ExitCodeAndLogs) {
  auto p = Process::Start(Opts({"sh", "-c", "echo out; echo err >&2; exit 7"}));
  ASSERT_TRUE(p.ok()) << p.status();
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.exit_code, 7);
  EXPECT_EQ(e.signal, 0);
  EXPECT_FALSE(e.timed_out);
  EXPECT_EQ(Read("stdout.log"), "out\n");
  EXPECT_EQ(Read("stderr.log"), "err\n");
  EXPECT_EQ(e.stderr_tail, "err\n");
}

// A worker raised its own descriptor limit (platform/fd_limit.h); its task gets the one it
// started with.
TEST_F(ProcessTest, TheTaskGetsTheDescriptorLimitItIsGiven) {
  SpawnOptions o = Opts({"sh", "-c", "ulimit -n"});
  o.nofile_soft = 200;
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000)).exit_code, 0);
  EXPECT_EQ(Read("stdout.log"), "200\n");
}

// Out of descriptors is not the task's fault: kResourceExhausted, which the worker reports as a
// machine fault (worker/attempt_error.h).
TEST_F(ProcessTest, OutOfDescriptorsIsResourceExhausted) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int probe = ::dup(0);
  ASSERT_GE(probe, 0);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(probe) + 8;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> filler{probe};
  for (int fd; (fd = ::dup(0)) >= 0;) filler.push_back(fd);
  auto p = Process::Start(Opts({"true"}));
  for (int fd : filler) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted) << p.status();
  EXPECT_NE(p.status().message().find("pipe2"), std::string_view::npos) << p.status();
}

TEST_F(ProcessTest, RunsInTaskDirWithGivenEnvironment) {
  auto o = Opts({"sh", "-c", "pwd; echo $IDLEPOOL_X"});
  o.env.push_back("IDLEPOOL_X=hello");
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok());
  (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(Read("stdout.log"), fs::canonical(dir_).string() + "\nhello\n");
}

// "./prog" is the task dir's prog, not one in the worker's own working directory (which has
// none here, or a different one).
TEST_F(ProcessTest, RelativeCommandIsFoundInTheTaskDir) {
  {
    std::ofstream f(dir_ / "prog.sh");
    f << "#!/bin/sh\necho from the task dir\n";
  }
  fs::permissions(dir_ / "prog.sh", fs::perms::owner_all);
  const fs::path elsewhere = dir_.string() + "-worker-cwd";
  fs::create_directories(elsewhere);
  {
    std::ofstream f(elsewhere / "prog.sh");
    f << "#!/bin/sh\necho from the worker dir\n";
  }
  fs::permissions(elsewhere / "prog.sh", fs::perms::owner_all);
  const fs::path before = fs::current_path();
  fs::current_path(fs::temp_directory_path());  // no prog.sh here
  auto p = Process::Start(Opts({"./prog.sh"}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000)).exit_code, 0);
  EXPECT_EQ(Read("stdout.log"), "from the task dir\n");
  fs::current_path(elsewhere);  // a prog.sh here too: still the task dir's
  auto q = Process::Start(Opts({"./prog.sh"}));
  ASSERT_TRUE(q.ok()) << q.status();
  (*q)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(Read("stdout.log"), "from the task dir\n");
  fs::current_path(before);
  fs::remove_all(elsewhere);
}

TEST_F(ProcessTest, MissingProgramIsNotFound) {
  auto p = Process::Start(Opts({"no-such-program-idlepool"}));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("no-such-program-idlepool"), std::string::npos);
}

TEST_F(ProcessTest, LogIsCappedButEverythingIsDrained) {
  // 16 MiB of output against a 1 MiB head: the task finishes (never blocks on a full pipe), the
  // log keeps the head, a note, and the tail.
  auto o = Opts({"sh", "-c", "head -c 16777216 /dev/zero | tr '\\0' x; echo END"});
  o.log_head_bytes = 1 << 20;
  o.log_tail_bytes = 4096;
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok());
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.exit_code, 0);
  std::string log = Read("stdout.log");
  EXPECT_LT(log.size(), (1u << 20) + 8192);
  EXPECT_NE(log.find("bytes dropped"), std::string::npos);
  EXPECT_EQ(log.substr(log.size() - 4), "END\n");
}

TEST_F(ProcessTest, TimeoutKillsTheWholeGroup) {
  // The command starts a grandchild that would outlive it; both must be gone after the timeout.
  auto p = Process::Start(Opts({"sh", "-c", "sleep 30 & echo $! > child.pid; wait"}));
  ASSERT_TRUE(p.ok());
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(300), std::chrono::milliseconds(200));
  EXPECT_TRUE(e.timed_out);
  pid_t child = std::stoi(Read("child.pid"));
  // The grandchild was in the group: it dies with it instead of sleeping on.
  EXPECT_TRUE(DiesSoon(child)) << "grandchild " << child << " still alive";
}

TEST_F(ProcessTest, KillFromAnotherThreadEndsWait) {
  auto p = Process::Start(Opts({"sleep", "30"}));
  ASSERT_TRUE(p.ok());
  Process* proc = p->get();
  std::thread killer([proc] { proc->Kill(SIGKILL); });
  ExitInfo e = proc->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  killer.join();
  EXPECT_TRUE(e.killed);
  EXPECT_EQ(e.signal, SIGKILL);
}

TEST_F(ProcessTest, StragglersAreKilledWhenTheLeaderExits) {
  auto p = Process::Start(Opts({"sh", "-c", "sleep 30 & echo $! > child.pid"}));
  ASSERT_TRUE(p.ok());
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.exit_code, 0);
  pid_t child = std::stoi(Read("child.pid"));
  EXPECT_TRUE(DiesSoon(child)) << "straggler " << child << " still alive";
}

TEST_F(ProcessTest, WaitEndsWhenAnEscapedDaemonKeepsThePipeBusy) {
  // A daemon that left the process group (setsid) and keeps writing to the inherited stdout
  // must not keep the attempt alive forever once the command itself has exited.
  auto p = Process::Start(Opts({"sh", "-c",
                                "setsid sh -c 'echo $$ > daemon.pid; while :; do echo tick; "
                                "sleep 0.05; done' & sleep 0.3; exit 4"}));
  ASSERT_TRUE(p.ok());
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.exit_code, 4);
  pid_t daemon = std::stoi(Read("daemon.pid"));
  ::kill(daemon, SIGKILL);  // outside our group: the test cleans up after itself
  EXPECT_TRUE(DiesSoon(daemon));
}


// Reads field `n` (1-based, as in proc(5)) of /proc/PID/stat, or "" when gone.
std::string StatField(pid_t pid, int n) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return "";
  size_t close = line.rfind(')');
  std::istringstream rest(line.substr(close + 2));
  std::string f;
  for (int i = 3; i <= n; ++i) rest >> f;
  return f;
}

pid_t ReadPid(const fs::path& file) {
  for (int i = 0; i < 1000; ++i) {
    std::ifstream in(file);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

class CgroupProcessTest : public ProcessTest {
 protected:
  void SetUp() override {
    ProcessTest::SetUp();
    std::string why;
    groups_ = TaskCgroups::Open("test-" + RandomHex(4), &why);
    if (!groups_) GTEST_SKIP() << "no cgroup v2 here: " << why;
  }
  std::unique_ptr<TaskCgroups> groups_;
};

// The child leaves the task's process group and session (setsid) and forks again: a signal to
// the process group cannot reach it, the cgroup can.
constexpr const char* kEscapee =
    "setsid sh -c 'sleep 300 & echo $! > escapee.pid; wait' </dev/null >/dev/null 2>&1 & "
    "while [ ! -s escapee.pid ]; do sleep 0.01; done; ";

// Runs kEscapee followed by `then` in a new group; the escapee's pid comes back in *escapee.
struct InGroup {
  std::unique_ptr<TaskCgroup> group;
  std::unique_ptr<Process> process;
};
InGroup StartWithEscapee(CgroupProcessTest& t, TaskCgroups& groups, const std::string& name,
                         const std::string& then, pid_t* escapee) {
  InGroup g;
  auto group = groups.Create(name);
  EXPECT_TRUE(group.ok()) << group.status();
  if (!group.ok()) return g;
  g.group = std::move(*group);
  SpawnOptions o = t.Opts({"sh", "-c", std::string(kEscapee) + then});
  o.cgroup = g.group.get();
  auto p = Process::Start(o);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return g;
  g.process = std::move(*p);
  *escapee = ReadPid(t.dir() / "escapee.pid");
  return g;
}

TEST_F(CgroupProcessTest, EscapeeIsKilledWhenTheLeaderExits) {
  pid_t escapee = -1;
  InGroup g = StartWithEscapee(*this, *groups_, "a1", "exit 0", &escapee);
  ASSERT_TRUE(g.process);
  auto* p = &g.process;
  auto* group = &g.group;
  const pid_t leader = (*p)->pid();
  ASSERT_GT(escapee, 0);
  EXPECT_NE(StatField(escapee, 5), std::to_string(leader)) << "escapee still in the group";
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_TRUE(DiesSoon(escapee));
  p->reset();
  group->reset();  // removes the group: it must be empty
}

TEST_F(CgroupProcessTest, KillReachesAnEscapeeOfARunningTask) {
  pid_t escapee = -1;
  InGroup g = StartWithEscapee(*this, *groups_, "a2", "sleep 300", &escapee);
  ASSERT_TRUE(g.process);
  auto* p = &g.process;
  ASSERT_GT(escapee, 0);
  std::thread killer([&] { (*p)->Kill(); });
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  killer.join();
  EXPECT_TRUE(e.killed);
  EXPECT_TRUE(DiesSoon(escapee));
}

TEST_F(CgroupProcessTest, LeftoverGroupsOfAnEarlierRunAreKilled) {
  // A worker SIGKILLed while a task ran leaves the group and its processes behind.
  pid_t escapee = -1;
  InGroup g = StartWithEscapee(*this, *groups_, "a3", "sleep 300", &escapee);
  ASSERT_TRUE(g.process);
  auto* p = &g.process;
  ASSERT_GT(escapee, 0);
  EXPECT_EQ(groups_->KillLeftovers(), 1);
  EXPECT_TRUE(DiesSoon(escapee));
  EXPECT_TRUE(DiesSoon((*p)->pid()));
}

// A task that appends a line every 10 ms makes no progress while suspended, and continues after.
void ExpectSuspendStopsProgress(Process& p, const fs::path& ticks) {
  auto size = [&] {
    std::error_code ec;
    auto n = fs::file_size(ticks, ec);
    return ec ? 0 : n;
  };
  for (int i = 0; i < 1000 && size() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GT(size(), 0u);
  ASSERT_TRUE(p.Suspend().ok());
  const auto frozen_at = size();
  // Observing that nothing happens needs a span of time; 300 ms is 30 of the task's ticks.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(size(), frozen_at);
  p.Resume();
  bool grew = false;
  for (int i = 0; i < 1000 && !grew; ++i) {
    grew = size() > frozen_at;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(grew);
  p.Kill();
}

TEST_F(CgroupProcessTest, SuspendFreezesTheWholeTreeAndResumeThawsIt) {
  auto group = groups_->Create("a4");
  ASSERT_TRUE(group.ok()) << group.status();
  // The ticking loop runs in a grandchild outside the process group.
  SpawnOptions o = Opts({"sh", "-c",
                         "setsid sh -c 'while :; do echo t >> ticks; sleep 0.01; done' "
                         "</dev/null >/dev/null 2>&1 & sleep 300"});
  o.cgroup = group->get();
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::thread waiter([&] { (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000)); });
  ExpectSuspendStopsProgress(**p, dir_ / "ticks");
  waiter.join();
}

TEST_F(ProcessTest, WithoutACgroupSuspendStopsTheProcessGroup) {
  auto p = Process::Start(Opts({"sh", "-c", "while :; do echo t >> ticks; sleep 0.01; done"}));
  ASSERT_TRUE(p.ok()) << p.status();
  std::thread waiter([&] { (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000)); });
  ExpectSuspendStopsProgress(**p, dir_ / "ticks");
  waiter.join();
}

TEST_F(ProcessTest, LowPriorityTasksRunAsSchedIdleAtNice19) {
  SpawnOptions o = Opts({"sleep", "300"});
  o.low_priority = true;
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(StatField((*p)->pid(), 19), "19");  // nice
  EXPECT_EQ(StatField((*p)->pid(), 41), "5");   // policy: SCHED_IDLE
  auto normal = Process::Start(Opts({"sleep", "300"}));
  ASSERT_TRUE(normal.ok()) << normal.status();
  EXPECT_EQ(StatField((*normal)->pid(), 41), "0");  // SCHED_OTHER
  (*p)->Kill();
  (*normal)->Kill();
}

TEST_F(ProcessTest, TerminateLetsATaskSaveItsWorkThenKillsOneThatIgnoresIt) {
  auto polite = Process::Start(
      Opts({"sh", "-c", "trap 'echo saved > state; exit 0' TERM; touch ready; "
                        "while :; do sleep 0.01; done"}));
  ASSERT_TRUE(polite.ok()) << polite.status();
  for (int i = 0; i < 1000 && !fs::exists(dir_ / "ready"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (*polite)->Terminate(std::chrono::seconds(30));
  ExitInfo e = (*polite)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(Read("state"), "saved\n");

  fs::remove(dir_ / "ready");
  auto stubborn = Process::Start(
      Opts({"sh", "-c", "trap '' TERM; touch ready; while :; do sleep 0.01; done"}));
  ASSERT_TRUE(stubborn.ok()) << stubborn.status();
  for (int i = 0; i < 1000 && !fs::exists(dir_ / "ready"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (*stubborn)->Terminate(std::chrono::milliseconds(200));
  e = (*stubborn)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.signal, SIGKILL);
}

TEST_F(ProcessTest, MissingCommandIsNotFound) {
  auto p = Process::Start(Opts({"no-such-command-xyz"}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound) << p.status();
  auto q = Process::Start(Opts({"/etc/passwd"}));  // not executable
  EXPECT_EQ(q.status().code(), absl::StatusCode::kNotFound) << q.status();
}

TEST_F(ProcessTest, TimeSpentSuspendedDoesNotCountTowardTheTimeout) {
  // About 1 s of running time under a 3 s timeout, suspended for 3 s in the middle: 4 s of wall
  // time, but only the running time counts.
  auto p = Process::Start(Opts({"sh", "-c",
                                "i=0; while [ $i -lt 10 ]; do sleep 0.1; i=$((i+1)); "
                                "[ $i = 2 ] && touch started; done; exit 0"}));
  ASSERT_TRUE(p.ok()) << p.status();
  std::thread owner([&] {
    for (int i = 0; i < 1000 && !fs::exists(dir_ / "started"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE((*p)->Suspend().ok());
    std::this_thread::sleep_for(std::chrono::seconds(3));  // the owner's 3 s at the keyboard
    (*p)->Resume();
  });
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(3000), std::chrono::milliseconds(1000));
  owner.join();
  EXPECT_FALSE(e.timed_out);
  EXPECT_EQ(e.exit_code, 0);
}

// What a restarted worker uses to find the tasks its predecessor left running: the groups of
// the processes whose environment holds its work dir, and a SIGKILL to each.
TEST_F(ProcessTest, ProcessGroupsWithEnvFindsAGroupByItsEnvironmentAndKillsIt) {
  const std::string mark = "IDLEPOOL_TEST_MARK=" + RandomHex(8);
  SpawnOptions o = Opts({"sh", "-c", "sleep 30 & wait"});
  o.env.push_back(mark);
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<pid_t> groups;
  for (int i = 0; i < 1000 && groups.empty(); ++i) {  // until the child has exec'd: a bound
    groups = ProcessGroupsWithEnv(mark);
    if (groups.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(groups, std::vector<pid_t>{(*p)->pid()});
  EXPECT_TRUE(ProcessGroupsWithEnv(mark + "0").empty());  // the whole entry, not a prefix
  KillProcessGroup((*p)->pid());
  ExitInfo e = (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.signal, SIGKILL);  // from outside: not Process::Kill
  EXPECT_FALSE(e.timed_out);
}

// No descriptor of the starting process crosses into a task but its stdio: not one opened without
// O_CLOEXEC (as Boost.Asio opens its sockets), not a listening socket.
TEST_F(ProcessTest, TheTaskGetsNoDescriptorButItsStdio) {
  const int file = ::open(dir().c_str(), O_RDONLY | O_DIRECTORY);  // no O_CLOEXEC
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);          // nor here
  ASSERT_GE(file, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  // The shell's own descriptors, listed by ls while the shell waits for it.
  auto p = Process::Start(Opts({"sh", "-c", "ls /proc/$$/fd"}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000)).exit_code, 0);
  EXPECT_EQ(Read("stdout.log"), "0\n1\n2\n");
  ::close(file);
  ::close(listener);
}

// A task cannot read the keys of the session keyring its worker was started in: it gets a new,
// empty one. Needs keyctl (Debian keyutils).
TEST_F(ProcessTest, TheTaskGetsAFreshSessionKeyring) {
  if (::access("/usr/bin/keyctl", X_OK) != 0 && ::access("/bin/keyctl", X_OK) != 0) {
    GTEST_SKIP() << "keyctl is not installed (Debian keyutils)";
  }
  // This test's own session keyring, so the user's is left alone.
  if (::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "idlepool-process-test") < 0) {
    GTEST_SKIP() << "no keyrings here: " << std::strerror(errno);
  }
  const long key = ::syscall(SYS_add_key, "user", "idlepool-secret", "s3cr3t-value", 12,
                             KEY_SPEC_SESSION_KEYRING);
  ASSERT_GT(key, 0) << std::strerror(errno);
  const std::string id = std::to_string(key);
  auto p = Process::Start(Opts(
      {"sh", "-c", "keyctl show @s; keyctl print " + id + " 2>&1; keyctl print @s 2>&1; true"}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000)).exit_code, 0);
  const std::string out = Read("stdout.log");
  EXPECT_EQ(out.find("s3cr3t-value"), std::string::npos) << out;
  EXPECT_EQ(out.find("idlepool-secret"), std::string::npos) << out;
  EXPECT_NE(out.find("keyring: _ses"), std::string::npos) << out;  // keyctl ran: a new one
}

}  // namespace
}  // namespace idlepool::platform
