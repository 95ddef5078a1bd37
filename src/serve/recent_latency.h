// Percentiles of recent latencies (issue 17, point 7: time to first token on the Services page):
// the last kCapacity observations, each with the time it was made, and their p50 and p95 over
// those made within a window ending at `now`. So the figure a page shows is what clients get now,
// not an average since the gateway started (the Prometheus histograms keep that).
//
// Pure: `now` is passed in (serve::Time, monotonic); no clocks, I/O or allocation after
// construction (a fixed ring of kCapacity entries, 3 KiB). Observe is O(1); Summarize is
// O(kCapacity log kCapacity). Thread safety: none; one owner (the gateway's io thread).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "serve/router_types.h"

namespace idlepool::serve {

// What RecentLatencies::Summarize reports. count 0: no observation in the window (p50 and p95 0).
struct LatencySummary {
  uint32_t count = 0;  // observations in the window (at most RecentLatencies::kCapacity)
  Micros p50{0};
  Micros p95{0};  // nearest rank: with under 20 observations, the largest
};

class RecentLatencies {
 public:
  // 256: at a few requests per second the 60 s window holds them all; at thousands, the last
  // quarter of a second, still enough for a p95 (13 observations above it).
  static constexpr uint32_t kCapacity = 256;
  // The Services page polls every few seconds; a minute is "now" without flickering at low rates.
  static constexpr Micros kWindow = std::chrono::seconds(60);

  // `took` below 0 counts as 0; above ~71 minutes as ~71 minutes.
  void Observe(Time now, Micros took);
  // Over the observations made in (now - window, now]; later ones (a clock that went back)
  // count as made now.
  LatencySummary Summarize(Time now, Micros window = kWindow) const;

 private:
  std::array<int64_t, kCapacity> at_us_{};     // when observed, router clock microseconds
  std::array<uint32_t, kCapacity> took_us_{};  // the latency, microseconds
  uint32_t next_ = 0;                          // the slot the next observation takes
  uint32_t size_ = 0;                          // slots in use
};

}  // namespace idlepool::serve
