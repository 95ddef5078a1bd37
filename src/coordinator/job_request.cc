#include "coordinator/job_request.h"

#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "wire/wire.h"

namespace idlepool::coordinator {
namespace fs = std::filesystem;
namespace {

// Each input uploaded, with the size it claims.
absl::Status CheckInputs(const blob::BlobStore& blobs, const v1::JobSpec& proto) {
  for (const auto& in : proto.inputs()) {
    if (!blobs.Has(in.sha256())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "input '", in.path(), "' (blob ", in.sha256(), ") was not uploaded before SubmitJob"));
    }
    std::error_code ec;
    if (fs::file_size(blobs.PathOf(in.sha256()), ec) != in.size() || ec) {
      return absl::InvalidArgumentError(absl::StrCat("input '", in.path(), "' claims ", in.size(),
                                                     " bytes but its blob holds a different size"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CheckedJob> CheckSubmitJob(const blob::BlobStore& blobs, const v1::JobSpec& proto) {
  CheckedJob job;
  job.spec = wire::FromProto(proto);
  if (absl::Status s = spec::Validate(job.spec); !s.ok()) return s;
  if (absl::Status s = CheckInputs(blobs, proto); !s.ok()) return s;
  absl::StatusOr<std::vector<spec::TaskParams>> tasks = spec::ExpandTasks(job.spec);
  if (!tasks.ok()) return tasks.status();
  if (tasks->empty()) return absl::InvalidArgumentError("job has no tasks");
  job.tasks = std::move(*tasks);
  return job;
}

absl::StatusOr<CheckedPlan> CheckPlanJob(const v1::PlanRequest& req) {
  CheckedPlan plan;
  plan.spec = wire::FromProto(req.spec());
  if (absl::Status s = spec::Validate(plan.spec); !s.ok()) return s;
  absl::StatusOr<uint64_t> tasks = spec::TaskCount(plan.spec);
  if (!tasks.ok()) return tasks.status();
  if (*tasks == 0) return absl::InvalidArgumentError("job has no tasks");
  plan.tasks = *tasks;
  if (!std::isfinite(req.task_s()) || req.task_s() < 0) {
    return absl::InvalidArgumentError(
        "PlanRequest.task_s must be finite and >= 0 (0: use the profile)");
  }
  for (const auto& in : req.spec().inputs()) {
    if (!blob::IsSha256Hex(in.sha256())) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", in.path(), "': sha256 must be 64 hex digits"));
    }
  }
  return plan;
}

}  // namespace idlepool::coordinator
