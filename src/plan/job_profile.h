// From measurements to the pool model's inputs: a job's profile (its finished attempts, from a
// calibration run or history) and the pool's measured workers become a PoolModel and a JobModel
// (pool_model.h). Pure: the coordinator and the CLI gather the facts; this decides what they
// mean.
//
// Per worker w:
//   - task_s: the median run time (process running, suspensions excluded) of w's own samples.
//     A worker without samples is scaled by its calibration CPU score: the samples' work in
//     "score-seconds" (run_s x score of the worker that ran it, median) / score_w. Without
//     scores on both sides: the median run time of all samples (a worker like the others).
//   - per-task overhead: what a sample's wall time (assignment to report, as the coordinator
//     saw it) holds beyond what the model adds itself: wall - run - upload - stage, plus the
//     staging that was not a fetch (stage of a sample that fetched nothing, else the model's
//     copy time), minus the model's round trips per task and copy time; clamped at 0. The
//     job's overhead is the median over all samples; a worker's own median above it is added
//     to its task_s (slow process start, a long RTT's extra round trips), since the model has
//     one overhead per job.
//   - links, CPU score, availability and "holds the assets" as measured (0 / unset = unknown:
//     the model assumes and says so).
// Job: output bytes per task = the samples' median output bytes; shared asset bytes = the job's
// inputs (every task stages all of them today).
//
// Units: seconds, bytes, bytes/s (doubles). Errors: Checked<> naming the field (no samples and
// no task_s override, a worker without a name, negative times). Thread safety: pure functions.
#ifndef IDLEPOOL_PLAN_JOB_PROFILE_H_
#define IDLEPOOL_PLAN_JOB_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/pool_model.h"

namespace idlepool::plan {

// One succeeded attempt of the job (or of an earlier job with the same profile key).
struct AttemptSample {
  std::string worker;
  double wall_s = 0;         // coordinator: attempt created -> report committed
  double stage_s = 0;        // worker: fetching and staging inputs
  double run_s = 0;          // worker: the task process, frozen time excluded
  double upload_s = 0;       // worker: hashing and uploading outputs
  double fetched_bytes = 0;  // inputs fetched (coordinator + peers) rather than found cached
  double output_bytes = 0;
};

// One worker that could run the job now, as the coordinator knows it.
struct WorkerFacts {
  std::string name;
  int slots = 1;         // tasks of this job it fits at once (capacity / job resources)
  double cpu_score = 0;  // calibration, MB/s per core; 0 = unknown
  double rtt_s = 0;      // 0 = unknown
  double down_bytes_per_s = 0;
  double up_bytes_per_s = 0;
  std::optional<double> up_fraction;
  double mean_up_s = kNeverEnds;
  double mean_down_s = 0;
  bool holds_assets = false;
};

struct JobFacts {
  int64_t tasks = 0;
  double shared_asset_bytes = 0;  // sum of the job's input sizes
  // Overrides for what-ifs and for planning without samples: seconds of compute per task on
  // every worker (ignores samples' run times), output bytes per task.
  std::optional<double> task_s;
  std::optional<double> output_bytes_per_task;
  // The coordinator's links when known better than the workers' probes say (0 = unknown: the
  // model takes the largest worker rate): e.g. the aggregate rate concurrent uploads achieved.
  double coordinator_up_bytes_per_s = 0;
  double coordinator_down_bytes_per_s = 0;
  // Time between an attempt's report and the next assignment to the same worker that the
  // samples' own wall times do not hold (the coordinator's commit and dispatch), added to the
  // per-task overhead. Measured by the caller from consecutive attempts; 0 = none seen.
  double dispatch_gap_s = 0;
};

// The median of `v` (the mean of the middle two for an even count); 0 for none.
double Median(std::vector<double> v);

// Where a worker's task_s came from, for the plan's table.
enum class TaskTimeSource { kMeasured, kScaledByCpuScore, kPoolMedian, kGiven };
std::string_view TaskTimeSourceName(TaskTimeSource s);  // "measured", "cpu score", ...

struct ProfiledModels {
  PoolModel pool;
  JobModel job;
  std::vector<TaskTimeSource> sources;  // per pool.workers entry
  std::vector<int> samples;             // per pool.workers entry: its own samples
  int total_samples = 0;
};

// Builds the model inputs. `protocol` and `copy_bytes_per_s` are the model's (the overhead
// derivation subtracts exactly what the model will add back).
Checked<ProfiledModels> BuildModels(const std::vector<AttemptSample>& samples,
                                    const std::vector<WorkerFacts>& workers, const JobFacts& job,
                                    const ProtocolModel& protocol = ProtocolModel{},
                                    double copy_bytes_per_s = JobModel{}.stage_copy_bytes_per_s);

}  // namespace idlepool::plan

#endif  // IDLEPOOL_PLAN_JOB_PROFILE_H_
