// AttemptRunner: runs one assigned attempt on its runner thread, as separate phases —
//   stage   (task and checkpoint dirs, inputs linked in from the blob cache, the task's latest
//            checkpoint restored),
//   run     (the command and the job's env rendered, spawned through the ProcessLauncher with
//            the task's environment (task_env.h), frozen at once if the owner or a held GPU
//            says so, waited for),
//   collect (outputs matching the job's globs, matched, opened and hashed beneath the task dir:
//            a symbolic link or a file with more than one link fails the attempt),
//   upload  (filed in the durable outbox, then uploaded until the coordinator has them) —
// and reports the result. Each phase returns a PhaseResult; the one classifier
// (attempt_error.h) and Conclude() turn an early end into the report.
//
// Threads: Run() on the attempt's runner thread (one per attempt at a time, pooled by the
// worker); DeliverOutputs also on the outbox thread. Other threads act on the same Attempt
// (attempt.h) under its mutex; the runner holds no lock of its own. Ownership: every
// collaborator (launcher, transfers, outbox, dirs, cgroup pool, checkpointer, stop signal) is
// the worker's and outlives the runner; hooks are called from runner threads. Units:
// milliseconds; the assignment's timeout in seconds (as on the wire).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "platform/clock.h"
#include "spec/spec.h"
#include "worker/attempt.h"
#include "worker/attempt_error.h"
#include "worker/cgroup_pool.h"
#include "worker/checkpointer.h"
#include "worker/launcher.h"
#include "worker/log_shipper.h"
#include "worker/outbox.h"
#include "worker/recycled_dirs.h"
#include "worker/sandbox_slots.h"
#include "worker/sender.h"
#include "worker/stop_signal.h"
#include "worker/task_env.h"
#include "worker/transfers.h"

namespace idlepool::worker {

struct AttemptRunnerConfig {
  std::string worker_name;    // IDLEPOOL_WORKER
  std::string work_dir_real;  // IDLEPOOL_WORK_DIR: marks this worker's tasks (see worker.cc)
  bool low_priority = true;
  std::chrono::milliseconds kill_grace{10000};  // SIGTERM -> SIGKILL on timeout
  uint64_t task_fd_limit = 0;                   // SpawnOptions::nofile_soft
  TaskEnvBase task_env;  // what every task's environment holds (worker/task_env.h)
};

// What the runner asks of the rest of the worker (the owner monitor, the disk, the table).
struct AttemptHooks {
  std::function<bool()> owner_suspended;                             // the owner policy suspends
  std::function<bool(const std::vector<uint32_t>&)> gpu_held;        // any of these GPUs is held
  std::function<void(const std::vector<uint64_t>&)> tell_suspended;  // frozen at start
  std::function<bool()> low_on_disk;
  std::function<std::string()> disk_reason;
  std::function<void(const std::string&)> disk_full;  // a machine fault: take no work
  std::function<bool()> short_of_fds;                 // few file descriptors left (null: never)
  std::function<void(uint64_t)> forget;               // drop the attempt (no report to await)
};

struct AttemptRunnerDeps {
  const platform::Clock* clock = nullptr;
  ProcessLauncher* launcher = nullptr;
  Transfers* transfers = nullptr;
  Outbox* outbox = nullptr;
  RecycledDirs* dirs = nullptr;
  CgroupPool* cgroups = nullptr;  // null: no cgroups (a process group only)
  Checkpointer* checkpointer = nullptr;
  StopSignal* stop = nullptr;
  Sender send;
  AttemptHooks hooks;
  SandboxSlots* sandboxes = nullptr;  // null: --no-sandbox (attempts have no slot)
  LogShipper* logs = nullptr;         // ships running attempts' output; null: not shipped
};

class AttemptRunner {
 public:
  AttemptRunner(AttemptRunnerConfig config, AttemptRunnerDeps deps)
      : config_(std::move(config)), d_(std::move(deps)) {}

  // Runs `a` to its end and sends its report (unless killed, or left in the outbox); releases
  // its process and cgroup.
  void Run(std::shared_ptr<Attempt> a);

  // Uploads the outputs of `report`, filed in the outbox, until the coordinator has them all;
  // retried with backoff (200 ms doubling to 5 s). OK; kDataLoss/kNotFound when an output no
  // longer holds the bytes that were hashed (message names it); kCancelled when the attempt is
  // killed or the worker stops; kOutOfRange/kInvalidArgument when the coordinator refuses an
  // output for good (over its size cap: message names the output, its size and the cap). Adds
  // the bytes sent to `*sent`.
  [[nodiscard]] absl::Status DeliverOutputs(Attempt& a, const v1::AttemptReport& report,
                                            std::atomic<uint64_t>* sent);

  // An upload error that retrying cannot fix: the local file no longer holds the bytes that
  // were hashed (kDataLoss: changed; kNotFound: gone).
  [[nodiscard]] static bool OutputDamaged(const absl::Status& st);
  // An upload the coordinator refuses for good (see DeliverOutputs): the attempt fails.
  [[nodiscard]] static bool OutputRefused(const absl::Status& st);

 private:
  void Execute(Attempt& a, v1::AttemptReport* report);
  // Phases, in order.
  [[nodiscard]] PhaseResult MakeDirs(Attempt& a);
  [[nodiscard]] PhaseResult StageInputs(Attempt& a, std::set<std::string>* input_paths);
  [[nodiscard]] PhaseResult RestoreCheckpoint(Attempt& a);
  // Tier uid: the task and checkpoint dirs, and all staged into them, become the slot user's.
  [[nodiscard]] PhaseResult GiveToSlot(Attempt& a);
  [[nodiscard]] PhaseResult Launch(Attempt& a, v1::AttemptReport* report);
  [[nodiscard]] PhaseResult AwaitExit(Attempt& a, v1::AttemptReport* report);
  [[nodiscard]] PhaseResult CollectOutputs(Attempt& a, const std::set<std::string>& input_paths,
                                           HashedOutputs* hashed, v1::AttemptReport* report);
  [[nodiscard]] PhaseResult CollectPattern(Attempt& a, int task_fd, const std::string& pattern,
                                           const std::set<std::string>& input_paths,
                                           HashedOutputs* hashed, v1::AttemptReport* report);
  [[nodiscard]] PhaseResult FileAndUpload(Attempt& a, const HashedOutputs& hashed,
                                          v1::AttemptReport* report);
  // Helpers.
  [[nodiscard]] PhaseResult StageBlob(Attempt& a, const std::string& sha256, uint64_t size,
                                      const std::string& dst, const std::string& what,
                                      bool check_disk);
  // `job_env`: the job's env rendered for this task (spec::RenderEnv).
  [[nodiscard]] platform::SpawnOptions SpawnFor(const Attempt& a,
                                                const std::vector<std::string>& argv,
                                                const spec::TaskParams& params,
                                                std::vector<std::string> job_env) const;
  // Spawns under a.mu (a vacate either comes first or finds the process); *frozen: it starts
  // frozen for the owner.
  [[nodiscard]] PhaseResult Spawn(Attempt& a, const platform::SpawnOptions& sp,
                                  v1::AttemptReport* report, bool* frozen);
  void Conclude(Attempt& a, const AttemptEnd& end, v1::AttemptReport* report);
  // Empties a sandboxed attempt's dirs out of its slot and frees the slot (its last process
  // is gone): the slot's next attempt never sees them.
  void LeaveSlot(Attempt& a);
  void PreemptedReport(Attempt& a, v1::AttemptReport* report);
  [[nodiscard]] bool DiskLow(bool check) const { return check && d_.hooks.low_on_disk(); }

  const AttemptRunnerConfig config_;
  const AttemptRunnerDeps d_;
};

}  // namespace idlepool::worker
