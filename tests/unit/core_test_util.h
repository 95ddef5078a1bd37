// Helpers shared by the tests of the pure scheduler core (core_test, policy_test): times,
// task keys and kill reasons as short text, outputs. Each test file keeps its own one-line
// rendering of decisions (Str), tuned to what its assertions compare.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"

namespace idlepool::core::test {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

inline MonoTime At(int64_t ms) { return MonoTime{Millis{ms}}; }

inline std::string Key(const TaskKey& k) {
  return std::to_string(k.job) + "/" + std::to_string(k.index);
}

inline const char* KillReasonName(KillReason r) {
  switch (r) {
    case KillReason::kStale: return "stale";
    case KillReason::kCancelled: return "cancelled";
    case KillReason::kTimedOut: return "timed_out";
    case KillReason::kSuperseded: return "superseded";
    case KillReason::kObsolete: return "obsolete";
    case KillReason::kFairShare:
      return "fair_share";
  }
  return "?";
}

// An output file with a well-formed (fake) digest.
// The decisions of type D among `ds`, in order.
template <class D>
std::vector<D> Only(const std::vector<Decision>& ds) {
  std::vector<D> out;
  for (const Decision& d : ds) {
    if (const D* x = std::get_if<D>(&d)) out.push_back(*x);
  }
  return out;
}

inline OutputFile Out(const std::string& path) {
  return OutputFile{path, std::string(64, 'a'), 10};
}

}  // namespace idlepool::core::test
