// Process: own process group, capped logs, whole-tree kill, timeouts.
#include "platform/process.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
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
 protected:
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

TEST_F(ProcessTest, RunsInTaskDirWithGivenEnvironment) {
  auto o = Opts({"sh", "-c", "pwd; echo $IDLEPOOL_X"});
  o.env.push_back("IDLEPOOL_X=hello");
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok());
  (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(Read("stdout.log"), fs::canonical(dir_).string() + "\nhello\n");
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

}  // namespace
}  // namespace idlepool::platform
