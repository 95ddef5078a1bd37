// Command templates, shared by job_spec.cc (validation) and command.cc (sizes, rendering); not
// part of the module's contract.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "spec/spec.h"

namespace idlepool::spec::internal {

// The placeholders a command may hold, "{name}".
inline constexpr std::string_view kPlaceholders[] = {
    "frame", "frame_start", "frame_end",      "frame_step", "frames", "item",
    "index", "task_dir",    "checkpoint_dir", "port",       "replica"};

// A run of literal text (escapes already undone) or a placeholder name.
struct Piece {
  bool placeholder = false;
  std::string_view text;
};

// Splits an argv template into pieces. "{{" and "}}" are literal braces. kInvalidArgument for an
// unbalanced brace or an unknown placeholder.
[[nodiscard]] absl::Status ScanTemplate(std::string_view s, std::vector<Piece>& out);

// Why placeholder `name` (a known one) cannot appear in a template of `spec`, or nullopt: a frame
// placeholder outside a 'frames' job, {frame} with chunk > 1, {port} or {replica} outside a
// service, {checkpoint_dir} in one, {item} outside an 'items' job. The message reads after the
// template's name: "{item} is only for 'items' or 'items_file' jobs".
[[nodiscard]] std::optional<std::string> PlaceholderMisfit(const JobSpec& spec,
                                                           std::string_view name);

// Appends placeholder `name`'s value for `task` to `out`; kInvalidArgument naming what is missing
// (a frame placeholder for a task without frames, {port} without `replica`...).
[[nodiscard]] absl::Status AppendValue(std::string_view name, const TaskParams& task,
                                       std::string_view task_dir, std::string_view checkpoint_dir,
                                       const std::optional<ReplicaParams>& replica,
                                       std::string& out);

// "element [i] 'value'", the value shortened, for messages about one argv element.
std::string Element(size_t i, std::string_view value);

// Why some task of `spec` could not be started (kMaxArgBytes, kMaxTaskExecBytes), naming the
// first such task, or nullopt. `field` is "command" (element: the longest argument, or -1), or
// "chunk" when the task's frame list alone is too long. Counts lengths, task by task, and renders
// nothing. Assumes the task fields and every template already checked (CheckTasks, ScanTemplate).
struct SizeProblem {
  std::string field;
  int64_t element = -1;
  std::string message;
};
[[nodiscard]] std::optional<SizeProblem> CommandSizeProblem(const JobSpec& spec);

// Why the `task_inputs` patterns of `spec` cannot be rendered for its tasks (a bad template, a
// placeholder unknown at submit or not of the job's kind, a service), or nullopt; `element` is
// the pattern's index. Defined in task_inputs.cc.
[[nodiscard]] std::optional<SizeProblem> TaskInputsProblem(const JobSpec& spec);

}  // namespace idlepool::spec::internal
