// Jobs.TaskLogs (issue 18): a task's kept output, or its live output followed across its
// attempts; and the kept log of one attempt as text for the HTTP API. The output itself is the
// log keeper's (log_keeper.h); which attempts a task has, and how they ended, the store's.
#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/job_service.h"
#include "status_convert.h"
#include "text/utf8.h"

namespace idlepool::coordinator {
namespace {

using std::chrono::milliseconds;

constexpr size_t kDataBytes = size_t{64} << 10;  // output per LogData message
constexpr size_t kAttemptsLooked = 1000;         // attempts of a task searched for --attempt
constexpr milliseconds kPoll{500};               // how often a follower looks at the store

grpc::Status NotFound(std::string what) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND, std::move(what));
}

bool Ended(core::TaskState s) {
  return s == core::TaskState::kSucceeded || s == core::TaskState::kFailed ||
         s == core::TaskState::kCancelled;
}

std::string EndedText(const store::AttemptRecord& a) {
  std::string s = absl::StrCat("attempt ", a.attempt, " ended: ", core::ToString(a.outcome));
  if (a.outcome == core::AttemptOutcome::kFailed)
    absl::StrAppend(&s, " (exit code ", a.exit_code, ")");
  return s;
}

std::string StartedText(const store::AttemptRecord& a) {
  return absl::StrCat("attempt ", a.attempt, " started on ", text::PrintableText(a.worker));
}

// Writes to one client; false once it went away.
class LogWriter {
 public:
  LogWriter(grpc::ServerWriter<v1::LogData>* w, uint32_t task) : w_(w), task_(task) {}
  bool Event(uint64_t attempt, std::string text) {
    v1::LogData d;
    d.set_attempt(attempt);
    d.set_task(task_);
    d.set_event(std::move(text));
    return w_->Write(d);
  }
  // `text` in pieces of at most kDataBytes, offsets from `offset`.
  bool Data(uint64_t attempt, const std::string& text, uint64_t offset = 0) {
    for (size_t at = 0; at < text.size(); at += kDataBytes) {
      v1::LogData d;
      d.set_attempt(attempt);
      d.set_task(task_);
      d.set_offset(offset + at);
      d.set_data(text.substr(at, kDataBytes));
      if (!w_->Write(d)) return false;
    }
    return true;
  }
  bool Write(const v1::LogData& d) { return w_->Write(d); }

 private:
  grpc::ServerWriter<v1::LogData>* w_;
  uint32_t task_;
};

struct LogTarget {
  core::TaskKey task;
  core::TaskState state = core::TaskState::kPending;
  store::AttemptRecord attempt;  // attempt 0: the task has none yet
};

// The task and attempt `req` names: NOT_FOUND for an unknown job, task or attempt,
// INVALID_ARGUMENT for no task in a job of several.
grpc::Status ResolveLog(store::Store& store, const v1::LogRequest& req, LogTarget* out) {
  auto job = store.GetJobHeader(req.job());
  if (absl::IsNotFound(job.status())) return NotFound(absl::StrCat("no job ", req.job()));
  if (!job.ok()) return wire::ToGrpc(job.status());
  const uint32_t tasks = job->sched.task_count;
  if (req.has_task()) {
    if (req.task() >= tasks) {
      return NotFound(
          absl::StrCat("no task ", req.task(), " in job ", req.job(), " (it has ", tasks, ")"));
    }
    out->task = {req.job(), req.task()};
  } else if (tasks == 1) {
    out->task = {req.job(), 0};
  } else {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("job ", req.job(), " has ", tasks,
                                     " tasks: say which (idlepool logs ", req.job(), " TASK)"));
  }
  auto attempts = store.ListTaskAttempts(out->task, kAttemptsLooked);
  if (absl::IsNotFound(attempts.status())) {
    return NotFound(absl::StrCat("no task ", out->task.index, " in job ", req.job()));
  }
  if (!attempts.ok()) return wire::ToGrpc(attempts.status());
  out->state = attempts->state;
  const auto& list = attempts->attempts;
  if (req.attempt() != 0) {
    auto it = std::find_if(list.begin(), list.end(), [&](const store::AttemptRecord& a) {
      return a.attempt == req.attempt();
    });
    if (it == list.end()) {
      return NotFound(absl::StrCat("attempt ", req.attempt(), " is not one of task ",
                                   out->task.index, " of job ", req.job()));
    }
    out->attempt = *it;
  } else if (!list.empty()) {
    out->attempt = *std::max_element(
        list.begin(), list.end(), [](const store::AttemptRecord& a, const store::AttemptRecord& b) {
          return a.attempt < b.attempt;
        });
  }
  return grpc::Status::OK;
}

// Follows the task: what its newest attempt kept, then every chunk as it comes, with a line as
// each attempt starts and ends, until the task is finished or the client goes away.
class LogFollowing {
 public:
  LogFollowing(store::Store& store, LogKeeper& logs, LogTarget t, LogWriter& w)
      : store_(store), logs_(logs), t_(std::move(t)), w_(w) {}

  grpc::Status Run(grpc::ServerContext* ctx) {
    std::string backlog;
    auto f = logs_.Follow(t_.task, t_.attempt.attempt, &backlog);
    if (!f.ok()) return wire::ToGrpc(f.status());
    follower_ = *f;
    grpc::Status st = Loop(ctx, backlog);
    logs_.Unfollow(follower_);
    return st;
  }

 private:
  grpc::Status Loop(grpc::ServerContext* ctx, const std::string& backlog) {
    const store::AttemptRecord& a = t_.attempt;
    if (a.attempt != 0) {
      current_ = a.attempt;
      if (!w_.Event(a.attempt, StartedText(a)) || !w_.Data(a.attempt, backlog)) return Gone();
      if (a.outcome != core::AttemptOutcome::kRunning) {
        ended_ = true;
        if (!w_.Event(a.attempt, EndedText(a))) return Gone();
      }
    }
    while (!ctx->IsCancelled()) {
      if (!Poll()) return Gone();
      if (Ended(state_) && (ended_ || current_ == 0)) {
        // The attempt's last chunks came before its report: they are queued by now.
        return Drain(follower_->Take(milliseconds(0))) ? grpc::Status::OK : Gone();
      }
      if (follower_->closed()) {
        return NotFound(absl::StrCat("job ", t_.task.job, " was deleted"));
      }
      if (!Drain(follower_->Take(kPoll))) return Gone();
    }
    return Gone();
  }

  bool Drain(const std::vector<v1::LogData>& items) {
    for (const v1::LogData& d : items) {
      if (d.attempt() > current_ && !Poll()) return false;  // announce it first
      if (!w_.Write(d)) return false;
    }
    return true;
  }

  // Announces the attempts that started or ended since the last look; false when the client
  // went away. A store error is retried at the next look.
  bool Poll() {
    auto attempts = store_.ListTaskAttempts(t_.task, 8);
    if (!attempts.ok()) return true;
    state_ = attempts->state;
    auto list = attempts->attempts;
    std::sort(list.begin(), list.end(),
              [](const auto& x, const auto& y) { return x.attempt < y.attempt; });
    for (const store::AttemptRecord& a : list) {
      if (a.attempt < current_) continue;
      if (a.attempt > current_) {
        current_ = a.attempt;
        ended_ = false;
        if (!w_.Event(a.attempt, StartedText(a))) return false;
      }
      if (!ended_ && a.outcome != core::AttemptOutcome::kRunning) {
        ended_ = true;
        if (!w_.Event(a.attempt, EndedText(a))) return false;
      }
    }
    return true;
  }

  static grpc::Status Gone() { return grpc::Status(grpc::StatusCode::CANCELLED, "reader gone"); }

  store::Store& store_;
  LogKeeper& logs_;
  const LogTarget t_;
  LogWriter& w_;
  std::shared_ptr<LogFollower> follower_;
  core::AttemptId current_ = 0;
  bool ended_ = false;
  core::TaskState state_ = core::TaskState::kPending;
};

}  // namespace

grpc::Status JobService::TaskLogs(grpc::ServerContext* ctx, const v1::LogRequest* req,
                                  grpc::ServerWriter<v1::LogData>* writer) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/TaskLogs"); !st.ok()) return st;
  if (!d_.logs)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this coordinator keeps no logs");
  LogTarget t;
  if (auto st = ResolveLog(d_.store, *req, &t); !st.ok()) return st;
  LogWriter w(writer, t.task.index);
  const uint64_t max = d_.logs->cap_bytes() + 4096;  // the cap and its gap lines
  if (!req->follow()) {
    if (t.attempt.attempt == 0) {
      w.Event(0, absl::StrCat("task ", t.task.index, " has no attempt yet"));
      return grpc::Status::OK;
    }
    const auto& a = t.attempt;
    w.Event(a.attempt, a.outcome == core::AttemptOutcome::kRunning ? StartedText(a) : EndedText(a));
    auto kept = d_.logs->Kept(t.task.job, a.attempt, max);
    if (kept.ok()) w.Data(a.attempt, *kept);
    return grpc::Status::OK;
  }
  return LogFollowing(d_.store, *d_.logs, t, w).Run(ctx);
}

grpc::Status JobService::AttemptLogInternal(uint64_t job, uint64_t attempt, std::string* text) {
  if (!d_.logs)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this coordinator keeps no logs");
  auto rec = d_.store.GetJobHeader(job);
  if (absl::IsNotFound(rec.status())) return NotFound(absl::StrCat("no job ", job));
  if (!rec.ok()) return wire::ToGrpc(rec.status());
  auto kept = d_.logs->Kept(job, attempt, d_.logs->cap_bytes() + 4096);
  if (!kept.ok()) {
    return NotFound(absl::StrCat("job ", job, " has no kept output of attempt ", attempt));
  }
  *text = std::move(*kept);
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
