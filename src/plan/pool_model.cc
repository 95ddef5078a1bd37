#include "plan/pool_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace idlepool::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A worker must be this much faster (by expected cycle) to count in the tail rule, as in the
// core's exact count (src/core/scheduler.h).
constexpr double kTailRankRatio = 1.25;
// Subset verdict: the subset must predict at least this much below the whole pool.
constexpr double kSubsetGain = 0.10;
constexpr int kSubsetCandidates = 8;

template <typename T>
Checked<T> Error(std::string e) {
  Checked<T> r;
  r.error = std::move(e);
  return r;
}

// ---- Validation ---------------------------------------------------------------------------

std::string NonNegative(double v, const std::string& field) {
  if (!std::isfinite(v) || v < 0) return field + " must be finite and >= 0";
  return {};
}

std::string Positive(double v, const std::string& field) {
  if (!std::isfinite(v) || v <= 0) return field + " must be finite and > 0";
  return {};
}

std::string Validate(const PoolModel& pool, const JobModel& job) {
  if (job.tasks < 1) return "job.tasks must be >= 1";
  if (auto e = NonNegative(job.shared_asset_bytes, "job.shared_asset_bytes"); !e.empty()) return e;
  if (auto e = NonNegative(job.output_bytes_per_task, "job.output_bytes_per_task"); !e.empty()) {
    return e;
  }
  if (auto e = NonNegative(job.per_task_overhead_s, "job.per_task_overhead_s"); !e.empty()) {
    return e;
  }
  if (auto e = NonNegative(job.checkpoint_interval_s, "job.checkpoint_interval_s"); !e.empty()) {
    return e;
  }
  if (std::isnan(job.stage_copy_bytes_per_s) || job.stage_copy_bytes_per_s <= 0) {
    return "job.stage_copy_bytes_per_s must be > 0 (+inf for reflinks)";
  }
  if (pool.workers.empty()) return "pool.workers must not be empty";
  if (auto e = NonNegative(pool.coordinator_up_bytes_per_s, "pool.coordinator_up_bytes_per_s");
      !e.empty()) {
    return e;
  }
  if (auto e = NonNegative(pool.coordinator_down_bytes_per_s, "pool.coordinator_down_bytes_per_s");
      !e.empty()) {
    return e;
  }
  const ProtocolModel& p = pool.protocol;
  if (auto e = NonNegative(p.round_trips_per_task, "pool.protocol.round_trips_per_task");
      !e.empty()) {
    return e;
  }
  if (auto e = NonNegative(p.round_trips_per_fetch, "pool.protocol.round_trips_per_fetch");
      !e.empty()) {
    return e;
  }
  if (auto e = NonNegative(p.round_trips_per_upload, "pool.protocol.round_trips_per_upload");
      !e.empty()) {
    return e;
  }
  if (!std::isfinite(p.swarm_efficiency) || p.swarm_efficiency <= 0 || p.swarm_efficiency > 1) {
    return "pool.protocol.swarm_efficiency must be in (0, 1]";
  }
  std::set<std::string> names;
  for (size_t i = 0; i < pool.workers.size(); ++i) {
    const WorkerModel& w = pool.workers[i];
    const std::string f = "workers[" + std::to_string(i) + "].";
    if (w.name.empty()) return f + "name must not be empty";
    if (!names.insert(w.name).second) return f + "name '" + w.name + "' is not unique";
    if (w.slots < 1) return f + "slots must be >= 1";
    if (auto e = Positive(w.task_s, f + "task_s"); !e.empty()) return e;
    if (auto e = NonNegative(w.rtt_s, f + "rtt_s"); !e.empty()) return e;
    if (auto e = NonNegative(w.down_bytes_per_s, f + "down_bytes_per_s"); !e.empty()) return e;
    if (auto e = NonNegative(w.up_bytes_per_s, f + "up_bytes_per_s"); !e.empty()) return e;
    if (w.up_fraction &&
        (!std::isfinite(*w.up_fraction) || *w.up_fraction <= 0 || *w.up_fraction > 1)) {
      return f + "up_fraction must be in (0, 1]";
    }
    if (std::isnan(w.mean_up_s) || w.mean_up_s <= 0) {
      return f + "mean_up_s must be > 0 (+inf: never seen to end)";
    }
    if (auto e = NonNegative(w.mean_down_s, f + "mean_down_s"); !e.empty()) return e;
  }
  return {};
}

// ---- Resolved inputs ----------------------------------------------------------------------

// One worker with defaults applied and its per-task costs worked out.
struct Worker {
  int slots = 1;
  double base_s = 0;  // per_task_overhead_s + task_s
  double run_s = 0;   // base_s inflated by churn and divided by the up fraction
  double lost_per_task_s = 0;
  double preemptions_per_task = 0;
  double rtt_s = 0;
  double down = 0;  // bytes/s
  double up = 0;
  bool holds = false;
};

struct Env {
  std::vector<Worker> workers;
  double coord_up = 0;
  double coord_down = 0;
  bool p2p = true;
  ProtocolModel protocol;
  int64_t tasks = 0;
  double asset_bytes = 0;
  double output_bytes = 0;
  double copy_s = 0;  // per task: asset bytes / stage copy rate
};

void ApplyChurn(Worker& w, double up_fraction, double mean_up_s, double checkpoint_interval_s) {
  ChurnCost c = ExpectedChurnCost(w.base_s, mean_up_s, checkpoint_interval_s);
  w.run_s = c.up_seconds / up_fraction;
  w.lost_per_task_s = c.up_seconds - w.base_s;
  w.preemptions_per_task = c.preemptions;
}

Env Resolve(const PoolModel& pool, const JobModel& job, std::vector<std::string>* assumed) {
  Env env;
  env.p2p = pool.peer_to_peer;
  env.protocol = pool.protocol;
  env.tasks = job.tasks;
  env.asset_bytes = job.shared_asset_bytes;
  env.output_bytes = job.output_bytes_per_task;
  env.copy_s = job.shared_asset_bytes > 0 ? job.shared_asset_bytes / job.stage_copy_bytes_per_s : 0;
  double max_down = 0;
  double max_up = 0;
  for (size_t i = 0; i < pool.workers.size(); ++i) {
    const WorkerModel& m = pool.workers[i];
    const std::string f = "workers[" + std::to_string(i) + "].";
    Worker w;
    w.slots = m.slots;
    w.base_s = job.per_task_overhead_s + m.task_s;
    w.rtt_s = m.rtt_s;
    if (w.rtt_s == 0) {
      w.rtt_s = kAssumedRttS;
      assumed->push_back(f + "rtt_s");
    }
    w.down = DownBytesPerS(m);
    if (m.down_bytes_per_s <= 0) assumed->push_back(f + "down_bytes_per_s");
    w.up = m.up_bytes_per_s;
    if (w.up == 0) {
      w.up = kAssumedLinkBytesPerS;
      assumed->push_back(f + "up_bytes_per_s");
    }
    w.holds = m.holds_assets;
    double fraction = 1;
    if (m.up_fraction) {
      fraction = *m.up_fraction;
    } else if (std::isfinite(m.mean_up_s) && m.mean_down_s > 0) {
      fraction = m.mean_up_s / (m.mean_up_s + m.mean_down_s);
    }
    ApplyChurn(w, fraction, m.mean_up_s, job.checkpoint_interval_s);
    max_down = std::max(max_down, w.down);
    max_up = std::max(max_up, w.up);
    env.workers.push_back(w);
  }
  env.coord_up = pool.coordinator_up_bytes_per_s;
  if (env.coord_up == 0) {
    env.coord_up = max_down;
    assumed->push_back("pool.coordinator_up_bytes_per_s");
  }
  env.coord_down = pool.coordinator_down_bytes_per_s;
  if (env.coord_down == 0) {
    env.coord_down = max_up;
    assumed->push_back("pool.coordinator_down_bytes_per_s");
  }
  return env;
}

// ---- Shared link with max-min fair transfers ------------------------------------------------

// One direction of the coordinator's NIC (capacity bytes/s, may be +inf) shared by transfers,
// each also limited by its worker's link in that direction, which the worker's own transfers
// share equally. A worker's transfers therefore always have equal rates, so each worker is one
// group with a "virtual service" counter: a transfer of b bytes added when the group's counter
// reads s ends when it reads s + b. Max-min rates come from progressive filling over groups,
// recomputed once per batch of changes at one instant (lazily, in NextTime).
class SharedLink {
 public:
  SharedLink(double capacity, const std::vector<double>& worker_rates)
      : capacity_(capacity), groups_(worker_rates.size()) {
    for (size_t i = 0; i < worker_rates.size(); ++i) groups_[i].worker_rate = worker_rates[i];
  }

  // Starts a transfer at `now`. False when it would be instantaneous (no bytes, or nothing
  // limits it): the caller treats it as done now.
  bool Add(double now, int worker, double bytes, int64_t tag) {
    Group& g = groups_[worker];
    if (bytes <= 0 || (!std::isfinite(capacity_) && !std::isfinite(g.worker_rate))) return false;
    Sync(now);
    if (g.n == 0) active_.push_back(worker);
    ++g.n;
    g.pending.push({g.served + bytes, tag});
    dirty_ = true;
    return true;
  }

  // When the next transfer ends; +inf when none is active.
  double NextTime() {
    if (dirty_) Recompute();
    return next_time_;
  }

  // At `now` (a NextTime() answer): appends the tags of the transfers that have ended.
  void PopDone(double now, std::vector<int64_t>* tags) {
    Sync(now);
    // The transfer NextTime() named ends now, whatever rounding says: at large `now` the step
    // now - time_ can round to 0 and leave its counter short of its target, which would never
    // end (a simulation that spins forever).
    if (now >= next_time_ && next_group_ >= 0 && !dirty_) {
      Group& g = groups_[next_group_];
      if (!g.pending.empty()) g.served = std::max(g.served, g.pending.top().first);
    }
    for (size_t k = 0; k < active_.size();) {
      Group& g = groups_[active_[k]];
      while (!g.pending.empty() &&
             g.pending.top().first - g.served <= 1e-9 * g.pending.top().first + 1e-6) {
        tags->push_back(g.pending.top().second);
        g.pending.pop();
        --g.n;
        dirty_ = true;
      }
      if (g.n == 0) {
        g.rate = 0;
        active_[k] = active_.back();
        active_.pop_back();
      } else {
        ++k;
      }
    }
  }

 private:
  struct Group {
    double worker_rate = 0;
    int n = 0;
    double served = 0;
    double rate = 0;  // per transfer
    std::priority_queue<std::pair<double, int64_t>, std::vector<std::pair<double, int64_t>>,
                        std::greater<>>
        pending;
  };

  // Brings every active group's counter to `now`.
  void Sync(double now) {
    if (now > time_) {
      for (int i : active_) groups_[i].served += groups_[i].rate * (now - time_);
    }
    time_ = std::max(time_, now);
  }

  void Recompute() {
    dirty_ = false;
    next_time_ = kInf;
    next_group_ = -1;
    if (active_.empty()) return;
    // Progressive filling: raise every transfer's rate together; a group stops at its worker
    // link's share (worker_rate / n), the rest split what the coordinator has left.
    double demand = 0;
    for (int i : active_) demand += groups_[i].worker_rate;
    if (demand <= capacity_) {
      for (int i : active_) groups_[i].rate = groups_[i].worker_rate / groups_[i].n;
    } else {
      std::sort(active_.begin(), active_.end(), [&](int a, int b) {
        double ca = groups_[a].worker_rate / groups_[a].n;
        double cb = groups_[b].worker_rate / groups_[b].n;
        return ca != cb ? ca < cb : a < b;
      });
      double left = capacity_;
      int64_t flows = 0;
      for (int i : active_) flows += groups_[i].n;
      for (size_t k = 0; k < active_.size(); ++k) {
        Group& g = groups_[active_[k]];
        const double cap = g.worker_rate / g.n;
        const double share = left / static_cast<double>(flows);
        if (cap > share) {
          // Every remaining transfer is limited by the coordinator: equal shares.
          for (size_t j = k; j < active_.size(); ++j) groups_[active_[j]].rate = share;
          break;
        }
        g.rate = cap;
        left = std::max(0.0, left - cap * g.n);
        flows -= g.n;
      }
    }
    next_group_ = -1;
    for (int i : active_) {
      const Group& g = groups_[i];
      const double t = time_ + std::max(0.0, g.pending.top().first - g.served) / g.rate;
      if (t < next_time_) {
        next_time_ = t;
        next_group_ = i;
      }
    }
  }

  double capacity_;
  std::vector<Group> groups_;
  std::vector<int> active_;
  double time_ = 0;
  bool dirty_ = false;
  double next_time_ = kInf;
  int next_group_ = -1;  // the group whose transfer ends at next_time_
};

// ---- The simulation -------------------------------------------------------------------------

struct SimResult {
  double makespan_s = 0;
  std::vector<int64_t> tasks;          // per worker of the env
  std::vector<double> assets_ready_s;  // per worker; +inf if never fetched
  std::vector<double> cycle_s;         // per worker: its expected cycle
};

// Kumar & Ross's bound for one fetcher among `n`, see the header comment.
double SwarmSeconds(const Env& env, int n, double seed_up, double fetchers_up, double down) {
  const double s = env.asset_bytes;
  double t = std::max(
      {s / (env.coord_up + seed_up), s / down, n * s / (env.coord_up + seed_up + fetchers_up)});
  if (n >= 2 || seed_up > 0) t /= env.protocol.swarm_efficiency;
  return t;
}

class Sim {
 public:
  Sim(const Env& env, const std::vector<int>& members) : env_(env), members_(members) {}

  SimResult Run() {
    const size_t n = env_.workers.size();
    SimResult r;
    r.tasks.assign(n, 0);
    r.assets_ready_s.assign(n, kInf);
    r.cycle_s.assign(n, kInf);
    finished_any_.assign(n, false);
    got_task_.assign(n, false);
    ready_.assign(n, kInf);
    fetching_.assign(n, false);
    waiting_.assign(n, {});
    std::vector<double> downs(n), ups(n);
    for (size_t i = 0; i < n; ++i) {
      downs[i] = env_.workers[i].down;
      ups[i] = env_.workers[i].up;
    }
    uplink_.emplace(env_.coord_up, downs);    // assets, coordinator -> workers
    downlink_.emplace(env_.coord_down, ups);  // outputs, workers -> coordinator
    SharedLink& uplink = *uplink_;
    SharedLink& downlink = *downlink_;

    // Each member's expected cycle, its rank, and its slots in rank order.
    for (int w : members_) {
      const Worker& k = env_.workers[w];
      double upload = 0;
      if (env_.output_bytes > 0) {
        upload = env_.protocol.round_trips_per_upload * k.rtt_s +
                 env_.output_bytes / std::min(k.up, env_.coord_down);
      }
      cycle_[w] = env_.protocol.round_trips_per_task * k.rtt_s + env_.copy_s + k.run_s + upload;
      r.cycle_s[w] = cycle_[w];
      if (k.holds || env_.asset_bytes == 0) {
        ready_[w] = 0;
        r.assets_ready_s[w] = 0;
      }
    }
    std::vector<int> order;
    for (int w : members_) {
      if (std::isfinite(cycle_[w])) order.push_back(w);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return cycle_[a] < cycle_[b]; });
    // Per worker: the workers at least kTailRankRatio faster, and an upper bound on the tasks
    // their slots can finish while it runs one (their current task's remainder + whole tasks).
    faster_.assign(n, {});
    faster_bound_.assign(n, 0);
    for (int w : order) {
      for (int x : order) {
        if (cycle_[x] * kTailRankRatio <= cycle_[w]) {
          faster_[w].push_back(x);
          faster_bound_[w] += env_.workers[x].slots * (cycle_[w] / cycle_[x] + 1);
        }
      }
    }
    for (int w : order) {
      for (int s = 0; s < env_.workers[w].slots; ++s) {
        slot_worker_.push_back(w);
        slot_expected_end_.push_back(0);
      }
    }
    slots_of_.assign(n, {});
    for (size_t s = 0; s < slot_worker_.size(); ++s) slots_of_[slot_worker_[s]].push_back(s);
    pending_ = env_.tasks;

    // t = 0: every slot is free; rank order.
    now_ = 0;
    for (size_t s = 0; s < slot_worker_.size(); ++s) Decide(static_cast<int64_t>(s));
    // Workers that start fetching together form one swarm.
    StartInitialFetches();

    std::vector<int64_t> done;
    while (true) {
      double t_event = events_.empty() ? kInf : events_.top().time;
      double t_flow = std::min(uplink.NextTime(), downlink.NextTime());
      if (!std::isfinite(t_event) && !std::isfinite(t_flow)) break;
      if (t_flow <= t_event) {
        now_ = t_flow;
        done.clear();
        uplink.PopDone(now_, &done);
        for (int64_t w : done) AssetsReady(static_cast<int>(w));
        done.clear();
        downlink.PopDone(now_, &done);
        for (int64_t s : done) Push(now_ + HalfTrip(s), Kind::kReported, s);
        continue;
      }
      // Every event of this instant, then the links' rates once.
      do {
        Event e = events_.top();
        events_.pop();
        now_ = e.time;
        Handle(e, r);
      } while (!events_.empty() && events_.top().time == now_);
    }
    if (pending_ > 0) r.makespan_s = kInf;  // no member can finish a task
    for (size_t w = 0; w < n; ++w) {
      if (r.assets_ready_s[w] != 0) r.assets_ready_s[w] = ready_[w];
    }
    return r;
  }

 private:
  enum class Kind { kAssigned, kFetchStart, kFetched, kRunDone, kUploadStart, kReported };
  struct Event {
    double time;
    int64_t seq;
    Kind kind;
    int64_t id;  // a slot, or a worker for kFetchStart / kFetched
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  void Handle(const Event& e, SimResult& r) {
    const bool per_worker = e.kind == Kind::kFetchStart || e.kind == Kind::kFetched;
    const int w = per_worker ? static_cast<int>(e.id) : slot_worker_[e.id];
    switch (e.kind) {
      case Kind::kAssigned:
        if (ready_[w] <= now_) {
          StartRun(e.id);
        } else {
          waiting_[w].push_back(e.id);
          if (!fetching_[w]) StartLateFetch(w);
        }
        break;
      case Kind::kFetchStart:
        if (!uplink_->Add(now_, w, env_.asset_bytes, w)) AssetsReady(w);
        break;
      case Kind::kFetched:
        AssetsReady(w);
        break;
      case Kind::kRunDone:
        if (env_.output_bytes > 0) {
          Push(now_ + env_.protocol.round_trips_per_upload * env_.workers[w].rtt_s,
               Kind::kUploadStart, e.id);
        } else {
          Push(now_ + HalfTrip(e.id), Kind::kReported, e.id);
        }
        break;
      case Kind::kUploadStart:
        if (!downlink_->Add(now_, w, env_.output_bytes, e.id)) {
          Push(now_ + HalfTrip(e.id), Kind::kReported, e.id);
        }
        break;
      case Kind::kReported:
        ++r.tasks[w];
        finished_any_[w] = true;
        r.makespan_s = std::max(r.makespan_s, now_);
        Decide(e.id);
        break;
    }
  }

  void Push(double time, Kind kind, int64_t id) { events_.push({time, seq_++, kind, id}); }

  double HalfTrip(int64_t slot) const {
    return env_.protocol.round_trips_per_task * env_.workers[slot_worker_[slot]].rtt_s / 2;
  }

  // The coordinator, at now_, offers slot `s` (free) the next pending task.
  void Decide(int64_t s) {
    if (pending_ == 0) return;
    const int w = slot_worker_[s];
    if (finished_any_[w] && TailRuleDeclines(w)) return;  // the slot stays idle for this job
    --pending_;
    got_task_[w] = true;
    slot_expected_end_[s] = now_ + cycle_[w];
    Push(now_ + HalfTrip(s), Kind::kAssigned, s);
  }

  // The core's tail rule: faster workers (that have finished a task) will finish every pending
  // task before w would finish one.
  bool TailRuleDeclines(int w) const {
    if (faster_[w].empty() || static_cast<double>(pending_) > faster_bound_[w]) return false;
    const double deadline = now_ + cycle_[w];
    double count = 0;
    for (int x : faster_[w]) {
      if (!finished_any_[x]) continue;
      for (int64_t s : slots_of_[x]) {
        double free_at = std::max(now_, slot_expected_end_[s]);
        if (free_at < deadline) count += std::floor((deadline - free_at) / cycle_[x]);
      }
      if (count >= static_cast<double>(pending_)) return true;
    }
    return false;
  }

  void StartRun(int64_t s) {
    const Worker& k = env_.workers[slot_worker_[s]];
    Push(now_ + env_.copy_s + k.run_s, Kind::kRunDone, s);
  }

  void AssetsReady(int w) {
    ready_[w] = now_;
    fetching_[w] = false;
    for (int64_t s : waiting_[w]) StartRun(s);
    waiting_[w].clear();
  }

  // Workers given a task at t = 0 that lack the assets fetch them together.
  void StartInitialFetches() {
    std::vector<int> fetchers;
    for (int w : members_) {
      if (ready_[w] > 0 && got_task_[w]) fetchers.push_back(w);
    }
    double seed_up = 0;
    double fetchers_up = 0;
    if (env_.p2p) {
      for (int w : members_) {
        if (ready_[w] == 0 && env_.asset_bytes > 0) seed_up += env_.workers[w].up;
      }
      for (int w : fetchers) fetchers_up += env_.workers[w].up;
    }
    for (int w : fetchers) {
      BeginFetch(w, static_cast<int>(fetchers.size()), seed_up, fetchers_up);
    }
  }

  // A worker whose first task comes later fetches alone, from the coordinator and (p2p) every
  // worker that holds the assets by now.
  void StartLateFetch(int w) {
    double seed_up = 0;
    if (env_.p2p) {
      for (int x : members_) {
        if (x != w && ready_[x] <= now_) seed_up += env_.workers[x].up;
      }
    }
    BeginFetch(w, 1, seed_up, env_.workers[w].up);
  }

  void BeginFetch(int w, int n, double seed_up, double fetchers_up) {
    fetching_[w] = true;
    const Worker& k = env_.workers[w];
    // The fetch starts when the assignment arrives (the initial ones at half a task round trip).
    const double start = std::max(now_, k.rtt_s * env_.protocol.round_trips_per_task / 2) +
                         env_.protocol.round_trips_per_fetch * k.rtt_s;
    if (env_.p2p) {
      Push(start + SwarmSeconds(env_, n, seed_up, fetchers_up, k.down), Kind::kFetched, w);
    } else {
      Push(start, Kind::kFetchStart, w);
    }
  }

  const Env& env_;
  const std::vector<int>& members_;
  std::optional<SharedLink> uplink_;
  std::optional<SharedLink> downlink_;
  double now_ = 0;
  int64_t pending_ = 0;
  int64_t seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<int> slot_worker_;
  std::vector<double> slot_expected_end_;
  std::vector<std::vector<int64_t>> slots_of_;
  std::vector<double> cycle_ = std::vector<double>(env_.workers.size(), kInf);
  std::vector<std::vector<int>> faster_;
  std::vector<double> faster_bound_;
  std::vector<bool> finished_any_;
  std::vector<bool> got_task_;
  std::vector<double> ready_;
  std::vector<bool> fetching_;
  std::vector<std::vector<int64_t>> waiting_;
};

SimResult Simulate(const Env& env, const std::vector<int>& members) {
  return Sim(env, members).Run();
}

std::vector<int> All(const Env& env) {
  std::vector<int> v(env.workers.size());
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// ---- Counterfactual environments ------------------------------------------------------------

Env NoChurn(Env env) {
  for (Worker& w : env.workers) {
    w.run_s = w.base_s;
    w.lost_per_task_s = 0;
    w.preemptions_per_task = 0;
  }
  return env;
}

Env FreeWorkerLinks(Env env) {
  for (Worker& w : env.workers) {
    w.down = kInf;
    w.up = kInf;
    w.rtt_s = 0;
  }
  return env;
}

Env Gigabit(Env env) {
  for (Worker& w : env.workers) {
    w.down = kGigabitBytesPerS;
    w.up = kGigabitBytesPerS;
    w.rtt_s = kGigabitRttS;
  }
  env.coord_up = kGigabitBytesPerS;
  env.coord_down = kGigabitBytesPerS;
  return env;
}

Env AllCached(Env env) {
  for (Worker& w : env.workers) w.holds = true;
  return env;
}

// Tasks per second of the pool's compute alone (no network, no churn).
double ComputeRate(const Env& env, const std::vector<int>& members) {
  double rate = 0;
  for (int w : members) rate += env.workers[w].slots / (env.workers[w].base_s + env.copy_s);
  return rate;
}

double Speedup(double single_s, double pool_s) {
  if (!std::isfinite(pool_s)) return 0;
  return single_s / pool_s;
}

}  // namespace

std::string_view BottleneckName(Bottleneck b) {
  switch (b) {
    case Bottleneck::kCompute:
      return "compute";
    case Bottleneck::kCoordinatorUplink:
      return "coordinator_uplink";
    case Bottleneck::kCoordinatorDownlink:
      return "coordinator_downlink";
    case Bottleneck::kWorkerLinks:
      return "worker_links";
    case Bottleneck::kChurn:
      return "churn";
    case Bottleneck::kTail:
      return "tail";
  }
  return "unknown";
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPool:
      return "pool";
    case Verdict::kSingleMachine:
      return "single machine";
    case Verdict::kSubset:
      return "pool with only these workers";
  }
  return "unknown";
}

ChurnCost ExpectedChurnCost(double work_s, double mean_up_s, double checkpoint_interval_s) {
  if (!(work_s > 0) || !std::isfinite(mean_up_s)) return {.up_seconds = work_s, .preemptions = 0};
  const double u = mean_up_s;
  // One segment of x seconds restarted from its start: U (e^{x/U} - 1) up time and
  // e^{x/U} - 1 preemptions (a geometric number of tries).
  auto preempts = [u](double x) { return std::expm1(x / u); };
  double segments = 0;
  double rest = work_s;
  const double c = checkpoint_interval_s;
  if (c > 0 && c < work_s) {
    segments = std::floor(work_s / c);
    rest = work_s - segments * c;
  }
  double p = (segments > 0 ? segments * preempts(c) : 0) + (rest > 0 ? preempts(rest) : 0);
  return {.up_seconds = u * p, .preemptions = p};
}

Checked<Prediction> Predict(const PoolModel& pool, const JobModel& job) {
  if (auto e = Validate(pool, job); !e.empty()) return Error<Prediction>(std::move(e));
  Prediction out;
  const Env env = Resolve(pool, job, &out.assumed);
  const std::vector<int> all = All(env);
  const size_t n = env.workers.size();

  // The best worker alone: ceil(tasks / slots) rounds of overhead + copy + task_s.
  int best = 0;
  out.single_makespan_s = kInf;
  for (size_t i = 0; i < n; ++i) {
    const Worker& w = env.workers[i];
    double rounds = std::ceil(static_cast<double>(env.tasks) / w.slots);
    double s = rounds * (w.base_s + env.copy_s);
    if (s < out.single_makespan_s) {
      out.single_makespan_s = s;
      best = static_cast<int>(i);
    }
  }
  out.single_worker = pool.workers[best].name;
  const double single = out.single_makespan_s;

  // The pool.
  const SimResult full = Simulate(env, all);
  PoolForecast& f = out.pool;
  f.makespan_s = full.makespan_s;
  f.speedup = Speedup(single, full.makespan_s);
  f.ideal_speedup =
      ComputeRate(env, all) / (env.workers[best].slots / (env.workers[best].base_s + env.copy_s));
  f.efficiency = f.speedup / f.ideal_speedup;
  for (size_t i = 0; i < n; ++i) {
    const Worker& w = env.workers[i];
    WorkerForecast wf;
    wf.name = pool.workers[i].name;
    wf.tasks = full.tasks[i];
    wf.lost_work_s = static_cast<double>(full.tasks[i]) * w.lost_per_task_s;
    wf.preemptions = static_cast<double>(full.tasks[i]) * w.preemptions_per_task;
    wf.assets_ready_s = full.assets_ready_s[i];
    wf.seconds_per_task = full.cycle_s[i];
    f.lost_work_s += wf.lost_work_s;
    f.preemptions += wf.preemptions;
    f.workers.push_back(std::move(wf));
  }

  // Bottleneck terms: remove one cause at a time (see the header comment).
  const Env e1 = NoChurn(env);
  const double m1 = Simulate(e1, all).makespan_s;
  Env e2 = e1;
  e2.coord_up = kInf;
  const double m2 = Simulate(e2, all).makespan_s;
  Env e3 = e2;
  e3.coord_down = kInf;
  const double m3 = Simulate(e3, all).makespan_s;
  const Env e4 = FreeWorkerLinks(e3);
  const double m4 = Simulate(e4, all).makespan_s;
  MakespanTerms& t = f.terms;
  auto removed = [](double with, double without) {
    if (!std::isfinite(with)) return kInf;
    return std::max(0.0, with - without);
  };
  t.churn_s = removed(full.makespan_s, m1);
  t.coordinator_uplink_s = removed(m1, m2);
  t.coordinator_downlink_s = removed(m2, m3);
  t.worker_links_s = removed(m3, m4);
  t.compute_s = static_cast<double>(env.tasks) / ComputeRate(env, all);
  t.tail_s = std::max(0.0, full.makespan_s - t.churn_s - t.coordinator_uplink_s -
                               t.coordinator_downlink_s - t.worker_links_s - t.compute_s);
  if (!std::isfinite(full.makespan_s)) t.tail_s = 0;
  const std::pair<double, Bottleneck> terms[] = {
      {t.compute_s, Bottleneck::kCompute},
      {t.coordinator_uplink_s, Bottleneck::kCoordinatorUplink},
      {t.coordinator_downlink_s, Bottleneck::kCoordinatorDownlink},
      {t.worker_links_s, Bottleneck::kWorkerLinks},
      {t.churn_s, Bottleneck::kChurn},
      {t.tail_s, Bottleneck::kTail},
  };
  double largest = -1;
  for (const auto& [s, b] : terms) {
    if (s > largest) {
      largest = s;
      f.bottleneck = b;
    }
  }
  f.bottleneck_fraction = std::isfinite(full.makespan_s) ? largest / full.makespan_s : 1.0;

  // What-ifs.
  auto what_if = [&](double makespan) { return WhatIf{makespan, Speedup(single, makespan)}; };
  out.gigabit_links = what_if(Simulate(Gigabit(env), all).makespan_s);
  out.assets_cached = what_if(Simulate(AllCached(env), all).makespan_s);
  out.no_churn = what_if(m1);

  // Greedy removal, lowest per-slot throughput (longest expected cycle) first.
  std::vector<int> candidates = all;
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int a, int b) { return full.cycle_s[a] > full.cycle_s[b]; });
  std::vector<int> members = all;
  double best_subset = full.makespan_s;
  int tried = 0;
  for (int c : candidates) {
    if (members.size() <= 1 || tried >= kSubsetCandidates) break;
    ++tried;
    std::vector<int> trial;
    for (int m : members) {
      if (m != c) trial.push_back(m);
    }
    double m = Simulate(env, trial).makespan_s;
    if (m < best_subset) {
      best_subset = m;
      members = std::move(trial);
    }
  }
  for (int m : members) out.subset.push_back(pool.workers[m].name);
  out.subset_makespan_s = best_subset;
  out.subset_only = what_if(best_subset);

  const bool subset_wins =
      members.size() < n && std::isfinite(best_subset) &&
      (!std::isfinite(full.makespan_s) || best_subset <= (1 - kSubsetGain) * full.makespan_s);
  const double pool_best = subset_wins ? best_subset : full.makespan_s;
  if (single <= pool_best) {
    out.verdict = Verdict::kSingleMachine;
  } else if (subset_wins) {
    out.verdict = Verdict::kSubset;
  } else {
    out.verdict = Verdict::kPool;
  }
  Checked<Prediction> r;
  r.value = std::move(out);
  return r;
}

double DownBytesPerS(const WorkerModel& w) { return core::LinkBytesPerS(w.down_bytes_per_s); }

}  // namespace idlepool::plan
