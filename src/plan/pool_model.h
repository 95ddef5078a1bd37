// Prediction model for embarrassingly parallel jobs on the pool: before a job runs, does the pool
// beat the best single machine, by how much, what limits it, and what would change the answer?
//
// The model is a deterministic event simulation of one job (no randomness: expectations are
// folded into durations), list-scheduling its tasks onto the slots of the workers:
//
//   - Scheduling. Each slot that frees takes the next pending task (greedy list scheduling:
//     Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 17(2), 1969,
//     makespan within (2 - 1/m) of optimal on m identical slots). The tail is simulated, not
//     averaged: 10 equal tasks on 8 one-slot workers take two rounds. Like the coordinator's
//     default policy (src/core/scheduler.h, the "tail rule"), a slot leaves a task pending when
//     slots of workers at least 1.25x faster (by expected cycle time) will finish every pending
//     task before it would finish this one; like the core, a worker counts as average (the rule
//     does not apply to it or count it) until it has finished one task. Speculative backups are
//     not modelled.
//   - One task on worker w (a "cycle"): assignment and report (round_trips_per_task RTTs, half
//     each way); before its first task the worker fetches the shared assets once (unless it
//     holds them) and every task copies them into its task dir (stage_copy_bytes_per_s); it runs
//     per_task_overhead_s + task_s (inflated by churn, below); then uploads its outputs
//     (round_trips_per_upload RTTs plus the bytes). The slot is held until the report, as the
//     worker does (it uploads before it reports).
//   - Shared links. Output uploads share the coordinator's downlink; without peer-to-peer, asset
//     fetches share its uplink. Each transfer is also capped by its worker's link, which that
//     worker's concurrent transfers share equally. Rates are max-min fair (progressive filling:
//     Bertsekas & Gallager, "Data Networks", 2nd ed. 1992, section 6.5.2), recomputed whenever
//     the set of transfers changes.
//   - Peer-to-peer assets. n workers fetching S bytes in a swarm with the coordinator (uplink
//     u_c), seeds holding the assets (uplinks u_s) and the n fetchers (uplinks u_i, downlinks
//     d_i) need at least the fluid bound of Kumar & Ross ("Peer-assisted file distribution: the
//     minimum distribution time", HotWeb 2006), extended with seeds:
//         T = max(S / (u_c + sum u_s), S / d_i, n S / (u_c + sum u_s + sum u_i)),
//     taken per fetching worker i (its own downlink term: a slow worker does not delay the
//     others, which is how the swarm behaves, each peer pulling at its own pace), divided by
//     swarm_efficiency when n >= 2 or seeds exist. swarm_efficiency's default 0.8 comes from
//     bench/distribute on this codebase (docs/guide/data.md "Distributing assets", 512 MiB at 100
//     Mbit/s: 1.14x, 1.21x, 1.46x of S/B at n = 2, 4, 8, i.e. 0.88 to 0.68 of the bound; 0.8 is
//     within 15% of each). A worker whose first task comes later fetches alone, from the
//     coordinator and every worker that already holds the assets. Peer serving is not subtracted
//     from the workers' uplinks used for outputs.
//   - Churn. A worker is up a fraction f of the time; up periods are exponential with mean U.
//     A task of t seconds (overhead + compute) that restarts from zero when preempted needs an
//     expected U (e^{t/U} - 1) seconds of up time and suffers e^{t/U} - 1 preemptions (the
//     classic restart result: e.g. Duda, "The effects of checkpointing on program execution
//     time", IPL 16(5), 1983; Daly, "A higher order estimate of the optimum checkpoint interval
//     for restart dumps", FGCS 22(3), 2006). With a checkpoint interval c the task is
//     floor(t/c) segments of c plus a remainder, each costed so. The worker's time per task is
//     that up time divided by f (it is away the rest of the time). Lost work = up time - t.
//     A preempted task really moves to another worker at once; inflating the preempted worker's
//     task time instead is exact for throughput and approximate for the tail.
//
// Makespan runs from the job's submission (all workers connected and idle) to the last report.
// The single machine is the best worker alone: all tasks on its slots with the same per-task
// costs the pool pays on its own machine (overhead and the copy into the task dir), no network,
// no churn (the user's own machine, e.g. `idlepool run` there).
//
// Bottleneck terms: the makespan is split by removing one cause at a time, in this order, and
// charging each the makespan it removes: churn (no churn), coordinator_uplink (infinite),
// coordinator_downlink (infinite), worker_links (infinite, zero RTT). What is left is
// compute (the fluid bound: tasks / sum over workers of slots / (overhead + copy + task_s))
// plus tail (the rest: whole tasks on whole slots). A removal that makes the schedule longer (a
// list-scheduling anomaly, Graham 1969) is charged 0, and tail absorbs the difference, so the
// terms add up to the makespan.
//
// What it leaves out, so callers know which way it errs: speculative backups (it may be
// pessimistic on heterogeneous pools in the tail), the time a preempted task waits to be
// requeued, CPU contention on the hosts (hashing, copies), TCP slow start and window limits on
// long RTTs (it is optimistic there), and input bytes per task (idlepool has none yet).
//
// Units: seconds, bytes, bytes per second, as doubles. Rates are application goodput (what a
// probe transfer measures); a `tc` rate is about 5% above it (TCP/IP and gRPC headers: 1071 MiB
// on the wire for 1024 MiB in bench/distribute). Errors: Predict validates every input and
// returns Checked<Prediction> whose error names the field ("workers[2].task_s must be finite
// and > 0"). Infinite makespans (a worker that churn never lets finish) come back as +inf.
//
// Thread safety: pure functions, no global state, no I/O, no clocks; deterministic.
#ifndef IDLEPOOL_PLAN_POOL_MODEL_H_
#define IDLEPOOL_PLAN_POOL_MODEL_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/link.h"
#include "plan/coupled.h"  // Checked<T>

namespace idlepool::plan {

// Assumed when a link is not measured (0): 100 Mbit/s and 1 ms, the LAN the coordinator's
// locality rule also assumes. Every use is listed in Prediction::assumed.
inline constexpr double kAssumedLinkBytesPerS = core::kAssumedLinkBytesPerS;
inline constexpr double kAssumedRttS = 0.001;
// The "1 GbE" what-if: 125e6 B/s both ways and 0.3 ms RTT on every link, coordinator included.
inline constexpr double kGigabitBytesPerS = 125e6;
inline constexpr double kGigabitRttS = 0.0003;

inline constexpr double kNeverEnds = std::numeric_limits<double>::infinity();

// One worker as seen by this job. Links are to the coordinator.
struct WorkerModel {
  std::string name;             // non-empty, unique in the pool
  int slots = 1;                // concurrent tasks of this job it runs; >= 1
  double task_s = 0;            // compute seconds of one task on it; > 0
  double rtt_s = 0;             // round trip to the coordinator; 0 = unknown (kAssumedRttS)
  double down_bytes_per_s = 0;  // coordinator -> worker; 0 = unknown (kAssumedLinkBytesPerS)
  double up_bytes_per_s = 0;    // worker -> coordinator; 0 = unknown (kAssumedLinkBytesPerS)
  // Fraction of time it is up, in (0, 1]. Unset: U / (U + D) from mean_up_s and mean_down_s
  // when both are finite and mean_up_s > 0, else 1.
  std::optional<double> up_fraction;
  double mean_up_s = kNeverEnds;  // mean up period; > 0; kNeverEnds = never seen to end
  double mean_down_s = 0;         // mean down period; finite, >= 0
  bool holds_assets = false;      // the job's shared assets are already in its cache
};

// The down rate the model counts for worker `w`: core::LinkBytesPerS of its measured rate, the
// rule the core's locality uses too (core/link.h).
double DownBytesPerS(const WorkerModel& w);

// The job. Resources (cpus per task) are already folded into WorkerModel::slots.
struct JobModel {
  int64_t tasks = 0;                 // >= 1
  double shared_asset_bytes = 0;     // inputs every task needs, fetched once per worker
  double output_bytes_per_task = 0;  // uploaded to the coordinator after each task
  // Assignment handling, process start, report: the per-task cost on a zero-latency link (the
  // model adds round_trips_per_task x rtt_s itself). Measured by the caller.
  double per_task_overhead_s = 0.05;
  double checkpoint_interval_s = 0;  // 0 = the task never checkpoints
  // Copying the assets into each task dir (docs/limits.md: inputs are copied, reflinked where the
  // file system can). Default 1 GB/s, an assumption for an ext4 copy from the page cache; +inf for
  // reflinks. > 0.
  double stage_copy_bytes_per_s = 1e9;
};

// Protocol costs and the swarm's efficiency (see the header comment). Defaults from the worker's
// protocol: a report and the next assignment per task (1 RTT), tracker query + manifest +
// first chunk per asset fetch (3 RTTs), a resumable upload's status query and close (2 RTTs).
struct ProtocolModel {
  double round_trips_per_task = 1;    // >= 0
  double round_trips_per_fetch = 3;   // >= 0
  double round_trips_per_upload = 2;  // >= 0, only when output_bytes_per_task > 0
  double swarm_efficiency = 0.8;      // in (0, 1]
};

struct PoolModel {
  std::vector<WorkerModel> workers;  // non-empty
  // The coordinator's NIC, shared by every transfer. 0 = unknown: the largest of the workers'
  // down (for the uplink) or up (for the downlink) rates, listed in Prediction::assumed.
  double coordinator_up_bytes_per_s = 0;
  double coordinator_down_bytes_per_s = 0;
  bool peer_to_peer = true;  // workers pass shared assets to each other (the default)
  ProtocolModel protocol;
};

enum class Bottleneck {
  kCompute,
  kCoordinatorUplink,
  kCoordinatorDownlink,
  kWorkerLinks,
  kChurn,
  kTail,
};
// "compute", "coordinator_uplink", "coordinator_downlink", "worker_links", "churn", "tail".
std::string_view BottleneckName(Bottleneck b);

// Seconds of the pool's makespan each cause accounts for; they add up to the makespan.
struct MakespanTerms {
  double compute_s = 0;
  double coordinator_uplink_s = 0;
  double coordinator_downlink_s = 0;
  double worker_links_s = 0;
  double churn_s = 0;
  double tail_s = 0;
};

struct WorkerForecast {
  std::string name;
  int64_t tasks = 0;            // tasks it finishes in the simulated schedule
  double lost_work_s = 0;       // expected compute lost to preemptions on it
  double preemptions = 0;       // expected preemptions on it
  double assets_ready_s = 0;    // when it holds the assets; 0 if it held them; +inf: never
                                // fetched (it ran no task)
  double seconds_per_task = 0;  // its expected cycle: transfers, churn and round trips included
};

struct PoolForecast {
  double makespan_s = 0;
  double speedup = 0;  // single machine's makespan / makespan_s
  // Perfect speedup: the pool's task throughput (sum of slots / (overhead + copy + task_s))
  // over the best single machine's. efficiency = speedup / ideal_speedup: 1 when the pool loses
  // nothing to the network, churn or the tail (it can exceed 1 by rounding: the single machine
  // also runs whole rounds of its slots).
  double ideal_speedup = 0;
  double efficiency = 0;
  MakespanTerms terms;
  Bottleneck bottleneck = Bottleneck::kCompute;  // the largest term
  double bottleneck_fraction = 0;                // that term / makespan_s
  double lost_work_s = 0;
  double preemptions = 0;
  std::vector<WorkerForecast> workers;  // in PoolModel order
};

struct WhatIf {
  double makespan_s = 0;
  double speedup = 0;  // single machine's makespan / makespan_s
};

enum class Verdict { kPool, kSingleMachine, kSubset };
// "pool", "single machine", "pool with only these workers".
std::string_view VerdictName(Verdict v);

struct Prediction {
  std::string single_worker;  // the best worker alone
  double single_makespan_s = 0;
  PoolForecast pool;
  // kSubset when the best subset found predicts at least 10% below the whole pool's makespan
  // and beats the single machine; kSingleMachine when the single machine is not slower than
  // the pool (or subset); else kPool.
  Verdict verdict = Verdict::kPool;
  // The best subset greedy removal found (dropping, slowest per-slot throughput first, each
  // worker whose removal shortens the makespan; at most 8 tried). All workers when none helps.
  std::vector<std::string> subset;
  double subset_makespan_s = 0;
  WhatIf gigabit_links;              // every link, the coordinator's too, at 1 GbE
  WhatIf assets_cached;              // every worker holds the assets
  WhatIf no_churn;                   // every worker always up
  WhatIf subset_only;                // only `subset`
  std::vector<std::string> assumed;  // fields that took a default: "workers[1].rtt_s", ...
};

// Expected cost of running `work_s` seconds on a worker whose up periods are exponential with
// mean `mean_up_s` (kNeverEnds: never preempted), restarting from the last checkpoint (every
// `checkpoint_interval_s`, 0 = none) after each preemption. See the header comment.
struct ChurnCost {
  double up_seconds = 0;  // >= work_s; +inf when e^{c/U} overflows
  double preemptions = 0;
};
ChurnCost ExpectedChurnCost(double work_s, double mean_up_s, double checkpoint_interval_s);

// The whole prediction. Cost: up to 15 simulations of the job (the pool, 4 for the terms, 2
// what-ifs, up to 8 subsets), each O(tasks x log slots) for events plus O(w log w) per instant
// at which transfers start or end (w: workers transferring then). 100,000 tasks on 100 workers
// with outputs take a few hundred ms in all.
Checked<Prediction> Predict(const PoolModel& pool, const JobModel& job);

}  // namespace idlepool::plan

#endif  // IDLEPOOL_PLAN_POOL_MODEL_H_
