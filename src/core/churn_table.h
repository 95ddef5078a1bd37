#pragma once
// The pool's life table of lent machines' up periods: how long a worker stays once it is up.
// Ended periods are counted by length in age bins; the hazard (ends per ms at each age) is
// estimated from them and from the current periods' ages so far (censored), and re-estimated at
// most every kRefresh. Pure: `now` and the current ages are passed in.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/types.h"

namespace idlepool::core {

class ChurnTable {
 public:
  // Up-period ages: bin 0 is [0, 1 min), bin b [2^(b-1), 2^b) min, the last one open.
  static constexpr int kAgeBins = 20;
  static constexpr double kFirstAgeBinMs = 60000;
  static constexpr Millis kRefresh{60000};

  // Counts an ended period of `length_ms`; returns the pool's cumulative hazard over such a
  // period (what a worker's expected count of ends gains), as estimated before this end.
  double End(int64_t length_ms);
  // Whether Refresh would re-estimate at `now` (something ended and kRefresh has passed).
  bool Due(MonoTime now) const;
  // Re-estimates the hazard from the ended periods and the current ones' ages; call when Due.
  void Refresh(MonoTime now, const std::vector<double>& current_ages_ms);
  // Whether there is an estimate: before one, every worker is taken to stay (neutral).
  bool Known() const { return ends_ > 0 && refreshed_at_.has_value(); }
  // The pool's cumulative hazard from age 0 to `age_ms`.
  double Cumulative(double age_ms) const;

 private:
  static double BinStart(int bin);
  static double BinEnd(int bin);
  static void AddExposure(double length_ms, std::array<double, kAgeBins>& exposure);

  uint64_t ends_ = 0;
  std::array<int64_t, kAgeBins> ends_by_age_{};  // ended periods, by length
  std::array<int64_t, kAgeBins> exposure_ms_{};  // ended periods' time at each age
  std::array<double, kAgeBins> hazard_{};        // per ms at each age
  std::optional<MonoTime> refreshed_at_;
};

}  // namespace idlepool::core
