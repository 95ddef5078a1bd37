#include "core/stall.h"

#include <algorithm>
#include <cstdio>

namespace idlepool::core {
namespace {

std::string Seconds(Millis t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, t < Millis(10000) ? "%.1f s" : "%.0f s", t.count() / 1000.0);
  return buf;
}

}  // namespace

void AttemptTimes::Add(Millis t) {
  if (ring_.size() < kStallSample) {
    ring_.push_back(t);
  } else {
    ring_[next_] = t;
  }
  next_ = (next_ + 1) % kStallSample;
}

std::optional<Millis> AttemptTimes::Median() const {
  if (ring_.empty()) return std::nullopt;
  std::vector<Millis> v = ring_;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

Millis StallLimit(const StallRule& rule, std::optional<Millis> median, uint64_t input_bytes) {
  Millis limit = rule.no_history;
  if (median) {
    const auto scaled =
        Millis(static_cast<int64_t>(rule.factor * static_cast<double>(median->count())));
    limit = std::max(rule.floor, scaled);
  }
  if (rule.link_bytes_per_ms > 0) {
    limit +=
        Millis(static_cast<int64_t>(static_cast<double>(input_bytes) / rule.link_bytes_per_ms));
  }
  return limit;
}

std::string StallMessage(const StallRule& rule, Millis quiet, Millis limit,
                         std::optional<Millis> median) {
  std::string why = median ? "the job's median attempt takes " + Seconds(*median)
                           : "no attempt of the job has succeeded yet";
  return "stalled: no report or checkpoint for " + Seconds(quiet) + " (limit " + Seconds(limit) +
         "; " + why + ")";
}

}  // namespace idlepool::core
