// bench/sim: the simulator's figures for step 3 (deterministic simulation), printed, never
// asserted as timed tests.
//
//   build/bench/sim [--quick] [--data DIR]
//
// Sections (each prints its target next to the figures):
//   1. Efficiency under churn: 1,000 workers x 100,000 tasks of 60 s on every spot preemption
//      trace and on nd07cpu churn (target: efficiency >= 0.90).
//   2. Heterogeneous pool: speeds log-uniform 0.25x-4x, 1,000 workers x 10,000 tasks of
//      lognormal(60 s, 0.5): every policy's median makespan over seeds, as a ratio to FIFO's
//      (target: the default at least 20% shorter than FIFO).
//   3. Policies on the same traces and seeds: heterogeneous + churn, spot, nd07cpu.
//   4. Adaptive chunking: frames grouped into tasks of a fixed size versus toward a target
//      runtime (300 s), with a per-task start-up cost, under churn.
//   5. Scale: 1,000,000 tasks on 10,000 workers: wall time, core decisions per second, peak RSS.
// Wall time is read here (a measuring program), never in the simulator.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/peak_rss.h"
#include "core/scheduler.h"
#include "sim/availability.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace {

using namespace idlepool;

using idlepool::bench::PeakRssKb;

int64_t Nanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Pool {
  std::string label;
  std::string trace;  // file, or empty
  std::string model;  // Weibull model, or empty
  std::string speeds = "1";
};

struct Work {
  uint64_t tasks = 100000;
  std::string seconds = "60";
  double checkpoint_s = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Builds the config the way `idlepool sim` does (same draws in the same order).
bool Build(const Pool& p, size_t workers, const Work& w, uint64_t seed, sim::SimConfig& c,
           std::vector<double>* frames = nullptr) {
  std::mt19937_64 rng(seed);
  auto speeds = sim::ParseDistribution(p.speeds);
  auto secs = sim::ParseDistribution(w.seconds);
  if (!speeds.ok() || !secs.ok()) return false;
  std::vector<sim::Lane> lanes;
  double period = 0;
  if (!p.trace.empty()) {
    auto l = p.trace.size() > 5 && p.trace.substr(p.trace.size() - 5) == ".json"
                 ? sim::ReadSpotTrace(p.trace)
                 : sim::ReadStunnerTrace(p.trace);
    if (!l.ok()) {
      std::fprintf(stderr, "%s\n", std::string(l.status().message()).c_str());
      return false;
    }
    for (sim::Lane& lane : *l) {
      if (!lane.up.empty()) lanes.push_back(std::move(lane));
    }
    period = sim::LastUpEnd(lanes);
  } else if (!p.model.empty()) {
    const double horizon = 30 * 86400.0;
    auto l = sim::SampleWeibullLanes(p.model, static_cast<int64_t>(workers), horizon, rng);
    if (!l.ok()) return false;
    lanes = std::move(*l);
    period = horizon;
  }
  c = sim::SimConfig{};
  c.seed = seed;
  c.workers = sim::MakeWorkers(workers, *speeds, 1, lanes, period, rng);
  c.persist = false;
  c.wall_ns = Nanos;
  sim::SimJob job;
  job.task_seconds.resize(w.tasks);
  for (double& s : job.task_seconds) s = std::max(0.001, sim::Draw(*secs, rng));
  job.checkpoint_interval_s = w.checkpoint_s;
  if (frames != nullptr) *frames = job.task_seconds;
  c.jobs.push_back(std::move(job));
  return true;
}

// Every policy alone, then the default (the coordinator's).
const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> names = {"fifo", "fast", "speculative", "churn"};
  return names;
}

bool SetPolicy(sim::SimConfig& c, const std::string& name) {
  const std::optional<core::Policy> p = core::PolicyNamed(name);
  if (p) c.core.policy = *p;
  return p.has_value();
}

sim::SimResult Run(sim::SimConfig& c) {
  auto r = sim::RunSimulation(c);
  if (!r.ok()) {
    std::fprintf(stderr, "simulation failed: %s\n", std::string(r.status().message()).c_str());
    std::exit(1);
  }
  return *r;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it comes, also into a file
  bool quick = false;
  std::string data = IDLEPOOL_SHARED_DATA;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--data") == 0 && i + 1 < argc) data = argv[++i];
  }
  const std::string spot = data + "/traces/spot/preemption";
  std::vector<std::string> traces;
  if (std::filesystem::exists(spot)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(spot)) {
      if (e.path().extension() == ".json") traces.push_back(e.path().string());
    }
  }
  std::sort(traces.begin(), traces.end());
  if (quick && traces.size() > 2) traces.resize(2);
  const std::vector<uint64_t> seeds = quick ? std::vector<uint64_t>{1, 2, 3}
                                            : std::vector<uint64_t>{1, 2, 3, 4, 5};

  // 1 ------------------------------------------------------------------------------------------
  std::printf("1. Efficiency under churn: 1,000 workers x 100,000 tasks of 60 s, no checkpoints "
              "(target >= 0.90)\n");
  std::printf("   %-58s %-8s %10s %10s %6s %10s %7s\n", "availability", "policy", "makespan s",
              "bound s", "eff", "lost s", "preempt");
  std::vector<Pool> churn;
  for (const std::string& t : traces) {
    churn.push_back(Pool{"spot " + t.substr(spot.size() + 1), t, "", "1"});
  }
  churn.push_back(Pool{"nd07cpu (Weibull, Notre Dame desktops)", "", "nd07cpu", "1"});
  if (!quick) churn.push_back(Pool{"microsoft99 (Weibull, Microsoft desktops)", "", "microsoft99", "1"});
  double worst = 1;
  for (const Pool& p : churn) {
    for (const std::string& policy : {std::string("fifo"), std::string("default")}) {
      sim::SimConfig c;
      if (!Build(p, 1000, Work{}, 1, c) || !SetPolicy(c, policy)) continue;
      const sim::SimResult r = Run(c);
      if (policy == "default") worst = std::min(worst, r.efficiency);
      std::printf("   %-58s %-8s %10.0f %10.0f %6.3f %10.0f %7llu%s\n", p.label.c_str(),
                  policy.c_str(), r.makespan_s, r.lower_bound_s, r.efficiency, r.lost_work_s,
                  static_cast<unsigned long long>(r.preemptions), r.finished ? "" : " UNFINISHED");
    }
  }
  std::printf("   worst efficiency of the default policy: %.3f (target >= 0.90: %s)\n\n", worst,
              worst >= 0.90 ? "met" : "NOT met");

  // 2 ------------------------------------------------------------------------------------------
  std::printf("2. Heterogeneous pool: 1,000 workers, speeds loguniform 0.25x-4x, 10,000 tasks of "
              "lognormal(60 s, 0.5); median makespan over %zu seeds (target: default >= 20%% "
              "shorter than fifo)\n", seeds.size());
  const Pool hetero{"heterogeneous", "", "", "loguniform:0.25:4"};
  const Work hwork{10000, "lognormal:60:0.5", 0};
  double fifo_median = 0, default_median = 0;
  std::vector<std::string> all = PolicyNames();
  all.push_back("default");
  for (const std::string& policy : all) {
    std::vector<double> makespans, effs, backups;
    for (uint64_t s : seeds) {
      sim::SimConfig c;
      if (!Build(hetero, 1000, hwork, s, c) || !SetPolicy(c, policy)) break;
      const sim::SimResult r = Run(c);
      makespans.push_back(r.makespan_s);
      effs.push_back(r.efficiency);
      backups.push_back(static_cast<double>(r.backups));
    }
    if (makespans.empty()) continue;
    const double m = Median(makespans);
    if (policy == "fifo") fifo_median = m;
    if (policy == "default") default_median = m;
    std::printf("   %-12s median makespan %8.1f s  efficiency %.3f  backups %6.0f  vs fifo %.3f\n",
                policy.c_str(), m, Median(effs), Median(backups),
                fifo_median > 0 ? m / fifo_median : 0.0);
  }
  if (fifo_median > 0 && default_median > 0) {
    const double shorter = 1 - default_median / fifo_median;
    std::printf("   default is %.1f%% shorter than fifo (target >= 20%%: %s)\n\n", shorter * 100,
                shorter >= 0.20 ? "met" : "NOT met");
  }

  // 3 ------------------------------------------------------------------------------------------
  std::printf("3. Policies on the same traces and seeds (median makespan over %zu seeds, ratio "
              "to fifo)\n", seeds.size());
  std::vector<std::pair<Pool, Work>> scenarios = {
      {Pool{"heterogeneous + nd07cpu churn", "", "nd07cpu", "loguniform:0.25:4"},
       Work{20000, "lognormal:120:0.7", 0}},
      {Pool{"nd07cpu churn, 1x", "", "nd07cpu", "1"}, Work{20000, "lognormal:600:0.5", 0}},
  };
  if (!traces.empty()) {
    scenarios.push_back({Pool{"spot " + traces.back().substr(spot.size() + 1), traces.back(), "",
                              "tiers:0.5,1,2"},
                         Work{20000, "lognormal:300:0.5", 0}});
  }
  for (const auto& [pool, work] : scenarios) {
    std::printf("   %s, 1,000 workers, %llu tasks %s:\n", pool.label.c_str(),
                static_cast<unsigned long long>(work.tasks), work.seconds.c_str());
    double fifo = 0;
    for (const std::string& policy : all) {
      std::vector<double> makespans, lost;
      for (uint64_t s : seeds) {
        sim::SimConfig c;
        if (!Build(pool, 1000, work, s, c) || !SetPolicy(c, policy)) break;
        const sim::SimResult r = Run(c);
        makespans.push_back(r.makespan_s);
        lost.push_back(r.lost_work_s);
      }
      if (makespans.empty()) continue;
      const double m = Median(makespans);
      if (policy == "fifo") fifo = m;
      std::printf("     %-12s %9.0f s  %.3f  lost %9.0f s\n", policy.c_str(), m,
                  fifo > 0 ? m / fifo : 0.0, Median(lost));
    }
  }
  std::printf("\n");

  // 4 ------------------------------------------------------------------------------------------
  std::printf("4. Adaptive chunking: 200,000 frames of lognormal(4 s, 0.5), 20 s start-up per "
              "task, 1,000 workers on nd07cpu churn\n");
  {
    const Pool pool{"nd07cpu", "", "nd07cpu", "1"};
    const Work frames_work{quick ? 50000u : 200000u, "lognormal:4:0.5", 0};
    std::vector<double> frames;
    sim::SimConfig c;
    if (Build(pool, 1000, frames_work, 1, c, &frames)) {
      const uint32_t adaptive = sim::AdaptiveChunk(frames, 300, 20, 1000);
      for (uint32_t chunk : {1u, 10u, adaptive, 75u, 1000u}) {
        sim::SimConfig cc = c;
        cc.jobs[0].task_seconds = sim::ChunkFrames(frames, chunk, 20);
        const sim::SimResult r = Run(cc);
        std::printf("   %-28s %7llu tasks  makespan %8.0f s  lost %8.0f s\n",
                    (chunk == adaptive ? "auto (target 300 s, tail): " + std::to_string(chunk)
                                       : "fixed: " + std::to_string(chunk))
                        .c_str(),
                    static_cast<unsigned long long>(r.tasks), r.makespan_s, r.lost_work_s);
      }
    }
  }
  std::printf("\n");

  // 5 ------------------------------------------------------------------------------------------
  std::printf("5. Scale: 1,000,000 tasks of 60 s on 10,000 workers (target: under 60 s)\n");
  for (const Pool& p : {Pool{"always up", "", "", "1"}, Pool{"nd07cpu churn", "", "nd07cpu", "1"}}) {
    if (quick && p.model.empty() == false) continue;
    sim::SimConfig c;
    Work w{1000000, "60", 0};
    if (!Build(p, 10000, w, 1, c)) continue;
    c.heartbeat_s = 2;
    c.core.lease_timeout = core::Millis(6000);
    const int64_t t0 = Nanos();
    const sim::SimResult r = Run(c);
    const double secs = static_cast<double>(Nanos() - t0) / 1e9;
    std::printf("   %-14s %6.1f s wall, %llu core events, %.0f decisions/s, makespan %.0f s "
                "(efficiency %.3f), peak RSS %ld MiB\n",
                p.label.c_str(), secs, static_cast<unsigned long long>(r.events),
                r.decisions_per_s, r.makespan_s, r.efficiency, PeakRssKb() / 1024);
  }
  return 0;
}
