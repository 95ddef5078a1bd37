// The deterministic pool simulator: the real scheduler core (core::Scheduler, unchanged) driven
// by simulated workers, a simulated network and a simulated coordinator shell, in simulated time.
//
// One discrete-event loop, one seeded engine (std::mt19937_64, drawn through sim/draw.h): the
// same SimConfig gives the same run, decision for decision (SimResult::digest). Nothing here
// reads a clock, sleeps or touches the network; the only real-time figure (decisions per second
// of the core) comes from the `wall_ns` function the caller injects.
//
// What is simulated, mirroring the real shells (coordinator/coordinator.cc, worker/worker.cc):
//  - Workers: `slots`, `speed` (a task of W reference seconds runs W / speed seconds), `link_mbps`
//    (a task's input is fetched at that rate before it runs), and an availability lane: while the
//    lane is up the machine is lent; when it goes down the worker vacates (stops its attempts,
//    reports them kPreempted with the work lost since their last checkpoint, says it is leaving)
//    and disconnects, or, for a `hard_down_fraction` of downs, vanishes silently (power loss) and
//    is found by the lease; when it comes back up it restarts with a new boot id and says hello.
//    Attempts checkpoint every `checkpoint_interval_s` of running; a new attempt resumes from the
//    task's last checkpoint, as the coordinator hands it out. Lanes past their end wrap around.
//  - Network: per-connection FIFO (TCP) with a latency; a cut loses what is in flight; a
//    message that reached the coordinator waits in its core queue (DST: up to seconds), so
//    messages of an old and a new session of one worker can be applied in either order.
//  - Coordinator: ticks every `tick_s`, persists each batch's records to a store::Store (the
//    in-memory backend) before it sends the batch's messages, closes the streams of a worker it
//    declares lost, and after a crash restarts from the store (core::Scheduler::Restore).
//
// Faults (deterministic simulation testing, `Faults`) are drawn from the same engine; the
// invariant checks (sim/dst.h) run after every core batch when `check_invariants` is set.
//
// Thread safety: a Simulator is used by one thread; distinct Simulators share nothing.
// Units: seconds (double) in the config and results; the loop itself counts integer ms.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/scheduler.h"
#include "sim/availability.h"

namespace idlepool::sim {

struct SimWorker {
  std::string name;
  double speed = 1.0;     // > 0; relative to the reference machine the task seconds are for
  uint32_t slots = 1;     // >= 1
  double link_mbps = 0;   // 0: inputs take no time to fetch
  bool always_up = true;  // else `up` (with `period_s` wrap-around) says when it is lent
  std::vector<Interval> up;
  double period_s = 0;    // the lane repeats every period_s (0: it does not; down after the end)
  double phase_s = 0;     // the lane is read at (t + phase_s), so reused lanes differ
};

struct SimJob {
  std::vector<double> task_seconds;  // work of each task on the reference machine; > 0
  core::Resources resources;         // per attempt
  uint32_t max_attempts = 3;
  double timeout_s = 0;              // 0: none (the worker enforces it; the core backstops)
  double checkpoint_interval_s = 0;  // 0: attempts never checkpoint (a vacate loses all)
  bool checkpoint_on_vacate = false; // the task saves its progress when it is stopped (SIGTERM)
  uint64_t input_bytes = 0;          // fetched by each attempt before it runs
  double failure_probability = 0;    // chance that an attempt exits non-zero
  double submit_at_s = 0;
  std::string user{};    // who submitted it ("" : the anonymous user of a pool without users)
  int32_t priority = 0;  // among its user's jobs
  double cancel_at_s = -1;           // < 0: never; else the user cancels it then (if running)
  // Workers on which every attempt of it fails at once, exit code 1 (a broken install: its
  // program is missing there). DST's broken-machine fault.
  std::vector<std::string> broken_on{};
  bool BrokenOn(const std::string& worker) const {
    for (const std::string& b : broken_on) {
      if (b == worker) return true;
    }
    return false;
  }
};

// Fault rates for deterministic simulation testing. Each `*_per_hour` is a Poisson rate per
// worker (per coordinator for coordinator_crash) during [0, faults_until_s); the liveness phase
// after it has none. All 0 (the default): a plain performance run.
struct Faults {
  double faults_until_s = 0;
  double crash_per_hour = 0;         // worker process crash; restarts with a new boot id
  double cut_per_hour = 0;           // connection cut; the worker reconnects with its boot id
  double zombie_per_hour = 0;        // network partition of up to 3 lease timeouts, then heals
  double clock_jump_per_hour = 0;    // the worker's clock jumps by up to +-2 leases (a jump
                                     // back delays its next heartbeat by as much)
  double owner_per_hour = 0;         // the owner returns: attempts frozen for up to 3 leases
  double coordinator_crash_per_hour = 0;
  double duplicate_probability = 0;  // a message is applied twice (a shell's retry)
  double max_queue_delay_s = 0;      // extra core-queue delay, uniform in [0, this]
  double max_latency_jitter_s = 0;   // extra network latency, uniform in [0, this]
};

struct SimConfig {
  std::vector<SimWorker> workers;
  std::vector<SimJob> jobs;
  std::vector<core::UserSet> users{};  // shares and quotas, set as the run starts
  uint64_t seed = 1;
  core::Options core;             // lease_timeout, the policy, planted bugs...
  double tick_s = 1.0;            // coordinator tick
  double heartbeat_s = 1.0;       // worker heartbeat (the real worker: lease / 3 at most)
  double latency_s = 0.001;       // one-way network latency
  double reconnect_s = 1.0;       // a worker's delay before it reconnects after a cut
  double hard_down_fraction = 0;  // downs without a goodbye (power loss)
  double max_sim_s = 30 * 86400;  // give up (unfinished) after this much simulated time
  bool persist = true;            // write every batch to an in-memory store (needed by restarts)
  Faults faults;
  bool check_invariants = false;  // run the DST invariant checks after every core batch
  size_t trace_lines = 0;         // keep the last N lines of the event trace (0: none)
  std::function<int64_t()> wall_ns;  // real clock for decisions/s only; may be empty
};

struct SimResult {
  bool finished = false;   // every job reached a final state
  bool all_succeeded = false;
  double makespan_s = 0;   // last job finished (or the time the run stopped, max_sim_s)
  double lower_bound_s = 0;
  double efficiency = 0;   // lower_bound_s / makespan_s (0 when not finished)
  double total_work_s = 0; // sum of task seconds x cpus (reference machine)
  double lost_work_s = 0;  // running time thrown away (not checkpointed, not committed): truth
  double core_lost_work_s = 0;  // the core's own estimate (JobCounters::lost_work)
  uint64_t tasks = 0, attempts = 0, reassignments = 0, preemptions = 0, lost = 0, failures = 0;
  uint64_t suspensions = 0, backups = 0;
  uint64_t events = 0, decisions = 0, messages = 0;
  uint64_t faults_injected = 0, coordinator_restarts = 0;
  uint64_t refused_reports = 0, stale_kills = 0;  // fencing at work: stale reports refused/killed
  double core_seconds = 0;       // wall time inside Scheduler::Apply (needs wall_ns)
  double decisions_per_s = 0;    // decisions / core_seconds
  uint64_t digest = 0;           // FNV-1a over every decision in order: equal runs, equal digest
  // Each job's response time (submit to final state), by config index; -1 when unfinished.
  std::vector<double> job_response_s;
  std::vector<std::string> violations;  // invariant violations (check_invariants), first first
  std::vector<std::string> trace;       // the last `trace_lines` lines
};

// Runs one simulation. Errors (kInvalidArgument) only for a config that cannot run: no workers,
// no jobs, a task of zero seconds, a speed that is not positive, more than 2^32 tasks in a job.
[[nodiscard]] absl::StatusOr<SimResult> RunSimulation(const SimConfig& config);

// The smallest T with the integral over [0, T] of available capacity (sum of speed x slots over
// the workers that are up) equal to the total work (sum of task seconds x cpus), and never below
// the longest task on the fastest worker. Inputs are not transferred in the bound. Swept window
// by window (one period of the longest lane); past 10,000 windows the rest is extrapolated at
// the average rate so far.
[[nodiscard]] double MakespanLowerBound(const std::vector<SimWorker>& workers,
                                        const std::vector<SimJob>& jobs);

// True when `w` is up at time t (with wrap-around and phase).
[[nodiscard]] bool IsUp(const SimWorker& w, double t);

}  // namespace idlepool::sim
