// How many replicas a service should run, from its queue and its requests in flight (issue 17,
// point 5): one Autoscaler per service, fed one observation at a time by the coordinator.
//
// Pure: observations in, a replica count out, `now` passed in (serve::Time, monotonic). No I/O,
// no threads, no clocks; the same observations at the same times give the same decisions.
// Thread safety: none; one owner calls it. Reason() and NextChange() describe the last Decide.
//
// The rules, in order (demand = in_flight + queued; `base` = in.replicas clamped to
// [min_replicas, max_replicas], applied at once):
//   1. wanted = ceil(demand / target_in_flight), clamped to [min_replicas, max_replicas].
//   2. Replicas asked for and not ready yet are capacity being added ("pending": starting ones,
//      and those the core has not placed yet, base - ready - starting). Rule 1 counts them as
//      capacity already (it compares with base), so it scales up again only once the demand
//      exceeds what they will absorb, base x target_in_flight < demand.
//   3. A queue means capacity is short even when rule 1 rounds down: while requests are queued,
//      wanted is at least base (never down), and at least base + 1 (up to max) when nothing
//      is pending; so a burst asks once, not at every observation while its replicas start,
//      and a pool with no free machine is not asked for ever more replicas.
//   4. Scale from zero: base == 0 with requests queued goes to at least 1 at once, whatever
//      upscale_delay (with min_replicas = 0 the gateway holds them in its queue meanwhile).
//   5. Up: once wanted > base has held for upscale_delay, the result is wanted.
//   6. Down: once wanted < base has held for max(downscale_delay, 2 x in.start_time), the result
//      is the highest wanted seen over that time (one step, never below min_replicas; a dip in
//      the middle of the window is not what the service needed).
//   An observation where the condition of 5 (or 6) does not hold restarts its delay; so a load
//   that swings above the replicas more often than the down delay never scales down.
// The caller feeds each result back as the next observation's replicas once the core has it.
// An observation that still reports the replicas a change was made from gets the change again
// (the core has not applied it yet); one that reports another count (the change applied, or a
// scale by hand) starts both delays over, so each step waits a whole delay.
// `now` should not go backwards; if it does, a delay under way only lasts longer.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "serve/router_types.h"

namespace idlepool::serve {

// One service's autoscaling policy (the job spec's [service] table). Defaults and their source:
struct AutoscaleConfig {
  // The spec's `min_replicas` / `max_replicas` (or `replicas` for both). 1: a service without
  // them runs one replica, never autoscaled.
  uint32_t min_replicas = 1, max_replicas = 1;
  // Requests in flight (queued ones included) one replica should carry. 2: Ray Serve's default
  // target_ongoing_requests, and the router's default max_concurrent (router_types.h).
  double target_in_flight = 2;
  // Demand above the replicas this long before scaling up. 0: at once; a replica on a lent
  // machine takes seconds to minutes to start, and a request waits at most the router's
  // queue_deadline (30 s), so waiting more before asking only turns waits into 503s. (Ray
  // Serve's upscale_delay_s is 30 s on a cluster of its own.)
  Micros upscale_delay = std::chrono::seconds(0);
  // Demand below the replicas this long before scaling down; stretched to 2 x the measured
  // start time of a replica (a replica that takes long to start is kept longer, so one that
  // is stopped is not missed before a new one could be ready). 60 s: Knative's stable window;
  // shorter than Ray Serve's 600 s because an idle replica holds a machine an owner lent.
  Micros downscale_delay = std::chrono::seconds(60);
};

// One observation of one service.
struct AutoscaleInput {
  uint32_t replicas = 0;   // replicas wanted now (what the core runs: idlepool scale / last Decide)
  uint32_t ready = 0;      // from the gateway: replicas that get requests
  uint32_t starting = 0;   // from the gateway: placed, not yet healthy
  uint32_t in_flight = 0;  // requests being served, all replicas
  uint32_t queued = 0;     // requests waiting in the gateway's queue
  Micros start_time{0};    // a replica's placement to ready, median of recent ones; 0 unknown
};

class Autoscaler {
 public:
  // A config that Validate refuses is repaired the nearest way (max below min raised to min,
  // a target that is not a positive finite number set to 2, a negative delay set to 0): the
  // coordinator validates the spec first; this never crashes on it.
  explicit Autoscaler(AutoscaleConfig config);

  // kInvalidArgument naming the field: min_replicas above max_replicas, target_in_flight not a
  // finite number > 0, a negative delay.
  [[nodiscard]] static Status Validate(const AutoscaleConfig& config);

  // The replicas the service should run from `now` on, in [min_replicas, max_replicas]. Pure
  // given the sequence of calls (it holds the delays' state).
  uint32_t Decide(const AutoscaleInput& in, Time now);

  // Why the last Decide chose what it did, for the coordinator's log, e.g.
  // "3 queued, 8 in flight over 4 replicas (target 2): up to 6".
  const std::string& Reason() const { return reason_; }
  // When a delay under way ends, should the observations stay as they are: the coordinator
  // may observe again then. nullopt: none under way.
  std::optional<Time> NextChange() const { return next_change_; }
  const AutoscaleConfig& config() const { return config_; }

 private:
  uint32_t Wanted(const AutoscaleInput& in, uint32_t base) const;
  uint32_t Up(uint32_t base, uint32_t wanted, bool from_zero, Time now);
  uint32_t Down(uint32_t base, uint32_t wanted, Micros start_time, Time now);
  void Explain(const AutoscaleInput& in, uint32_t base, uint32_t result, Time now);

  AutoscaleConfig config_;
  std::optional<Time> up_since_;        // wanted > base since then (upscale_delay running)
  std::optional<Time> down_since_;      // wanted < base since then (down delay running)
  uint32_t down_peak_ = 0;              // the highest wanted since down_since_
  std::optional<uint32_t> fired_from_;  // a delay ended and changed this base
  std::optional<Time> next_change_;
  std::string reason_;
};

}  // namespace idlepool::serve
