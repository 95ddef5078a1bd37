// Availability history of the pool's workers, as the coordinator sees it: pure bookkeeping
// (no clock, no I/O), fed with observations (worker, up or down, now).
//
// A worker is UP while connected and accepting work (its owner policy allows), DOWN otherwise
// (disconnected, lost, left, or not accepting). Per worker it keeps the time spent up and down
// and the periods of each seen to END. The period in progress is counted in the totals but not
// in the period counts, so mean_up_s = up_ms / max(1, ended up periods) is a censored estimate
// (with no ended period it is the time observed so far, a lower bound: "no end seen").
//
// Time the coordinator did not run is counted neither way: Restore() brings back totals from
// the store with no period in progress, and the first Observe() after it starts a new one.
//
// Units: milliseconds of the caller's monotonic clock (`now_ms`); it must not go backwards for
// one tracker (a smaller value counts as no time passing).
// Thread safety: none; the coordinator's core thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace idlepool::coordinator {

// What is stored per worker (store::WorkerRecord holds the same numbers).
struct AvailabilityTotals {
  int64_t up_ms = 0;
  int64_t down_ms = 0;
  uint32_t up_periods = 0;    // ended
  uint32_t down_periods = 0;  // ended
};

struct AvailabilitySnapshot {
  AvailabilityTotals totals;  // including the period in progress
  bool up = false;            // state now (false when never observed)
  bool observed = false;      // an observation since the last Restore / start
  int64_t since_ms = 0;       // how long in the current state (0 when not observed)

  double up_fraction() const;  // up / (up + down); 0 when nothing observed
  double mean_up_s() const;    // up_ms / max(1, up_periods), in seconds
  double mean_down_s() const;  // down_ms / max(1, down_periods), in seconds
  double observed_s() const;   // up_ms + down_ms, in seconds
};

class AvailabilityTracker {
 public:
  // Totals kept from an earlier run (or replaced); no period in progress until Observe.
  void Restore(const std::string& worker, const AvailabilityTotals& totals);

  // The worker is up (or down) at `now_ms`. Returns true when this is a transition (a period
  // ended) or the first observation of the worker since Restore or ever.
  bool Observe(const std::string& worker, bool up, int64_t now_ms);

  // Totals including the period in progress up to `now_ms`; nullopt for an unknown worker.
  std::optional<AvailabilitySnapshot> Get(const std::string& worker, int64_t now_ms) const;

  // Known workers, by name.
  std::vector<std::string> Workers() const;
  // Drops what is known of `worker` (the caller keeps its totals elsewhere, e.g. the store).
  void Forget(const std::string& worker) { entries_.erase(worker); }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    AvailabilityTotals totals;  // closed time only (the open period is added on read)
    bool observed = false;
    bool up = false;
    int64_t since_ms = 0;  // start of the open period
    int64_t last_ms = 0;   // latest now seen (time never runs backwards here)
  };
  static void Close(Entry& e, int64_t now_ms);
  std::map<std::string, Entry> entries_;
};

}  // namespace idlepool::coordinator
