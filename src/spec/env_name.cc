// Which names a job's env (or an owner's pass_env) may set (spec/env.h).
#include <algorithm>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "spec/env.h"

namespace idlepool::spec {
namespace {

constexpr size_t kMaxEnvNameBytes = 256;
constexpr std::string_view kIdlepoolPrefix = "IDLEPOOL_";
// What the worker sets for every task (docs/guide/job-spec.md#environment), besides IDLEPOOL_*.
constexpr std::string_view kWorkerNames[] = {"HOME",
                                             "TMPDIR",
                                             "PWD",
                                             "OLDPWD",
                                             "USER",
                                             "LOGNAME",
                                             "CUDA_VISIBLE_DEVICES",
                                             "CUDA_DEVICE_ORDER",
                                             "ROCR_VISIBLE_DEVICES"};

}  // namespace

std::optional<std::string> EnvNameError(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxEnvNameBytes) {
    return absl::StrCat("is longer than ", kMaxEnvNameBytes, " bytes");
  }
  const auto word = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0])) ||
      !std::all_of(name.begin(), name.end(), word)) {
    return "is not a variable name: use A-Z a-z 0-9 and _, not starting with a digit";
  }
  if (name.starts_with(kIdlepoolPrefix) ||
      std::find(std::begin(kWorkerNames), std::end(kWorkerNames), name) != std::end(kWorkerNames)) {
    return "is set by the worker for every task (docs/guide/job-spec.md, Environment): choose "
           "another name";
  }
  return std::nullopt;
}

}  // namespace idlepool::spec
