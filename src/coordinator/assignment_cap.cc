#include "coordinator/assignment_cap.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace idlepool::coordinator {
namespace {

std::string Size(uint64_t bytes) {
  if (bytes < (uint64_t{1} << 20)) return absl::StrCat(bytes, " bytes");
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

std::optional<AssignmentRefusal> RefuseAssignment(const AssignmentSize& size, uint64_t bytes_max) {
  if (size.bytes <= bytes_max) return std::nullopt;
  AssignmentRefusal r;
  // Without the task's own inputs it would still be over: the job's part alone is too big.
  const uint64_t own_share =
      size.inputs == 0 ? 0 : size.bytes / size.inputs * size.task_inputs;  // an estimate
  r.whole_job = size.task_inputs == 0 || size.bytes - own_share > bytes_max;
  r.reason = absl::StrCat("the assignment of task ", size.task.index, " would be ",
                          Size(size.bytes), " (", size.inputs, " inputs to stage");
  if (size.after_inputs > 0) {
    absl::StrAppend(&r.reason, ", ", size.after_inputs,
                    " of them outputs of the jobs it runs after (", Size(size.after_bytes), ")");
  }
  if (size.task_inputs > 0) {
    absl::StrAppend(&r.reason, ", ", size.task_inputs, " of them the task's own");
  }
  absl::StrAppend(&r.reason, "); the most one assignment carries is ", Size(bytes_max),
                  ": split the work into jobs with fewer inputs");
  return r;
}

uint64_t AssignmentBytesMaxFromEnv() {
  const char* v = std::getenv("IDLEPOOL_TEST_ASSIGNMENT_BYTES_MAX");
  uint64_t n = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &n) || n == 0) return kMaxAssignmentBytes;
  spdlog::warn("test hook: assignments over {} bytes are refused", n);
  return n;
}

}  // namespace idlepool::coordinator
