// `idlepool plan JOB.toml [--json]`: before running a job, its predicted makespan on the best
// single machine and on the pool, the speedup and efficiency, what limits it (compute, the
// coordinator's uplink or downlink, the workers' links, churn, the tail), the work expected to be
// lost to preemptions, a verdict (pool / single machine / pool with only these workers) and what
// would change it ("1 GbE links: 3.1x").
//
// The job is profiled from succeeded attempts of jobs with the same profile key (same command,
// resources and inputs: spec/profile_key.h). Without any, a calibration run of k of its tasks
// (spec::CalibrationSpec: spread over the job, default one per available worker, 2 to 8) is
// submitted to the pool first, as job "<name>.calibrate", and waited for; its attempts become the
// history. --no-calibrate refuses instead; --task-seconds plans without a profile. The pool's
// measurements (links, CPU scores, availability) are the coordinator's (`idlepool workers`). The
// model and its assumptions: src/plan/pool_model.h, src/plan/job_profile.h,
// src/coordinator/planner.h.
//
// JSON (one object): {"job", "tasks", "profile_key", "basis", "samples", "calibration_job",
//   "single": {"worker", "makespan_s"}, "pool": {"workers", "makespan_s", "speedup",
//   "ideal_speedup", "efficiency", "bottleneck", "bottleneck_fraction", "terms": {...},
//   "lost_work_s", "preemptions"}, "speedup", "verdict", "subset": [...], "subset_makespan_s",
//   "what_if": [{"what", "makespan_s", "speedup"}], "workers": [...], "assumed": [...]};
//   an infinite time (churn that never lets a task finish) is null.
//
// Thread safety: call from one thread. Returns the exit code: 0 (whatever the verdict), 1 (the
// coordinator failed or refused, the calibration failed), 2 bad arguments or spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/json.h"
#include "cli/client.h"
#include "nlohmann/json.hpp"

namespace idlepool::cli {

struct PlanJobOptions {
  std::string job_file;
  bool json = false;
  uint32_t calibrate = 0;     // tasks in the calibration run; 0: one per available worker, 2..8
  bool no_calibrate = false;  // never submit a calibration run
  double task_seconds = 0;    // > 0: compute seconds per task (no profile)
  std::string output_bytes;   // per task ("4MiB"); empty: the profile's median
  std::string workers_csv;    // only these workers: "a,b,c" (spaces around names ignored)
};

int RunPlanJob(PoolClient& client, const PlanJobOptions& o);

// A prediction as the JSON described above: api::PredictionJson (api/json.h).
using api::PredictionJson;

}  // namespace idlepool::cli
