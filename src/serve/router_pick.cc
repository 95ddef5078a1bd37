// The choice of a replica: two random choices, least outstanding requests, virtual time on ties
// (serve/router.h, "Pick").
#include <algorithm>
#include <cstdint>

#include "serve/router.h"
#include "serve/router_internal.h"

namespace idlepool::serve {

using detail::kNone;
using detail::Replica;
using detail::Request;
using detail::Service;

// SplitMix64 (Steele, Lea and Flood 2014): one 64-bit state, every seed fine, and the range
// reduction is Lemire's multiply-shift (a bias of n / 2^64, none that matters here).
uint64_t Router::Draw(uint64_t n) {
  uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(z) * n) >> 64);
}

// Which of replicas `a` and `b` should get the request: the one with fewer in flight for its
// capacity x weight x speed, then the one further behind in virtual time (its share of the
// service's requests). Two idle replicas tie on the first key, so at light load the share
// follows the weights through the virtual time, and a replica of lower weight is never starved.
Choice Router::Better(uint32_t a, uint32_t b) const {
  const Replica& x = replicas_[a];
  const Replica& y = replicas_[b];
  double load_x = x.in_flight * (y.capacity * y.weight * y.speed);
  double load_y = y.in_flight * (x.capacity * x.weight * x.speed);
  if (load_x != load_y) return {load_x < load_y ? a : b, false};
  return {y.vtime < x.vtime ? b : a, true};
}

// One pickable replica, drawn with a probability proportional to its effective weight
// (rejection against the service's bound; equal weights take the first draw), other than
// `not_this`. After kDrawTries rejections, any.
uint32_t Router::DrawCandidate(Service& s, uint32_t not_this) {
  uint64_t n = s.pickable.size();
  for (int tries = 0; tries < detail::kDrawTries; ++tries) {
    uint32_t c = s.pickable[Draw(n)];
    if (c == not_this) continue;
    double w = replicas_[c].weight * replicas_[c].speed;
    if (w >= s.weight_bound) return c;
    if (static_cast<double>(Draw(uint64_t{1} << 53)) * 0x1p-53 * s.weight_bound < w) return c;
  }
  uint64_t i = Draw(n);
  return s.pickable[i] != not_this ? s.pickable[i] : s.pickable[(i + 1) % n];
}

Choice Router::Pick(uint32_t service, const Request& request) {
  Service& s = services_[service];
  uint64_t n = s.pickable.size();
  if (n == 0) return {};
  if (request.tried_count > 0) return PickExcluding(service, request);
  if (n == 1) return {s.pickable[0], false};
  if (s.until_reweigh-- == 0) Reweigh(service);
  uint32_t a = DrawCandidate(s, kNone);
  return Better(a, DrawCandidate(s, a));
}

// A retried request: the best of the replicas that have not failed it (retries are rare; the
// scan keeps the request's few exclusions exact).
Choice Router::PickExcluding(uint32_t service, const Request& request) const {
  Choice best;
  for (uint32_t candidate : services_[service].pickable) {
    if (request.Tried(replicas_[candidate].id)) continue;
    best = best.replica == kNone ? Choice{candidate, false} : Better(best.replica, candidate);
  }
  return best;
}

}  // namespace idlepool::serve
