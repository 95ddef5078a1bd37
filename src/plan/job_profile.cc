#include "plan/job_profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace idlepool::plan {
namespace {

bool Finite(double x) { return std::isfinite(x); }

std::string Field(const char* what, size_t i, const char* field) {
  return std::string(what) + "[" + std::to_string(i) + "]." + field;
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string_view TaskTimeSourceName(TaskTimeSource s) {
  switch (s) {
    case TaskTimeSource::kMeasured:
      return "measured";
    case TaskTimeSource::kScaledByCpuScore:
      return "scaled by cpu score";
    case TaskTimeSource::kPoolMedian:
      return "pool median";
    case TaskTimeSource::kGiven:
      return "given";
  }
  return "?";
}

Checked<ProfiledModels> BuildModels(const std::vector<AttemptSample>& samples,
                                    const std::vector<WorkerFacts>& workers, const JobFacts& job,
                                    const ProtocolModel& protocol, double copy_bytes_per_s) {
  Checked<ProfiledModels> out;
  if (workers.empty()) {
    out.error = "no worker can run the job now (none connected, accepting and big enough)";
    return out;
  }
  if (job.tasks < 1) {
    out.error = "job.tasks must be >= 1";
    return out;
  }
  if (!Finite(job.shared_asset_bytes) || job.shared_asset_bytes < 0) {
    out.error = "job.shared_asset_bytes must be finite and >= 0";
    return out;
  }
  if (job.task_s && (!Finite(*job.task_s) || *job.task_s <= 0)) {
    out.error = "task_s must be finite and > 0";
    return out;
  }
  if (job.output_bytes_per_task &&
      (!Finite(*job.output_bytes_per_task) || *job.output_bytes_per_task < 0)) {
    out.error = "output_bytes_per_task must be finite and >= 0";
    return out;
  }
  for (double v : {job.coordinator_up_bytes_per_s, job.coordinator_down_bytes_per_s}) {
    if (!Finite(v) || v < 0) {
      out.error = "job.coordinator_*_bytes_per_s must be finite and >= 0";
      return out;
    }
  }
  if (samples.empty() && !job.task_s) {
    out.error =
        "no finished attempt to profile the job from (run a calibration, or give the seconds "
        "per task)";
    return out;
  }
  for (size_t i = 0; i < samples.size(); ++i) {
    const AttemptSample& s = samples[i];
    for (double v : {s.wall_s, s.stage_s, s.run_s, s.upload_s, s.fetched_bytes, s.output_bytes}) {
      if (!Finite(v) || v < 0) {
        out.error = "samples[" + std::to_string(i) + "] has a negative or non-finite value";
        return out;
      }
    }
  }

  std::map<std::string, double> rtt_of, score_of;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (workers[i].name.empty()) {
      out.error = Field("workers", i, "name") + " must not be empty";
      return out;
    }
    rtt_of[workers[i].name] = workers[i].rtt_s;
    score_of[workers[i].name] = workers[i].cpu_score;
  }

  const double copy_s = copy_bytes_per_s > 0 && Finite(copy_bytes_per_s)
                            ? job.shared_asset_bytes / copy_bytes_per_s
                            : 0.0;

  // Per-sample overhead: see the header.
  std::map<std::string, std::vector<double>> run_by_worker, overhead_by_worker;
  std::vector<double> all_run, all_overhead, all_work, all_output;
  for (const AttemptSample& s : samples) {
    const double staging_not_fetch = s.fetched_bytes > 0 ? copy_s : s.stage_s;
    auto rtt = rtt_of.find(s.worker);
    const double rtt_s = rtt != rtt_of.end() && rtt->second > 0 ? rtt->second : kAssumedRttS;
    double overhead = s.wall_s - s.run_s - s.upload_s - s.stage_s + staging_not_fetch -
                      protocol.round_trips_per_task * rtt_s - copy_s;
    overhead = std::max(0.0, overhead);
    run_by_worker[s.worker].push_back(s.run_s);
    overhead_by_worker[s.worker].push_back(overhead);
    all_run.push_back(s.run_s);
    all_overhead.push_back(overhead);
    all_output.push_back(s.output_bytes);
    auto score = score_of.find(s.worker);
    if (score != score_of.end() && score->second > 0) all_work.push_back(s.run_s * score->second);
  }
  const double job_overhead =
      samples.empty() ? JobModel{}.per_task_overhead_s : Median(all_overhead);
  // Score scaling needs most samples from scored workers (else the reference is a minority).
  const bool scale = !all_work.empty() && all_work.size() * 2 >= samples.size();
  const double work_ref = Median(all_work);
  const double run_ref = Median(all_run);

  ProfiledModels& m = out.value;
  m.total_samples = static_cast<int>(samples.size());
  m.job.tasks = job.tasks;
  m.job.shared_asset_bytes = job.shared_asset_bytes;
  m.job.output_bytes_per_task =
      job.output_bytes_per_task ? *job.output_bytes_per_task : Median(all_output);
  m.job.per_task_overhead_s = job_overhead + (Finite(job.dispatch_gap_s) && job.dispatch_gap_s > 0 ? job.dispatch_gap_s : 0.0);
  m.job.stage_copy_bytes_per_s = copy_bytes_per_s;
  m.pool.protocol = protocol;
  m.pool.coordinator_up_bytes_per_s = job.coordinator_up_bytes_per_s;
  m.pool.coordinator_down_bytes_per_s = job.coordinator_down_bytes_per_s;
  for (const WorkerFacts& w : workers) {
    WorkerModel wm;
    wm.name = w.name;
    wm.slots = std::max(1, w.slots);
    wm.rtt_s = w.rtt_s;
    wm.down_bytes_per_s = w.down_bytes_per_s;
    wm.up_bytes_per_s = w.up_bytes_per_s;
    wm.up_fraction = w.up_fraction;
    wm.mean_up_s = w.mean_up_s;
    wm.mean_down_s = w.mean_down_s;
    wm.holds_assets = w.holds_assets;
    auto own = run_by_worker.find(w.name);
    TaskTimeSource source;
    if (job.task_s) {
      wm.task_s = *job.task_s;
      source = TaskTimeSource::kGiven;
    } else if (own != run_by_worker.end()) {
      wm.task_s = Median(own->second);
      source = TaskTimeSource::kMeasured;
    } else if (scale && w.cpu_score > 0) {
      wm.task_s = work_ref / w.cpu_score;
      source = TaskTimeSource::kScaledByCpuScore;
    } else {
      wm.task_s = run_ref;
      source = TaskTimeSource::kPoolMedian;
    }
    // A worker's own overhead above the job's goes into its task time (one overhead per job in
    // the model).
    auto oh = overhead_by_worker.find(w.name);
    if (oh != overhead_by_worker.end()) {
      wm.task_s += std::max(0.0, Median(oh->second) - job_overhead);
    }
    // A task that did nothing measurable (an instant `true`) still takes a moment.
    wm.task_s = std::max(wm.task_s, 1e-3);
    m.pool.workers.push_back(std::move(wm));
    m.sources.push_back(source);
    m.samples.push_back(own != run_by_worker.end() ? static_cast<int>(own->second.size()) : 0);
  }
  return out;
}

}  // namespace idlepool::plan
