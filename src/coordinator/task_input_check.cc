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
#include "text/utf8.h"

namespace idlepool::coordinator {
namespace fs = std::filesystem;
namespace {

// The paths a task may not stage: the job's inputs (and their parent directories).
struct Taken {
  std::set<std::string, std::less<>> files;
  std::set<std::string, std::less<>> dirs;
  void Add(std::string_view path) {
    files.emplace(path);
    for (size_t s = path.find('/'); s != std::string_view::npos; s = path.find('/', s + 1)) {
      dirs.emplace(path.substr(0, s));
    }
  }
  // Why `path` clashes with what is taken, or "".
  std::string Clash(std::string_view path) const {
    if (files.count(path) != 0) return "is staged twice";
    if (dirs.count(path) != 0) return "is also a directory of another staged path";
    for (size_t s = path.find('/'); s != std::string_view::npos; s = path.find('/', s + 1)) {
      if (files.count(path.substr(0, s)) != 0) {
        return absl::StrCat("lies under '", std::string(path.substr(0, s)),
                            "', another staged file");
      }
    }
    return "";
  }
};

}  // namespace

absl::StatusOr<CheckedTaskInputs> CheckTaskInputs(
    const blob::BlobStore& blobs, const v1::JobSpec& spec, uint32_t task_count,
    const google::protobuf::RepeatedPtrField<v1::TaskInputs>& task_inputs) {
  CheckedTaskInputs out;
  Taken job;
  for (const auto& in : spec.inputs()) job.Add(in.path());
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
    Taken own = job;
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
      if (job.files.count(in.path()) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(what, " is one of the job's inputs too"));
      }
      if (std::string why = own.Clash(in.path()); !why.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(what, " ", why));
      }
      own.Add(in.path());
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
