// The coordinator's side of the planner: what it knows of the pool (workers, their measurements,
// availability, caches) and of a job's history, turned into a prediction (v1::Prediction) with
// the pure model of src/plan (job_profile.h feeds pool_model.h).
//
// Used by the PlanJob RPC (`idlepool plan`) and for every submitted job, whose prediction is
// made at submission when the job's profile key has history, else once its first attempts have
// succeeded, and reported by GetJob next to the actual makespan.
//
// Assumptions, stated so users can judge a prediction:
//   - The job has the workers it is planned on to itself (other jobs' tasks are not modelled).
//   - Slots of a worker for a job: capacity / the job's resources (cpus, gpus, memory), at
//     least 1 for a worker that fits one task.
//   - Churn evidence is shrunk toward "no churn" so that a pool observed for minutes is not
//     judged by one restart: mean up period = (up time + kChurnPriorUpS) / (ended up periods + 1),
//     up fraction = (up + kChurnPriorUpS) / (up + down + kChurnPriorUpS): one pseudo up period
//     of an hour (the Bayesian pseudo-observation of the core's hazard estimate, scheduler.h,
//     "churn_prior"; an hour is a typical uninterrupted lending spell of a desktop, FTA traces).
//   - Samples resumed from a checkpoint are left out (their run time covers part of a task).
//
// Thread safety: pure functions of their arguments.
#ifndef IDLEPOOL_COORDINATOR_PLANNER_H_
#define IDLEPOOL_COORDINATOR_PLANNER_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/scheduler.h"
#include "idlepool.pb.h"
#include "store/store.h"

namespace idlepool::coordinator {

inline constexpr double kChurnPriorUpS = 3600;
// Samples used per prediction (the newest).
inline constexpr size_t kPlanSamples = 200;

// One worker that may run the job, with what the coordinator measured of it.
struct PlanWorker {
  std::string name;
  core::Resources capacity;
  std::optional<store::WorkerRecord> record;  // link, CPU score (absent: never measured)
  // Availability totals as of now (up/down ms, ended periods); absent: never observed.
  std::optional<int64_t> up_ms, down_ms;
  uint32_t up_periods = 0;
  bool holds_assets = false;  // every input blob of the job is in its cache
};

struct PlanJobFacts {
  uint64_t tasks = 0;
  core::Resources resources;
  double input_bytes = 0;
  std::optional<double> task_s;        // given: no samples needed
  std::optional<double> output_bytes;  // given per task
};

// One link probe as a worker reported it (LinkMeasured), stamped with the coordinator's wall clock.
struct LinkProbe {
  int64_t wall_ms = 0;
  int64_t rtt_us = 0;
  int64_t down_bytes_per_s = 0;
  int64_t up_bytes_per_s = 0;
};

// A worker's link estimate from its recent probes: over the newest kLinkWindowProbes probes no
// older than kLinkWindowMs, the smallest round trip and the largest rates. A probe that shares the
// link with other traffic (a job's transfers, other workers' probes) can only see a longer round
// trip and a lower rate, never the reverse, so the best of a few recent probes estimates the link
// (the windowed min-RTT and max-bandwidth filters of TCP BBR: Cardwell et al., ACM Queue 14(5),
// 2016); the window lets a link that really got slower (a laptop moved to Wi-Fi) show within an
// hour or three probes. `probes` oldest first; it is trimmed to the window (the newest is always
// kept). Returns the estimate stamped with the newest probe's time.
inline constexpr size_t kLinkWindowProbes = 3;
inline constexpr int64_t kLinkWindowMs = core::Millis(std::chrono::hours(1)).count();
LinkProbe BestOfRecentProbes(std::vector<LinkProbe>& probes, int64_t now_ms);

// The aggregate rate at which uploads that overlapped in time reached the coordinator: for each
// group of samples whose upload intervals ([end - upload, end]) overlap, bytes / the group's span;
// the largest over groups of 2 or more uploads that would have taken at least 0.1 s at
// `probe_bytes_per_s` (smaller groups say more about round trips than about the link). 0 when no
// group qualifies. Many concurrent TCP uploads through one link get less than one probe's rate
// (losses at the bottleneck queue; on a 10 Mbit/s tbf link 8 uploads reached about 60%), which
// the model's fair sharing at full rate would not know: Predict uses this rate for the
// coordinator's downlink when it is below the probes'.
double ConcurrentUploadRate(const std::vector<store::AttemptRecord>& samples,
                            double probe_bytes_per_s);

// The dispatch gap: for each sample, its start minus the latest end of another sample of the same
// job on the same worker that ended before it started (the slot it took was freed then), kept
// when 0 to 2 s (longer: the worker was idle for other reasons); the median, in seconds. It is
// the part of a task's cycle outside its own wall time (committing the report, choosing and
// sending the next assignment), which matters for tasks of milliseconds. 0 without such pairs
// (a calibration run has one task per worker).
double DispatchGapS(const std::vector<store::AttemptRecord>& samples);

// Tasks of a job with `need` resources that one worker of `capacity` runs at once (0: none fits).
uint32_t SlotsFor(const core::Resources& capacity, const core::Resources& need);

// The prediction, or kFailedPrecondition when there is nothing to profile from (no samples, no
// task_s) and kInvalidArgument for a model error (naming the field). `basis` is for humans.
absl::StatusOr<v1::Prediction> Predict(const PlanJobFacts& job,
                                       const std::vector<PlanWorker>& workers,
                                       const std::vector<store::AttemptRecord>& samples,
                                       const std::string& basis, int64_t now_wall_ms);

}  // namespace idlepool::coordinator

#endif  // IDLEPOOL_COORDINATOR_PLANNER_H_
