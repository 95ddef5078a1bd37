#include "coordinator/availability.h"

#include <algorithm>

#include "coordinator/units.h"

namespace idlepool::coordinator {

double AvailabilitySnapshot::up_fraction() const {
  const int64_t all = totals.up_ms + totals.down_ms;
  return all > 0 ? static_cast<double>(totals.up_ms) / static_cast<double>(all) : 0.0;
}
double AvailabilitySnapshot::mean_up_s() const {
  return SecondsOfMs(static_cast<double>(totals.up_ms) / std::max<uint32_t>(1, totals.up_periods));
}
double AvailabilitySnapshot::mean_down_s() const {
  return SecondsOfMs(static_cast<double>(totals.down_ms) /
                     std::max<uint32_t>(1, totals.down_periods));
}
double AvailabilitySnapshot::observed_s() const {
  return SecondsOfMs(static_cast<double>(totals.up_ms + totals.down_ms));
}

void AvailabilityTracker::Restore(const std::string& worker, const AvailabilityTotals& totals) {
  Entry& e = entries_[worker];
  e = Entry{};
  e.totals = totals;
}

// Adds the open period's time up to `now_ms` to the totals (the period stays open).
void AvailabilityTracker::Close(Entry& e, int64_t now_ms) {
  const int64_t now = std::max(now_ms, e.last_ms);
  const int64_t d = now - e.since_ms;
  (e.up ? e.totals.up_ms : e.totals.down_ms) += d;
  e.since_ms = now;
  e.last_ms = now;
}

bool AvailabilityTracker::Observe(const std::string& worker, bool up, int64_t now_ms) {
  Entry& e = entries_[worker];
  if (!e.observed) {
    e.observed = true;
    e.up = up;
    e.since_ms = now_ms;
    e.last_ms = now_ms;
    return true;
  }
  if (e.up == up) {
    e.last_ms = std::max(e.last_ms, now_ms);
    return false;
  }
  Close(e, now_ms);
  (e.up ? e.totals.up_periods : e.totals.down_periods) += 1;
  e.up = up;
  return true;
}

std::optional<AvailabilitySnapshot> AvailabilityTracker::Get(const std::string& worker,
                                                             int64_t now_ms) const {
  auto it = entries_.find(worker);
  if (it == entries_.end()) return std::nullopt;
  const Entry& e = it->second;
  AvailabilitySnapshot s;
  s.totals = e.totals;
  s.observed = e.observed;
  if (e.observed) {
    const int64_t now = std::max(now_ms, e.last_ms);
    s.up = e.up;
    s.since_ms = now - e.since_ms;
    (e.up ? s.totals.up_ms : s.totals.down_ms) += s.since_ms;
  }
  return s;
}

std::vector<std::string> AvailabilityTracker::Workers() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

}  // namespace idlepool::coordinator
