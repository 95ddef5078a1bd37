// The scheduler's estimates and policy rules: worker speeds, the churn hazard of up periods,
// ranks, the tail rule and speculative backups (see Policy in scheduler.h). Same thread rules as
// the rest of the Scheduler.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/scheduler.h"

namespace idlepool::core {
namespace {

double Ms(MonoTime::duration d) { return static_cast<double>(d.count()); }

// Tail rule: at most this many pending tasks ahead are counted exactly, over at most this many
// better-ranked workers; the rank ratio from which the expected count includes a worker.
constexpr uint64_t kExactTail = 16;
constexpr int kRankProbes = 64;
constexpr double kAggregateRatio = 1.5;
constexpr double kExactRatio = 1.25;
constexpr double kMinSpeed = 1.0 / 64, kMaxSpeed = 64;
constexpr double kMinRank = 1.0 / 65536, kMaxRank = 64;

}  // namespace

double Scheduler::Speed(const WorkerRec& w) const {
  const double prior = options_.policy.speed_prior;
  const double time = w.speed_time + prior;
  if (!(time > 0)) return 1.0;
  return std::clamp((w.speed_attempts + prior) / time, kMinSpeed, kMaxSpeed);
}

void Scheduler::RefreshChurn() {
  if (!churn_.Due(now_)) return;
  std::vector<double> ages;
  for (const auto& [name, w] : workers_) {
    if (w.up_since) ages.push_back(Ms(now_ - *w.up_since));
  }
  churn_.Refresh(now_, ages);
  // Survival changes with age: re-rank every schedulable worker (busy ones are re-ranked
  // whenever their slots change anyway).
  for (const auto& [name, w] : workers_) {
    if (w.indexed_free > 0 || w.ranked) Reindex(name);
  }
}

double Scheduler::Survival(const WorkerRec& w, double ms) const {
  if (!churn_.Known() || !(ms > 0)) return 1.0;
  const double age = w.up_since ? std::max(0.0, Ms(now_ - *w.up_since)) : 0.0;
  const double now_hazard = churn_.Cumulative(age);
  const double prior = options_.policy.churn_prior_periods;
  const double frailty = (w.up_ends + prior) / (w.expected_ends + now_hazard + prior);
  return std::exp(-frailty * (churn_.Cumulative(age + ms) - now_hazard));
}

double Scheduler::RankOf(const WorkerRec& w) const {
  const Policy& p = options_.policy;
  const double speed = p.fast ? Speed(w) : 1.0;
  double rank = speed;
  if (p.churn_aware && pool_ref_.n > 0) {
    rank *= Survival(w, pool_ref_.sum_ms / static_cast<double>(pool_ref_.n) / speed);
  }
  // Kept to 1/64 of an octave, so that small changes of an estimate do not move the worker
  // in the indexes at every attempt.
  int exp = 0;
  const double mantissa = std::frexp(std::clamp(rank, kMinRank, kMaxRank), &exp);
  return std::ldexp(std::round(std::ldexp(mantissa, 7)), exp - 7);
}

double Scheduler::MeanMs(const JobRec& job) {
  return job.ref_n == 0 ? 0.0 : job.ref_ms_sum / static_cast<double>(job.ref_n);
}

double Scheduler::RunningSpeed(const WorkerRec& w) const {
  const double prior = options_.policy.speed_prior;
  double excess = 0;  // mean-task times its running attempts have run beyond one each
  for (AttemptId id : w.attempts) {
    const AttemptRec& a = attempts_.at(id);
    const double mean = MeanMs(jobs_.at(a.task.job));
    if (!(mean > 0)) continue;
    const MonoTime ran_until = a.suspended_since ? *a.suspended_since : now_;
    excess += std::max(0.0, Ms(ran_until - a.started) / mean - 1);
  }
  const double time = w.speed_time + prior + excess;
  if (!(time > 0)) return 1.0;
  return std::clamp((w.speed_attempts + prior) / time, kMinSpeed, kMaxSpeed);
}

void Scheduler::Expect(const AttemptRec& a, const WorkerRec& w, double mean_ms,
                       double& remaining_ms, double& work_ms) const {
  const double speed = RunningSpeed(w);
  const MonoTime ran_until = a.suspended_since ? *a.suspended_since : now_;
  const double elapsed = std::max(0.0, Ms(ran_until - a.started));
  const double total = std::max(mean_ms / speed, elapsed * (1 + options_.policy.overrun));
  remaining_ms = total - elapsed + (a.suspended_since ? Ms(now_ - *a.suspended_since) : 0.0);
  work_ms = total * speed;
}

void Scheduler::Learn(const AttemptRec& a, WorkerRec& w, JobRec& job, MonoTime now) {
  if (!a.fresh || a.orphan_deadline) return;
  const MonoTime ran_until = a.suspended_since ? *a.suspended_since : now;
  const double runtime = std::max(1.0, Ms(ran_until - a.started));
  job.times.Add(Millis(static_cast<int64_t>(runtime)));
  const double ref = runtime * Speed(w);
  job.ref_ms_sum += ref;
  ++job.ref_n;
  pool_ref_.sum_ms += ref;
  ++pool_ref_.n;
  const double decay = options_.policy.speed_decay;
  w.speed_attempts = decay * w.speed_attempts + 1;
  w.speed_time = decay * w.speed_time + runtime / MeanMs(job);
}

void Scheduler::UpStart(WorkerRec& w, MonoTime at) {
  if (!w.up_since) w.up_since = at;
}

void Scheduler::UpEnd(WorkerRec& w, MonoTime at) {
  if (!w.up_since) return;
  const int64_t length = (at - *w.up_since).count();
  w.up_since.reset();
  ++w.up_ends;
  w.expected_ends += churn_.End(length);
}

bool Scheduler::ShouldWait(const WorkerRec& w, const Resources& need, double work_ms,
                           uint64_t ahead) const {
  const double mean = work_ms;
  if (ahead == 0 || !(mean > 0)) return false;  // nothing learned yet: no basis to wait
  const double cpus = std::max<uint32_t>(1, need.cpus);
  const double kw = w.rank;

  if (ahead > kExactTail) {
    // Expected count over the rank bins at least kAggregateRatio x w's rank.
    const RankIndex::Above above = ranked_.SumAbove(kw * kAggregateRatio);
    if (above.slots == 0) return false;
    const double count = (above.rank_sum / kw - static_cast<double>(above.slots)) / cpus;
    if (count < static_cast<double>(ahead)) return false;
    // Only when one of them could run the task at all.
    int probes = 0;
    for (const auto& [rank, name] : ranked_.Best()) {
      if (rank < kw * kAggregateRatio || ++probes > kRankProbes) break;
      if (CapacityFits(workers_.at(name), need)) return true;
    }
    return false;
  }

  // Exact count: each slot of a better-ranked worker frees when its attempt is expected to end,
  // then finishes a task every mean / rank, all before w would finish one (mean / kw from now).
  const double deadline = mean / kw;
  double done = 0;
  int probes = 0;
  for (const auto& [rank, name] : ranked_.Best()) {
    if (rank < kw * kExactRatio || ++probes > kRankProbes) break;
    const WorkerRec& x = workers_.at(name);
    if (!CapacityFits(x, need)) continue;
    const double per_task = mean / rank;
    auto finishes = [&](double free_in_ms) {
      return free_in_ms + per_task <= deadline ? std::floor((deadline - free_in_ms) / per_task)
                                               : 0.0;
    };
    done += finishes(0) * std::floor(FreeSlots(x) / cpus);
    for (AttemptId id : x.attempts) {
      const AttemptRec& a = attempts_.at(id);
      if (a.suspended_since) continue;  // frozen for its owner: no telling when it frees
      const double m = MeanMs(jobs_.at(a.task.job));
      double remaining = 0, work = 0;
      Expect(a, x, m > 0 ? m : work_ms, remaining, work);
      done += finishes(remaining);
    }
    if (done >= static_cast<double>(ahead)) return true;
  }
  return false;
}

void Scheduler::Speculate(MonoTime now, std::vector<Decision>& out) {
  const Policy& p = options_.policy;
  if (!p.speculate || free_index_.empty()) return;
  if (last_speculation_ && now - *last_speculation_ < p.speculation_interval) return;
  last_speculation_ = now;
  const uint64_t cap = std::max<uint64_t>(
      1, static_cast<uint64_t>(p.speculative_cap * static_cast<double>(schedulable_slots_)));
  if (backups_running_ >= cap) return;
  auto speculating = [](const JobRec& job) {
    return job.state == JobState::kRunning && job.pending == 0 && job.ref_n > 0;
  };
  if (std::none_of(jobs_.begin(), jobs_.end(),
                   [&](const auto& kv) { return speculating(kv.second) && kv.second.unfinished > 0; })) {
    return;
  }

  std::vector<std::pair<double, const WorkerName*>> free;  // free workers and their speeds
  double fastest = 0;
  for (const auto& [name, w] : workers_) {
    if (w.indexed_free == 0) continue;
    free.emplace_back(Speed(w), &name);
    fastest = std::max(fastest, free.back().first);
  }

  // Running attempts without a backup, of jobs with nothing pending, that a backup on the
  // fastest free worker could beat; latest expected end first.
  struct Candidate {
    double remaining_ms;
    double work_ms;
    AttemptId id;
  };
  std::vector<Candidate> candidates;
  for (const auto& [id, a] : attempts_) {
    if (a.restored) continue;
    const JobRec& job = jobs_.at(a.task.job);
    if (!speculating(job) || job.tasks[a.task.index].backup != 0) continue;
    const WorkerRec& w = workers_.at(a.worker);
    Candidate c{0, 0, id};
    Expect(a, w, MeanMs(job), c.remaining_ms, c.work_ms);
    if (p.churn_aware) c.remaining_ms /= std::max(Survival(w, c.remaining_ms), 1e-9);
    if (c.work_ms / fastest > (1 - p.speculation_gain) * c.remaining_ms) continue;
    candidates.push_back(c);
  }
  if (candidates.empty()) return;
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.remaining_ms != b.remaining_ms ? a.remaining_ms > b.remaining_ms : a.id < b.id;
  });
  std::sort(free.begin(), free.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });

  size_t head = 0;      // free[0, head) are full
  uint64_t waiting = 0;  // candidates left for better-ranked workers (the tail rule)
  for (const Candidate& c : candidates) {
    if (backups_running_ >= cap || head >= free.size()) break;
    const AttemptRec& a = attempts_.at(c.id);
    const TaskKey key = a.task;
    const Resources& need = JobOf(key).spec.resources;
    const UserName& user = JobOf(key).spec.user;
    if (QuotaHolds(user, need)) continue;  // a backup never takes its user past a quota
    size_t chosen = free.size();
    int probes = 0;
    for (size_t i = head; i < free.size() && probes < kRankProbes; ++i) {
      const WorkerRec& x = workers_.at(*free[i].second);
      if (FreeSlots(x) == 0) {
        if (i == head) ++head;
        continue;
      }
      ++probes;
      if (*free[i].second != a.worker && Fits(x, need) && LendsTo(x, user) &&
          !Steered(a.task, *free[i].second, now)) {
        chosen = i;
        break;
      }
    }
    if (chosen == free.size()) continue;
    const WorkerName name = *free[chosen].second;
    const WorkerRec& x = workers_.at(name);
    double backup_ms = c.work_ms / free[chosen].first;
    if (p.churn_aware) backup_ms /= std::max(Survival(x, backup_ms), 1e-9);
    if (backup_ms > (1 - p.speculation_gain) * c.remaining_ms) continue;
    if (Ranked() && ShouldWait(x, need, c.work_ms, waiting + 1)) {
      ++waiting;
      continue;
    }
    PlaceBackup(key, name, now, out);
  }
}

}  // namespace idlepool::core
