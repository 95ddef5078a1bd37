// Building simulator inputs: task-duration and worker-speed distributions, pools that follow
// availability lanes, and the random scenarios of deterministic simulation testing.
//
// Distribution specs (text, as on the command line):
//   "60" or "const:60"          every value 60
//   "uniform:A:B"               uniform in [A, B]
//   "loguniform:A:B"            log-uniform in [A, B] (e.g. speeds 0.25..4: as many 4x as 0.25x)
//   "exp:MEAN"                  exponential
//   "lognormal:MEDIAN:SIGMA"    log-normal (render frames, transcodes: a long right tail)
//   "pareto:MIN:ALPHA"          Pareto (a heavy tail of stragglers)
//   "tiers:A,B,C"               one of the listed values, equally likely
// Every parameter must be a finite number > 0 (SIGMA >= 0); errors name the spec and the part.
//
// Thread safety: pure functions; draws only from the engine passed in (sim/draw.h).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/scheduler.h"
#include "sim/availability.h"
#include "sim/simulator.h"

namespace idlepool::sim {

struct Distribution {
  enum Kind { kConst, kUniform, kLogUniform, kExp, kLogNormal, kPareto, kTiers } kind = kConst;
  double a = 1, b = 1;
  std::vector<double> tiers;
  std::string text;  // as given
};

[[nodiscard]] absl::StatusOr<Distribution> ParseDistribution(const std::string& spec);
[[nodiscard]] double Draw(const Distribution& d, std::mt19937_64& rng);
// The distribution's mean (exact, not sampled).
[[nodiscard]] double Mean(const Distribution& d);

// `n` workers named w00000.., speeds drawn from `speed`, `slots` each. With lanes, worker i
// follows lane i mod lanes.size(); a lane used again (more workers than lanes) starts at a
// different phase (the golden-ratio fraction of the trace, times the reuse count), so reused
// lanes do not fail in lockstep. Every lane wraps around after `period_s` (the trace's length).
// With `own_window`, each lane is instead cut to the window it was observed in (its first up
// start to its last up end) and wraps around in it: for traces whose machines joined and left
// the measurement at different times (STUNner phones, FTA cluster nodes), where "not yet
// measured" must not read as "down". Without lanes every worker is always up.
[[nodiscard]] std::vector<SimWorker> MakeWorkers(size_t n, const Distribution& speed,
                                                 uint32_t slots, const std::vector<Lane>& lanes,
                                                 double period_s, std::mt19937_64& rng,
                                                 bool own_window = false);

// Frames grouped into tasks of `chunk` consecutive frames: each task's seconds are its frames'
// plus `overhead_s` (per-attempt start-up: loading the scene or model, warming caches). chunk >= 1.
[[nodiscard]] std::vector<double> ChunkFrames(const std::vector<double>& frame_seconds,
                                              uint32_t chunk, double overhead_s);

// Adaptive chunking toward a target task runtime (Open Job Description's
// `targetRuntimeSeconds`), bounded by the tail. From a calibration run (the mean seconds f of the
// first `calibration` frames), frames per task c = min((target - overhead) / f, c_tail), at least
// 1, where c_tail = sqrt(F * overhead / (slots * f)) minimises the two costs chunking trades:
// per-task start-up, F / c * overhead / slots per slot, against the tail, about one task of
// c * f seconds (the same balance as the "factoring" schedules of Hummel, Schonberg and Flynn,
// CACM 1992). F = frames, slots = the pool's slots.
[[nodiscard]] uint32_t AdaptiveChunk(const std::vector<double>& frame_seconds, double target_s,
                                     double overhead_s, uint64_t slots, size_t calibration = 10);

// One random scenario for deterministic simulation testing, entirely from `seed`: 2-12 workers
// of 1-4 slots and speeds 0.5-2, some of them churning; 1-3 jobs of 1-40 tasks, some with
// checkpoints, failures, timeouts; and every fault of sim::Faults at rates high enough that a
// few hundred simulated seconds see many of them, followed by a liveness phase without faults.
[[nodiscard]] SimConfig DstScenario(uint64_t seed, core::Options::PlantedBug bug);

}  // namespace idlepool::sim
