// The task sandbox with real namespaces: a slot's agent (build/idlepool sandbox-agent; $IDLEPOOL
// overrides the path) started as the worker would, tasks launched in it, and what they can and
// cannot reach or do. Runs in the tier this test's user gets (root: uid; else userns).
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "platform/clock.h"
#include "sandbox/limits.h"
#include "sandbox/messages.h"
#include "sandbox/mounts.h"
#include "sandbox/probe.h"
#include "sandbox/slot_sandbox.h"

namespace idlepool::sandbox {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SandboxMessages, RoundTrip) {
  Config c;
  c.uid = 7;
  c.gid = 8;
  c.drop_groups = true;
  c.slot_dir = "/w/slots/1";
  c.hide = {"/home", "/root"};
  c.devices = {"/dev/null"};
  c.pids_max = 99;
  c.show = {"/usr", "/etc"};
  c.scratch_bytes = 5;
  c.task_dir_bytes = 6;
  auto d = DecodeSetup(EncodeSetup(c));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->uid, 7u);
  EXPECT_EQ(d->gid, 8u);
  EXPECT_TRUE(d->drop_groups);
  EXPECT_EQ(d->slot_dir, "/w/slots/1");
  EXPECT_EQ(d->hide, c.hide);
  EXPECT_EQ(d->pids_max, 99u);
  EXPECT_EQ(d->show, c.show);
  EXPECT_EQ(d->scratch_bytes, 5u);
  EXPECT_EQ(d->task_dir_bytes, 6u);
  auto x = DecodeExited(EncodeExited(ExitReport{9, false, true, 77}));
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_TRUE(x->memory_limit);
  EXPECT_EQ(x->disk_limit, 77u);
  LaunchRequest q{{"sh", "-c", "x"}, {"A=1"}, "/w", "/bin", 64, true, true};
  auto l = DecodeLaunch(EncodeLaunch(q));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->argv, q.argv);
  EXPECT_TRUE(l->has_cgroup);
  // Truncated or mistyped bodies are refused, never read past their end.
  const std::string body = EncodeLaunch(q);
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_FALSE(DecodeLaunch(body.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeLaunch(EncodeSetup(c)).ok());
}

TEST(SandboxMounts, HiddenPaths) {
  const auto visible = VisiblePaths({"/srv/tools"});
  for (const char* p : {"/usr", "/etc", "/opt", "/srv/tools"}) {
    EXPECT_NE(std::find(visible.begin(), visible.end(), p), visible.end()) << p;
  }
  // Only what lies inside a visible path needs hiding: the rest is never shown.
  auto h = HiddenPaths("/opt/idlepool/work", "/home/ann",
                       {"/opt/bob", "/", "/usr/sbin", "/nonexistent", "/srv/tools/carl"}, visible);
  for (const char* p :
       {"/etc/shadow", "/etc/ssl/private", "/opt/idlepool/work", "/opt/bob", "/srv/tools/carl"}) {
    EXPECT_NE(std::find(h.begin(), h.end(), p), h.end()) << p;
  }
  for (const char* p : {"/", "/usr/sbin", "/nonexistent", "/home/ann", "/home"}) {
    EXPECT_EQ(std::find(h.begin(), h.end(), p), h.end()) << p;
  }
  // A work dir inside a system dir (its identity holds the worker's key) is hidden all the same.
  h = HiddenPaths("/usr/local/var/idlepool", "/home/ann", {}, visible);
  EXPECT_NE(std::find(h.begin(), h.end(), "/usr/local/var/idlepool"), h.end());
}

TEST(SandboxLimits, Defaults) {
  EXPECT_EQ(DefaultTaskMemoryBytes(0, 8ull << 30), 4ull << 30);  // half the machine's
  EXPECT_EQ(DefaultTaskMemoryBytes(64, 8ull << 30), 64ull << 20);
  EXPECT_EQ(DefaultTaskDirBytes(32, 1ull << 40, 1ull << 30, 4), 32ull << 20);
  // 100 GiB free, 4 GiB kept for the owner, 4 slots: 24 GiB each.
  EXPECT_EQ(DefaultTaskDirBytes(0, 100ull << 30, 4ull << 30, 4), 24ull << 30);
  EXPECT_EQ(DefaultTaskDirBytes(0, 1ull << 30, 2ull << 30, 4), kMinTaskDirBytes);
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* exe = std::getenv("IDLEPOOL");
    exe_ = exe != nullptr ? exe : IDLEPOOL_BINARY;
    root_ = fs::temp_directory_path() / ("sandbox_test." + std::to_string(::getpid()));
    fs::create_directories(root_ / "work" / "slots" / "0" / "task");
    fs::create_directories(root_ / "work" / "slots" / "0" / "checkpoint");
    fs::create_directories(root_ / "owner" / ".ssh");
    std::ofstream(root_ / "owner" / ".ssh" / "id_rsa") << "SECRET-KEY";
    std::ofstream(root_ / "work" / "credential.key") << "SECRET-CREDENTIAL";
    settings_ = DetectSettings((root_ / "work").string());
    settings_.agent_exe = exe_;
    // A machine that cannot sandbox (a chroot, user namespaces off) runs none of these; the
    // worker refuses to start there (integration sandbox_test (i)).
    if (auto probed = Probe(settings_); !probed.ok()) {
      GTEST_SKIP() << "this machine cannot sandbox tasks: " << probed.status().message();
    }
    settings_.hidden.push_back((root_ / "owner").string());
    slot_ = (root_ / "work" / "slots" / "0").string();
    task_ = slot_ + "/task";
    if (settings_.tier == Tier::kUid) {
      fs::permissions(task_, fs::perms::all);
      fs::permissions(slot_ + "/checkpoint", fs::perms::all);
    }
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::unique_ptr<SlotSandbox> Start(bool host_network = false, uint64_t pids_max = 4096) {
    Settings s = settings_;
    s.pids_max = pids_max;
    auto sb = SlotSandbox::Start(ConfigFor(s, 0, slot_, host_network, {}), exe_);
    EXPECT_TRUE(sb.ok()) << sb.status();
    return sb.ok() ? std::move(*sb) : nullptr;
  }
  // Runs `sh -c script` in `sb`; returns its exit info, stdout in *out.
  platform::ExitInfo Run(SlotSandbox& sb, const std::string& script, std::string* out = nullptr) {
    platform::SpawnOptions o;
    o.argv = {"sh", "-c", script};
    o.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + (root_ / "owner").string()};
    o.cwd = task_;
    o.stdout_path = (root_ / "out.log").string();
    o.stderr_path = (root_ / "err.log").string();
    fs::remove(o.stdout_path);
    auto p = sb.Launch(o);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    platform::ExitInfo e =
        (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
    if (out) *out = ReadAll(o.stdout_path);
    return e;
  }
  std::string exe_;
  fs::path root_;
  Settings settings_;
  std::string slot_;
  std::string task_;
};

TEST_F(SandboxTest, RunsTasksOneAfterAnotherAndReportsExitCodes) {
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  std::string out;
  EXPECT_EQ(Run(*sb, "echo hello; exit 3", &out).exit_code, 3);
  EXPECT_EQ(out, "hello\n");
  EXPECT_EQ(Run(*sb, "id -u", &out).exit_code, 0);
  const uint64_t uid = settings_.tier == Tier::kUid ? settings_.uid_base : ::getuid();
  EXPECT_EQ(out, std::to_string(uid) + "\n");
  platform::SpawnOptions o;
  o.argv = {"no-such-command-here"};
  o.cwd = task_;
  auto p = sb->Launch(o);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound) << p.status();
  EXPECT_EQ(Run(*sb, "exit 0").exit_code, 0);  // still serving
}

TEST_F(SandboxTest, OwnerFilesWorkDirAndWorkerAreOutOfReach) {
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  std::string out;
  const std::string owner = (root_ / "owner").string();
  const std::string work = (root_ / "work").string();
  // (b) the owner's home is empty; (a) the work dir shows only this slot; the worker's
  // environment is not reachable (its PID is not in this namespace).
  Run(*sb,
      "ls -A " + owner + " | wc -l; ls -A " + work + "; ls -A " + work + "/slots; cat " + work +
          "/credential.key; cat /proc/" + std::to_string(::getpid()) + "/environ; echo end",
      &out);
  EXPECT_EQ(out, "0\nslots\n0\nend\n");  // (the work dir shows its slots/0 and nothing else)
  EXPECT_EQ(ReadAll((root_ / "err.log").string()).find("SECRET"), std::string::npos);
  // Only PID 1 (the agent) and the task itself are in the PID namespace.
  Run(*sb, "ls /proc | grep -c '^[0-9]'", &out);
  EXPECT_LE(std::stoi(out), 4);
}

TEST_F(SandboxTest, ShowsOnlyTheSystemDirsNotTheRestOfTheMachine) {
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  std::string out;
  // The dir this test binary lies in is named by no list: a task does not see it, nor the
  // host's /tmp, yet finds what programs need.
  const std::string here = fs::path(exe_).parent_path().string();
  Run(*sb,
      "ls -A " + here +
          " 2>/dev/null | grep -c .; "
          "test -x /bin/sh && echo sh; grep -c '^root:' /etc/passwd; head -c 4 /dev/urandom | wc "
          "-c; "
          "{ ls -A /root; ls -A /home; ls -A /run; } | grep -c .; touch /x 2>/dev/null || echo "
          "ro-root",
      &out);
  EXPECT_EQ(out, "0\nsh\n1\n4\n0\nro-root\n") << ReadAll((root_ / "err.log").string());
}

TEST_F(SandboxTest, WritesOnlyToItsTaskAndCheckpointDirsAndPrivateScratch) {
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  std::string out;
  // (c) the root file system, the slot dir itself (shared by the slot's attempts: no channel
  // from one job to the next) and the rest of the work dir are read-only.
  Run(*sb,
      "touch /usr/x 2>/dev/null && echo usr; touch /etc/x 2>/dev/null && echo etc; touch " +
          root_.string() + "/x; touch " + slot_ + "/no 2>/dev/null && echo slot; chmod 777 " +
          slot_ + " 2>/dev/null && echo chmod; touch " + task_ + "/ok && echo task; touch " +
          slot_ + "/checkpoint/ok && echo checkpoint; touch /tmp/p && echo tmp",
      &out);
  EXPECT_EQ(out, "task\ncheckpoint\ntmp\n") << ReadAll((root_ / "err.log").string());
  EXPECT_TRUE(fs::exists(fs::path(task_) / "ok"));
  EXPECT_FALSE(fs::exists(fs::path(slot_) / "no"));
  EXPECT_FALSE(fs::exists(root_ / "x"));  // it landed in the sandbox's private /tmp
  EXPECT_FALSE(fs::exists("/tmp/p"));     // the sandbox's /tmp is its own
}

TEST_F(SandboxTest, KillingEverythingReachesOnlyTheTask) {
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  // (d) kill -9 -1 and kill of PID 1 and of the parent: only the task's own processes die.
  // kill(-1) spares the caller itself: the background sleep dies, the shell goes on.
  std::string out;
  platform::ExitInfo e = Run(*sb,
                             "sleep 1000 & s=$!; kill -9 1; kill -9 $PPID; kill -9 -1; "
                             "wait $s; echo \"sleep $?\"; echo alive",
                             &out);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(out, "sleep 137\nalive\n");
  EXPECT_EQ(Run(*sb, "echo next", &out).exit_code, 0);
  EXPECT_EQ(out, "next\n");
}

TEST_F(SandboxTest, NothingOutlivesItsTask) {
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  EXPECT_EQ(Run(*sb, "(setsid sleep 1000 &); (sleep 1001 &); exit 0").exit_code, 0);
  std::string out;
  Run(*sb, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '", &out);
  EXPECT_EQ(out.find("sleep 100"), std::string::npos) << out;
}

TEST_F(SandboxTest, ScratchAndIpcDoNotReachTheNextTask) {
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  std::string out;
  Run(*sb,
      "echo x > /tmp/leak; echo y > /dev/shm/leak; mkdir /var/tmp/d; chmod 0 /var/tmp/d; "
      "ipcmk -M 4096 >/dev/null && echo shm",
      &out);
  EXPECT_EQ(out, "shm\n");
  Run(*sb, "ls -A /tmp /dev/shm /var/tmp | grep -c leak; ipcs -m | grep -c '^0x'", &out);
  EXPECT_EQ(out, "0\n0\n");
}

TEST_F(SandboxTest, MemoryPastItsLimitEndsTheTask) {
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  platform::SpawnOptions o;
  // 64 MiB allowed; the task holds 200 MB resident (a shell variable of that many bytes).
  o.argv = {"bash", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); sleep 100"};
  o.env = {"PATH=/usr/bin:/bin"};
  o.cwd = task_;
  o.memory_limit_bytes = 64ull << 20;
  auto p = sb->Launch(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const platform::ExitInfo e =
      (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_TRUE(e.memory_limit);
  p->reset();
  std::string out;
  EXPECT_EQ(Run(*sb, "echo after", &out).exit_code, 0);
  EXPECT_EQ(out, "after\n");
}

TEST_F(SandboxTest, FilesInItsTmpfsDirsCountAsMemory) {
  settings_.task_memory_bytes = 64ull << 20;  // also each scratch tmpfs's size
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  platform::SpawnOptions o;
  // 128 MB into /dev/shm under a 64 MiB limit: the tmpfs is full at 64 MiB, and what the task
  // holds there counts as its memory.
  o.argv = {"sh", "-c", "head -c 134217728 /dev/zero > /dev/shm/big; echo wrote; sleep 100"};
  o.env = {"PATH=/usr/bin:/bin"};
  o.cwd = task_;
  o.stdout_path = (root_ / "out.log").string();
  o.memory_limit_bytes = 64ull << 20;
  auto p = sb->Launch(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const platform::ExitInfo e =
      (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_TRUE(e.memory_limit);
  p->reset();
  std::string out;
  EXPECT_EQ(Run(*sb, "ls -A /dev/shm | wc -l", &out).exit_code, 0);
  EXPECT_EQ(out, "0\n");  // emptied: the next task gets the memory back
}

TEST_F(SandboxTest, TaskDirGrowingPastItsQuotaEndsTheTask) {
  settings_.task_dir_bytes = 8ull << 20;
  // What was staged before the task started does not count: only what it adds.
  {
    std::ofstream staged(task_ + "/input.bin");
    staged << std::string(12 << 20, 'x');
  }
  auto sb = Start();
  ASSERT_NE(sb, nullptr);
  std::string out;
  EXPECT_EQ(Run(*sb, "head -c 4000000 /dev/zero > small.bin && echo ok", &out).exit_code, 0);
  EXPECT_EQ(out, "ok\n");
  const platform::ExitInfo e = Run(*sb, "head -c 33554432 /dev/zero > big.bin; sleep 100");
  EXPECT_EQ(e.disk_limit, 8ull << 20);
}

TEST_F(SandboxTest, ForkBombEndsAtThePidsLimit) {
  auto sb = Start(/*host_network=*/false, /*pids_max=*/64);
  ASSERT_NE(sb, nullptr);
  // (e)
  // bash retries a fork that fails and keeps looping: only the limit's kill ends it.
  const platform::ExitInfo e = Run(*sb, "exec bash -c 'while :; do sleep 100 & done' 2>/dev/null");
  EXPECT_TRUE(e.pids_limit);
  std::string out;
  EXPECT_EQ(Run(*sb, "echo after", &out).exit_code, 0);
  EXPECT_EQ(out, "after\n");
}

TEST_F(SandboxTest, NetworkNoneHasOnlyItsOwnLoopback) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s, 8), 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  const std::string probe = "if bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port +
                            "' 2>/dev/null; then echo yes; else echo no; fi";
  std::string out;
  auto none = Start(false);
  ASSERT_NE(none, nullptr);
  Run(*none, probe, &out);
  EXPECT_EQ(out, "no\n");
  none.reset();
  auto host = Start(true);
  ASSERT_NE(host, nullptr);
  Run(*host, probe, &out);
  EXPECT_EQ(out, "yes\n");
  ::close(s);
}

// A replica listening on its sandbox's own loopback (network "none") is reached through the
// agent only: the worker's own loopback has nothing on that port.
TEST_F(SandboxTest, TheWorkerReachesAPortOnTheSandboxsLoopbackThroughItsAgent) {
  auto sb = Start(false);
  ASSERT_NE(sb, nullptr);
  const uint32_t port = 20000 + static_cast<uint32_t>(::getpid() % 20000);
  platform::SpawnOptions o;
  o.argv = {"python3", "-c",
            "import socket\n"
            "s = socket.socket(); s.bind(('127.0.0.1', " + std::to_string(port) + "))\n"
            "s.listen(1); c, _ = s.accept(); c.sendall(b'hello from the sandbox'); c.close()\n"};
  o.env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  o.cwd = task_;
  o.stdout_path = (root_ / "out.log").string();
  o.stderr_path = (root_ / "err.log").string();
  auto p = sb->Launch(o);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<platform::UniqueFd> conn = absl::UnavailableError("not tried");
  for (int i = 0; i < 500 && !conn.ok(); ++i) {  // until it listens (python takes a moment)
    conn = sb->ConnectLoopback(port);
    if (!conn.ok()) {
      ASSERT_EQ(conn.status().code(), absl::StatusCode::kUnavailable) << conn.status();
      platform::SleepFor(std::chrono::milliseconds(20));
    }
  }
  ASSERT_TRUE(conn.ok()) << conn.status() << "; task stderr: " << ReadAll(o.stderr_path);
  char buf[64] = {};
  std::string got;
  for (ssize_t n; (n = ::read(conn->get(), buf, sizeof buf)) > 0;) got.append(buf, n);
  EXPECT_EQ(got, "hello from the sandbox");
  platform::ExitInfo e = (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  EXPECT_EQ(e.exit_code, 0);
  // Nothing listens there any more, and the worker's own loopback never had it.
  EXPECT_EQ(sb->ConnectLoopback(port).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(sb->ConnectLoopback(0).status().code(), absl::StatusCode::kInvalidArgument);
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(s);
}

TEST_F(SandboxTest, ProbePasses) {
  auto abi = Probe(settings_);
  EXPECT_TRUE(abi.ok()) << abi.status();
}

}  // namespace
}  // namespace idlepool::sandbox
