// The attempt runner's phases: stage, run, upload (see attempt_runner.h; collect:
// attempt_collect.cc).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "spdlog/spdlog.h"
#include "text/utf8.h"
#include "wire/wire.h"
#include "worker/attempt_runner.h"
#include "worker/replica_port.h"
#include "worker/task_env.h"

namespace idlepool::worker {
namespace fs = std::filesystem;
namespace {

// Staging (inputs, checkpoint) stops for a vacate too: the attempt is handed back at once.
bool StagingStopped(Attempt& a) {
  std::lock_guard lock(a.mu);
  return a.killed || a.vacating;
}

// The job asked for the host's network ([sandbox] network = "host").
bool WantsHostNetwork(const Attempt& a) { return a.assignment.host_network(); }

bool Vacating(Attempt& a) {
  std::lock_guard lock(a.mu);
  return a.vacating;
}

}  // namespace

// --- Stage ---------------------------------------------------------------------------------

PhaseResult AttemptRunner::MakeDirs(Attempt& a) {
  const std::string& task_dir = a.paths.task_dir;
  // Sandboxed: its slot's dirs, there already and empty (nothing outlives its task there,
  // sandbox/agent.h): no inode to allocate.
  if (a.slot >= 0) return std::nullopt;
  if (::mkdir(task_dir.c_str(), 0755) != 0) {
    const int err = errno;
    const std::string why = absl::StrCat("cannot create ", task_dir, ": ", std::strerror(err));
    const bool full = err == ENOSPC || err == EDQUOT;
    return Classify(full ? absl::ResourceExhaustedError(why) : absl::InternalError(why), why,
                    /*disk_low=*/false);
  }
  if (absl::Status st = d_.dirs->Make(a.paths.checkpoint_dir); !st.ok()) {
    return Classify(st, std::string(st.message()), DiskLow(true));
  }
  return std::nullopt;
}

// Fetches blob `sha256` into the cache once (pinned for the attempt), then links it to `dst`.
// `what`: the message's start when the fetch fails; `check_disk`: a failed fetch while the disk
// is low is the machine's fault.
PhaseResult AttemptRunner::StageBlob(Attempt& a, const std::string& sha256, uint64_t size,
                                     const std::string& dst, const std::string& what,
                                     bool check_disk) {
  absl::StatusOr<std::string> cached =
      d_.transfers->Stage(a, sha256, size, [&a] { return StagingStopped(a); });
  if (!cached.ok() && Vacating(a)) return Preempted();
  if (!cached.ok()) {
    return Classify(cached.status(), absl::StrCat(what, cached.status().message()),
                    DiskLow(check_disk));
  }
  absl::Status st = blob::CloneOrCopy(*cached, dst);
  if (!st.ok()) return Classify(st, std::string(st.message()), /*disk_low=*/false);
  return std::nullopt;
}

// Inputs: each blob fetched into the cache once, then linked into the task dir.
PhaseResult AttemptRunner::StageInputs(Attempt& a, std::set<std::string>* input_paths) {
  for (const auto& in : a.assignment.inputs()) {
    input_paths->insert(in.path());
    const std::string dst = a.paths.task_dir + "/" + in.path();
    if (PhaseResult end = StageBlob(a, in.sha256(), in.size(), dst,
                                    absl::StrCat("cannot stage input '", in.path(), "': "),
                                    /*check_disk=*/false)) {
      return end;
    }
    ::chmod(dst.c_str(), (in.mode() & 0777) | 0400);
  }
  return std::nullopt;
}

// The task's latest checkpoint, from whichever worker saved it.
PhaseResult AttemptRunner::RestoreCheckpoint(Attempt& a) {
  for (const auto& f : a.assignment.checkpoint()) {
    if (auto why = spec::RelativePathError(f.path())) {
      return Failed(
          absl::StrCat("checkpoint file '", text::TruncateUtf8(f.path(), 256), "' ", *why));
    }
    const std::string dst = a.paths.checkpoint_dir + "/" + f.path();
    std::error_code ec;
    fs::create_directories(fs::path(dst).parent_path(), ec);
    if (PhaseResult end =
            StageBlob(a, f.sha256(), f.size(), dst,
                      absl::StrCat("cannot restore checkpoint file '", f.path(), "': "),
                      /*check_disk=*/true)) {
      return end;
    }
    ::chmod(dst.c_str(), 0644);
  }
  d_.checkpointer->Restored(a);
  if (a.assignment.checkpoint_size() > 0) {
    spdlog::info("attempt {}: restored a checkpoint of {} files", a.id,
                 a.assignment.checkpoint_size());
  }
  return std::nullopt;
}

PhaseResult AttemptRunner::GiveToSlot(Attempt& a) {
  if (a.slot < 0 || d_.sandboxes == nullptr) return std::nullopt;
  const auto owner = d_.sandboxes->Owner(a.slot);
  if (!owner) return std::nullopt;
  for (const std::string& dir : {a.paths.task_dir, a.paths.checkpoint_dir}) {
    if (absl::Status st = RecycledDirs::ChownTree(dir, owner->first, owner->second); !st.ok()) {
      return OutOfResources(std::string(st.message()));
    }
  }
  return std::nullopt;
}

// --- Run -----------------------------------------------------------------------------------

platform::SpawnOptions AttemptRunner::SpawnFor(const Attempt& a,
                                               const std::vector<std::string>& argv,
                                               const spec::TaskParams& params,
                                               std::vector<std::string> job_env) const {
  const v1::Assignment& as = a.assignment;
  platform::SpawnOptions sp;
  sp.argv = argv;
  sp.cgroup = a.cgroup.get();
  sp.low_priority = config_.low_priority;
  sp.nofile_soft = config_.task_fd_limit;
  sp.memory_limit_bytes = as.resources().memory_mb() << 20;
  sp.cwd = a.paths.task_dir;
  sp.stdout_path = a.paths.stdout_log;
  sp.stderr_path = a.paths.stderr_log;
  const uint32_t cpus = std::max(1u, as.resources().cpus());
  TaskEnvFacts facts;
  facts.sandboxed = a.slot >= 0 && d_.sandboxes != nullptr;
  if (facts.sandboxed) {
    if (const auto owner = d_.sandboxes->Owner(a.slot)) facts.slot_uid = owner->first;
  }
  facts.task_dir = a.paths.task_dir;
  facts.cpus = cpus;
  facts.job = std::move(job_env);
  auto add = [&](const std::string& k, const std::string& v) { facts.pool.emplace_back(k, v); };
  add("IDLEPOOL_JOB_ID", std::to_string(as.job()));
  add("IDLEPOOL_JOB_NAME", as.job_name());
  add("IDLEPOOL_TASK_INDEX", std::to_string(params.index));
  add("IDLEPOOL_ATTEMPT_ID", std::to_string(a.id));
  add("IDLEPOOL_TASK_DIR", a.paths.task_dir);
  add("IDLEPOOL_CHECKPOINT_DIR", a.paths.checkpoint_dir);
  add("IDLEPOOL_WORKER", config_.worker_name);
  add("IDLEPOOL_WORK_DIR", config_.work_dir_real);
  add("IDLEPOOL_CPUS", std::to_string(cpus));
  for (const auto& [k, v] : a.gpu_env) add(k, v);
  if (!params.chunk.frames.empty()) {
    add("IDLEPOOL_FRAMES", spec::JoinFrames(params.chunk.frames));
    if (params.chunk.frames.size() == 1) {
      add("IDLEPOOL_FRAME", std::to_string(params.chunk.frames[0]));
    }
    add("IDLEPOOL_FRAME_START", std::to_string(params.chunk.start));
    add("IDLEPOOL_FRAME_END", std::to_string(params.chunk.end));
    add("IDLEPOOL_FRAME_STEP", std::to_string(params.chunk.step));
  }
  if (!params.item.empty()) add("IDLEPOOL_ITEM", params.item);
  if (a.port != 0) add("IDLEPOOL_PORT", std::to_string(a.port));
  sp.env = BuildTaskEnv(config_.task_env, facts);
  return sp;
}

PhaseResult AttemptRunner::Spawn(Attempt& a, const platform::SpawnOptions& sp,
                                 v1::AttemptReport* report, bool* frozen) {
  std::lock_guard lock(a.mu);
  if (a.killed) return Failed("stopped before it started");
  if (a.vacating) return Preempted();
  // Read before the spawn, so that run time (AttemptReport.timing) never misses the task's
  // first moments: it is at least as long as the task ran.
  const core::MonoTime spawn_at = d_.clock->Now();
  auto proc = a.slot >= 0 && d_.sandboxes != nullptr
                  ? d_.sandboxes->Launch(a.slot, sp, WantsHostNetwork(a), a.device_nodes)
                  : d_.launcher->Start(sp);
  if (!proc.ok()) {
    report->set_exit_code(127);
    if (absl::IsResourceExhausted(proc.status())) {  // out of descriptors or processes
      return OutOfResources(std::string(proc.status().message()));
    }
    if (absl::IsFailedPrecondition(proc.status()) || absl::IsUnavailable(proc.status())) {
      return OutOfResources(std::string(proc.status().message()));  // the sandbox's fault
    }
    if (absl::IsNotFound(proc.status()) && !JobsOwnProgram(sp.argv[0], sp.cwd)) {
      // The exec of a program of this machine's failed: this machine cannot run it.
      return CannotStart(std::string(proc.status().message()), config_.worker_name);
    }
    return Failed(std::string(proc.status().message()));
  }
  a.process = std::move(*proc);
  a.started = spawn_at;
  // The owner became active while this attempt was staging (or uses one of its GPUs, or one is
  // too hot): it starts frozen. A service replica is never frozen: the owner monitor drains it.
  const bool gpu_held = d_.hooks.gpu_held(a.gpus);
  const bool suspended = d_.hooks.owner_suspended();
  if ((suspended || gpu_held) && !a.assignment.has_service()) {
    *frozen = true;
    if (!a.process->Suspend().ok()) spdlog::warn("attempt {}: freeze is slow", a.id);
    a.frozen = true;
    a.gpu_frozen = gpu_held && !suspended;
    a.frozen_since = a.started;
  }
  return std::nullopt;
}

PhaseResult AttemptRunner::Launch(Attempt& a, v1::AttemptReport* report) {
  const v1::Assignment& as = a.assignment;
  const spec::TaskParams params = wire::FromProto(as.task());
  const std::vector<std::string> cmd(as.command().begin(), as.command().end());
  std::optional<spec::ReplicaParams> replica;
  if (as.has_service()) {  // a service's replica: it listens on a port picked now
    absl::StatusOr<uint16_t> port = PickReplicaPort();
    if (!port.ok()) return OutOfResources(std::string(port.status().message()));
    a.port = *port;
    replica = spec::ReplicaParams{*port};
  }
  auto argv = spec::RenderCommand(cmd, params, a.paths.task_dir, a.paths.checkpoint_dir, replica);
  if (!argv.ok()) return Failed(std::string(argv.status().message()));
  auto job_env = spec::RenderEnv(wire::EnvFromProto(as.env()), params, a.paths.task_dir,
                                 a.paths.checkpoint_dir, replica);
  if (!job_env.ok()) return Failed(std::string(job_env.status().message()));
  if (d_.cgroups) {
    auto group = d_.cgroups->Acquire();
    if (!group.ok()) return Failed(std::string(group.status().message()));
    a.cgroup = std::move(*group);
  }
  bool frozen = false;
  if (PhaseResult end =
          Spawn(a, SpawnFor(a, *argv, params, std::move(*job_env)), report, &frozen)) {
    return end;
  }
  if (d_.logs) d_.logs->Add(a.id, a.paths.stdout_log, a.paths.stderr_log);
  if (frozen) d_.hooks.tell_suspended({a.id});
  return std::nullopt;
}

PhaseResult AttemptRunner::AwaitExit(Attempt& a, v1::AttemptReport* report) {
  TaskProcess* proc = a.process.get();  // owned by `a`, reset only by Run
  const std::chrono::seconds timeout(a.assignment.timeout_s());
  const platform::ExitInfo exit = proc->Wait(timeout, config_.kill_grace);
  bool vacating;
  {
    std::lock_guard lock(a.mu);
    a.exited = d_.clock->Now();
    vacating = a.vacating;
  }
  report->set_exit_code(exit.exit_code);
  report->set_log_tail(text::TailUtf8(exit.stderr_tail, 2048));
  if (vacating) return Preempted();
  if (LibraryMissing(exit.exit_code, exit.stderr_tail)) {
    const std::string program = a.assignment.command_size() > 0 ? a.assignment.command(0) : "";
    return CannotStart(absl::StrCat("cannot run '", program, "': a shared library is missing"),
                       config_.worker_name);
  }
  PhaseResult end =
      ClassifyExit(exit, a.assignment.timeout_s(), d_.hooks.low_on_disk, d_.hooks.disk_reason);
  if (end && end->ending == Ending::kFailed && a.slot >= 0) {
    const std::string hint = SandboxHint(exit.stderr_tail, a.assignment.host_network());
    if (!hint.empty()) end->message += " (" + hint + ")";
  }
  return end;
}

// --- Upload --------------------------------------------------------------------------------

// Files the outputs and the report in the durable outbox (from here on the work survives cut
// links, coordinator restarts and a restart of this worker), then uploads them: never a reason
// to run the task again.
PhaseResult AttemptRunner::FileAndUpload(Attempt& a, const HashedOutputs& hashed,
                                         v1::AttemptReport* report) {
  report->set_result(v1::AttemptReport::SUCCEEDED);
  a.transfer.ToProto(report->mutable_transfer());
  FillTiming(a, /*with_upload=*/false, d_.clock->Now(), report->mutable_timing());
  if (absl::Status st = d_.outbox->File(*report, a.paths.task_dir, hashed); !st.ok()) {
    report->clear_outputs();
    if (st.code() == absl::StatusCode::kResourceExhausted) {
      return MachineFault(absl::StrCat("cannot keep the outputs: ", st.message()));
    }
    return Failed(std::string(st.message()));
  }
  {
    std::lock_guard lock(a.mu);
    a.filed = true;
  }
  const absl::Status st = DeliverOutputs(a, *report, &a.transfer.output_bytes);
  if (st.ok()) return std::nullopt;
  report->clear_outputs();
  // Its bytes no longer match what was hashed when the task ended (something truncated or
  // rewrote it since): the task's result cannot be trusted.
  if (OutputDamaged(st) || OutputRefused(st)) return Failed(std::string(st.message()));
  if (d_.stop->stopping()) return AttemptEnd{Ending::kUndelivered, ""};
  return Failed("stopped while uploading outputs");
}

}  // namespace idlepool::worker
