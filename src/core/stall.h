// Stalled attempts: how long an attempt may go without a sign of progress (a report or a
// checkpoint) before the core moves it, from its job's own attempt times (core/defaults.h has
// the rule's values and where they come from). Pure: values in, values out.
//
// Thread safety: none needed (values); AttemptTimes belongs to whoever owns its job record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/defaults.h"
#include "core/types.h"

namespace idlepool::core {

// Options::stall. Disabled by default in the core (the simulator's workers never stall); the
// coordinator enables it.
struct StallRule {
  bool enabled = false;
  double factor = kStallFactor;
  Millis floor = kStallFloor;
  Millis no_history = kStallNoHistory;
  double link_bytes_per_ms = kStallLinkBytesPerMs;
  Millis avoid = kStallAvoid;
  bool operator==(const StallRule&) const = default;
};

// The times of a job's last kStallSample attempts that succeeded from the task's start.
class AttemptTimes {
 public:
  void Add(Millis t);
  // The median (the lower one of an even count); std::nullopt before any.
  std::optional<Millis> Median() const;

 private:
  std::vector<Millis> ring_;
  size_t next_ = 0;
};

// How long an attempt of a job with `median` attempt time (nullopt: none yet) and `input_bytes`
// of inputs may go without a report or checkpoint: max(floor, factor x median), or no_history,
// plus input_bytes / link_bytes_per_ms.
Millis StallLimit(const StallRule& rule, std::optional<Millis> median, uint64_t input_bytes);

// Why an attempt quiet for `quiet` was moved, for its AttemptEnded message and its worker's
// view, e.g. "stalled: no report or checkpoint for 12 s (limit 10 s; the job's median attempt
// takes 0.2 s)".
std::string StallMessage(const StallRule& rule, Millis quiet, Millis limit,
                         std::optional<Millis> median);

}  // namespace idlepool::core
