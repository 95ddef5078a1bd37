// SubmitJobRequest.task_inputs, checked before anything is stored (job_request.h).
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "coordinator/job_request.h"
#include "coordinator/staged_paths.h"
#include "text/utf8.h"

namespace idlepool::coordinator {
namespace fs = std::filesystem;

absl::StatusOr<CheckedTaskInputs> CheckTaskInputs(
    const blob::BlobStore& blobs, const v1::JobSpec& spec, uint32_t task_count,
    const google::protobuf::RepeatedPtrField<v1::TaskInputs>& task_inputs) {
  CheckedTaskInputs out;
  StagedPaths staged;
  for (const auto& in : spec.inputs()) staged.AddJobPath(in.path());
  std::set<uint32_t> seen_tasks;
  std::map<std::string, uint64_t> sizes;  // blob -> its size in the store (stat once each)
  uint64_t files = 0;
  for (const v1::TaskInputs& t : task_inputs) {
    const std::string task = absl::StrCat("task_inputs: task ", t.task());
    if (t.task() >= task_count) {
      return absl::InvalidArgumentError(
          absl::StrCat(task, ": no such task (the job has ", task_count, ")"));
    }
    if (!seen_tasks.insert(t.task()).second) {
      return absl::InvalidArgumentError(absl::StrCat(task, ": listed twice"));
    }
    staged.NextTask();
    for (const v1::Input& in : t.inputs()) {
      const std::string what = absl::StrCat(
          task, ": input '", text::PrintableText(text::TruncateUtf8(in.path(), 256)), "'");
      if (++files > spec::kMaxTaskInputFiles) {
        return absl::ResourceExhaustedError(
            absl::StrCat("task_inputs: more than ", spec::kMaxTaskInputFiles, " files in all"));
      }
      if (auto why = spec::RelativePathError(in.path())) {
        return absl::InvalidArgumentError(absl::StrCat(what, " ", *why));
      }
      if (staged.IsJobPath(in.path())) {
        return absl::InvalidArgumentError(absl::StrCat(what, " is one of the job's inputs too"));
      }
      if (std::string why = staged.Stage(in.path()); !why.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(what, " ", why));
      }
      if (!blob::IsSha256Hex(in.sha256())) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": sha256 must be 64 hex digits"));
      }
      auto size = sizes.find(in.sha256());
      if (size == sizes.end()) {
        if (!blobs.Has(in.sha256())) {
          return absl::FailedPreconditionError(
              absl::StrCat(what, " (blob ", in.sha256(), ") was not uploaded before SubmitJob"));
        }
        std::error_code ec;
        const uint64_t n = fs::file_size(blobs.PathOf(in.sha256()), ec);
        if (ec) return absl::InternalError(absl::StrCat(what, ": cannot read its blob"));
        size = sizes.emplace(in.sha256(), n).first;
      }
      if (size->second != in.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " claims ", in.size(), " bytes but its blob holds ", size->second));
      }
      out.rows.push_back(
          store::TaskInputRow{t.task(), in.path(), in.sha256(), in.size(), in.mode() & 0777u});
      out.blobs.push_back(core::TaskBlob{t.task(), core::BlobRef{in.sha256(), in.size()}});
      out.bytes += in.size();
    }
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.index, a.path) < std::tie(b.index, b.path);
  });
  std::sort(out.blobs.begin(), out.blobs.end());
  out.blobs.erase(std::unique(out.blobs.begin(), out.blobs.end()), out.blobs.end());
  return out;
}

}  // namespace idlepool::coordinator
