// The serving router (src/serve/router.h) under seeded random event sequences: replicas added,
// made ready, drained, removed, reweighted, made to fail; requests submitted, finished with
// random outcomes, retried, abandoned; services removed and added back; time advancing. A model
// kept here, from the events alone, checks after every call:
//   1. 0 <= in flight <= capacity for every replica, and in flight = the requests routed to it;
//   2. no request is given to a starting, draining, removed or ejected replica, nor to one that
//      failed it, nor to a replica of another service, nor out of the queue past its deadline;
//   3. once Expire(now) ran, no queued request's deadline is <= now;
//   4. every request ends exactly once (rejected, finished, failed, expired), the retry budget
//      is kept, and nothing waits while a replica that could take it has room;
//   5. the router's own bookkeeping (CheckInvariants);
// then, with faults off, everything still open is finished, and the router must come back to 0
// in flight, empty queues and no timer. A failure prints its seed and the last events;
// ROUTER_SEED=N reruns one seed, ROUTER_SEEDS=N runs more.
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "serve/router.h"

namespace idlepool::serve {
namespace {

using std::chrono::milliseconds;

enum class Where { kQueued, kRouted, kOrphaned };

struct ModelRequest {
  std::string service;
  int incarnation = 0;  // of its service: a removed and re-added service is a new one
  Where where = Where::kQueued;
  ReplicaId replica = 0;
  Time expiry{};
  uint32_t retries = 0;
  std::set<ReplicaId> tried;
};

struct ModelReplica {
  std::string service;
  ReplicaState state = ReplicaState::kStarting;  // starting, ready or draining: from our events
  uint32_t capacity = 0;
  double weight = 1;
  double error_rate = 0;
};

struct ModelService {
  ServiceConfig config;
  int incarnation = 0;
};

class Simulation {
 public:
  explicit Simulation(uint64_t seed) : seed_(seed), rng_(seed), router_(RouterConfig{seed}) {}

  // The safety phase, then the liveness phase; "" or what broke.
  std::string Run(int steps) {
    AddService("a");
    AddService("b");
    for (int i = 0; i < steps && failure_.empty(); ++i) Step();
    if (failure_.empty()) Settle();
    if (failure_.empty()) return "";
    std::ostringstream out;
    out << "seed " << seed_ << " (ROUTER_SEED=" << seed_ << "): " << failure_ << "\nlast events:";
    for (const std::string& e : trace_) out << "\n  " << e;
    return out.str();
  }

 private:
  void Check(bool ok, const std::string& what) {
    if (!ok && failure_.empty()) failure_ = what + " at t=" + std::to_string(Us(now_)) + " us";
  }
  static int64_t Us(Time t) { return t.time_since_epoch().count(); }
  void Trace(const std::string& event) {
    trace_.push_back(event);
    if (trace_.size() > 24) trace_.pop_front();
  }
  uint64_t Below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  void AddService(const std::string& name) {
    ServiceConfig c;
    c.max_concurrent = 1 + static_cast<uint32_t>(Below(3));
    c.max_queue = 1 + static_cast<uint32_t>(Below(12));
    c.queue_deadline = milliseconds(20 + Below(300));
    c.retry_budget = static_cast<uint32_t>(Below(4));
    c.eject_after_errors = static_cast<uint32_t>(Below(4));
    c.eject_backoff = milliseconds(5 + Below(50));
    c.eject_backoff_max = c.eject_backoff * 8;
    c.max_ejected_percent = Chance(0.5) ? 50 : 100;
    Status st = router_.AddService(name, c);
    Check(st.ok(), std::string("AddService: ") + st.message);
    services_[name].config = c;
    ++services_[name].incarnation;
    Trace("AddService " + name);
  }

  // --- what every decision must respect (2, 4) ---

  void Dispatched(RequestId id, ReplicaId to, bool from_queue, const char* by) {
    std::string at =
        std::string(by) + " dispatch of " + std::to_string(id) + " to " + std::to_string(to);
    auto it = open_.find(id);
    if (it == open_.end()) return Check(false, at + ": not an open request");
    ModelRequest& q = it->second;
    if (from_queue) Check(q.where == Where::kQueued, at + ": not queued");
    if (from_queue) Check(now_ < q.expiry, at + ": past its queue deadline");
    auto r = replicas_.find(to);
    if (r == replicas_.end()) return Check(false, at + ": removed or unknown replica");
    Check(r->second.state == ReplicaState::kReady, at + ": replica starting or draining");
    Check(r->second.weight > 0, at + ": replica of weight 0");
    Check(r->second.service == q.service, at + ": replica of another service");
    std::optional<ReplicaView> view = router_.FindReplica(to);
    Check(view && view->replica.state == ReplicaState::kReady, at + ": replica ejected");
    Check(!q.tried.contains(to), at + ": replica already failed it");
    q.where = Where::kRouted;
    q.replica = to;
  }

  void Ended(RequestId id, const char* how) {
    Check(open_.erase(id) == 1, std::string(how) + " of " + std::to_string(id) +
                                    ": not open (ended twice, or never started)");
  }

  void Apply(std::span<const Dispatch> dispatched, const char* by) {
    for (const Dispatch& d : dispatched) Dispatched(d.request, d.replica, true, by);
  }

  uint32_t InFlight(ReplicaId id) const {
    uint32_t n = 0;
    for (const auto& [rid, q] : open_) n += q.where == Where::kRouted && q.replica == id;
    return n;
  }

  // Could replica `id` take request `q` now?
  bool CouldTake(ReplicaId id, const ModelReplica& r, const ModelRequest& q) {
    if (r.service != q.service || r.state != ReplicaState::kReady || r.weight == 0) return false;
    if (q.tried.contains(id) || InFlight(id) >= r.capacity) return false;
    std::optional<ReplicaView> view = router_.FindReplica(id);
    return view && view->replica.state == ReplicaState::kReady;
  }

  // After every call (1, 4, 5).
  void Audit() {
    std::string own = router_.CheckInvariants();
    Check(own.empty(), "CheckInvariants: " + own);
    for (const auto& [id, r] : replicas_) {
      std::optional<ReplicaView> view = router_.FindReplica(id);
      if (!view) return Check(false, "replica " + std::to_string(id) + " vanished");
      uint32_t want = InFlight(id);
      Check(view->replica.in_flight == want, "replica " + std::to_string(id) + " in flight " +
                                                 std::to_string(view->replica.in_flight) +
                                                 ", model " + std::to_string(want));
      Check(view->replica.in_flight <= r.capacity, "replica over capacity");
    }
    for (ReplicaId id : removed_) Check(!router_.FindReplica(id), "removed replica still there");
    std::map<std::string, uint32_t> queued;
    for (const auto& [id, q] : open_) {
      if (q.where != Where::kQueued) continue;
      ++queued[q.service];
      if (q.expiry <= now_ || q.incarnation != services_[q.service].incarnation) continue;
      for (const auto& [rid, r] : replicas_)
        Check(!CouldTake(rid, r, q), "request " + std::to_string(id) + " waits while replica " +
                                         std::to_string(rid) + " has room");
    }
    for (const ServiceSnapshot& s : router_.Snapshot().services)
      Check(s.queue_length == queued[s.name], "queue length of " + s.name + " " +
                                                  std::to_string(s.queue_length) + ", model " +
                                                  std::to_string(queued[s.name]));
  }

  // --- the events ---

  void Submit() {
    std::string service = Chance(0.6) ? "a" : "b";
    Time deadline = Chance(0.3) ? now_ + milliseconds(Below(200)) : kNoDeadline;
    SubmitResult s = router_.Submit(service, now_, deadline);
    Trace("Submit " + service + " -> " + std::to_string(static_cast<int>(s.kind)) + " " +
          std::to_string(s.request) + " on " + std::to_string(s.replica));
    if (s.kind == SubmitKind::kRejected) {
      Check(s.retry_after.count() >= 1, "rejected without a Retry-After");
      uint32_t queued = 0;
      for (const auto& [id, q] : open_) queued += q.where == Where::kQueued && q.service == service;
      Check(queued >= services_[service].config.max_queue, "rejected with room in the queue");
      return;
    }
    if (s.kind == SubmitKind::kUnknownService) return Check(false, "known service unknown");
    Check(!open_.contains(s.request), "Submit reused an open id");
    ModelService& ms = services_[service];
    ModelRequest& q = open_[s.request];
    q.service = service;
    q.incarnation = ms.incarnation;
    q.expiry = std::min(deadline, now_ + ms.config.queue_deadline);
    if (s.kind == SubmitKind::kRouted) Dispatched(s.request, s.replica, false, "Submit");
  }

  std::optional<RequestId> AnyOpen(Where where) {
    std::vector<RequestId> ids;
    for (const auto& [id, q] : open_)
      if (q.where == where) ids.push_back(id);
    if (ids.empty()) return std::nullopt;
    return ids[Below(ids.size())];
  }

  void Finish(RequestId id, Outcome outcome) {
    FinishResult f = router_.Finish(id, outcome, now_, Below(100));
    Trace("Finish " + std::to_string(id) + " outcome " + std::to_string(static_cast<int>(outcome)));
    Check(f.status.ok(), std::string("Finish: ") + f.status.message);
    Ended(id, "Finish");
    Apply(f.dispatched, "Finish");
  }

  void FinishOne() {
    std::optional<RequestId> id = AnyOpen(Where::kRouted);
    if (!id) return;
    const ModelRequest& q = open_[*id];
    double error_rate = replicas_.contains(q.replica) ? replicas_[q.replica].error_rate : 0;
    if (Chance(0.1)) return Finish(*id, Outcome::kClientGone);
    if (!Chance(error_rate)) return Finish(*id, Outcome::kOk);
    if (Chance(0.3)) return Finish(*id, Outcome::kUpstreamError);  // something reached the client
    Retry(*id);
  }

  void Retry(RequestId id) {
    ModelRequest& q = open_[id];
    if (q.where == Where::kRouted) q.tried.insert(q.replica);
    const ModelService& ms = services_[q.service];
    bool must_fail = q.incarnation != ms.incarnation || q.retries >= ms.config.retry_budget;
    q.where = Where::kOrphaned;
    RetryResult r = router_.Retry(id, now_);
    Trace("Retry " + std::to_string(id) + " -> " + std::to_string(static_cast<int>(r.kind)) +
          " on " + std::to_string(r.replica));
    Check(r.status.ok(), std::string("Retry: ") + r.status.message);
    Check(must_fail == (r.kind == RetryKind::kFailed), "Retry: budget not kept");
    if (r.kind == RetryKind::kFailed) {
      Ended(id, "Retry failure");
    } else {
      ++q.retries;
      if (r.kind == RetryKind::kRouted) Dispatched(id, r.replica, false, "Retry");
      if (r.kind == RetryKind::kQueued) q.where = Where::kQueued;
    }
    Apply(r.dispatched, "Retry");
  }

  void Orphans(std::span<const RequestId> ids, ReplicaId from) {
    for (RequestId id : ids) {
      auto it = open_.find(id);
      if (it == open_.end()) return Check(false, "orphan not open");
      Check(it->second.where == Where::kRouted, "orphan was not routed");
      Check(from == 0 || it->second.replica == from, "orphan of another replica");
      it->second.tried.insert(it->second.replica);
      it->second.where = Where::kOrphaned;
    }
  }

  void ReplicaEvent() {
    std::vector<ReplicaId> ids;
    for (const auto& [id, r] : replicas_) ids.push_back(id);
    uint64_t kind = Below(6);
    if (kind == 0 || ids.empty()) {
      ReplicaId id = next_replica_++;
      std::string service = Chance(0.6) ? "a" : "b";
      uint32_t cap = Chance(0.5) ? 0 : 1 + static_cast<uint32_t>(Below(3));
      Check(router_.AddReplica(service, id, cap).ok(), "AddReplica");
      ModelReplica& r = replicas_[id];
      r.service = service;
      r.capacity = cap > 0 ? cap : services_[service].config.max_concurrent;
      r.error_rate = Chance(0.2) ? 0.9 : 0.05;
      Trace("AddReplica " + std::to_string(id) + " to " + service);
      return;
    }
    ReplicaId id = ids[Below(ids.size())];
    ModelReplica& r = replicas_[id];
    if (kind == 1 && r.state == ReplicaState::kStarting) {
      FinishResult f = router_.SetReady(id, now_);
      Trace("SetReady " + std::to_string(id));
      Check(f.status.ok(), "SetReady");
      r.state = ReplicaState::kReady;
      Apply(f.dispatched, "SetReady");
    } else if (kind == 2 && Chance(0.3)) {
      Check(router_.Drain(id).ok(), "Drain");
      Trace("Drain " + std::to_string(id));
      r.state = ReplicaState::kDraining;
    } else if (kind == 3 && (r.state == ReplicaState::kDraining || Chance(0.2))) {
      RemoveResult rr = router_.Remove(id);
      Trace("Remove " + std::to_string(id) + ": " + std::to_string(rr.orphaned.size()) +
            " orphaned");
      Check(rr.status.ok(), "Remove");
      Orphans(rr.orphaned, id);
      replicas_.erase(id);
      removed_.insert(id);
    } else if (kind == 4) {
      double w = std::vector<double>{0, 0.2, 0.5, 1}[Below(4)];
      FinishResult f = router_.SetWeight(id, w, now_);
      Trace("SetWeight " + std::to_string(id) + " " + std::to_string(w));
      Check(f.status.ok(), "SetWeight");
      r.weight = w;
      Apply(f.dispatched, "SetWeight");
    } else if (kind == 5) {
      r.error_rate = r.error_rate > 0.5 ? 0.05 : 0.9;
    }
  }

  void RemoveService() {
    std::string name = Chance(0.5) ? "a" : "b";
    RemoveResult rr = router_.RemoveService(name);
    Trace("RemoveService " + name);
    Check(rr.status.ok(), "RemoveService");
    Orphans(rr.orphaned, 0);
    for (RequestId id : rr.failed) Ended(id, "RemoveService");
    for (auto it = replicas_.begin(); it != replicas_.end();) {
      if (it->second.service != name) {
        ++it;
        continue;
      }
      removed_.insert(it->first);
      it = replicas_.erase(it);
    }
    AddService(name);
  }

  void Expire() {
    ExpireResult e = router_.Expire(now_);
    Trace("Expire: " + std::to_string(e.expired.size()) + " expired, " +
          std::to_string(e.returned.size()) + " back");
    for (RequestId id : e.expired) {
      auto it = open_.find(id);
      Check(it != open_.end() && it->second.where == Where::kQueued && it->second.expiry <= now_,
            "Expire of a request not queued past its deadline");
      Ended(id, "Expire");
    }
    Apply(e.dispatched, "Expire");
    for (const auto& [id, q] : open_)  // (3)
      Check(q.where != Where::kQueued || q.expiry > now_, "queued past its deadline");
  }

  void Step() {
    uint64_t kind = Below(100);
    if (kind < 35) {
      Submit();
    } else if (kind < 65) {
      FinishOne();
    } else if (kind < 70) {
      if (auto id = AnyOpen(Where::kOrphaned))
        Chance(0.7) ? Retry(*id) : Finish(*id, Outcome::kUpstreamError);
    } else if (kind < 73) {
      if (auto id = AnyOpen(Where::kQueued)) Finish(*id, Outcome::kClientGone);
    } else if (kind < 85) {
      ReplicaEvent();
    } else if (kind < 86 && Chance(0.2)) {
      RemoveService();
    } else {
      now_ += Micros(Below(20'000));
      if (Chance(0.9)) Expire();
    }
    Audit();
  }

  // The liveness phase: faults off, one healthy replica per service, everything open finished.
  void Settle() {
    for (const char* name : {"a", "b"}) {
      ReplicaId id = next_replica_++;
      Check(router_.AddReplica(name, id, 1).ok(), "AddReplica (settle)");
      replicas_[id] = ModelReplica{name, ReplicaState::kReady, 1, 1, 0};
      Apply(router_.SetReady(id, now_).dispatched, "SetReady (settle)");
    }
    for (int round = 0; round < 100000 && !open_.empty() && failure_.empty(); ++round) {
      if (auto id = AnyOpen(Where::kRouted)) {
        Finish(*id, Outcome::kOk);
      } else if (auto orphan = AnyOpen(Where::kOrphaned)) {
        Finish(*orphan, Outcome::kClientGone);
      } else {
        std::optional<Time> next = router_.NextDeadline();
        if (!next) return Check(false, "requests queued with no timer armed");
        now_ = std::max(now_, *next);
        Expire();
      }
      Audit();
    }
    Check(open_.empty(), "requests still open after the liveness phase");
    now_ += std::chrono::hours(1);
    Expire();
    Check(!router_.NextDeadline(), "a timer still armed when idle");
    for (const ServiceSnapshot& s : router_.Snapshot().services) {
      Check(s.queue_length == 0, "queue not empty when idle");
      for (const ReplicaSnapshot& r : s.replicas) Check(r.in_flight == 0, "in flight when idle");
    }
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  Router router_;
  Time now_{};
  ReplicaId next_replica_ = 1;
  std::map<std::string, ModelService> services_;
  std::map<ReplicaId, ModelReplica> replicas_;
  std::set<ReplicaId> removed_;
  std::map<RequestId, ModelRequest> open_;
  std::deque<std::string> trace_;
  std::string failure_;
};

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(RouterProperty, SeededEventSequencesKeepEveryInvariant) {
  uint64_t first = EnvOr("ROUTER_SEED", 1);
  uint64_t seeds = std::getenv("ROUTER_SEED") != nullptr ? 1 : EnvOr("ROUTER_SEEDS", 200);
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    std::string failure = Simulation(seed).Run(2000);
    ASSERT_TRUE(failure.empty()) << failure;
  }
}

}  // namespace
}  // namespace idlepool::serve
