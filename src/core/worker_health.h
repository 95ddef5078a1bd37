// Which workers fail which jobs: the core's memory of failures that steers placement (see
// "Health" in core/scheduler.h). Pure: events in, answers out, `now` passed in.
//
// Three things are kept, all keyed by worker name:
//   - per task, the workers it failed on (failed or timed out, or could not start there): a retry
//     avoids them while another worker can take it (the scheduler decides "can");
//   - per (job, worker), the failures of the job there since its last success there, and the
//     last error: `hold_off_after` of them (or one command that could not start) hold the worker
//     off the job. A success of the job on that worker clears it;
//   - per worker, the distinct jobs it failed since its last success (of any job). A job counts
//     only once it has succeeded somewhere (on any worker): a job that fails everywhere is the
//     job's fault, not the machines'; without that, three broken submissions would take every
//     worker of the pool out. With HealthRule::distinct_jobs of them the worker is unhealthy
//     until now + backoff (backoff doubling from HealthRule::backoff up to max_backoff with each
//     time it trips with no success in between). Once the backoff ends the worker takes work
//     again; one more counted failure before a success trips it again, for twice as long.
//     A success clears it all; so does Reset (the admin's `idlepool workers reset`).
// Preemptions, losses and machine faults are never reported here (the caller's rule), except a
// command that could not start (CannotStart), which holds the worker off that job at once and
// never counts toward unhealthy.
//
// Thread safety: none (owned by the Scheduler). Memory: an entry per failing (task, worker),
// (job, worker) and worker; a job's are dropped by ForgetJob, a task's by its success.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"

namespace idlepool::core {

struct HealthRule {
  uint32_t distinct_jobs = 3;           // failing this many jobs in a row: unhealthy
  Millis backoff{600000};               // 10 min the first time
  Millis max_backoff{4 * 3600 * 1000};  // doubling up to 4 h
};

// A worker held off a job (JobSummary::held_off).
struct HeldOff {
  WorkerName worker;
  uint32_t failures = 0;   // the job's failed attempts there since its last success there
  std::string last_error;  // the newest one's message
  bool operator==(const HeldOff&) const = default;
};

// A worker out of the pool for its failures (WorkerView::unhealthy).
struct Unhealthy {
  std::string last_error;  // the failure that tripped it (with its job and task)
  MonoTime until{};        // takes no new work before this
  uint32_t jobs = 0;       // distinct jobs it failed in a row
};

class WorkerHealth {
 public:
  explicit WorkerHealth(HealthRule rule = {}) : rule_(rule) {}

  // An attempt of batch task `task` ended failed or timed out on `worker` with `message`. True
  // when `worker` turned unhealthy now.
  bool Failed(const TaskKey& task, const WorkerName& worker, uint32_t hold_off_after,
              const std::string& message, MonoTime now);
  // The task's command could not start on `worker` (exec failed): held off its job at once.
  void CannotStart(const TaskKey& task, const WorkerName& worker, const std::string& message);
  // An attempt of `task` succeeded on `worker`. Returns the workers that turned unhealthy now
  // (their failures of this job count from now on, since it works elsewhere), by name.
  std::vector<WorkerName> Succeeded(const TaskKey& task, const WorkerName& worker, MonoTime now);
  // Forgets `worker`'s failures: healthy again, held off nothing. True when it was unhealthy or
  // held off some job.
  bool Reset(const WorkerName& worker);
  void ForgetJob(JobId job);
  // Unhealthy workers whose backoff ended by `now`, by name (they take work again).
  std::vector<WorkerName> Recover(MonoTime now);

  bool IsHeldOff(JobId job, const WorkerName& worker) const;
  bool FailedOn(const TaskKey& task, const WorkerName& worker) const;
  bool FailedSomewhere(const TaskKey& task) const { return failed_on_.count(task) != 0; }
  // Whether placement must look at all: the task failed somewhere or its job holds some worker off.
  bool Marked(const TaskKey& task) const;
  std::optional<Unhealthy> UnhealthyOf(const WorkerName& worker) const;
  std::vector<HeldOff> HeldOffOf(JobId job) const;  // by worker name

 private:
  struct Hold {
    uint32_t failures = 0;
    std::string last_error;
    bool held = false;
  };
  struct Streak {
    std::set<JobId> jobs;  // failed since its last success
    std::string last_error;
    uint32_t trips = 0;  // times it turned unhealthy with no success in between
    std::optional<MonoTime> until;
  };
  // Trips `worker` when its streak counts enough jobs that work elsewhere; true when it did.
  bool MaybeTrip(Streak& s, MonoTime now);

  HealthRule rule_;
  std::map<TaskKey, std::set<WorkerName>> failed_on_;
  std::map<std::pair<JobId, WorkerName>, Hold> holds_;
  std::map<WorkerName, Streak> streaks_;
  std::set<JobId> worked_;  // jobs with a success somewhere
};

}  // namespace idlepool::core
