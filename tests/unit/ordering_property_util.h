// The seeds and random draws of the ordering's property tests (ordering_property_test.cc,
// ordering_preemption_property_test.cc): ORDERING_SEED=N reruns one seed, ORDERING_SEEDS=N runs
// seeds 1..N (default 100); a failure prints its seed.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "core/types.h"

namespace idlepool::core::test {

inline uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

// Runs `check(seed)` ("" or what broke) over the seeds the environment asks for.
template <class Check>
void ForEachSeed(Check check) {
  const uint64_t first = EnvOr("ORDERING_SEED", 1);
  const uint64_t seeds = std::getenv("ORDERING_SEED") != nullptr ? 1 : EnvOr("ORDERING_SEEDS", 100);
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    const std::string failure = check(seed);
    ASSERT_TRUE(failure.empty()) << "seed " << seed << " (ORDERING_SEED=" << seed
                                 << "): " << failure;
  }
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  uint64_t Below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(g_); }
  bool Chance(double p) { return Real(0, 1) < p; }
  double Real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g_); }
  template <class T>
  T Pick(std::initializer_list<T> v) {
    return *(v.begin() + Below(v.size()));
  }
  template <class T>
  void Shuffle(std::vector<T>& v) {
    std::shuffle(v.begin(), v.end(), g_);
  }

 private:
  std::mt19937_64 g_;
};

inline MonoTime At(double ms) { return MonoTime{Millis{static_cast<int64_t>(ms)}}; }

}  // namespace idlepool::core::test
