// A job's own environment variables (`env = { NAME = "value" }`, spec.h JobSpec::env): what a
// variable is, its limits, and which names a job (or an owner's pass_env) may not set.
//
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idlepool::spec {

// A job's own environment variables (`env = { NAME = "value" }`), given to each of its tasks on
// top of what every task gets (docs/guide/job-spec.md#environment). A value is a template with
// the command's placeholders, rendered per task by RenderEnv. Limits: kMaxEnvVars names; a value
// at most kMaxEnvValueBytes as written; names and values together kMaxEnvBytes; rendered, a task's
// "NAME=value" strings (a NUL and a pointer each, as execve counts them) at most
// kMaxEnvRenderedBytes, counted at submit from the longest value each placeholder can have.
struct EnvVar {
  std::string name;
  std::string value;
};
inline constexpr size_t kMaxEnvVars = 64;
inline constexpr size_t kMaxEnvValueBytes = 4096;
inline constexpr size_t kMaxEnvBytes = 64 * 1024;
inline constexpr uint64_t kMaxEnvRenderedBytes = 128 * 1024;

// Why `name` may not be a variable of a job's `env`, or nullopt: it must match
// [A-Za-z_][A-Za-z0-9_]* (at most 256 bytes), and the worker sets the names that tell a task where
// it is and what it may use: IDLEPOOL_*, HOME, TMPDIR, PWD, OLDPWD, USER, LOGNAME,
// CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, ROCR_VISIBLE_DEVICES. PATH, LANG, LC_*, TZ and
// OMP_NUM_THREADS may be set (the job's value wins). The reason reads after the name.
[[nodiscard]] std::optional<std::string> EnvNameError(std::string_view name);

}  // namespace idlepool::spec
