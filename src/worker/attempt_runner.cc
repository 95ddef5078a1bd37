// The attempt runner's frame: the phase sequence, the report, delivery (phases:
// attempt_phases.cc).
#include "worker/attempt_runner.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "text/utf8.h"

namespace idlepool::worker {

void AttemptRunner::Run(std::shared_ptr<Attempt> a) {
  v1::AttemptReport report;
  report.set_attempt(a->id);
  Execute(*a, &report);
  a->transfer.ToProto(report.mutable_transfer());
  FillTiming(*a, /*with_upload=*/true, d_.clock->Now(), report.mutable_timing());
  bool send = false;
  std::unique_ptr<TaskProcess> process;
  std::unique_ptr<platform::TaskCgroup> cgroup;
  {
    std::lock_guard lock(a->mu);
    EndFrozenSpan(*a, d_.clock->Now());
    process = std::move(a->process);
    cgroup = std::move(a->cgroup);
    if (a->undelivered) {
      // Left in the outbox for the next run of this worker; nothing to report now.
    } else if (!a->killed) {
      a->finished = true;
      a->report = report;
      send = true;
    }
  }
  // Outside the lock: the group goes after the process that may still signal it, and after
  // the report (emptying or removing a group can wait for a straggler to die).
  process.reset();
  LeaveSlot(*a);
  bool undelivered;
  {
    std::lock_guard lock(a->mu);
    undelivered = a->undelivered;
  }
  // Its last output goes before its report, so the coordinator keeps it complete (up to its cap).
  if (d_.logs && send) d_.logs->Finish(a->id);
  if (d_.logs && !send) d_.logs->Drop(a->id);
  if (send) {
    v1::WorkerMessage m;
    *m.mutable_report() = report;
    d_.send(m);
  } else if (!undelivered) {
    d_.hooks.forget(a->id);
  }
  if (d_.cgroups) d_.cgroups->Release(std::move(cgroup));
}

void AttemptRunner::Execute(Attempt& a, v1::AttemptReport* report) {
  std::set<std::string> input_paths;
  HashedOutputs hashed;
  PhaseResult end = MakeDirs(a);
  if (!end) end = StageInputs(a, &input_paths);
  if (!end) end = RestoreCheckpoint(a);
  if (!end) end = GiveToSlot(a);
  if (!end) end = Launch(a, report);
  // A failed step while short of descriptors is the machine's fault (counted only on failure:
  // counting /proc/self/fd costs as much as a no-op task's filing).
  auto fault_if_short = [this](PhaseResult e) {
    if (!e || e->ending != Ending::kFailed || !d_.hooks.short_of_fds) return e;
    return MachineFaultIfShortOfFds(std::move(e), d_.hooks.short_of_fds());
  };
  if (end) {
    end = fault_if_short(std::move(end));
  } else if (!(end = AwaitExit(a, report))) {  // the task's own end is never the machine's
    end = fault_if_short(CollectOutputs(a, input_paths, &hashed, report));
    if (!end) end = fault_if_short(FileAndUpload(a, hashed, report));
  }
  if (end) Conclude(a, *end, report);
}

void AttemptRunner::LeaveSlot(Attempt& a) {
  if (a.slot < 0 || d_.sandboxes == nullptr) return;
  {
    std::lock_guard lock(a.ckpt_mu);  // a checkpoint upload in flight finishes first
  }
  for (const std::string& dir : {a.paths.task_dir, a.paths.checkpoint_dir}) {
    RecycledDirs::RemoveContents(dir);  // its outputs are in the outbox by now
    ::chmod(dir.c_str(), 0755);         // whatever the task made of it
  }
  d_.sandboxes->Release(a.slot);
}

// Everything put in a report is valid UTF-8 (protobuf refuses anything else, and the session
// would be torn down over it): messages are cut on character boundaries, invalid bytes replaced.
void AttemptRunner::Conclude(Attempt& a, const AttemptEnd& end, v1::AttemptReport* report) {
  switch (end.ending) {
    case Ending::kFailed:
      report->set_result(v1::AttemptReport::FAILED);
      report->set_message(text::TruncateUtf8(end.message, 1024));
      return;
    case Ending::kMachineFault:
      // Never counted against the task; after a full disk this worker takes no work until
      // space frees.
      report->set_result(v1::AttemptReport::MACHINE_FAULT);
      report->set_message(text::TruncateUtf8(end.message, 1024));
      report->set_cannot_start(end.fault == Fault::kCannotStart);
      if (end.fault == Fault::kDisk) {
        d_.hooks.disk_full(end.message);
      } else {
        spdlog::warn("attempt {}: machine fault: {}", a.id, end.message);
      }
      return;
    case Ending::kPreempted:
      return PreemptedReport(a, report);
    case Ending::kTimedOut:
      report->set_result(v1::AttemptReport::TIMED_OUT);
      report->set_message(end.message);
      return;
    case Ending::kUndelivered: {
      // Filed: the next run of this worker delivers it (see Worker's Redeliver). No report now.
      std::lock_guard lock(a.mu);
      a.undelivered = true;
      return;
    }
  }
}

// The report of a vacated attempt: its final checkpoint and the work it loses.
void AttemptRunner::PreemptedReport(Attempt& a, v1::AttemptReport* report) {
  std::string reason;
  core::MonoTime vacate_at, started;
  std::vector<Span> spans;
  {
    std::lock_guard lock(a.mu);
    reason = a.vacate_reason;
    vacate_at = a.vacate_at;
    started = a.started;
    spans = a.frozen_spans;
  }
  report->set_result(v1::AttemptReport::PREEMPTED);
  report->set_message(text::TruncateUtf8(reason, 1024));
  if (started == core::MonoTime{}) return;  // never started: nothing to save, nothing lost
  CheckpointUpload up = d_.checkpointer->Upload(a, /*force=*/true);
  if (up.result != CheckpointResult::kFailed) {
    report->set_has_checkpoint(true);
    for (auto& f : up.files) *report->add_checkpoint() = f;
  } else {
    spdlog::warn("attempt {}: final checkpoint not saved: {}", a.id,
                 std::string(up.error.message()));
  }
  const int64_t newest_ns = Checkpointer::NewestFileNs(a.paths.checkpoint_dir);
  // Work since the checkpoint dir last changed (or since the start), frozen time excluded.
  const core::MonoTime now = d_.clock->Now();
  core::MonoTime from = started;
  if (newest_ns > 0) {
    const std::chrono::milliseconds age =
        std::chrono::milliseconds(d_.clock->WallMs()) -
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(newest_ns));
    from = std::max(started, now - std::max(age, std::chrono::milliseconds(0)));
  }
  std::chrono::milliseconds lost{0};
  if (vacate_at > from) {
    lost = std::chrono::duration_cast<std::chrono::milliseconds>(vacate_at - from);
    for (const auto& [b, e] : spans) {
      const core::MonoTime lo = std::max(b, from), hi = std::min(e, vacate_at);
      if (hi > lo) lost -= std::chrono::duration_cast<std::chrono::milliseconds>(hi - lo);
    }
  }
  report->set_lost_ms(static_cast<uint64_t>(std::max<int64_t>(lost.count(), 0)));
}

absl::Status AttemptRunner::DeliverOutputs(Attempt& a, const v1::AttemptReport& report,
                                           std::atomic<uint64_t>* sent) {
  auto abandoned = [&] {
    std::lock_guard lock(a.mu);
    return a.killed;
  };
  std::chrono::milliseconds backoff{200};
  for (const auto& o : report.outputs()) {
    while (true) {
      if (abandoned() || d_.stop->stopping()) return absl::CancelledError("attempt stopped");
      absl::Status st =
          d_.transfers->Upload(UploadSource{d_.outbox->PathOf(a.id, o.path())}, o, sent);
      if (st.ok()) break;
      if (OutputDamaged(st)) {
        return absl::Status(st.code(),
                            absl::StrCat("output '", o.path(), "' changed after the task ended (",
                                         st.message(), ")"));
      }
      if (OutputRefused(st)) {
        return absl::Status(st.code(),
                            absl::StrCat("output '", o.path(), "' (", o.size(),
                                         " bytes) was refused by the coordinator: ", st.message()));
      }
      spdlog::warn("attempt {}: upload of {} failed ({}); retrying in {} ms", a.id, o.path(),
                   std::string(st.message()), backoff.count());
      d_.stop->WaitFor(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }
  return absl::OkStatus();
}

// Anything else (the coordinator unreachable, or busy with a conflicting upload of the same
// blob) is retried.
bool AttemptRunner::OutputDamaged(const absl::Status& st) {
  return st.code() == absl::StatusCode::kDataLoss || st.code() == absl::StatusCode::kNotFound;
}

// Over the blob size cap (kOutOfRange, checked on the first message of the upload) or a request
// it cannot take (kInvalidArgument): the same bytes would be refused again. kFailedPrecondition
// (an upload cut short, a conflicting one) and kResourceExhausted (its disk full) pass.
bool AttemptRunner::OutputRefused(const absl::Status& st) {
  return st.code() == absl::StatusCode::kOutOfRange ||
         st.code() == absl::StatusCode::kInvalidArgument;
}

}  // namespace idlepool::worker
