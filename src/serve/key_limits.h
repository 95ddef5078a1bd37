// What one client key may send through the gateway: a token bucket per key (refilled at the
// key's rate; a burst of one second's worth, at least one request) and a cap on the key's
// requests at once. The gateway asks before it routes a request; a refused one is answered 429
// with Retry-After and never reaches a replica, so one key over its limit cannot slow the others
// (each key has its own bucket; no key's refusal spends another's).
//
// Pure: no clock, I/O or threads; the caller passes `now`. One thread (the gateway's io thread).
// Memory: one entry per key that is limited and has been seen; past kMaxTracked entries, those
// with nothing in flight and a full bucket are forgotten (forgetting them changes nothing: a new
// entry starts full).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

#include "serve/router_types.h"

namespace idlepool::serve {

// 0: no limit.
struct KeyLimit {
  double rate_per_s = 0;
  uint32_t concurrency = 0;
  bool none() const { return rate_per_s <= 0 && concurrency == 0; }
};

struct Admission {
  bool admitted = true;
  // Refused: when the key may try again (Retry-After, rounded up to whole seconds by the caller);
  // why: "rate" or "concurrency".
  Micros retry_after{0};
  const char* why = "";
  // Admitted under a limit: the caller must Release(key) when the request ends (KeyHold does).
  bool counted = false;
};

class KeyLimits {
 public:
  static constexpr size_t kMaxTracked = 4096;

  Admission Admit(const std::string& key, const KeyLimit& limit, Time now);
  // A counted request of `key` ended.
  void Release(const std::string& key);
  size_t tracked() const { return keys_.size(); }
  uint32_t in_flight(const std::string& key) const;

 private:
  struct State {
    double tokens = 0;  // the bucket, as of `at`
    Time at{};
    uint32_t in_flight = 0;
    double rate = 0;  // the limit it was last admitted under (to see it full when pruning)
  };
  static double Burst(double rate) { return rate < 1 ? 1 : rate; }
  static void Refill(State& s, double rate, Time now);
  void Prune(Time now);

  std::unordered_map<std::string, State> keys_;
};

// Releases a counted admission when the request it belongs to ends (held by the exchange).
// The KeyLimits must outlive it.
class KeyHold {
 public:
  KeyHold() = default;
  KeyHold(KeyLimits* limits, std::string key) : limits_(limits), key_(std::move(key)) {}
  KeyHold(KeyHold&& o) noexcept : limits_(std::exchange(o.limits_, nullptr)), key_(o.key_) {}
  KeyHold& operator=(KeyHold&& o) noexcept {
    if (this != &o) {
      Reset();
      limits_ = std::exchange(o.limits_, nullptr);
      key_ = std::move(o.key_);
    }
    return *this;
  }
  KeyHold(const KeyHold&) = delete;
  KeyHold& operator=(const KeyHold&) = delete;
  ~KeyHold() { Reset(); }

 private:
  void Reset() {
    if (limits_) limits_->Release(key_);
    limits_ = nullptr;
  }
  KeyLimits* limits_ = nullptr;
  std::string key_;
};

}  // namespace idlepool::serve
