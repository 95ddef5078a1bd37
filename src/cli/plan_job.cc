#include "cli/plan_job.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "spec/spec.h"
#include "text/units.h"

namespace idlepool::cli {
namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "idlepool plan: %s\n", message.c_str());
  return code;
}

int ExitFor(const absl::Status& s) {
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}


std::string Seconds(double s) {
  if (!std::isfinite(s)) return "never";
  if (s < 100) return absl::StrFormat("%.1f s", s);
  if (s < 3600 * 3) return absl::StrFormat("%.0f s (%.1f min)", s, s / 60);
  return absl::StrFormat("%.0f s (%.1f h)", s, s / 3600);
}

std::string Bytes(double b) {
  if (b < 1024) return absl::StrFormat("%.0f B", b);
  if (b < 1024.0 * 1024) return absl::StrFormat("%.1f KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return absl::StrFormat("%.1f MiB", b / (1024.0 * 1024));
  return absl::StrFormat("%.2f GiB", b / (1024.0 * 1024 * 1024));
}

std::string Rate(double bytes_per_s) {
  if (bytes_per_s <= 0) return "?";
  if (bytes_per_s >= 1e6) return absl::StrFormat("%.1fMB/s", bytes_per_s / 1e6);
  return absl::StrFormat("%.0fkB/s", bytes_per_s / 1e3);
}

std::string Speedup(double x) {
  return std::isfinite(x) ? absl::StrFormat("%.2fx", x) : std::string("-");
}

}  // namespace

namespace {

void PrintText(const v1::PlanReply& reply, const std::string& name) {
  const v1::Prediction& p = reply.prediction();
  std::printf("plan for '%s': %u tasks, inputs %s (every task stages them), uploads %s per task\n",
              name.c_str(), p.tasks(), Bytes(p.shared_asset_bytes()).c_str(),
              Bytes(p.output_bytes_per_task()).c_str());
  std::printf("profile: %s; per-task overhead %.2f s\n", p.basis().c_str(),
              p.per_task_overhead_s());
  std::printf("  single machine (%s): %s\n", p.single_worker().c_str(),
              Seconds(p.single_makespan_s()).c_str());
  std::printf("  pool of %d workers:  %s   speedup %s, efficiency %.0f%%\n", p.workers_size(),
              Seconds(p.makespan_s()).c_str(), Speedup(p.speedup()).c_str(),
              100 * (std::isfinite(p.efficiency()) ? p.efficiency() : 0.0));
  // The makespan split by cause, largest first.
  const auto& t = p.terms();
  std::vector<std::pair<double, std::string>> terms = {
      {t.compute_s(), "compute"},
      {t.coordinator_uplink_s(), "coordinator uplink"},
      {t.coordinator_downlink_s(), "coordinator downlink"},
      {t.worker_links_s(), "worker links"},
      {t.churn_s(), "churn"},
      {t.tail_s(), "tail"}};
  std::sort(terms.begin(), terms.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> parts;
  for (const auto& [s, what] : terms) {
    if (!std::isfinite(p.makespan_s()) || p.makespan_s() <= 0) continue;
    if (!(s >= 0.005 * p.makespan_s())) continue;  // under half a percent: noise
    parts.push_back(absl::StrFormat("%s %.0f%%", what, 100 * s / p.makespan_s()));
  }
  std::string bottleneck = p.bottleneck();
  std::replace(bottleneck.begin(), bottleneck.end(), '_', ' ');
  std::printf("  bottleneck: %s (%s)\n", bottleneck.c_str(), absl::StrJoin(parts, ", ").c_str());
  std::printf("  expected lost work: %s (%.2f preemptions)\n", Seconds(p.lost_work_s()).c_str(),
              p.preemptions());
  if (p.verdict() == "pool with only these workers") {
    std::printf("verdict: %s: %s (%s)\n", p.verdict().c_str(),
                absl::StrJoin(p.subset(), ", ").c_str(), Seconds(p.subset_makespan_s()).c_str());
  } else {
    std::printf("verdict: %s\n", p.verdict().c_str());
  }
  // Only what-ifs that move the makespan by 5% or more (a "1 GbE" what-if on faster links would
  // read as a change that is none).
  std::vector<std::string> ifs;
  for (const auto& w : p.what_ifs()) {
    const bool changes = std::isfinite(w.makespan_s()) && std::isfinite(p.makespan_s())
                             ? std::abs(w.makespan_s() - p.makespan_s()) >= 0.05 * p.makespan_s()
                             : std::isfinite(w.makespan_s()) != std::isfinite(p.makespan_s());
    if (changes) ifs.push_back(absl::StrCat("with ", w.what(), ": ", Speedup(w.speedup())));
  }
  std::printf("what would change it: %s\n",
              ifs.empty() ? "none of 1 GbE links, cached assets, no churn (by 5% or more)"
                          : absl::StrJoin(ifs, "; ").c_str());
  std::printf("%-16s %5s %8s  %-20s %-26s %5s %6s\n", "WORKER", "SLOTS", "TASK_S", "SOURCE", "LINK",
              "UP", "TASKS");
  for (const auto& w : p.workers()) {
    std::string link = w.rtt_ms() > 0
                           ? absl::StrFormat("%.1fms %s↓ %s↑", w.rtt_ms(),
                                             Rate(w.down_bytes_per_s()), Rate(w.up_bytes_per_s()))
                           : std::string("not measured");
    std::string source = w.task_s_source();
    if (w.samples() > 0 && source == "measured") absl::StrAppend(&source, " (", w.samples(), ")");
    std::printf("%-16s %5u %8.2f  %-20s %-26s %4.0f%% %6lld\n", w.worker().c_str(), w.slots(),
                w.task_seconds(), source.c_str(), link.c_str(), 100 * w.up_fraction(),
                static_cast<long long>(w.tasks()));
  }
  if (p.assumed_size() > 0) {
    std::printf("assumed (not measured): %s\n", absl::StrJoin(p.assumed(), ", ").c_str());
  }
}

}  // namespace

int RunPlanJob(PoolClient& client, const PlanJobOptions& o) {
  absl::StatusOr<spec::JobSpec> spec = spec::ParseJobFile(o.job_file);
  if (!spec.ok()) return Fail(2, std::string(spec.status().message()));
  if (!std::isfinite(o.task_seconds) || o.task_seconds < 0) {
    return Fail(2, "--task-seconds must be a number of seconds >= 0 (0: use the profile)");
  }
  v1::PlanRequest extras;
  for (absl::string_view w : absl::StrSplit(o.workers_csv, ',', absl::SkipWhitespace())) {
    extras.add_workers(std::string(absl::StripAsciiWhitespace(w)));
  }
  extras.set_task_s(o.task_seconds);
  if (!o.output_bytes.empty()) {
    absl::StatusOr<uint64_t> b = text::ParseByteSize(o.output_bytes);
    if (!b.ok()) return Fail(2, absl::StrCat("--output-bytes: ", b.status().message()));
    extras.set_has_output_bytes(true);
    extras.set_output_bytes(*b);
  }
  absl::StatusOr<v1::PlanReply> reply = client.PlanJob(*spec, extras);
  if (!reply.ok()) return Fail(ExitFor(reply.status()), std::string(reply.status().message()));
  uint64_t calibration_job = 0;
  if (reply->needs_calibration()) {
    if (o.no_calibrate) {
      return Fail(1, absl::StrCat("no history for this job (profile key ", reply->profile_key(),
                                  "): run without --no-calibrate to calibrate on a few of its "
                                  "tasks, or give --task-seconds"));
    }
    absl::StatusOr<uint64_t> tasks = spec::TaskCount(*spec);
    if (!tasks.ok()) return Fail(2, std::string(tasks.status().message()));
    uint32_t k = o.calibrate;
    if (k == 0) k = std::clamp<uint32_t>(reply->workers_available(), 2, 8);
    absl::StatusOr<spec::JobSpec> sample = spec::CalibrationSpec(*spec, k);
    if (!sample.ok()) return Fail(2, std::string(sample.status().message()));
    absl::StatusOr<uint64_t> sampled = spec::TaskCount(*sample);
    // A calibration of the same work still running (an earlier `plan` interrupted, or another
    // user's): wait for it rather than queue a second one behind it.
    if (auto jobs = client.ListJobs(); jobs.ok()) {
      for (const auto& j : jobs->jobs()) {
        if (j.state() == "running" && j.name() == sample->name &&
            j.profile_key() == reply->profile_key()) {
          calibration_job = j.job();
        }
      }
    }
    if (calibration_job != 0) {
      std::fprintf(stderr,
                   "idlepool plan: no history for this job: waiting for its calibration run, "
                   "already running (job %llu '%s')...\n",
                   static_cast<unsigned long long>(calibration_job), sample->name.c_str());
    } else {
      auto submitted = client.Submit(*sample, o.job_file);
      if (!submitted.ok()) {
        return Fail(ExitFor(submitted.status()),
                    absl::StrCat("calibration: ", submitted.status().message()));
      }
      calibration_job = submitted->job();
      std::fprintf(stderr,
                   "idlepool plan: no history for this job: calibrating on %llu of its %llu tasks "
                   "(job %llu '%s')...\n",
                   static_cast<unsigned long long>(sampled.ok() ? *sampled : 0),
                   static_cast<unsigned long long>(*tasks),
                   static_cast<unsigned long long>(calibration_job), sample->name.c_str());
    }
    auto done = client.Wait(calibration_job, [](const v1::JobStatus&) {});
    if (!done.ok()) {
      return Fail(1,
                  absl::StrCat("calibration job ", calibration_job, ": ", done.status().message()));
    }
    if (done->state() != "succeeded") {
      std::string why =
          done->failed_tasks_size() > 0
              ? absl::StrCat(": task ", done->failed_tasks(0).index(), " on ",
                             done->failed_tasks(0).worker(), ": ", done->failed_tasks(0).message())
              : "";
      return Fail(1, absl::StrCat("calibration job ", calibration_job, " ", done->state(), why,
                                  " (the job itself would fail the same way)"));
    }
    reply = client.PlanJob(*spec, extras);
    if (!reply.ok()) return Fail(ExitFor(reply.status()), std::string(reply.status().message()));
    if (reply->needs_calibration()) {
      return Fail(1, absl::StrCat("calibration job ", calibration_job,
                                  " succeeded but left no usable profile (attempts resumed "
                                  "from checkpoints?); give --task-seconds"));
    }
  }
  if (o.json) {
    nlohmann::json j = PredictionJson(reply->prediction());
    j["job"] = spec->name;
    j["profile_key"] = reply->profile_key();
    j["calibration_job"] = calibration_job ? nlohmann::json(calibration_job) : nlohmann::json();
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    PrintText(*reply, spec->name);
  }
  return 0;
}

}  // namespace idlepool::cli
