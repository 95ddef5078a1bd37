// A job file's `env` table, read and checked apart from job_spec.cc (which is big); not part of
// the module's contract.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "spec/spec.h"

namespace idlepool::spec::internal {

// Reads `env` of `root` (`env = { NAME = "value" }`, or an [env] table: each value a string)
// into spec.env, sorted by name. kInvalidArgument naming the place for anything else:
// "job.toml:5:14: key 'env.DEPTH': must be a string (a value may hold the command's
// placeholders), got 3". The rules on names and sizes are EnvProblem's, which
// ParseJobToml applies after. `file` is used in messages only.
[[nodiscard]] absl::Status ReadEnvTable(const std::string& file, const toml::table& root,
                                        JobSpec& spec);

// What is wrong with `spec`'s env, or nullopt: more than kMaxEnvVars variables; a name that
// EnvNameError refuses, or given twice; a value with a NUL byte, not valid UTF-8, longer than
// kMaxEnvValueBytes, with a bad template or a placeholder that does not fit the job
// (PlaceholderMisfit); names and values over kMaxEnvBytes together; rendered variables that could
// pass kMaxEnvRenderedBytes for some task. `field` is "env" or "env.NAME"; the message reads after
// it. Assumes the task fields already checked (CheckTasks).
struct EnvProblem {
  std::string field;
  std::string message;
};
[[nodiscard]] std::optional<EnvProblem> CheckEnv(const JobSpec& spec);

}  // namespace idlepool::spec::internal
