#include "sim/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/defaults.h"
#include "sim/draw.h"

namespace idlepool::sim {
namespace {

absl::Status Bad(const std::string& spec, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "distribution '", spec, "': ", why,
      " (forms: N, const:N, uniform:A:B, loguniform:A:B, exp:MEAN, lognormal:MEDIAN:SIGMA, "
      "pareto:MIN:ALPHA, tiers:A,B,...)"));
}

}  // namespace

absl::StatusOr<Distribution> ParseDistribution(const std::string& spec) {
  Distribution d;
  d.text = spec;
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  auto number = [&](size_t i, const char* what, bool zero_ok) -> absl::StatusOr<double> {
    double v = 0;
    if (i >= parts.size() || !absl::SimpleAtod(parts[i], &v) || !std::isfinite(v) ||
        (zero_ok ? v < 0 : v <= 0)) {
      return Bad(spec, absl::StrCat(what, " must be a finite number ", zero_ok ? ">= 0" : "> 0"));
    }
    return v;
  };
  if (parts.size() == 1) {
    auto v = number(0, "the value", false);
    if (!v.ok()) return v.status();
    d.a = d.b = *v;
    return d;
  }
  const std::string& kind = parts[0];
  size_t want = 3;
  if (kind == "const" || kind == "exp") {
    want = 2;
  } else if (kind == "tiers") {
    if (parts.size() != 2) return Bad(spec, "tiers takes one comma-separated list");
    for (absl::string_view t : absl::StrSplit(parts[1], ',')) {
      double v = 0;
      if (!absl::SimpleAtod(t, &v) || !std::isfinite(v) || v <= 0) {
        return Bad(spec, absl::StrCat("tier '", std::string(t), "' must be a finite number > 0"));
      }
      d.tiers.push_back(v);
    }
    d.kind = Distribution::kTiers;
    return d;
  } else if (kind != "uniform" && kind != "loguniform" && kind != "lognormal" && kind != "pareto") {
    return Bad(spec, absl::StrCat("unknown kind '", kind, "'"));
  }
  if (parts.size() != want) {
    return Bad(spec, absl::StrCat(kind, " takes ", want - 1, " parameter(s)"));
  }
  auto a = number(1, "the first parameter", false);
  if (!a.ok()) return a.status();
  d.a = d.b = *a;
  if (want == 3) {
    auto b = number(2, "the second parameter", kind == "lognormal");
    if (!b.ok()) return b.status();
    d.b = *b;
  }
  if (kind == "const") d.kind = Distribution::kConst;
  if (kind == "exp") d.kind = Distribution::kExp;
  if (kind == "uniform") d.kind = Distribution::kUniform;
  if (kind == "loguniform") d.kind = Distribution::kLogUniform;
  if (kind == "lognormal") d.kind = Distribution::kLogNormal;
  if (kind == "pareto") d.kind = Distribution::kPareto;
  if ((d.kind == Distribution::kUniform || d.kind == Distribution::kLogUniform) && d.b < d.a) {
    return Bad(spec, "B must not be below A");
  }
  return d;
}

double Draw(const Distribution& d, std::mt19937_64& rng) {
  switch (d.kind) {
    case Distribution::kConst: return d.a;
    case Distribution::kUniform: return d.a + (d.b - d.a) * DrawUnit(rng);
    case Distribution::kLogUniform:
      return d.a * std::exp(std::log(d.b / d.a) * DrawUnit(rng));
    case Distribution::kExp: return DrawExponential(rng, d.a);
    case Distribution::kLogNormal: return d.a * std::exp(d.b * DrawNormal(rng));
    case Distribution::kPareto: return d.a / std::pow(DrawUnit(rng), 1.0 / d.b);
    case Distribution::kTiers: return d.tiers[DrawBelow(rng, d.tiers.size())];
  }
  return d.a;
}

double Mean(const Distribution& d) {
  switch (d.kind) {
    case Distribution::kConst: return d.a;
    case Distribution::kUniform: return (d.a + d.b) / 2;
    case Distribution::kLogUniform:
      return d.a == d.b ? d.a : (d.b - d.a) / std::log(d.b / d.a);
    case Distribution::kExp: return d.a;
    case Distribution::kLogNormal: return d.a * std::exp(d.b * d.b / 2);
    case Distribution::kPareto:
      return d.b > 1 ? d.a * d.b / (d.b - 1) : std::numeric_limits<double>::infinity();
    case Distribution::kTiers: {
      double s = 0;
      for (double t : d.tiers) s += t;
      return s / static_cast<double>(d.tiers.size());
    }
  }
  return d.a;
}

std::vector<SimWorker> MakeWorkers(size_t n, const Distribution& speed, uint32_t slots,
                                   const std::vector<Lane>& lanes, double period_s,
                                   std::mt19937_64& rng, bool own_window) {
  std::vector<SimWorker> out(n);
  constexpr double kGolden = 0.6180339887498949;
  for (size_t i = 0; i < n; ++i) {
    SimWorker& w = out[i];
    char name[24];
    std::snprintf(name, sizeof name, "w%05zu", i);
    w.name = name;
    w.speed = Draw(speed, rng);
    w.slots = slots;
    if (!lanes.empty()) {
      const Lane& lane = lanes[i % lanes.size()];
      w.always_up = false;
      w.up = lane.up;
      w.period_s = period_s;
      if (own_window && !lane.up.empty()) {
        const double origin = lane.up.front().start_s;
        for (Interval& iv : w.up) {
          iv.start_s -= origin;
          iv.end_s -= origin;
        }
        w.period_s = w.up.back().end_s;
      }
      const double reuse = static_cast<double>(i / lanes.size());
      w.phase_s = w.period_s > 0 ? std::fmod(reuse * kGolden, 1.0) * w.period_s : 0;
    }
  }
  return out;
}

std::vector<double> ChunkFrames(const std::vector<double>& frame_seconds, uint32_t chunk,
                                double overhead_s) {
  if (chunk == 0) chunk = 1;
  std::vector<double> tasks;
  tasks.reserve(frame_seconds.size() / chunk + 1);
  for (size_t i = 0; i < frame_seconds.size(); i += chunk) {
    double s = overhead_s;
    for (size_t k = i; k < std::min(frame_seconds.size(), i + chunk); ++k) s += frame_seconds[k];
    tasks.push_back(s);
  }
  return tasks;
}

uint32_t AdaptiveChunk(const std::vector<double>& frame_seconds, double target_s,
                       double overhead_s, uint64_t slots, size_t calibration) {
  const size_t n = std::min(calibration, frame_seconds.size());
  if (n == 0 || slots == 0) return 1;
  double mean = 0;
  for (size_t i = 0; i < n; ++i) mean += frame_seconds[i];
  mean /= static_cast<double>(n);
  double frames = (target_s - overhead_s) / mean;
  const double tail = std::sqrt(static_cast<double>(frame_seconds.size()) * overhead_s /
                                (static_cast<double>(slots) * mean));
  frames = std::min(frames, tail);
  if (!(frames >= 1)) return 1;
  return static_cast<uint32_t>(std::min(frames + 0.5, 1e6));
}

namespace {

// The broken-machine fault, in half the scenarios: the first job always fails at once on one
// worker (its program is missing there), while another worker that fits it stays up (owner
// faults, crashes and cuts still hit it). The job fails on nothing else (no failure draws, no
// timeout) and has room for one failure (max_attempts >= 2): invariant 6 says none of its tasks
// may fail. Drawn after everything else, so the other draws of a seed stay as they were.
void AddBrokenMachine(std::mt19937_64& rng, SimConfig& c) {
  if (!DrawChance(rng, 0.5)) return;
  SimJob& job = c.jobs[0];
  std::vector<size_t> fit;
  for (size_t i = 0; i < c.workers.size(); ++i) {
    if (c.workers[i].slots >= job.resources.cpus) fit.push_back(i);
  }
  const size_t healthy = fit[DrawBelow(rng, fit.size())];
  size_t broken = DrawBelow(rng, c.workers.size() - 1);
  if (broken >= healthy) ++broken;
  c.workers[healthy].always_up = true;
  job.broken_on = {c.workers[broken].name};
  job.failure_probability = 0;
  job.timeout_s = 0;
  job.max_attempts = std::max<uint32_t>(job.max_attempts, 2);
}

}  // namespace

namespace {

// A shared pool: 1-3 users with shares 1-3, some with a slot quota (at least 2: every task
// fits), and each job drawn a user. Drawn from an engine of its own, so that the rest of the
// scenario is what it was before users. Usage decays far slower than a run lasts, so the share
// invariant (sim/dst_shares.h) can count it undecayed; fair preemption acts within the run.
void AddUsers(uint64_t seed, SimConfig& c) {
  std::mt19937_64 rng(seed ^ 0x5851f42d4c957f2dull);
  const size_t users = 1 + DrawBelow(rng, 3);
  for (size_t i = 0; i < users; ++i) {
    core::UserSet u;
    u.user = "u" + std::to_string(i);
    u.share = static_cast<double>(1 + DrawBelow(rng, 3));
    if (DrawChance(rng, 0.3)) u.quota.max_slots = 2 + static_cast<uint32_t>(DrawBelow(rng, 4));
    c.users.push_back(std::move(u));
  }
  for (SimJob& job : c.jobs) job.user = c.users[DrawBelow(rng, users)].user;
  c.core.usage.half_life = core::Millis(int64_t{1000} * 86'400'000);
  if (DrawChance(rng, 0.5)) c.core.fair_preemption.after = core::Millis(30'000);
}

}  // namespace

SimConfig DstScenario(uint64_t seed, core::Options::PlantedBug bug) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  SimConfig c;
  c.seed = seed;
  c.core.lease_timeout = core::kDefaultLeaseTimeout;
  c.core.timeout_grace = core::Millis(3000);
  c.core.planted_bug = bug;
  // Unhealthy workers come back within the run: random failures (failure_probability) trip
  // workers too, and a 10-minute backoff doubling to 4 h would outlast the liveness phase.
  c.core.health.backoff = core::Millis(10000);
  c.core.health.max_backoff = core::Millis(60000);
  c.tick_s = 0.5;
  c.heartbeat_s = 1.0;
  c.latency_s = 0.002;
  c.reconnect_s = 0.5 + DrawUnit(rng);
  c.hard_down_fraction = 0.3;
  c.persist = true;
  c.check_invariants = true;
  c.trace_lines = 40;
  c.max_sim_s = 4000;

  const size_t workers = 2 + DrawBelow(rng, 11);
  for (size_t i = 0; i < workers; ++i) {
    SimWorker w;
    w.name = "w" + std::to_string(i);
    w.slots = 1 + static_cast<uint32_t>(DrawBelow(rng, 4));
    w.speed = 0.5 + 1.5 * DrawUnit(rng);
    if (DrawChance(rng, 0.4)) {
      // A churning machine: up and down every few tens of seconds during the fault phase.
      w.always_up = false;
      double t = DrawUnit(rng) * 20;
      while (t < 400) {
        const double up = 10 + DrawExponential(rng, 40);
        w.up.push_back(Interval{t, t + up});
        t += up + 2 + DrawExponential(rng, 15);
      }
      w.up.push_back(Interval{t, 1e9});  // then up for good: the liveness phase
    }
    c.workers.push_back(std::move(w));
  }
  uint32_t widest = 0;
  for (const SimWorker& w : c.workers) widest = std::max(widest, w.slots);
  const size_t jobs = 1 + DrawBelow(rng, 3);
  for (size_t j = 0; j < jobs; ++j) {
    SimJob job;
    const size_t tasks = 1 + DrawBelow(rng, 80);
    for (size_t i = 0; i < tasks; ++i) job.task_seconds.push_back(1 + DrawExponential(rng, 12));
    // A two-slot job only where some worker can hold it (else it rightly waits forever).
    job.resources.cpus = DrawChance(rng, 0.2) && widest >= 2 ? 2 : 1;
    job.max_attempts = 1 + static_cast<uint32_t>(DrawBelow(rng, 4));
    job.failure_probability = DrawChance(rng, 0.3) ? 0.1 : 0;
    job.checkpoint_interval_s = DrawChance(rng, 0.5) ? 2 + DrawUnit(rng) * 5 : 0;
    job.checkpoint_on_vacate = DrawChance(rng, 0.3);
    job.timeout_s = DrawChance(rng, 0.2) ? 60 + DrawUnit(rng) * 60 : 0;
    job.submit_at_s = DrawUnit(rng) * 200;
    if (DrawChance(rng, 0.15)) job.cancel_at_s = job.submit_at_s + DrawUnit(rng) * 100;
    c.jobs.push_back(std::move(job));
  }
  Faults& f = c.faults;
  f.faults_until_s = 300;
  f.crash_per_hour = 30 * DrawUnit(rng);
  f.cut_per_hour = 40 * DrawUnit(rng);
  f.zombie_per_hour = 30 * DrawUnit(rng);
  f.clock_jump_per_hour = 20 * DrawUnit(rng);
  f.owner_per_hour = 30 * DrawUnit(rng);
  f.coordinator_crash_per_hour = 20 * DrawUnit(rng);
  f.duplicate_probability = 0.05 * DrawUnit(rng);
  f.max_queue_delay_s = 2 * DrawUnit(rng);
  f.max_latency_jitter_s = 0.2 * DrawUnit(rng);
  AddBrokenMachine(rng, c);
  AddUsers(seed, c);
  return c;
}

}  // namespace idlepool::sim
