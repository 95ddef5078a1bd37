// The worker's attempt phases (worker/attempt_runner.h) through the process-launcher seam: a
// fake launcher scripts what the "task" does and how it ends, fake transfers stand in for the
// coordinator; the outbox, checkpoint dirs and the checkpointer are the real ones, in a temp dir.
#include "worker/attempt_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "worker/attempt_error.h"
#include "worker/attempt_paths.h"
#include "worker/checkpointer.h"
#include "worker/launcher.h"

namespace idlepool::worker {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class FakeClock final : public platform::Clock {
 public:
  core::MonoTime Now() const override { return core::MonoTime(milliseconds(now_ms)); }
  int64_t WallMs() const override { return 1'700'000'000'000 + now_ms; }
  int64_t now_ms = 1000;
};

// How the fake task ends.
platform::ExitInfo Exit(int exit_code, int signal = 0, bool timed_out = false,
                        std::string stderr_tail = "") {
  platform::ExitInfo e;
  e.exit_code = exit_code;
  e.signal = signal;
  e.timed_out = timed_out;
  e.stderr_tail = std::move(stderr_tail);
  return e;
}

void WriteFile(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << content;
}

// The "task": `during` runs while it waits (as the command would: writing files, or another
// thread killing or vacating it), then it ends with `exit`.
class FakeProcess final : public TaskProcess {
 public:
  FakeProcess(platform::ExitInfo exit, std::function<void()> during, milliseconds* waited)
      : exit_(std::move(exit)), during_(std::move(during)), waited_(waited) {}
  platform::ExitInfo Wait(milliseconds timeout, milliseconds) override {
    *waited_ = timeout;
    if (during_) during_();
    return exit_;
  }
  void Kill(int sig) override { signals.push_back(sig); }
  void Terminate(milliseconds) override { signals.push_back(15); }
  absl::Status Suspend() override {
    ++suspends;
    return absl::OkStatus();
  }
  void Resume() override {}
  std::vector<pid_t> TreePids() const override { return {}; }

  std::vector<int> signals;
  int suspends = 0;

 private:
  platform::ExitInfo exit_;
  std::function<void()> during_;
  milliseconds* waited_;
};

class FakeLauncher final : public ProcessLauncher {
 public:
  absl::StatusOr<std::unique_ptr<TaskProcess>> Start(
      const platform::SpawnOptions& options) override {
    ++starts;
    spawned = options;
    if (!start_error.ok()) return start_error;
    auto p = std::make_unique<FakeProcess>(
        exit,
        [this, cwd = options.cwd] {
          if (during) during(cwd);
        },
        &waited_timeout);
    return std::unique_ptr<TaskProcess>(std::move(p));
  }
  int starts = 0;
  platform::SpawnOptions spawned;
  absl::Status start_error;
  platform::ExitInfo exit = Exit(0);
  std::function<void(const std::string& cwd)> during;  // the task's work, in its task dir
  milliseconds waited_timeout{-1};                     // the timeout the runner waited with
};

// Blobs by hash, "fetched" into a cache dir; uploads recorded.
class FakeTransfers final : public Transfers {
 public:
  explicit FakeTransfers(std::string dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
  absl::StatusOr<std::string> Stage(Attempt& a, const std::string& sha256, uint64_t size,
                                    const std::function<bool()>&) override {
    if (!stage_error.ok()) return stage_error;
    auto it = blobs.find(sha256);
    if (it == blobs.end()) return absl::NotFoundError("no such blob");
    const std::string path = dir_ + "/" + sha256;
    WriteFile(path, it->second);
    a.transfer.Staged(size, false, size, 0);
    return path;
  }
  absl::Status Upload(const UploadSource& source, const v1::OutputFile& file,
                      std::atomic<uint64_t>* sent) override {
    std::lock_guard lock(mu);
    if (!upload_error.ok()) return upload_error;
    uploaded[file.path()] = source.path;
    uploaded_bytes[file.path()] = source.fd >= 0 ? ReadFd(source.fd) : ReadPath(source.path);
    if (sent) *sent += file.size();
    return absl::OkStatus();
  }
  static std::string ReadFd(int fd) {
    std::string out(1 << 16, '\0');
    const ssize_t n = ::pread(fd, out.data(), out.size(), 0);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  }
  static std::string ReadPath(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::map<std::string, std::string> blobs;
  absl::Status stage_error;
  absl::Status upload_error;
  std::mutex mu;
  std::map<std::string, std::string> uploaded;        // rel path -> local path
  std::map<std::string, std::string> uploaded_bytes;  // rel path -> the bytes read

 private:
  std::string dir_;
};

class AttemptRunnerTest : public ::testing::Test {
 protected:
  AttemptRunnerTest()
      : work_dir_(fs::path(::testing::TempDir()) /
                  ("attempt_runner_" +
                   std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()))),
        transfers_((work_dir_ / "cache").string()),
        outbox_((work_dir_ / "outbox").string()),
        dirs_(work_dir_.string()),
        checkpointer_(clock_, [this](const UploadSource& source, const v1::OutputFile& f,
                                     std::atomic<uint64_t>* sent) {
          return transfers_.Upload(source, f, sent);
        }) {
    fs::remove_all(work_dir_);
    fs::create_directories(work_dir_ / "attempts");
    fs::create_directories(work_dir_ / "spare");
    EXPECT_TRUE(outbox_.Open().ok());
    AttemptHooks hooks;
    hooks.owner_suspended = [this] { return owner_suspended_; };
    hooks.gpu_held = [](const std::vector<uint32_t>&) { return false; };
    hooks.tell_suspended = [this](const std::vector<uint64_t>& ids) { told_suspended_ = ids; };
    hooks.low_on_disk = [this] { return low_on_disk_; };
    hooks.disk_reason = [] { return std::string("disk full: test"); };
    hooks.disk_full = [this](const std::string& why) { disk_full_.push_back(why); };
    hooks.forget = [this](uint64_t id) { forgotten_.push_back(id); };
    hooks.short_of_fds = [this] { return short_of_fds_; };
    runner_ = std::make_unique<AttemptRunner>(
        AttemptRunnerConfig{"w1", work_dir_.string(), false, milliseconds(100)},
        AttemptRunnerDeps{
            &clock_, &launcher_, &transfers_, &outbox_, &dirs_, nullptr, &checkpointer_, &stop_,
            [this](const v1::WorkerMessage& m) { sent_.push_back(m); }, std::move(hooks)});
  }
  ~AttemptRunnerTest() override { fs::remove_all(work_dir_); }

  std::shared_ptr<Attempt> NewAttempt(uint64_t id) {
    auto a = std::make_shared<Attempt>();
    a->id = id;
    a->assignment.set_attempt(id);
    a->assignment.add_command("render");
    a->assignment.set_timeout_s(60);
    a->paths = AttemptPaths::For(work_dir_.string(), id);
    a->assigned = clock_.Now();
    return a;
  }

  // The one report sent for the attempt.
  v1::AttemptReport Report() {
    EXPECT_EQ(sent_.size(), 1u);
    if (sent_.empty() || !sent_.back().has_report()) return {};
    return sent_.back().report();
  }

  fs::path work_dir_;
  FakeClock clock_;
  FakeLauncher launcher_;
  FakeTransfers transfers_;
  Outbox outbox_;
  RecycledDirs dirs_;
  Checkpointer checkpointer_;
  StopSignal stop_;
  std::unique_ptr<AttemptRunner> runner_;
  std::vector<v1::WorkerMessage> sent_;
  bool owner_suspended_ = false;
  bool low_on_disk_ = false;
  bool short_of_fds_ = false;
  std::vector<uint64_t> told_suspended_;
  std::vector<std::string> disk_full_;
  std::vector<uint64_t> forgotten_;
};

TEST(AttemptPathsTest, BuiltOnceFromTheWorkDirAndId) {
  const AttemptPaths p = AttemptPaths::For("/w", 7);
  EXPECT_EQ(p.task_dir, "/w/attempts/7.task");
  EXPECT_EQ(p.checkpoint_dir, "/w/attempts/7.checkpoint");
  EXPECT_EQ(p.stdout_log, "/w/attempts/7.stdout.log");
  EXPECT_EQ(p.stderr_log, "/w/attempts/7.stderr.log");
}

TEST_F(AttemptRunnerTest, SuccessCollectsOutputsMatchingGlobsAndUploadsThem) {
  auto a = NewAttempt(1);
  auto* in = a->assignment.add_inputs();
  in->set_path("scene.blend");
  in->set_sha256("aa");
  in->set_size(5);
  in->set_mode(0644);
  transfers_.blobs["aa"] = "scene";
  a->assignment.add_outputs("out/*.png");
  a->assignment.add_outputs("*.blend.log");
  launcher_.during = [](const std::string& cwd) {
    WriteFile(cwd + "/out/f1.png", "one");
    WriteFile(cwd + "/out/f2.png", "two");
    WriteFile(cwd + "/out/notes.txt", "not an output");
    WriteFile(cwd + "/scene.blend.log", "log");
  };
  runner_->Run(a);

  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::SUCCEEDED) << r.message();
  std::set<std::string> outputs;
  for (const auto& o : r.outputs()) outputs.insert(o.path());
  EXPECT_EQ(outputs, (std::set<std::string>{"out/f1.png", "out/f2.png", "scene.blend.log"}));
  EXPECT_EQ(transfers_.uploaded.size(), 3u);
  EXPECT_EQ(transfers_.uploaded["out/f1.png"], outbox_.PathOf(1, "out/f1.png"));
  EXPECT_EQ(r.transfer().input_bytes(), 5u);
  EXPECT_EQ(r.transfer().output_bytes(), 9u);
  EXPECT_TRUE(a->filed);
  EXPECT_TRUE(a->finished);
  // The process ran in the attempt's paths, built once (AttemptPaths), with its variables.
  EXPECT_EQ(launcher_.spawned.cwd, a->paths.task_dir);
  EXPECT_EQ(launcher_.spawned.stdout_path, a->paths.stdout_log);
  EXPECT_EQ(launcher_.spawned.stderr_path, a->paths.stderr_log);
  auto has_env = [&](const std::string& kv) {
    const auto& env = launcher_.spawned.env;
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  EXPECT_TRUE(has_env("IDLEPOOL_TASK_DIR=" + a->paths.task_dir));
  EXPECT_TRUE(has_env("IDLEPOOL_CHECKPOINT_DIR=" + a->paths.checkpoint_dir));
  EXPECT_TRUE(has_env("IDLEPOOL_ATTEMPT_ID=1"));
  EXPECT_TRUE(has_env("IDLEPOOL_WORKER=w1"));
  EXPECT_EQ(launcher_.waited_timeout, milliseconds(60000));
}

TEST_F(AttemptRunnerTest, StagingFailureIsFailedAndNothingStarts) {
  auto a = NewAttempt(2);
  auto* in = a->assignment.add_inputs();
  in->set_path("data.bin");
  in->set_sha256("missing");
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::FAILED);
  EXPECT_EQ(r.message(), "cannot stage input 'data.bin': no such blob");
  EXPECT_EQ(launcher_.starts, 0);
  EXPECT_TRUE(disk_full_.empty());
}

TEST_F(AttemptRunnerTest, StagingOnAFullDiskIsAMachineFault) {
  auto a = NewAttempt(3);
  auto* in = a->assignment.add_inputs();
  in->set_path("data.bin");
  in->set_sha256("aa");
  transfers_.stage_error = absl::ResourceExhaustedError("cache full");
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::MACHINE_FAULT);
  EXPECT_EQ(r.message(), "cannot stage input 'data.bin': cache full");
  ASSERT_EQ(disk_full_.size(), 1u);  // the worker stops taking work
  EXPECT_EQ(launcher_.starts, 0);
}

TEST_F(AttemptRunnerTest, NonZeroExitIsFailedWithTheExitCode) {
  auto a = NewAttempt(4);
  a->assignment.add_outputs("*.png");
  launcher_.exit = Exit(3, 0, false, "boom\n");
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::FAILED);
  EXPECT_EQ(r.message(), "exit code 3");
  EXPECT_EQ(r.exit_code(), 3);
  EXPECT_EQ(r.log_tail(), "boom\n");
  EXPECT_TRUE(transfers_.uploaded.empty());
}

TEST_F(AttemptRunnerTest, FailureWhileTheDiskIsFullIsAMachineFault) {
  auto a = NewAttempt(5);
  launcher_.exit = Exit(1);
  launcher_.during = [this](const std::string&) { low_on_disk_ = true; };
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::MACHINE_FAULT);
  EXPECT_EQ(r.message(), "the task failed (exit code 1) while the disk was full: disk full: test");
}

TEST_F(AttemptRunnerTest, TimeoutIsTimedOut) {
  auto a = NewAttempt(6);
  a->assignment.set_timeout_s(5);
  launcher_.exit = Exit(-1, 9, true);
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::TIMED_OUT);
  EXPECT_EQ(r.message(), "timed out after 5 s");
  EXPECT_EQ(launcher_.waited_timeout, milliseconds(5000));
}

// A command that cannot start here is this machine's fault for the job, not the task's: the
// coordinator sends the task elsewhere without using an attempt.
TEST_F(AttemptRunnerTest, ACommandThatCannotStartIsAMachineFaultNamingTheWorker) {
  auto a = NewAttempt(7);
  launcher_.start_error = absl::NotFoundError("cannot run 'render': No such file or directory");
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::MACHINE_FAULT);
  EXPECT_TRUE(r.cannot_start());
  EXPECT_THAT(r.message(),
              testing::StartsWith("cannot run 'render': No such file or directory (on worker "));
  EXPECT_EQ(r.exit_code(), 127);
}

// A job's own script that cannot start (no x bit) fails the same everywhere: the task's failure.
TEST(JobsOwnProgram, OnlyPathsIntoTheTaskDir) {
  EXPECT_TRUE(JobsOwnProgram("./render.sh", "/w/task"));
  EXPECT_TRUE(JobsOwnProgram("scripts/render.sh", "/w/task"));
  EXPECT_TRUE(JobsOwnProgram("/w/task/render.sh", "/w/task"));
  EXPECT_FALSE(JobsOwnProgram("/w/task2/render.sh", "/w/task"));
  EXPECT_FALSE(JobsOwnProgram("blender", "/w/task"));
  EXPECT_FALSE(JobsOwnProgram("/usr/bin/blender", "/w/task"));
}

TEST(LibraryMissing, OnlyTheLoadersExit127) {
  const std::string loader =
      "blender: error while loading shared libraries: libGL.so.1: cannot open shared object file";
  EXPECT_TRUE(LibraryMissing(127, loader));
  EXPECT_FALSE(LibraryMissing(1, loader));
  EXPECT_FALSE(LibraryMissing(127, "sh: 1: blender: not found"));
}

TEST_F(AttemptRunnerTest, SpawnOutOfDescriptorsIsAMachineFaultWithoutTheDisksPause) {
  auto a = NewAttempt(17);
  launcher_.start_error = absl::ResourceExhaustedError("cannot run 'render': pipe2: Too many");
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::MACHINE_FAULT);
  EXPECT_EQ(r.message(), "cannot run 'render': pipe2: Too many");
  EXPECT_TRUE(disk_full_.empty());  // the worker goes on taking work
}

TEST_F(AttemptRunnerTest, AStepFailingWhileShortOfDescriptorsIsAMachineFault) {
  auto a = NewAttempt(18);
  auto* in = a->assignment.add_inputs();
  in->set_path("data.bin");
  in->set_sha256("missing");
  short_of_fds_ = true;
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::MACHINE_FAULT);
  EXPECT_EQ(r.message(),
            "cannot stage input 'data.bin': no such blob (the worker was out of file descriptors)");
  EXPECT_TRUE(disk_full_.empty());
}

TEST_F(AttemptRunnerTest, TheTasksOwnFailureStaysAFailureWhenShortOfDescriptors) {
  auto a = NewAttempt(19);
  launcher_.exit = Exit(3);
  short_of_fds_ = true;
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::FAILED);
  EXPECT_EQ(r.message(), "exit code 3");
}

TEST_F(AttemptRunnerTest, PatternThatMatchesNothingFails) {
  auto a = NewAttempt(8);
  a->assignment.add_outputs("frame_*.exr");
  launcher_.during = [](const std::string& cwd) { WriteFile(cwd + "/other.txt", "x"); };
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::FAILED);
  EXPECT_EQ(r.message(), "output pattern 'frame_*.exr' matched no file");
  EXPECT_EQ(r.outputs_size(), 0);
}

TEST_F(AttemptRunnerTest, EmptyOutputFailsUnlessAllowed) {
  auto a = NewAttempt(9);
  a->assignment.add_outputs("out.txt");
  launcher_.during = [](const std::string& cwd) { WriteFile(cwd + "/out.txt", ""); };
  runner_->Run(a);
  EXPECT_EQ(Report().result(), v1::AttemptReport::FAILED);

  sent_.clear();
  auto b = NewAttempt(10);
  b->assignment.add_outputs("out.txt");
  b->assignment.set_allow_empty_outputs(true);
  runner_->Run(b);
  EXPECT_EQ(Report().result(), v1::AttemptReport::SUCCEEDED);
}

TEST_F(AttemptRunnerTest, KilledMidRunSendsNoReportAndIsForgotten) {
  auto a = NewAttempt(11);
  a->assignment.add_outputs("*.png");
  launcher_.exit = Exit(-1, 9);
  launcher_.during = [a](const std::string&) {
    // What the session's kill handler does while the task runs.
    std::lock_guard lock(a->mu);
    a->killed = true;
    a->process->Kill(9);
  };
  runner_->Run(a);
  EXPECT_TRUE(sent_.empty());
  EXPECT_EQ(forgotten_, std::vector<uint64_t>{11});
  EXPECT_EQ(a->process, nullptr);  // released by the runner
  EXPECT_FALSE(a->finished);
}

TEST_F(AttemptRunnerTest, VacatedMidRunIsPreemptedWithItsFinalCheckpoint) {
  auto a = NewAttempt(12);
  launcher_.exit = Exit(-1, 15);
  launcher_.during = [this, a](const std::string&) {
    WriteFile(a->paths.checkpoint_dir + "/state.bin", "saved");
    clock_.now_ms += 4000;
    EXPECT_TRUE(Vacate(*a, milliseconds(2000), "vacated: owner active", clock_.Now()));
  };
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::PREEMPTED);
  EXPECT_EQ(r.message(), "vacated: owner active");
  EXPECT_TRUE(r.has_checkpoint());
  ASSERT_EQ(r.checkpoint_size(), 1);
  EXPECT_EQ(r.checkpoint(0).path(), "state.bin");
  EXPECT_EQ(transfers_.uploaded.count("state.bin"), 1u);
  EXPECT_EQ(r.exit_code(), -1);
}

TEST_F(AttemptRunnerTest, VacatedWhileStagingIsHandedBackUnstarted) {
  auto a = NewAttempt(13);
  auto* in = a->assignment.add_inputs();
  in->set_path("data.bin");
  in->set_sha256("aa");
  transfers_.stage_error = absl::CancelledError("stopped");
  ASSERT_TRUE(Vacate(*a, milliseconds(2000), "vacated: lid closed", clock_.Now()));
  runner_->Run(a);
  const v1::AttemptReport r = Report();
  EXPECT_EQ(r.result(), v1::AttemptReport::PREEMPTED);
  EXPECT_FALSE(r.has_checkpoint());
  EXPECT_EQ(launcher_.starts, 0);
}

TEST_F(AttemptRunnerTest, StartsFrozenWhenTheOwnerSuspends) {
  auto a = NewAttempt(14);
  owner_suspended_ = true;
  bool frozen_while_running = false;
  launcher_.during = [&](const std::string&) {
    std::lock_guard lock(a->mu);
    frozen_while_running = a->frozen && !a->gpu_frozen;
  };
  runner_->Run(a);
  EXPECT_TRUE(frozen_while_running);
  EXPECT_EQ(told_suspended_, std::vector<uint64_t>{14});
  EXPECT_EQ(Report().result(), v1::AttemptReport::SUCCEEDED);
}

TEST_F(AttemptRunnerTest, UploadStoppedByTheWorkerLeavesTheAttemptInTheOutbox) {
  auto a = NewAttempt(15);
  a->assignment.add_outputs("out.txt");
  launcher_.during = [this](const std::string& cwd) {
    WriteFile(cwd + "/out.txt", "result");
    ASSERT_FALSE(stop_.Raise());  // the worker stops while the task ends
  };
  runner_->Run(a);
  EXPECT_TRUE(sent_.empty());  // no report: the next run of the worker delivers it
  EXPECT_TRUE(forgotten_.empty());
  EXPECT_TRUE(a->undelivered);
  EXPECT_TRUE(fs::exists(outbox_.PathOf(15, "out.txt")));
}

TEST_F(AttemptRunnerTest, CheckpointerSaysUnchangedUntilTheDirChanges) {
  auto a = NewAttempt(16);
  fs::create_directories(a->paths.checkpoint_dir);
  checkpointer_.Restored(*a);
  CheckpointUpload up = checkpointer_.Upload(*a, /*force=*/false);
  EXPECT_EQ(up.result, CheckpointResult::kUnchanged);
  EXPECT_TRUE(transfers_.uploaded.empty());

  WriteFile(a->paths.checkpoint_dir + "/step.txt", "42");
  up = checkpointer_.Upload(*a, /*force=*/false);
  ASSERT_EQ(up.result, CheckpointResult::kUploaded);
  ASSERT_EQ(up.files.size(), 1u);
  EXPECT_EQ(up.files[0].path(), "step.txt");
  EXPECT_EQ(transfers_.uploaded.size(), 1u);

  EXPECT_EQ(checkpointer_.Upload(*a, /*force=*/false).result, CheckpointResult::kUnchanged);
  // A final checkpoint of an unchanged dir still names its files.
  up = checkpointer_.Upload(*a, /*force=*/true);
  EXPECT_EQ(up.result, CheckpointResult::kUnchanged);
  EXPECT_EQ(up.files.size(), 1u);

  transfers_.upload_error = absl::UnavailableError("coordinator away");
  WriteFile(a->paths.checkpoint_dir + "/step2.txt", "43");
  up = checkpointer_.Upload(*a, /*force=*/false);
  EXPECT_EQ(up.result, CheckpointResult::kFailed);
  EXPECT_EQ(up.error.code(), absl::StatusCode::kUnavailable);
}

// Worker hygiene (issue 19 point 4): what a task leaves in its dirs is read beneath them. The
// "owner's key" lives in the work dir's parent, outside every task dir.
class OutputLinksTest : public AttemptRunnerTest {
 protected:
  OutputLinksTest() : secret_(work_dir_ / "owner_home" / ".ssh" / "id_rsa") {
    WriteFile(secret_, kSecret);
  }
  static constexpr const char* kSecret = "-----BEGIN OPENSSH PRIVATE KEY----- the owner's";
  // The attempt failed with `message`, and nothing at all was uploaded or filed.
  void ExpectRefused(uint64_t id, const std::string& message) {
    const v1::AttemptReport r = Report();
    EXPECT_EQ(r.result(), v1::AttemptReport::FAILED);
    EXPECT_EQ(r.message(), message);
    EXPECT_EQ(r.outputs_size(), 0);
    EXPECT_TRUE(transfers_.uploaded.empty());
    EXPECT_FALSE(fs::exists(outbox_.PathOf(id, "")));
  }
  fs::path secret_;
};

TEST_F(OutputLinksTest, ASymlinkOutputFailsTheAttemptNamingItAndIsNeverUploaded) {
  auto a = NewAttempt(30);
  a->assignment.add_outputs("out.txt");
  launcher_.during = [this](const std::string& cwd) {
    fs::create_symlink(secret_, cwd + "/out.txt");
  };
  runner_->Run(a);
  ExpectRefused(30,
                "output 'out.txt' is a symbolic link; outputs must be regular files in the task "
                "dir, each with a single link");
}

TEST_F(OutputLinksTest, ALinkInsideTheTaskDirIsRefusedToo) {
  auto a = NewAttempt(31);
  a->assignment.add_outputs("*.png");
  launcher_.during = [](const std::string& cwd) {
    WriteFile(cwd + "/frame10.png", "frame");
    fs::create_symlink("frame10.png", cwd + "/latest.png");
  };
  runner_->Run(a);
  ExpectRefused(31,
                "output 'latest.png' is a symbolic link; outputs must be regular files in the "
                "task dir, each with a single link");
}

TEST_F(OutputLinksTest, AHardLinkOutputFailsTheAttempt) {
  auto a = NewAttempt(32);
  a->assignment.add_outputs("out.txt");
  launcher_.during = [this](const std::string& cwd) {
    ASSERT_EQ(::link(secret_.c_str(), (cwd + "/out.txt").c_str()), 0);
  };
  runner_->Run(a);
  ExpectRefused(32,
                "output 'out.txt' has 2 hard links; outputs must be regular files in the task "
                "dir, each with a single link");
}

TEST_F(OutputLinksTest, APatternThroughALinkedDirectoryFailsTheAttempt) {
  auto a = NewAttempt(33);
  a->assignment.add_outputs("outdir/*");
  launcher_.during = [this](const std::string& cwd) {
    fs::create_directory_symlink(secret_.parent_path(), cwd + "/outdir");
  };
  runner_->Run(a);
  ExpectRefused(33,
                "output pattern 'outdir/*': 'outdir' is a symbolic link; outputs must be regular "
                "files in the task dir, each with a single link");
}

// Filing re-checks: a name swapped after the hash is refused, and the owner's file behind a
// swapped-in parent link is never moved.
TEST_F(OutputLinksTest, FilingRefusesAnOutputSwappedAfterItWasHashed) {
  const std::string task = (work_dir_ / "attempts" / "40.task").string();
  WriteFile(task + "/out.txt", "the task's work");
  WriteFile(task + "/sub/x.txt", "x");
  struct stat st;
  ASSERT_EQ(::stat((task + "/out.txt").c_str(), &st), 0);
  HashedOutputs hashed{{"out.txt", FileIdentity{st.st_dev, st.st_ino}}};
  v1::AttemptReport report;
  report.set_attempt(40);
  report.add_outputs()->set_path("out.txt");
  // Another file under the name.
  WriteFile(task + "/new.txt", "other bytes");
  fs::rename(task + "/new.txt", task + "/out.txt");
  absl::Status filed = outbox_.File(report, task, hashed);
  EXPECT_EQ(filed.code(), absl::StatusCode::kFailedPrecondition) << filed;
  EXPECT_EQ(filed.message(), "output 'out.txt' was replaced after it was hashed");
  EXPECT_FALSE(fs::exists(outbox_.PathOf(40, "")));
  // A link under the name.
  fs::remove(task + "/out.txt");
  fs::create_symlink(secret_, task + "/out.txt");
  EXPECT_EQ(outbox_.File(report, task, hashed).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs::exists(secret_));
  // The parent dir swapped for a link to the secret's dir.
  ASSERT_EQ(::stat((task + "/sub/x.txt").c_str(), &st), 0);
  hashed = {{"sub/id_rsa", FileIdentity{st.st_dev, st.st_ino}}};
  report.mutable_outputs(0)->set_path("sub/id_rsa");
  fs::remove_all(task + "/sub");
  fs::create_directory_symlink(secret_.parent_path(), task + "/sub");
  filed = outbox_.File(report, task, hashed);
  EXPECT_EQ(filed.code(), absl::StatusCode::kFailedPrecondition) << filed;
  EXPECT_EQ(filed.message(), "output 'sub/id_rsa': 'sub' is a symbolic link");
  EXPECT_EQ(FakeTransfers::ReadPath(secret_.string()), kSecret);  // still where it was
}

TEST_F(OutputLinksTest, ACheckpointLeavesOutLinksAndHardLinks) {
  auto a = NewAttempt(34);
  const std::string ck = a->paths.checkpoint_dir;
  fs::create_directories(ck);
  checkpointer_.Restored(*a);
  WriteFile(ck + "/state", "step 7");
  fs::create_symlink(secret_, ck + "/key");
  ASSERT_EQ(::link(secret_.c_str(), (ck + "/hard").c_str()), 0);
  fs::create_directory_symlink(secret_.parent_path(), ck + "/ssh");
  CheckpointUpload up = checkpointer_.Upload(*a, /*force=*/false);
  ASSERT_EQ(up.result, CheckpointResult::kUploaded) << up.error;
  ASSERT_EQ(up.files.size(), 1u);
  EXPECT_EQ(up.files[0].path(), "state");
  EXPECT_EQ(transfers_.uploaded_bytes, (std::map<std::string, std::string>{{"state", "step 7"}}));
}

TEST(ClassifyTest, OneClassifierForPhaseFailures) {
  EXPECT_EQ(Classify(absl::ResourceExhaustedError("x"), "m", false).ending, Ending::kMachineFault);
  EXPECT_EQ(Classify(absl::InternalError("x"), "m", true).ending, Ending::kMachineFault);
  EXPECT_EQ(Classify(absl::InternalError("x"), "m", false).ending, Ending::kFailed);
  auto never = [] { return false; };
  auto reason = [] { return std::string(); };
  EXPECT_FALSE(ClassifyExit(Exit(0), 1, never, reason));
  EXPECT_EQ(ClassifyExit(Exit(-1, 11), 1, never, reason)->message, "killed by signal 11");
}

}  // namespace
}  // namespace idlepool::worker

TEST(SandboxHintTest, SaysWhatTheSandboxHidAndHowToAskForIt) {
  EXPECT_NE(idlepool::worker::SandboxHint("curl: (6) Could not resolve host: example.org", false)
                .find("[sandbox] network = \"host\""),
            std::string::npos);
  EXPECT_NE(idlepool::worker::SandboxHint("connect: Network is unreachable", false)
                .find("without network"),
            std::string::npos);
  // With the host's network, a name that does not resolve is the task's own problem.
  EXPECT_EQ(idlepool::worker::SandboxHint("curl: (6) Could not resolve host: example.org", true),
            "");
  EXPECT_NE(
      idlepool::worker::SandboxHint("touch: cannot touch '/usr/x': Read-only file system", false)
          .find("only the task dir"),
      std::string::npos);
  EXPECT_NE(
      idlepool::worker::SandboxHint("cat: /home/ann/data.csv: No such file or directory", false)
          .find("inputs"),
      std::string::npos);
  EXPECT_EQ(idlepool::worker::SandboxHint("segmentation fault", false), "");
}
