// CalibrationSpec: a k-task sample of a job, for the planner's calibration run (spec.h).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spec/spec.h"

namespace idlepool::spec {
namespace {

// The frame-grammar term that is exactly this chunk's frames, in order.
std::string ChunkTerm(const FrameChunk& c) {
  if (c.frames.size() <= 1) return absl::StrCat(c.start);
  const int64_t step = c.step < 0 ? -c.step : c.step;
  if (step == 1) return absl::StrCat(c.start, "-", c.end);
  return absl::StrCat(c.start, "-", c.end, "x", step);
}

}  // namespace

std::vector<uint32_t> SpreadSample(uint64_t n, uint32_t k) {
  std::vector<uint32_t> picked;
  if (n == 0 || k == 0) return picked;
  const uint64_t take = std::min<uint64_t>(n, k);
  picked.reserve(take);
  for (uint64_t i = 0; i < take; ++i) {
    // The middle of the i-th of `take` equal slices of [0, n): spread, never two alike.
    picked.push_back(static_cast<uint32_t>((2 * i + 1) * n / (2 * take)));
  }
  return picked;
}

absl::StatusOr<JobSpec> CalibrationSpec(const JobSpec& job, uint32_t k) {
  if (k == 0) return absl::InvalidArgumentError("calibration: k must be at least 1");
  if (job.service.has_value()) {
    return absl::InvalidArgumentError("calibration: a service has replicas, not tasks to sample");
  }
  absl::StatusOr<uint64_t> n = TaskCount(job);
  if (!n.ok()) return n.status();
  if (*n == 0) return absl::InvalidArgumentError("calibration: the job has no tasks");
  JobSpec sample = job;
  std::string suffix = ".calibrate";
  sample.name = job.name.substr(0, 128 - suffix.size()) + suffix;
  const std::vector<uint32_t> picked = SpreadSample(*n, k);
  switch (job.kind) {
    case TaskKind::kFrames: {
      absl::StatusOr<std::vector<TaskParams>> tasks = ExpandTasks(job);
      if (!tasks.ok()) return tasks.status();
      std::string frames;
      for (uint32_t i : picked) {
        if (!frames.empty()) frames += ",";
        frames += ChunkTerm((*tasks)[i].chunk);
      }
      sample.frames = std::move(frames);
      break;
    }
    case TaskKind::kItems: {
      sample.items.clear();
      for (uint32_t i : picked) sample.items.push_back(job.items[i]);
      break;
    }
    case TaskKind::kCount:
      sample.count = picked.size();
      break;
  }
  if (absl::Status s = Validate(sample); !s.ok()) return s;
  return sample;
}

}  // namespace idlepool::spec
