#include "cli/sim_command.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "platform/clock.h"
#include "sim/availability.h"
#include "sim/simulator.h"
#include "sim/workload.h"
#include "spec/spec.h"

namespace idlepool::cli {
namespace {

using PlantedBug = core::Options::PlantedBug;

int Usage(const std::string& msg) {
  std::fprintf(stderr, "idlepool sim: %s\n", msg.c_str());
  return 2;
}

struct NamedBug {
  const char* name;
  PlantedBug bug;
};
constexpr NamedBug kBugs[] = {
    {"no-fencing", PlantedBug::kNoFencing},
    {"forget-lost-tasks", PlantedBug::kForgetLostTasks},
    {"no-lease-expiry", PlantedBug::kNoLeaseExpiry},
    {"count-preemptions", PlantedBug::kCountPreemptions},
    {"strand-preempted", PlantedBug::kStrandPreempted},
    {"preemptions-as-losses", PlantedBug::kPreemptionsAsLosses},
    {"pin-retries", PlantedBug::kPinRetries},
    {"fifo-across-users", PlantedBug::kFifoAcrossUsers},
};

bool IsSpot(const std::string& path) {
  return absl::AsciiStrToLower(std::filesystem::path(path).extension().string()) == ".json";
}

absl::StatusOr<std::vector<sim::Lane>> ReadTrace(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  const std::string lower = absl::AsciiStrToLower(ext);
  absl::StatusOr<std::vector<sim::Lane>> lanes = lower == ".json" ? sim::ReadSpotTrace(path)
                                                 : lower == ".tab" ? sim::ReadFtaEventTrace(path)
                                                                   : sim::ReadStunnerTrace(path);
  if (!lanes.ok()) {
    return absl::Status(lanes.status().code(),
                        absl::StrCat(lanes.status().message(), " (read as ",
                                     lower == ".json"  ? "a spot series"
                                     : lower == ".tab" ? "an FTA event trace"
                                                       : "a STUNner session file",
                                     ", by the file's extension: .json spot, .tab FTA, else "
                                     "STUNner)"));
  }
  return lanes;
}

// The mean over `workers` of the fraction of its lane's period each is up.
double AvailableFraction(const std::vector<sim::SimWorker>& workers) {
  double sum = 0;
  for (const sim::SimWorker& w : workers) {
    if (w.always_up || w.period_s <= 0) {
      sum += 1;
      continue;
    }
    double up = 0;
    for (const sim::Interval& iv : w.up) up += std::min(iv.end_s, w.period_s) - iv.start_s;
    sum += up / w.period_s;
  }
  return sum / static_cast<double>(workers.size());
}

// Set while a DST seed runs, so a core CHECK failure (abort) still names the seed to replay.
volatile std::sig_atomic_t g_dst_seed_set = 0;
char g_dst_seed_line[256];

void OnAbort(int) {
  if (g_dst_seed_set) {
    (void)!write(2, g_dst_seed_line, strlen(g_dst_seed_line));
  }
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

int RunDst(const SimOptions& o) {
  PlantedBug bug = PlantedBug::kNone;
  if (!o.plant.empty()) {
    bool found = false;
    std::vector<std::string> names;
    for (const NamedBug& b : kBugs) {
      names.push_back(b.name);
      if (o.plant == b.name) {
        bug = b.bug;
        found = true;
      }
    }
    if (!found) {
      return Usage("--plant: unknown bug '" + o.plant + "' (known: " + absl::StrJoin(names, ", ") + ")");
    }
  }
  const std::optional<core::Policy> policy = core::PolicyNamed(o.policy);
  if (!policy) {
    return Usage("--policy: unknown policy '" + o.policy + "' (known: " +
                 std::string(core::PolicyNames()) + ")");
  }
  if (o.seed + o.seeds < o.seed) {
    return Usage("--seed + --seeds passes 2^64: choose a lower --seed");
  }
  std::signal(SIGABRT, OnAbort);
  uint64_t tasks = 0, faults = 0, restarts = 0, events = 0, attempts = 0, refused = 0, stale = 0,
           suspensions = 0;
  const int64_t t0 = platform::SteadyNanos();
  for (uint64_t seed = o.seed; seed < o.seed + o.seeds; ++seed) {
    std::snprintf(g_dst_seed_line, sizeof g_dst_seed_line,
                  "\nidlepool sim --dst: the core aborted on seed %llu; replay with: idlepool sim "
                  "--dst --seeds 1 --seed %llu\n",
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
    g_dst_seed_set = 1;
    sim::SimConfig c = sim::DstScenario(seed, bug);
    c.core.policy = *policy;
    auto r = sim::RunSimulation(c);
    g_dst_seed_set = 0;
    if (!r.ok()) return Usage(std::string(r.status().message()));
    tasks += r->tasks;
    faults += r->faults_injected;
    restarts += r->coordinator_restarts;
    events += r->events;
    attempts += r->attempts;
    refused += r->refused_reports;
    stale += r->stale_kills;
    suspensions += r->suspensions;
    if (o.verbose && o.seeds == 1) {
      for (const sim::SimWorker& w : c.workers) {
        std::printf("  worker %s: %u slot(s), speed %.2f, %s\n", w.name.c_str(), w.slots, w.speed,
                    w.always_up ? "always up" : absl::StrCat(w.up.size(), " up periods").c_str());
      }
      for (size_t j = 0; j < c.jobs.size(); ++j) {
        const sim::SimJob& job = c.jobs[j];
        std::printf("  job %zu: %zu tasks, cpus %u, max_attempts %u, submitted at %.1f s%s\n", j + 1,
                    job.task_seconds.size(), job.resources.cpus, job.max_attempts,
                    job.submit_at_s,
                    job.cancel_at_s >= 0 ? absl::StrCat(", cancelled at ", job.cancel_at_s, " s").c_str() : "");
      }
    }
    if (o.verbose) {
      std::printf("seed %llu: %zu workers, %llu tasks, %llu faults, %llu coordinator restarts, "
                  "makespan %.1f s, digest %016llx\n",
                  static_cast<unsigned long long>(seed), c.workers.size(),
                  static_cast<unsigned long long>(r->tasks),
                  static_cast<unsigned long long>(r->faults_injected),
                  static_cast<unsigned long long>(r->coordinator_restarts), r->makespan_s,
                  static_cast<unsigned long long>(r->digest));
    }
    if (!r->violations.empty()) {
      std::printf("seed %llu FAILED: %zu invariant violation(s)\n",
                  static_cast<unsigned long long>(seed), r->violations.size());
      for (const std::string& v : r->violations) std::printf("  %s\n", v.c_str());
      std::printf("last events before the end of the run:\n");
      for (const std::string& l : r->trace) std::printf("  %s\n", l.c_str());
      std::printf("replay with: idlepool sim --dst --seeds 1 --seed %llu --policy %s%s%s\n",
                  static_cast<unsigned long long>(seed), o.policy.c_str(),
                  o.plant.empty() ? "" : " --plant ", o.plant.c_str());
      return 1;
    }
  }
  const double secs = static_cast<double>(platform::SteadyNanos() - t0) / 1e9;
  std::printf("dst: %llu seeds passed (seeds %llu..%llu): %llu tasks, %llu attempts, %llu "
              "faults, %llu coordinator restarts, %llu owner suspensions, %llu core events, %llu stale "
              "reports refused, %llu stale attempts killed; every invariant held after every step and every job "
              "finished once the faults stopped",
              static_cast<unsigned long long>(o.seeds), static_cast<unsigned long long>(o.seed),
              static_cast<unsigned long long>(o.seed + o.seeds - 1),
              static_cast<unsigned long long>(tasks), static_cast<unsigned long long>(attempts),
              static_cast<unsigned long long>(faults), static_cast<unsigned long long>(restarts),
              static_cast<unsigned long long>(suspensions), static_cast<unsigned long long>(events), static_cast<unsigned long long>(refused),
              static_cast<unsigned long long>(stale));
  if (!o.no_timing) std::printf(" (%.1f s)", secs);
  std::printf("\n");
  return 0;
}

}  // namespace

int RunSimCommand(const SimOptions& o) {
  if (o.dst) return RunDst(o);
  if (o.workers == 0) return Usage("--workers must be at least 1");
  // Every number is checked here, NaN included (range checks let NaN through).
  struct Range {
    const char* option;
    double value, lo, hi;
  };
  for (const Range& r : {Range{"--lease", o.lease_s, 0.1, 3600},
                         Range{"--heartbeat", o.heartbeat_s, 0.01, 3600},
                         Range{"--tick", o.tick_s, 0.01, 3600},
                         Range{"--max-days", o.max_days, 0.001, 3650},
                         Range{"--hard-down", o.hard_down_fraction, 0, 1},
                         Range{"--checkpoint-interval", o.checkpoint_interval_s, 0, 1e8},
                         Range{"--task-overhead", o.task_overhead_s, 0, 1e8},
                         Range{"--target-runtime", o.target_runtime_s, 0.001, 1e8},
                         Range{"--horizon", o.horizon_s, 3600, 3650 * 86400.0}}) {
    if (!(r.value >= r.lo && r.value <= r.hi)) {
      return Usage(absl::StrCat(r.option, ": ", r.value, " is not in [", r.lo, ", ", r.hi, "]"));
    }
  }
  if (o.heartbeat_s >= o.lease_s || o.tick_s >= o.lease_s) {
    return Usage(absl::StrCat("--heartbeat (", o.heartbeat_s, " s) and --tick (", o.tick_s,
                              " s) must be shorter than --lease (", o.lease_s,
                              " s), or every worker is declared lost between its heartbeats"));
  }
  if (!o.trace.empty() && !o.model.empty()) return Usage("give --trace or --model, not both");

  std::mt19937_64 rng(o.seed);
  auto speeds = sim::ParseDistribution(o.speeds);
  if (!speeds.ok()) return Usage("--speeds: " + std::string(speeds.status().message()));
  auto seconds = sim::ParseDistribution(o.task_seconds);
  if (!seconds.ok()) return Usage("--task-seconds: " + std::string(seconds.status().message()));

  // Availability.
  std::vector<sim::Lane> lanes;
  double period = 0;
  std::string availability = "always up";
  if (!o.trace.empty()) {
    auto l = ReadTrace(o.trace);
    if (!l.ok()) return Usage(std::string(l.status().message()));
    std::vector<sim::Lane> kept;
    for (sim::Lane& lane : *l) {
      if (!lane.up.empty()) kept.push_back(std::move(lane));
    }
    if (kept.empty()) return Usage(o.trace + ": no machine is ever up in this trace");
    lanes = std::move(kept);
    period = sim::LastUpEnd(lanes);
    availability = absl::StrCat(o.trace, " (", lanes.size(), " lanes, ",
                                static_cast<int64_t>(period / 3600), " h, wrapping",
                                IsSpot(o.trace)
                                    ? ")"
                                    : "; each lane in its own observed window)");
  } else if (!o.model.empty()) {
    auto l = sim::SampleWeibullLanes(o.model, static_cast<int64_t>(o.workers), o.horizon_s, rng);
    if (!l.ok()) return Usage(std::string(l.status().message()));
    lanes = std::move(*l);
    period = o.horizon_s;
    availability = absl::StrCat("Weibull model ", o.model);
  }

  sim::SimConfig c;
  c.seed = o.seed;
  // Spot lanes share one clock (lane i is "more than i instances"); phones and cluster nodes
  // joined the measurement at different times: each is read in its own observed window.
  const bool own_window = !o.trace.empty() && !IsSpot(o.trace);
  c.workers = sim::MakeWorkers(o.workers, *speeds, o.slots, lanes, period, rng, own_window);
  const double up_fraction = AvailableFraction(c.workers);
  c.max_sim_s = o.max_days * 86400;
  c.core.lease_timeout = core::Millis(static_cast<int64_t>(o.lease_s * 1000));
  c.tick_s = o.tick_s;
  c.heartbeat_s = o.heartbeat_s;
  c.hard_down_fraction = o.hard_down_fraction;
  c.persist = false;
  c.wall_ns = [] { return platform::SteadyNanos(); };
  const std::optional<core::Policy> policy = core::PolicyNamed(o.policy);
  if (!policy) {
    return Usage("--policy: unknown policy '" + o.policy + "' (known: " +
                 std::string(core::PolicyNames()) + ")");
  }
  c.core.policy = *policy;
  if (!o.users.empty()) return RunSimUsers(o, std::move(c), availability);

  sim::SimJob job;
  uint64_t count = o.tasks;
  std::string job_name = "synthetic";
  if (!o.job.empty()) {
    auto spec = spec::ParseJobFile(o.job);
    if (!spec.ok()) return Usage(std::string(spec.status().message()));
    auto n = spec::TaskCount(*spec);
    if (!n.ok()) return Usage(std::string(n.status().message()));
    count = *n;
    job.resources = spec->resources;
    if (job.resources.gpus > 0 || job.resources.cpus > o.slots) {
      return Usage(absl::StrCat(o.job, ": each task needs ", job.resources.cpus, " cpus and ",
                                job.resources.gpus, " gpus; the simulated workers have ", o.slots,
                                " slot(s) and no GPUs (--slots), so no task could ever run"));
    }
    job.max_attempts = spec->max_attempts;
    job.timeout_s = spec->timeout_s;
    job_name = spec->name;
  }
  if (count == 0 || count > 100'000'000) return Usage("the job needs 1 to 100,000,000 tasks");
  job.task_seconds.resize(count);
  for (double& s : job.task_seconds) {
    s = std::max(0.001, sim::Draw(*seconds, rng));
    if (!(s <= 1e8)) {
      return Usage(absl::StrCat("--task-seconds ", o.task_seconds, ": drew ", s,
                                " s; every task must take at most 1e8 s (3 years)"));
    }
  }
  uint32_t chunk = 0;
  if (!o.chunk.empty()) {
    if (o.chunk == "auto") {
      chunk = sim::AdaptiveChunk(job.task_seconds, o.target_runtime_s, o.task_overhead_s,
                                 o.workers * o.slots);
    } else if (!absl::SimpleAtoi(o.chunk, &chunk) || chunk == 0) {
      return Usage("--chunk: '" + o.chunk + "' is neither a positive number of frames nor 'auto'");
    }
    job.task_seconds = sim::ChunkFrames(job.task_seconds, chunk, o.task_overhead_s);
  } else if (o.task_overhead_s > 0) {
    for (double& s : job.task_seconds) s += o.task_overhead_s;
  }
  job.checkpoint_interval_s = o.checkpoint_interval_s;
  job.checkpoint_on_vacate = o.checkpoint_on_vacate;
  c.jobs.push_back(std::move(job));

  for (const sim::SimWorker& w : c.workers) {
    if (!(w.speed >= 1e-3 && w.speed <= 1e3)) {
      return Usage(absl::StrCat("--speeds ", o.speeds, ": drew ", w.speed,
                                "; speeds must lie in [0.001, 1000]"));
    }
  }
  {
    // Each worker holds its lane's periods: refuse a pool that would not fit in memory.
    uint64_t periods = 0;
    for (const sim::SimWorker& w : c.workers) periods += w.up.size();
    if (periods > 50'000'000) {
      return Usage(absl::StrCat(o.workers, " workers on this trace hold ", periods,
                                " up periods (more than 50,000,000): use fewer workers"));
    }
  }
  if (!lanes.empty() && !(period < 1e10)) {
    return Usage(absl::StrCat(o.trace.empty() ? o.model : o.trace, ": the trace spans ", period,
                              " s; more than 300 years is not a trace of machines"));
  }

  absl::StatusOr<sim::SimResult> r;
  try {
    r = sim::RunSimulation(c);
  } catch (const std::bad_alloc&) {
    return Usage("out of memory: simulate fewer workers, tasks or days");
  }
  if (!r.ok()) return Usage(std::string(r.status().message()));

  if (o.json) {
    nlohmann::json j;
    j["workers"] = o.workers;
    j["availability"] = availability;
    j["available_fraction"] = up_fraction;
    j["job"] = job_name;
    j["tasks"] = r->tasks;
    if (chunk != 0) {
      j["frames"] = count;
      j["chunk"] = chunk;
    }
    j["task_seconds"] = o.task_seconds;
    j["speeds"] = o.speeds;
    j["policy"] = o.policy;
    j["seed"] = o.seed;
    j["finished"] = r->finished;
    j["all_succeeded"] = r->all_succeeded;
    j["makespan_s"] = r->makespan_s;
    j["lower_bound_s"] = r->lower_bound_s;
    j["efficiency"] = r->efficiency;
    j["total_work_s"] = r->total_work_s;
    j["lost_work_s"] = r->lost_work_s;
    j["core_lost_work_s"] = r->core_lost_work_s;
    j["attempts"] = r->attempts;
    j["preemptions"] = r->preemptions;
    j["lost_attempts"] = r->lost;
    j["reassignments"] = r->reassignments;
    j["backups"] = r->backups;
    j["failures"] = r->failures;
    j["core_events"] = r->events;
    j["decisions"] = r->decisions;
    j["digest"] = absl::StrCat(absl::Hex(r->digest, absl::kZeroPad16));
    if (!o.no_timing) {
      j["core_seconds"] = r->core_seconds;
      j["decisions_per_s"] = r->decisions_per_s;
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("simulated %llu tasks (%s s) of job %s on %llu workers (speeds %s, %u slot(s)); "
                "availability: %s, %.0f%% up\n",
                static_cast<unsigned long long>(r->tasks), o.task_seconds.c_str(), job_name.c_str(),
                static_cast<unsigned long long>(o.workers), o.speeds.c_str(), o.slots,
                availability.c_str(), up_fraction * 100);
    std::printf("policy %s, seed %llu: %s\n", o.policy.c_str(),
                static_cast<unsigned long long>(o.seed),
                r->finished ? (r->all_succeeded ? "job succeeded" : "job finished, not all tasks succeeded")
                            : "job DID NOT FINISH");
    std::printf("  makespan     %12.1f s\n", r->makespan_s);
    std::printf("  lower bound  %12.1f s  (work / available capacity, >= longest task)\n",
                r->lower_bound_s);
    std::printf("  efficiency   %12.3f\n", r->efficiency);
    std::printf("  lost work    %12.1f s  (running time thrown away; the core's estimate, from "
                "preemptions and lost workers only: %.1f s)\n",
                r->lost_work_s, r->core_lost_work_s);
    std::printf("  attempts     %12llu  (preemptions %llu, lost %llu, reassignments %llu, backups %llu, failures %llu)\n",
                static_cast<unsigned long long>(r->attempts),
                static_cast<unsigned long long>(r->preemptions),
                static_cast<unsigned long long>(r->lost),
                static_cast<unsigned long long>(r->reassignments),
                static_cast<unsigned long long>(r->backups),
                static_cast<unsigned long long>(r->failures));
    std::printf("  core         %12llu events, %llu decisions", static_cast<unsigned long long>(r->events),
                static_cast<unsigned long long>(r->decisions));
    if (!o.no_timing) std::printf(", %.0f decisions/s", r->decisions_per_s);
  if (chunk != 0) {
    std::printf("\n  chunking     %12u frames per task (%s), %llu frames", chunk, o.chunk.c_str(),
                static_cast<unsigned long long>(count));
  }
    std::printf("\n  digest       %016llx\n", static_cast<unsigned long long>(r->digest));
  }
  // Like `idlepool run`: 0 only when the job succeeded.
  return r->all_succeeded ? 0 : 1;
}

}  // namespace idlepool::cli
