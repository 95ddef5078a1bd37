#include "core/churn_table.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace idlepool::core {

double ChurnTable::BinStart(int bin) {
  return bin == 0 ? 0.0 : kFirstAgeBinMs * static_cast<double>(int64_t{1} << (bin - 1));
}

double ChurnTable::BinEnd(int bin) {
  return bin + 1 >= kAgeBins ? std::numeric_limits<double>::infinity() : BinStart(bin + 1);
}

void ChurnTable::AddExposure(double length_ms, std::array<double, kAgeBins>& exposure) {
  for (int b = 0; b < kAgeBins && length_ms > BinStart(b); ++b) {
    exposure[b] += std::min(length_ms, BinEnd(b)) - BinStart(b);
  }
}

double ChurnTable::Cumulative(double age_ms) const {
  double h = 0;
  for (int b = 0; b < kAgeBins && age_ms > BinStart(b); ++b) {
    h += hazard_[b] * (std::min(age_ms, BinEnd(b)) - BinStart(b));
  }
  return h;
}

double ChurnTable::End(int64_t length_ms) {
  const double length = static_cast<double>(std::max<int64_t>(0, length_ms));
  const double expected = Cumulative(length);
  ++ends_;
  int bin = 0;
  while (bin + 1 < kAgeBins && length >= BinStart(bin + 1)) ++bin;
  ++ends_by_age_[bin];
  std::array<double, kAgeBins> exposure{};
  AddExposure(length, exposure);
  for (int b = 0; b < kAgeBins; ++b) exposure_ms_[b] += std::llround(exposure[b]);
  return expected;
}

bool ChurnTable::Due(MonoTime now) const {
  if (refreshed_at_ && now - *refreshed_at_ < kRefresh) return false;
  return ends_ > 0;  // nothing seen to end: every worker survives (neutral)
}

void ChurnTable::Refresh(MonoTime now, const std::vector<double>& current_ages_ms) {
  refreshed_at_ = now;
  // Exposure by age: the ended periods' (kept) plus the current periods' so far (censored).
  std::array<double, kAgeBins> exposure{};
  for (int b = 0; b < kAgeBins; ++b) exposure[b] = static_cast<double>(exposure_ms_[b]);
  for (double age : current_ages_ms) AddExposure(std::max(0.0, age), exposure);
  double ends = 0, total = 0;
  for (int b = 0; b < kAgeBins; ++b) {
    ends += static_cast<double>(ends_by_age_[b]);
    total += exposure[b];
  }
  // Each bin's rate, shrunk toward the pooled one by one pseudo-end (a bin never reached gets
  // the pooled rate).
  const double pooled = ends / std::max(total, 1.0);
  for (int b = 0; b < kAgeBins; ++b) {
    hazard_[b] = (static_cast<double>(ends_by_age_[b]) + 1) / (exposure[b] + 1 / pooled);
  }
}

}  // namespace idlepool::core
