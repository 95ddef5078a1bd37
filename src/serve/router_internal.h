// The router's own records (serve/router.h): one per service, replica and open request, and the
// timers. Private to src/serve/router*.cc.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "serve/router_types.h"

namespace idlepool::serve::detail {

inline constexpr uint32_t kNone = UINT32_MAX;

// EWMA weight of the newest sample (about the last 10 samples count), the samples a replica
// needs before its speed counts, and the bounds of the speed factor.
inline constexpr double kSpeedAlpha = 0.2;
inline constexpr uint32_t kSpeedMinSamples = 3;
inline constexpr double kSpeedMin = 0.25;
inline constexpr double kSpeedMax = 4;
// Candidates drawn (by weight, rejection sampling) before one is taken whatever its weight, and
// how often (in picks) a service's speeds are set against its mean again.
inline constexpr int kDrawTries = 32;
inline constexpr uint32_t kReweighEvery = 256;

struct Replica {
  bool live = false;  // the slot holds a replica
  ReplicaId id = 0;
  uint32_t service = kNone;
  uint32_t capacity = 0;
  uint32_t in_flight = 0;
  ReplicaState state = ReplicaState::kStarting;
  bool probation = false;
  double weight = 1;
  double speed = 1;    // Service::ref_unit_us / unit_us in kSpeedMin..kSpeedMax, 1 until measured
  double vtime = 0;    // start time fair queuing: advanced by 1 / effective weight per dispatch
  double unit_us = 0;  // EWMA of an ok request's time per unit
  uint32_t samples = 0;
  uint32_t consecutive_errors = 0;
  uint32_t ejection_level = 0;  // the next ejection lasts eject_backoff << level
  uint64_t ejection_seq = 0;    // matches the pending ejection timer
  Time ejected_until{};
  Time returned_at{};
  uint32_t pickable_pos = kNone;  // index in Service::pickable, kNone when not there
  bool routable = false;          // counted in Service::routable_capacity
  uint64_t requests = 0;
  uint64_t ok = 0;
  uint64_t errors = 0;
  uint64_t ejections = 0;
};

struct Service {
  bool live = true;  // false: removed (a tombstone; its index is never reused)
  std::string name;
  ServiceConfig config;
  std::vector<uint32_t> replicas;  // slots of its replicas, in the order they were added
  std::vector<uint32_t> pickable;  // ready, weight > 0, below capacity
  uint32_t queue_head = kNone;
  uint32_t queue_tail = kNone;
  uint32_t queue_length = 0;
  uint64_t routable_capacity = 0;  // sum of capacities of ready replicas with weight > 0
  double vclock = 0;               // virtual time of the last dispatch decided by virtual time
  // >= the effective weight of every replica (rejection sampling's bound): raised with any
  // weight, recomputed with the speeds every kReweighEvery picks.
  double weight_bound = 0;
  uint32_t until_reweigh = 0;
  double unit_us = 0;
  double ref_unit_us = 0;  // unit_us when the speeds were last set (Router::Reweigh)
  double request_us = 0;
  uint64_t samples = 0;
  uint64_t submitted = 0;
  uint64_t rejected = 0;
  uint64_t expired = 0;
  uint64_t failed = 0;
  uint64_t ok = 0;
  uint64_t errors = 0;
  uint64_t client_gone = 0;
  uint64_t retries = 0;
  uint64_t drains = 0;
  uint64_t ejections = 0;
};

enum class RequestState : uint8_t { kFree, kQueued, kRouted, kOrphaned };

struct Request {
  uint32_t generation = 0;  // bumped when the slot is freed: a stale id no longer matches
  RequestState state = RequestState::kFree;
  uint8_t retries = 0;
  uint8_t tried_count = 0;
  uint32_t service = kNone;
  uint32_t replica = kNone;  // kRouted
  uint32_t prev = kNone;     // kQueued: neighbours in the service's queue
  uint32_t next = kNone;
  Time expiry{};  // the latest time it may leave the queue
  Time dispatched_at{};
  std::array<ReplicaId, kMaxRetryBudget + 1> tried{};  // replicas that failed it

  bool Tried(ReplicaId id) const {
    for (uint32_t i = 0; i < tried_count; ++i)
      if (tried[i] == id) return true;
    return false;
  }
};

// A heap entry; stale once its request left the queue or its replica's ejection ended.
struct Timer {
  Time at{};
  uint64_t id = 0;   // RequestId, or ReplicaId
  uint64_t seq = 0;  // ejections: Replica::ejection_seq
  // std::push_heap keeps the greatest on top: the earliest time is the greatest.
  bool operator<(const Timer& o) const { return at > o.at || (at == o.at && id > o.id); }
};

}  // namespace idlepool::serve::detail
