// The in-memory store: same semantics as the SQLite store (same validation, same error codes,
// same orderings), nothing durable. Apply is atomic through an undo log: a batch that fails
// part-way is rolled back record by record, in reverse.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "store/store.h"
#include "store/store_internal.h"

namespace idlepool::store {
namespace {

namespace in = internal;

class MemoryStore final : public Store {
 public:
  absl::StatusOr<core::JobId> InsertJob(const NewJob& job, int64_t now_ms) override;
  absl::Status Apply(const std::vector<core::Decision>& records, int64_t now_ms) override;
  absl::Status ScaleService(core::JobId job, uint32_t replicas) override;
  absl::StatusOr<core::RestoredState> Load() override;
  absl::StatusOr<JobRecord> GetJob(core::JobId job) override;
  absl::StatusOr<JobRecord> GetJobHeader(core::JobId job) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs() override;
  absl::StatusOr<std::vector<TaskRecord>> ListTasks(core::JobId job) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListAttempts(core::JobId job) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListFailedTasks(const FailedTasksQuery& q) override;
  absl::StatusOr<TaskAttempts> ListTaskAttempts(core::TaskKey task, size_t limit) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListSucceededAttempts(
      const SucceededAttemptsQuery& query) override;
  absl::StatusOr<std::vector<TaskOutput>> ListOutputs(core::JobId job) override;
  absl::StatusOr<std::vector<core::OutputFile>> GetCheckpoint(core::TaskKey task) override;
  absl::Status PutWorkers(const std::vector<WorkerRecord>& workers) override;
  absl::StatusOr<std::vector<WorkerRecord>> ListWorkers() override;
  absl::StatusOr<std::optional<WorkerRecord>> GetWorker(const std::string& worker) override;
  absl::Status PutJobPrediction(core::JobId job, const std::string& bytes) override;
  absl::StatusOr<std::string> GetJobPrediction(core::JobId job) override;
  absl::Status AppendWorkerEvents(const std::vector<WorkerEvent>& events) override;
  absl::StatusOr<std::vector<WorkerEvent>> ListWorkerEvents(const WorkerEventsQuery& q) override;
  absl::Status TrimWorkerEvents(int64_t before_ms, size_t max_rows) override;
  absl::StatusOr<std::vector<TaskInputRow>> ListTaskInputs(core::JobId job,
                                                           std::optional<uint32_t> task) override;
  absl::StatusOr<TaskInputTotals> GetTaskInputTotals(core::JobId job) override;
  absl::StatusOr<std::set<std::string>> ReferencedBlobs(const SpecBlobs& spec_blobs) override;
  absl::StatusOr<std::set<std::string>> DeleteJob(core::JobId job,
                                                  const SpecBlobs& spec_blobs) override;
  absl::Status PutUser(const UserRow& user) override {
    if (std::string p = in::UserRowProblem(user); !p.empty()) return Invalid(p);
    std::lock_guard lock(mu_);
    users_.users[user.user] = user;
    return absl::OkStatus();
  }
  absl::Status PutUsageBalances(const std::vector<UsageBalance>& balances,
                                int64_t as_of_ms) override {
    std::lock_guard lock(mu_);
    users_.balances.clear();
    for (const UsageBalance& b : balances) users_.balances[b.user] = b;
    users_.as_of_ms = as_of_ms;
    return absl::OkStatus();
  }
  absl::StatusOr<UsersState> LoadUsers() override {
    std::lock_guard lock(mu_);
    UsersState out;
    for (const auto& [name, u] : users_.users) out.users.push_back(u);
    for (const auto& [name, b] : users_.balances) out.balances.push_back(b);
    out.balances_as_of_ms = users_.balances.empty() ? 0 : users_.as_of_ms;
    return out;
  }
  absl::StatusOr<std::vector<UsageTotals>> ListUsage(int64_t since_day, UsageBy by) override {
    std::lock_guard lock(mu_);
    std::map<std::string, UsageTotals> sums;
    for (const auto& [key, d] : usage_) {
      if (std::get<0>(key) < since_day) continue;
      const std::string& k = by == UsageBy::kUser ? std::get<1>(key) : std::get<2>(key);
      UsageTotals& t = sums[k];
      t.key = k;
      Add(t, d);
    }
    std::vector<UsageTotals> out;
    for (auto& [k, t] : sums) out.push_back(t);
    return out;
  }
  absl::Status AddServed(int64_t day, const std::vector<ServedRow>& rows) override {
    for (const ServedRow& r : rows) {
      if (r.user.empty() || r.user.size() > 64 || r.worker.size() > 64) {
        return Invalid(
            "AddServed: a row needs a user name of 1 to 64 bytes and a worker name of at most 64");
      }
    }
    std::lock_guard lock(mu_);
    for (const ServedRow& r : rows) {
      UsageTotals& t = usage_[UsageKey{day, r.user, r.worker}];
      t.requests += r.requests;
      t.tokens += r.tokens;
    }
    return absl::OkStatus();
  }
  absl::Status TrimUsage(int64_t before_day) override {
    std::lock_guard lock(mu_);
    std::erase_if(usage_, [&](const auto& e) { return std::get<0>(e.first) < before_day; });
    return absl::OkStatus();
  }
  absl::Status SetJobPriority(core::JobId job, int32_t priority) override {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return NotFound(job);
    it->second.rec.sched.priority = priority;
    return absl::OkStatus();
  }

 private:
  using OutputKey = std::pair<uint32_t, std::string>;  // (task index, path): the listing order
  struct Job {
    JobRecord rec;
    std::vector<TaskRecord> tasks;
    std::set<core::AttemptId> attempts;
    std::map<OutputKey, core::OutputFile> outputs;
    std::map<uint32_t, std::vector<core::OutputFile>> checkpoints;  // by task index
    std::vector<TaskInputRow> task_inputs;                          // by (index, path)
  };
  using Undo = std::vector<std::function<void()>>;

  static absl::Status Invalid(absl::string_view msg) {
    return absl::InvalidArgumentError(absl::StrCat("memory store: ", msg));
  }
  static absl::Status NotFound(core::JobId job) {
    return absl::NotFoundError(absl::StrCat("memory store: no job ", job));
  }
  // A copy of `rec` without its spec (the spec is never copied). Copies every other field of
  // JobRecord: keep it in step when JobRecord grows (the conformance suite compares it to GetJob).
  static JobRecord Header(const JobRecord& rec) {
    JobRecord h;
    h.id = rec.id;
    h.name = rec.name;
    h.sched = rec.sched;
    h.state = rec.state;
    h.submitted_ms = rec.submitted_ms;
    h.finished_ms = rec.finished_ms;
    h.profile_key = rec.profile_key;
    h.input_bytes = rec.input_bytes;
    h.input_files = rec.input_files;
    h.service = rec.service;
    return h;
  }

  TaskRecord* FindTask(core::TaskKey t) {
    auto it = jobs_.find(t.job);
    if (it == jobs_.end() || t.index >= it->second.tasks.size()) return nullptr;
    return &it->second.tasks[t.index];
  }
  absl::Status ApplyOne(const core::Decision& d, int64_t now_ms, Undo& undo);
  // The blobs `job` names (as SqliteStore: its spec's inputs, outputs, checkpoints, task inputs).
  static void AddBlobs(const Job& job, const SpecBlobs& spec_blobs, std::set<std::string>& out);

  std::mutex mu_;
  core::JobId next_job_ = 1;
  std::map<core::JobId, Job> jobs_;
  std::map<core::AttemptId, AttemptRecord> attempts_;
  std::map<std::string, WorkerRecord> workers_;
  std::map<core::JobId, std::string> predictions_;
  std::deque<WorkerEvent> events_;  // in the order appended
  // usage_days as the SQLite store keeps it: (day, user, worker) -> sums.
  using UsageKey = std::tuple<int64_t, std::string, std::string>;
  std::map<UsageKey, UsageTotals> usage_;
  static void Add(UsageTotals& t, const UsageTotals& d) {
    t.slot_ms += d.slot_ms;
    t.gpu_ms += d.gpu_ms;
    t.attempts += d.attempts;
    t.tasks += d.tasks;
    t.preempted += d.preempted;
    t.bytes_in += d.bytes_in;
    t.bytes_out += d.bytes_out;
    t.requests += d.requests;
    t.tokens += d.tokens;
  }
  void AddUsage(const AttemptRecord& a, Undo& undo);
  struct Users {
    std::map<std::string, UserRow> users;
    std::map<std::string, UsageBalance> balances;
    int64_t as_of_ms = 0;
  } users_;
};

void MemoryStore::AddUsage(const AttemptRecord& a, Undo& undo) {
  auto job = jobs_.find(a.task.job);
  if (job == jobs_.end()) return;
  const core::JobSubmitted& sched = job->second.rec.sched;
  const int64_t wall = std::max<int64_t>(a.ended_ms - a.started_ms, 0);
  const UsageKey key{a.ended_ms / 86'400'000, sched.user, a.worker};
  auto [it, inserted] = usage_.try_emplace(key);
  undo.push_back([this, key, inserted, old = it->second] {
    if (inserted) {
      usage_.erase(key);
    } else {
      usage_[key] = old;
    }
  });
  Add(it->second, UsageTotals{"", wall * sched.resources.cpus, wall * sched.resources.gpus, 1,
                              a.outcome == core::AttemptOutcome::kSucceeded,
                              a.outcome == core::AttemptOutcome::kPreempted, a.transfer.input_bytes,
                              a.transfer.output_bytes});
}

absl::StatusOr<core::JobId> MemoryStore::InsertJob(const NewJob& job, int64_t now_ms) {
  if (job.sched.task_count == 0) return Invalid(in::ZeroTaskCountMsg());
  std::vector<TaskInputRow> task_inputs = job.task_inputs;
  std::sort(task_inputs.begin(), task_inputs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.index, a.path) < std::tie(b.index, b.path);
  });
  for (size_t i = 0; i < task_inputs.size(); ++i) {
    const TaskInputRow& r = task_inputs[i];
    if (r.index >= job.sched.task_count) {
      return Invalid(absl::StrCat("InsertJob: task input '", r.path, "' names task ", r.index,
                                  " of a job of ", job.sched.task_count, " tasks"));
    }
    if (i > 0 && r.index == task_inputs[i - 1].index && r.path == task_inputs[i - 1].path) {
      return Invalid(absl::StrCat("InsertJob: task ", r.index, " stages '", r.path, "' twice"));
    }
  }
  std::lock_guard lock(mu_);
  const core::JobId id = next_job_++;
  Job& j = jobs_[id];
  j.rec.id = id;
  j.rec.name = job.name;
  j.rec.spec = job.spec;
  j.rec.sched = job.sched;
  j.rec.sched.job = id;
  j.rec.state = core::JobState::kRunning;
  j.rec.submitted_ms = now_ms;
  j.rec.finished_ms = 0;
  j.rec.profile_key = job.profile_key;
  j.rec.input_bytes = job.input_bytes;
  j.rec.input_files = job.input_files;
  j.rec.service = job.service;
  j.tasks.resize(job.sched.task_count);
  for (uint32_t i = 0; i < job.sched.task_count; ++i) j.tasks[i].task = {id, i};
  j.task_inputs = std::move(task_inputs);
  return id;
}

absl::Status MemoryStore::ApplyOne(const core::Decision& d, int64_t now_ms, Undo& undo) {
  if (const auto* r = std::get_if<core::AttemptCreated>(&d)) {
    if (r->attempt == 0) return Invalid(in::ZeroAttemptIdMsg(r->task));
    if (r->revived) {
      auto it = attempts_.find(r->attempt);
      if (it == attempts_.end() || it->second.outcome != core::AttemptOutcome::kLost ||
          it->second.task != r->task || it->second.worker != r->worker) {
        return Invalid(in::ReviveNotLostMsg(r->attempt));
      }
      AttemptRecord& a = it->second;
      undo.push_back([&a, old = a] { a = old; });
      a.outcome = core::AttemptOutcome::kRunning;
      a.ended_ms = 0;
      a.lost_ms = 0;
      a.message.clear();
      a.log_tail.clear();
      return absl::OkStatus();
    }
    if (attempts_.count(r->attempt)) return Invalid(in::DuplicateAttemptMsg(r->attempt));
    if (FindTask(r->task) == nullptr) return Invalid(in::UnknownTaskMsg("AttemptCreated", r->task));
    AttemptRecord a;
    a.attempt = r->attempt;
    a.task = r->task;
    a.worker = r->worker;
    a.outcome = core::AttemptOutcome::kRunning;
    a.started_ms = now_ms;
    a.gpus = r->gpus;
    attempts_.emplace(r->attempt, std::move(a));
    jobs_[r->task.job].attempts.insert(r->attempt);
    undo.push_back([this, id = r->attempt, job = r->task.job] {
      attempts_.erase(id);
      jobs_[job].attempts.erase(id);
    });
    return absl::OkStatus();
  }

  if (const auto* r = std::get_if<core::AttemptEnded>(&d)) {
    if (r->outcome == core::AttemptOutcome::kRunning) return Invalid(in::EndedRunningMsg(r->attempt));
    auto it = attempts_.find(r->attempt);
    if (it == attempts_.end()) return Invalid(in::UnknownAttemptMsg(r->attempt));
    AttemptRecord& a = it->second;
    if (a.task != r->task || a.worker != r->worker) {
      return Invalid(in::AttemptMismatchMsg(r->attempt, a.task, a.worker, r->task, r->worker));
    }
    if (r->late && r->outcome != core::AttemptOutcome::kSucceeded) {
      return Invalid(in::LateNotSuccessMsg(r->attempt));
    }
    if (r->late && a.outcome != core::AttemptOutcome::kLost) {
      return Invalid(in::LateNotLostMsg(r->attempt, a.outcome));
    }
    if (!r->late && a.outcome != core::AttemptOutcome::kRunning) {
      return Invalid(in::AlreadyEndedMsg(r->attempt, a.outcome));
    }
    undo.push_back([&a, old = a] { a = old; });  // map nodes are stable
    a.outcome = r->outcome;
    a.exit_code = r->exit_code;
    a.message = r->message;
    a.ended_ms = now_ms;
    a.lost_ms = r->lost.count();
    a.transfer = r->transfer;
    a.timing = r->timing;
    a.log_tail = r->log_tail;
    if (!r->late) AddUsage(a, undo);
    return absl::OkStatus();
  }

  if (const auto* r = std::get_if<core::AttemptSuspended>(&d)) {
    auto it = attempts_.find(r->attempt);
    if (it == attempts_.end()) return Invalid(in::UnknownAttemptMsg(r->attempt));
    AttemptRecord& a = it->second;
    if (a.outcome != core::AttemptOutcome::kRunning || a.task != r->task) {
      return Invalid(in::SuspendedEndedMsg(r->attempt));
    }
    undo.push_back([&a] { --a.suspensions; });
    ++a.suspensions;
    return absl::OkStatus();
  }

  if (const auto* r = std::get_if<core::TaskCheckpointed>(&d)) {
    auto it = attempts_.find(r->attempt);
    if (it == attempts_.end()) return Invalid(in::UnknownAttemptMsg(r->attempt));
    if (it->second.outcome != core::AttemptOutcome::kRunning || it->second.task != r->task) {
      return Invalid(in::CheckpointOfEndedMsg(r->attempt));
    }
    Job& job = jobs_[r->task.job];
    auto& slot = job.checkpoints[r->task.index];
    undo.push_back([&slot, old = slot] { slot = old; });
    slot = r->files;
    std::sort(slot.begin(), slot.end(),
              [](const core::OutputFile& a, const core::OutputFile& b) { return a.path < b.path; });
    return absl::OkStatus();
  }

  if (const auto* r = std::get_if<core::TaskChanged>(&d)) {
    TaskRecord* t = FindTask(r->task);
    if (t == nullptr) return Invalid(in::UnknownTaskMsg("TaskChanged", r->task));
    Job& job = jobs_[r->task.job];
    auto first = job.outputs.lower_bound(OutputKey{r->task.index, std::string()});
    auto last = job.outputs.lower_bound(OutputKey{r->task.index + 1, std::string()});
    if (r->task.index == UINT32_MAX) last = job.outputs.end();
    std::map<OutputKey, core::OutputFile> old_outputs(first, last);
    undo.push_back([this, t, old = *t, key = r->task, old_outputs = std::move(old_outputs)] {
      *t = old;
      Job& j = jobs_[key.job];
      auto f = j.outputs.lower_bound(OutputKey{key.index, std::string()});
      auto l = key.index == UINT32_MAX ? j.outputs.end()
                                       : j.outputs.lower_bound(OutputKey{key.index + 1, {}});
      j.outputs.erase(f, l);
      j.outputs.insert(old_outputs.begin(), old_outputs.end());
    });
    t->state = r->state;
    t->failures = r->failures;
    t->committed_attempt = r->committed_attempt;
    if (r->state != core::TaskState::kSucceeded) return absl::OkStatus();
    job.outputs.erase(first, last);
    for (const core::OutputFile& f : r->outputs) {
      if (!job.outputs.emplace(OutputKey{r->task.index, f.path}, f).second) {
        return Invalid(in::DuplicateOutputMsg(r->task, f.path));
      }
    }
    return absl::OkStatus();
  }

  if (const auto* r = std::get_if<core::JobChanged>(&d)) {
    auto it = jobs_.find(r->job);
    if (it == jobs_.end()) return Invalid(in::UnknownJobMsg("JobChanged", r->job));
    JobRecord& rec = it->second.rec;
    undo.push_back([&rec, state = rec.state, finished = rec.finished_ms] {
      rec.state = state;
      rec.finished_ms = finished;
    });
    rec.state = r->state;
    rec.finished_ms = in::IsTerminal(r->state) ? now_ms : 0;
    return absl::OkStatus();
  }

  return absl::OkStatus();  // WorkerLost and message decisions: nothing to keep
}

absl::Status MemoryStore::ScaleService(core::JobId job, uint32_t replicas) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end() || !it->second.rec.sched.service) {
    return absl::InvalidArgumentError(absl::StrCat("job ", job, " is not a service"));
  }
  it->second.rec.sched.service->replicas = replicas;
  return absl::OkStatus();
}

absl::Status MemoryStore::Apply(const std::vector<core::Decision>& records, int64_t now_ms) {
  std::lock_guard lock(mu_);
  Undo undo;
  for (const core::Decision& d : records) {
    if (absl::Status s = ApplyOne(d, now_ms, undo); !s.ok()) {
      for (auto it = undo.rbegin(); it != undo.rend(); ++it) (*it)();
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<core::RestoredState> MemoryStore::Load() {
  std::lock_guard lock(mu_);
  core::RestoredState out;
  for (const auto& [id, job] : jobs_) {
    core::RestoredJob rj;
    rj.spec = job.rec.sched;
    rj.state = job.rec.state;
    std::set<core::WorkerName> lost;
    for (core::AttemptId a : job.attempts) {
      const AttemptRecord& rec = attempts_.at(a);
      in::CountAttempt(rec.outcome, rj.counters);
      rj.counters.suspensions += rec.suspensions;
      rj.counters.lost_work += core::Millis(rec.lost_ms);
      rj.counters.transfer += rec.transfer;
      if (rec.outcome == core::AttemptOutcome::kLost) {
        lost.insert(rec.worker);
        if (job.rec.state == core::JobState::kRunning) {
          out.lost.push_back({a, rec.task, rec.worker, core::Millis(rec.lost_ms), rec.gpus});
        }
      }
    }
    rj.workers_lost.assign(lost.begin(), lost.end());
    out.jobs.push_back(std::move(rj));
    for (const TaskRecord& t : job.tasks) out.tasks.push_back({t.task, t.state, t.failures});
  }
  for (const auto& [id, a] : attempts_) {
    if (a.outcome == core::AttemptOutcome::kRunning) {
      out.running.push_back({id, a.task, a.worker, a.gpus});
    }
  }
  out.next_attempt_id = attempts_.empty() ? 1 : attempts_.rbegin()->first + 1;
  return out;
}

absl::StatusOr<JobRecord> MemoryStore::GetJob(core::JobId job) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound(job);
  return it->second.rec;
}

absl::StatusOr<JobRecord> MemoryStore::GetJobHeader(core::JobId job) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound(job);
  return Header(it->second.rec);
}

absl::StatusOr<std::vector<JobRecord>> MemoryStore::ListJobs() {
  std::lock_guard lock(mu_);
  std::vector<JobRecord> out;
  out.reserve(jobs_.size());
  for (const auto& [id, job] : jobs_) out.push_back(Header(job.rec));
  return out;
}

absl::StatusOr<std::vector<TaskRecord>> MemoryStore::ListTasks(core::JobId job) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound(job);
  return it->second.tasks;
}

absl::StatusOr<std::vector<AttemptRecord>> MemoryStore::ListAttempts(core::JobId job) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound(job);
  std::vector<AttemptRecord> out;
  out.reserve(it->second.attempts.size());
  for (core::AttemptId a : it->second.attempts) out.push_back(attempts_.at(a));
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>> MemoryStore::ListFailedTasks(const FailedTasksQuery& q) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(q.job);
  if (it == jobs_.end()) return NotFound(q.job);
  const Job& job = it->second;
  std::map<uint32_t, core::AttemptId> last;  // failed task index -> its last attempt
  for (core::AttemptId a : job.attempts) {
    const uint32_t index = attempts_.at(a).task.index;
    if (index < job.tasks.size() && job.tasks[index].state == core::TaskState::kFailed &&
        (!q.after_task || index > *q.after_task)) {
      last[index] = a;  // attempts are by id: the last one wins
    }
  }
  std::vector<AttemptRecord> out;
  for (const auto& [index, a] : last) {
    if (out.size() >= q.limit) break;
    out.push_back(attempts_.at(a));
  }
  return out;
}

absl::StatusOr<TaskAttempts> MemoryStore::ListTaskAttempts(core::TaskKey task, size_t limit) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(task.job);
  if (it == jobs_.end() || task.index >= it->second.tasks.size()) {
    return absl::NotFoundError(absl::StrCat("memory store: no ", in::TaskName(task)));
  }
  TaskAttempts out;
  out.state = it->second.tasks[task.index].state;
  for (core::AttemptId a : it->second.attempts) {
    if (attempts_.at(a).task.index == task.index) out.attempts.push_back(attempts_.at(a));
  }
  out.total = out.attempts.size();
  if (out.attempts.size() > limit) {
    out.attempts.erase(out.attempts.begin(),
                       out.attempts.end() - static_cast<std::ptrdiff_t>(limit));
  }
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>> MemoryStore::ListSucceededAttempts(
    const SucceededAttemptsQuery& q) {
  if (q.job == 0 && q.profile_key.empty()) return Invalid(in::NoProfileQueryMsg());
  std::lock_guard lock(mu_);
  std::vector<const Job*> jobs;
  if (q.job != 0) {
    auto it = jobs_.find(q.job);
    if (it == jobs_.end()) return NotFound(q.job);
    jobs.push_back(&it->second);
  } else {
    for (const auto& [id, job] : jobs_) {
      if (job.rec.profile_key == q.profile_key) jobs.push_back(&job);
    }
  }
  std::vector<AttemptRecord> out;
  for (const Job* job : jobs) {
    for (core::AttemptId a : job->attempts) {
      const AttemptRecord& rec = attempts_.at(a);
      if (rec.outcome == core::AttemptOutcome::kSucceeded) out.push_back(rec);
    }
  }
  std::sort(out.begin(), out.end(), [](const AttemptRecord& a, const AttemptRecord& b) {
    return in::NewerAttempt(a.ended_ms, a.attempt, b.ended_ms, b.attempt);
  });
  if (out.size() > q.limit) out.resize(q.limit);
  for (AttemptRecord& a : out) a.log_tail.clear();  // as the SQLite backend: not selected
  return out;
}

absl::StatusOr<std::vector<TaskOutput>> MemoryStore::ListOutputs(core::JobId job) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound(job);
  std::vector<TaskOutput> out;
  out.reserve(it->second.outputs.size());
  for (const auto& [key, file] : it->second.outputs) out.push_back({key.first, file});
  return out;
}

absl::StatusOr<std::vector<core::OutputFile>> MemoryStore::GetCheckpoint(core::TaskKey task) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(task.job);
  if (it == jobs_.end()) return NotFound(task.job);
  auto c = it->second.checkpoints.find(task.index);
  if (c == it->second.checkpoints.end()) return std::vector<core::OutputFile>{};
  return c->second;
}

absl::Status MemoryStore::PutWorkers(const std::vector<WorkerRecord>& workers) {
  for (const auto& w : workers) {
    if (std::string p = in::WorkerRecordProblem(w); !p.empty()) return Invalid(p);
  }
  std::lock_guard lock(mu_);
  for (const auto& w : workers) workers_[w.worker] = w;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<WorkerRecord>> MemoryStore::ListWorkers() {
  std::lock_guard lock(mu_);
  std::vector<WorkerRecord> out;
  for (const auto& [name, w] : workers_) out.push_back(w);
  return out;
}

absl::StatusOr<std::optional<WorkerRecord>> MemoryStore::GetWorker(const std::string& worker) {
  std::lock_guard lock(mu_);
  auto it = workers_.find(worker);
  if (it == workers_.end()) return std::nullopt;
  return it->second;
}

absl::Status MemoryStore::PutJobPrediction(core::JobId job, const std::string& bytes) {
  std::lock_guard lock(mu_);
  if (!jobs_.count(job)) return NotFound(job);
  predictions_[job] = bytes;
  return absl::OkStatus();
}

absl::StatusOr<std::string> MemoryStore::GetJobPrediction(core::JobId job) {
  std::lock_guard lock(mu_);
  if (!jobs_.count(job)) return NotFound(job);
  auto it = predictions_.find(job);
  return it == predictions_.end() ? std::string() : it->second;
}

absl::StatusOr<std::vector<TaskInputRow>> MemoryStore::ListTaskInputs(
    core::JobId job, std::optional<uint32_t> task) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound(job);
  std::vector<TaskInputRow> out;
  for (const TaskInputRow& r : it->second.task_inputs) {
    if (!task || r.index == *task) out.push_back(r);
  }
  return out;
}

absl::StatusOr<TaskInputTotals> MemoryStore::GetTaskInputTotals(core::JobId job) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound(job);
  TaskInputTotals t;
  for (const TaskInputRow& r : it->second.task_inputs) {
    ++t.files;
    t.bytes += r.size;
  }
  return t;
}

absl::Status MemoryStore::AppendWorkerEvents(const std::vector<WorkerEvent>& events) {
  for (const auto& e : events) {
    if (std::string p = in::WorkerEventProblem(e); !p.empty()) return Invalid(p);
  }
  std::lock_guard lock(mu_);
  events_.insert(events_.end(), events.begin(), events.end());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<WorkerEvent>> MemoryStore::ListWorkerEvents(
    const WorkerEventsQuery& q) {
  const std::set<std::string> workers(q.workers.begin(), q.workers.end());
  std::lock_guard lock(mu_);
  std::vector<WorkerEvent> out;
  for (const auto& e : events_) {
    if (workers.count(e.worker) && e.at_ms >= q.from_ms && e.at_ms <= q.to_ms) out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const WorkerEvent& a, const WorkerEvent& b) { return a.at_ms < b.at_ms; });
  if (out.size() > q.limit) out.erase(out.begin(), out.end() - static_cast<ptrdiff_t>(q.limit));
  return out;
}

absl::Status MemoryStore::TrimWorkerEvents(int64_t before_ms, size_t max_rows) {
  std::lock_guard lock(mu_);
  std::erase_if(events_, [&](const WorkerEvent& e) { return e.at_ms < before_ms; });
  while (events_.size() > max_rows) events_.pop_front();
  return absl::OkStatus();
}

void MemoryStore::AddBlobs(const Job& job, const SpecBlobs& spec_blobs,
                           std::set<std::string>& out) {
  for (std::string& sha : spec_blobs(job.rec.spec)) out.insert(std::move(sha));
  for (const auto& [key, file] : job.outputs) out.insert(file.sha256);
  for (const auto& [index, files] : job.checkpoints) {
    for (const core::OutputFile& f : files) out.insert(f.sha256);
  }
  for (const TaskInputRow& row : job.task_inputs) out.insert(row.sha256);
}

absl::StatusOr<std::set<std::string>> MemoryStore::ReferencedBlobs(const SpecBlobs& spec_blobs) {
  std::lock_guard lock(mu_);
  std::set<std::string> out;
  for (const auto& [id, job] : jobs_) AddBlobs(job, spec_blobs, out);
  return out;
}

absl::StatusOr<std::set<std::string>> MemoryStore::DeleteJob(core::JobId job,
                                                             const SpecBlobs& spec_blobs) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound(job);
  if (it->second.rec.state == core::JobState::kRunning) {
    return absl::FailedPreconditionError(
        absl::StrCat("memory store: job ", job, " is still running"));
  }
  std::set<std::string> out;
  AddBlobs(it->second, spec_blobs, out);
  for (core::AttemptId a : it->second.attempts) attempts_.erase(a);
  predictions_.erase(job);
  jobs_.erase(it);
  return out;
}

}  // namespace

std::unique_ptr<Store> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

}  // namespace idlepool::store
