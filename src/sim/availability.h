// Machine availability for the deterministic pool simulator: when each lent machine is up.
//
// A Lane is one machine; its `up` intervals are in seconds from the start of the trace (time 0 is
// the earliest timestamp in the file, or its first tick), sorted, non-overlapping, and joined
// where adjacent (no interval ends where the next begins). Lanes come from real traces or are
// sampled from fitted models:
//  - spot instances: "Can't Be Late: Optimizing Spot Instance Savings under Deadlines" (Wu et al.,
//    NSDI 2024), AWS V100 preemption/availability series;
//  - smartphones whose owners' conditions (charging, battery) gate availability: the STUNner
//    churn measurements (Berta, Hegedűs, Jelasity et al., University of Szeged, 2014);
//  - HPC nodes: the LANL 1996-2005 failure trace in the Failure Trace Archive layout;
//  - desktop grids, P2P peers, supernodes, clusters: the Weibull fits of Javadi et al., "The
//    Failure Trace Archive" (JPDC 2013).
//
// Thread safety: all functions are reentrant and share no state. The readers read one file; the
// sampler draws only from the engine it is given. Nothing here reads a clock.
// Errors are absl::Status with code kNotFound (no such file), kInvalidArgument (malformed input
// or unknown model), kResourceExhausted (absurd size, refused before it is held in memory).
// Messages name the place: "trace.txt:12: field 3 ('week_start_epoch_ms'): not an integer: 'x'".
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idlepool::sim {

// Limits that refuse absurd traces.
inline constexpr uint64_t kMaxTraceBytes = 512ull << 20;  // 512 MiB per file
inline constexpr uint64_t kMaxLanes = 1'000'000;
inline constexpr uint64_t kMaxIntervals = 20'000'000;  // up periods in one spot series

// [start_s, end_s), seconds from the start of the trace; start_s < end_s.
struct Interval {
  double start_s = 0;
  double end_s = 0;
  friend bool operator==(const Interval&, const Interval&) = default;
};

struct Lane {
  std::string name;
  std::vector<Interval> up;  // sorted, non-overlapping, never adjacent
  friend bool operator==(const Lane&, const Lane&) = default;
};

// A spot-instance series: JSON `{"metadata": {"gap_seconds": N}, "data": [int, ...]}`, each
// integer the number of instances alive (or obtainable) during one tick of gap_seconds. Modeled
// as lanes "spot-0" .. "spot-(max-1)": lane i is up during the ticks whose count exceeds i, so
// a drop from 4 to 1 takes lanes 1..3 down. Tick k covers [k * gap, (k + 1) * gap). Lanes that
// are never up are still listed; an all-zero series gives no lanes.
// Errors: not JSON, gap_seconds missing or not a number in [0.001, 1e7] s, data missing or
// holding a non-integer or negative value (the message names the element, e.g. 'data[17]';
// arrays and objects are described, never echoed); kResourceExhausted for a series that would
// expand into more than kMaxIntervals up periods.
[[nodiscard]] absl::StatusOr<std::vector<Lane>> ReadSpotTrace(const std::string& path);

// A STUNner session file: one line per user-week,
// `user first_state week_start_epoch_ms utc_offset_hours d1 d2 ...`, the d values alternating
// interval lengths in ms starting in first_state (1 online, 0 offline). One lane per user, named
// by the user, in order of name; a user's weeks are merged in time order. A week's d values must
// sum to 168 h (within 1 s), except a user's last week, which may be shorter: the measurement
// ended during it (675 of the 4,334 weeks in the 2014 file end so).
// Errors: malformed fields (d values must be positive integers, utc_offset_hours an integer in
// [-24, 24]), a week that does not sum to 168 h, or a week that overlaps the user's next.
[[nodiscard]] absl::StatusOr<std::vector<Lane>> ReadStunnerTrace(const std::string& path);

// A Failure Trace Archive event_trace.tab: columns `event_id component_id node_id platform_id
// node_name event_type event_start_time event_stop_time event_end_reason` separated by any run
// of spaces and tabs, times in Unix seconds, event_type 1 available and 0 unavailable. One lane
// per node_id, named by it, in numeric order; a node with no available event has an empty lane.
// A first line whose first field is not an integer is a header and is skipped; fields past the
// ninth are ignored. Available events that overlap or touch are joined.
// Errors: fewer than nine fields, non-integer ids or times, event_type not 0 or 1, stop < start.
[[nodiscard]] absl::StatusOr<std::vector<Lane>> ReadFtaEventTrace(const std::string& path);

// `lanes` synthetic lanes over [0, horizon_s), named "<model>-0", "<model>-1", ..., alternating
// up periods and outages drawn from the Weibull fits (shape, scale in hours) of Javadi et al.:
// nd07cpu, microsoft99, overnet03, skype06, g5k06, lanl05. Each lane starts up at a random phase
// of its first up period. Intervals are clipped to the horizon. The same engine state gives the
// same lanes bit for bit (the draws use the engine's raw output, not std:: distributions, whose
// algorithms differ between standard libraries).
// Errors: an unknown model (the message lists the known ones), horizon_s not positive and
// finite, lanes > kMaxLanes.
[[nodiscard]] absl::StatusOr<std::vector<Lane>> SampleWeibullLanes(const std::string& model,
                                                                   int64_t lanes,
                                                                   double horizon_s,
                                                                   std::mt19937_64& rng);

// Weibull fit of one model, as published; hours.
struct WeibullModel {
  const char* name;
  double up_shape, up_scale_h;          // time between failures
  double outage_shape, outage_scale_h;  // outage duration
};
// The six models SampleWeibullLanes knows, in table order.
[[nodiscard]] const std::vector<WeibullModel>& KnownWeibullModels();

// Mean over lanes of (up time within [0, horizon_s)) / horizon_s; 0 for no lanes or a horizon
// that is not positive.
[[nodiscard]] double AvailableFraction(const std::vector<Lane>& lanes, double horizon_s);

// End of the last up interval over all lanes (0 for none): a lower bound on a trace's horizon.
[[nodiscard]] double LastUpEnd(const std::vector<Lane>& lanes);

}  // namespace idlepool::sim
