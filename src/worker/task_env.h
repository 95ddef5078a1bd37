// The environment a task starts with: exactly what the pool gives it, never the worker's own
// (docs/guide/job-spec.md#environment). The owner may have started the worker from a shell full
// of secrets (cloud keys, tokens); none of them reaches a task unless the owner names it in
// `[sandbox] pass_env`.
//
// A task gets, in every tier and with --no-sandbox:
//   PATH            the owner's `[sandbox] path` (default /usr/local/bin:/usr/bin:/bin)
//   LANG, LC_*, TZ  the worker's, when set
//   pass_env        the worker's values of the names the owner's policy lists, when set
//   OMP_NUM_THREADS the task's CPUs
//   the job's env   its own variables (spec::RenderEnv), which may replace the five above
//   HOME, TMPDIR    /tmp in a sandbox (its private one); with --no-sandbox the worker's, when set
//   PWD             the task dir, its working dir (OLDPWD is never set)
//   USER, LOGNAME   who it runs as: the worker's user, or in tier uid the slot's uid in decimal
//   the pool's      IDLEPOOL_* and the GPU variables (worker/gpu_binding.h), which nothing replaces
//
// Pure functions: thread-safe, no I/O (the worker reads its own environment and user name once,
// platform/environment.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace idlepool::worker {

// What every task of this worker gets, fixed at the worker's start.
struct TaskEnvBase {
  std::string path;                 // PATH
  std::vector<std::string> passed;  // "NAME=value": LANG, LC_*, TZ, pass_env, in the worker's order
  std::optional<std::string> home;  // the worker's HOME and TMPDIR (used with --no-sandbox)
  std::optional<std::string> tmpdir;
  std::string user;  // the worker's user name
};

// `worker_env`: the worker's own environment ("NAME=value"); `path`: the owner's [sandbox] path;
// `pass_env`: the names the owner lets through; `user`: the worker's user name.
TaskEnvBase TaskEnvBaseFrom(const std::vector<std::string>& worker_env, const std::string& path,
                            const std::vector<std::string>& pass_env, const std::string& user);

// One task's part.
struct TaskEnvFacts {
  bool sandboxed = false;
  std::optional<uint32_t> slot_uid;  // tier uid: the uid the task runs as
  std::string task_dir;
  uint32_t cpus = 1;
  std::vector<std::string> job;                           // the job's env, rendered ("NAME=value")
  std::vector<std::pair<std::string, std::string>> pool;  // IDLEPOOL_* and GPU variables
};

// The task's whole environment, "NAME=value" sorted by name, each name once.
std::vector<std::string> BuildTaskEnv(const TaskEnvBase& base, const TaskEnvFacts& task);

}  // namespace idlepool::worker
