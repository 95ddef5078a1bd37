#include "coordinator/planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/units.h"
#include "plan/job_profile.h"
#include "plan/pool_model.h"

namespace idlepool::coordinator {

uint32_t SlotsFor(const core::Resources& capacity, const core::Resources& need) {
  uint64_t slots = std::numeric_limits<uint32_t>::max();
  const uint32_t cpus = std::max<uint32_t>(need.cpus, 1);
  slots = std::min<uint64_t>(slots, capacity.cpus / cpus);
  if (need.gpus > 0) slots = std::min<uint64_t>(slots, capacity.gpus / need.gpus);
  if (need.memory_mb > 0 && capacity.memory_mb > 0) {
    slots = std::min<uint64_t>(slots, capacity.memory_mb / need.memory_mb);
  }
  return static_cast<uint32_t>(slots);
}

namespace {

// The planner's facts of each worker that fits one task of the job.
std::vector<plan::WorkerFacts> WorkerFactsOf(const PlanJobFacts& job,
                                             const std::vector<PlanWorker>& workers) {
  std::vector<plan::WorkerFacts> facts;
  for (const PlanWorker& w : workers) {
    const uint32_t slots = SlotsFor(w.capacity, job.resources);
    if (slots == 0) continue;
    plan::WorkerFacts f;
    f.name = w.name;
    f.slots = static_cast<int>(std::min<uint32_t>(slots, 1u << 20));
    if (w.record) {
      f.cpu_score = w.record->cpu_score;
      if (w.record->link_measured_ms > 0) {
        f.rtt_s =
            std::chrono::duration<double>(std::chrono::microseconds(w.record->rtt_us)).count();
        f.down_bytes_per_s = static_cast<double>(w.record->down_bytes_per_s);
        f.up_bytes_per_s = static_cast<double>(w.record->up_bytes_per_s);
      }
    }
    if (w.up_ms && w.down_ms) {
      const double up_s = SecondsOfMs(static_cast<double>(*w.up_ms));
      const double down_s = SecondsOfMs(static_cast<double>(*w.down_ms));
      f.up_fraction = (up_s + kChurnPriorUpS) / (up_s + down_s + kChurnPriorUpS);
      f.mean_up_s =
          w.up_periods == 0 ? plan::kNeverEnds : (up_s + kChurnPriorUpS) / (w.up_periods + 1.0);
    }
    f.holds_assets = w.holds_assets;
    facts.push_back(std::move(f));
  }
  return facts;
}

// The samples the job's profile is made of: attempts with timings, not resumed.
std::vector<plan::AttemptSample> ProfileOf(const std::vector<store::AttemptRecord>& samples) {
  std::vector<plan::AttemptSample> profile;
  for (const store::AttemptRecord& a : samples) {
    if (a.timing.resumed) continue;
    if (a.timing.run_ms == 0 && a.timing.stage_ms == 0 && a.timing.upload_ms == 0) continue;
    plan::AttemptSample s;
    s.worker = a.worker;
    s.wall_s = a.ended_ms > a.started_ms
                   ? SecondsOfMs(static_cast<double>(a.ended_ms - a.started_ms))
                   : 0.0;
    s.stage_s = SecondsOfMs(static_cast<double>(a.timing.stage_ms));
    s.run_s = SecondsOfMs(static_cast<double>(a.timing.run_ms));
    s.upload_s = SecondsOfMs(static_cast<double>(a.timing.upload_ms));
    // The coordinator's wall clock and the worker's monotonic clock round apart: a wall time
    // below the worker's own sum is that rounding.
    s.wall_s = std::max(s.wall_s, s.stage_s + s.run_s + s.upload_s);
    s.fetched_bytes = static_cast<double>(a.transfer.coordinator_bytes + a.transfer.peer_bytes);
    s.output_bytes = static_cast<double>(a.transfer.output_bytes);
    profile.push_back(std::move(s));
  }
  return profile;
}

// The pool-wide part of a prediction: makespan, terms, verdict, what-ifs.
void FillPoolPrediction(const plan::Prediction& r, v1::Prediction& out) {
  out.set_single_worker(r.single_worker);
  out.set_single_makespan_s(r.single_makespan_s);
  out.set_makespan_s(r.pool.makespan_s);
  out.set_speedup(r.pool.speedup);
  out.set_ideal_speedup(r.pool.ideal_speedup);
  out.set_efficiency(r.pool.efficiency);
  out.set_bottleneck(std::string(plan::BottleneckName(r.pool.bottleneck)));
  out.set_bottleneck_fraction(r.pool.bottleneck_fraction);
  v1::MakespanTerms* t = out.mutable_terms();
  t->set_compute_s(r.pool.terms.compute_s);
  t->set_coordinator_uplink_s(r.pool.terms.coordinator_uplink_s);
  t->set_coordinator_downlink_s(r.pool.terms.coordinator_downlink_s);
  t->set_worker_links_s(r.pool.terms.worker_links_s);
  t->set_churn_s(r.pool.terms.churn_s);
  t->set_tail_s(r.pool.terms.tail_s);
  out.set_lost_work_s(r.pool.lost_work_s);
  out.set_preemptions(r.pool.preemptions);
  out.set_verdict(std::string(plan::VerdictName(r.verdict)));
  for (const std::string& s : r.subset) out.add_subset(s);
  out.set_subset_makespan_s(r.subset_makespan_s);
  auto what_if = [&](const char* what, const plan::WhatIf& w) {
    v1::WhatIf* o = out.add_what_ifs();
    o->set_what(what);
    o->set_makespan_s(w.makespan_s);
    o->set_speedup(w.speedup);
  };
  what_if("1 GbE links", r.gigabit_links);
  what_if("assets cached", r.assets_cached);
  what_if("no churn", r.no_churn);
  if (r.verdict == plan::Verdict::kSubset) what_if("only the subset", r.subset_only);
}

// Each worker's part of a prediction.
void AddPlannedWorkers(const plan::ProfiledModels& models, const plan::Prediction& r,
                       const std::vector<plan::WorkerFacts>& facts, v1::Prediction& out) {
  for (size_t i = 0; i < models.pool.workers.size(); ++i) {
    const plan::WorkerModel& wm = models.pool.workers[i];
    v1::PlannedWorker* o = out.add_workers();
    o->set_worker(wm.name);
    o->set_slots(static_cast<uint32_t>(wm.slots));
    o->set_task_seconds(wm.task_s);
    o->set_task_s_source(std::string(plan::TaskTimeSourceName(models.sources[i])));
    o->set_samples(static_cast<uint32_t>(models.samples[i]));
    o->set_rtt_ms(MsOfSeconds(wm.rtt_s));
    o->set_down_bytes_per_s(wm.down_bytes_per_s);
    o->set_up_bytes_per_s(wm.up_bytes_per_s);
    o->set_up_fraction(wm.up_fraction.value_or(1.0));
    o->set_mean_up_s(wm.mean_up_s);
    o->set_holds_assets(wm.holds_assets);
    o->set_cpu_score(facts[i].cpu_score);
    if (i < r.pool.workers.size()) {
      o->set_tasks(r.pool.workers[i].tasks);
      o->set_seconds_per_task(r.pool.workers[i].seconds_per_task);
      o->set_lost_work_s(r.pool.workers[i].lost_work_s);
    }
  }
}

}  // namespace

absl::StatusOr<v1::Prediction> Predict(const PlanJobFacts& job,
                                       const std::vector<PlanWorker>& workers,
                                       const std::vector<store::AttemptRecord>& samples,
                                       const std::string& basis, int64_t now_wall_ms) {
  const std::vector<plan::WorkerFacts> facts = WorkerFactsOf(job, workers);
  if (facts.empty()) {
    return absl::FailedPreconditionError(
        "no connected, accepting worker fits one task of this job");
  }
  const std::vector<plan::AttemptSample> profile = ProfileOf(samples);
  if (profile.empty() && !job.task_s) {
    return absl::FailedPreconditionError(
        "no succeeded attempt of this job's work to profile it from");
  }

  // The coordinator's downlink as concurrent uploads found it, when below the probes' (above).
  double probe_up = 0;
  for (const plan::WorkerFacts& f : facts) probe_up = std::max(probe_up, f.up_bytes_per_s);
  std::vector<store::AttemptRecord> usable;
  for (const store::AttemptRecord& a : samples) {
    if (!a.timing.resumed) usable.push_back(a);
  }
  const double achieved = ConcurrentUploadRate(usable, probe_up);
  std::string why = basis;
  plan::JobFacts jf;
  jf.tasks = static_cast<int64_t>(job.tasks);
  jf.dispatch_gap_s = DispatchGapS(usable);
  if (achieved > 0 && (probe_up <= 0 || achieved < probe_up)) {
    jf.coordinator_down_bytes_per_s = achieved;
    why += absl::StrFormat("; coordinator downlink %.2f MB/s (concurrent uploads)", achieved / 1e6);
  }
  jf.shared_asset_bytes = job.input_bytes;
  jf.task_s = job.task_s;
  jf.output_bytes_per_task = job.output_bytes;
  plan::Checked<plan::ProfiledModels> models = plan::BuildModels(profile, facts, jf);
  if (!models.ok()) return absl::InvalidArgumentError(models.error);
  plan::Checked<plan::Prediction> p = plan::Predict(models.value.pool, models.value.job);
  if (!p.ok()) return absl::InvalidArgumentError(p.error);

  v1::Prediction out;
  out.set_basis(why);
  out.set_samples(static_cast<uint32_t>(profile.size()));
  out.set_made_ms(now_wall_ms);
  out.set_tasks(static_cast<uint32_t>(job.tasks));
  out.set_shared_asset_bytes(models.value.job.shared_asset_bytes);
  out.set_output_bytes_per_task(models.value.job.output_bytes_per_task);
  out.set_per_task_overhead_s(models.value.job.per_task_overhead_s);
  FillPoolPrediction(p.value, out);
  AddPlannedWorkers(models.value, p.value, facts, out);
  for (const std::string& a : p.value.assumed) out.add_assumed(a);
  return out;
}

LinkProbe BestOfRecentProbes(std::vector<LinkProbe>& probes, int64_t now_ms) {
  if (probes.empty()) return {};
  // Oldest first: drop what is past the window, always keeping the newest.
  while (probes.size() > 1 &&
         (probes.size() > kLinkWindowProbes || now_ms - probes.front().wall_ms > kLinkWindowMs)) {
    probes.erase(probes.begin());
  }
  LinkProbe best = probes.back();
  for (const LinkProbe& p : probes) {
    if (p.rtt_us > 0) best.rtt_us = best.rtt_us > 0 ? std::min(best.rtt_us, p.rtt_us) : p.rtt_us;
    best.down_bytes_per_s = std::max(best.down_bytes_per_s, p.down_bytes_per_s);
    best.up_bytes_per_s = std::max(best.up_bytes_per_s, p.up_bytes_per_s);
  }
  return best;
}


double ConcurrentUploadRate(const std::vector<store::AttemptRecord>& samples,
                            double probe_bytes_per_s) {
  struct Span {
    int64_t start, end;
    double bytes;
  };
  std::vector<Span> spans;
  for (const auto& a : samples) {
    if (a.timing.upload_ms == 0 || a.transfer.output_bytes == 0 || a.ended_ms <= 0) continue;
    spans.push_back({a.ended_ms - static_cast<int64_t>(a.timing.upload_ms), a.ended_ms,
                     static_cast<double>(a.transfer.output_bytes)});
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& x, const Span& y) { return x.start < y.start; });
  double best = 0;
  for (size_t i = 0; i < spans.size();) {
    int64_t start = spans[i].start, end = spans[i].end;
    double bytes = spans[i].bytes;
    size_t j = i + 1;
    for (; j < spans.size() && spans[j].start < end; ++j) {
      end = std::max(end, spans[j].end);
      bytes += spans[j].bytes;
    }
    const bool big = probe_bytes_per_s <= 0 || bytes / probe_bytes_per_s >= 0.1;
    if (j - i >= 2 && big && end > start) {
      best = std::max(best, bytes / SecondsOfMs(static_cast<double>(end - start)));
    }
    i = j;
  }
  return best;
}


double DispatchGapS(const std::vector<store::AttemptRecord>& samples) {
  std::vector<double> gaps;
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& a = samples[i];
    int64_t freed = -1;
    for (size_t j = 0; j < samples.size(); ++j) {
      const auto& b = samples[j];
      if (j == i || b.worker != a.worker || b.task.job != a.task.job) continue;
      if (b.ended_ms > 0 && b.ended_ms <= a.started_ms) freed = std::max(freed, b.ended_ms);
    }
    if (freed >= 0 && a.started_ms - freed <= core::Millis(std::chrono::seconds(2)).count()) {
      gaps.push_back(SecondsOfMs(static_cast<double>(a.started_ms - freed)));
    }
  }
  return plan::Median(std::move(gaps));
}

}  // namespace idlepool::coordinator
