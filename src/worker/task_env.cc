#include "worker/task_env.h"

#include <map>

namespace idlepool::worker {
namespace {

std::pair<std::string, std::string> Split(const std::string& entry) {
  const size_t eq = entry.find('=');
  if (eq == std::string::npos) return {entry, ""};
  return {entry.substr(0, eq), entry.substr(eq + 1)};
}

// The locale and time zone a program's messages and dates follow: the machine's, harmless.
bool Localization(const std::string& name) {
  return name == "LANG" || name == "TZ" || name.rfind("LC_", 0) == 0;
}

}  // namespace

TaskEnvBase TaskEnvBaseFrom(const std::vector<std::string>& worker_env, const std::string& path,
                            const std::vector<std::string>& pass_env, const std::string& user) {
  TaskEnvBase base;
  base.path = path;
  base.user = user;
  for (const std::string& entry : worker_env) {
    auto [name, value] = Split(entry);
    if (entry.find('=') == std::string::npos || name.empty()) continue;
    bool passed = Localization(name);
    for (const std::string& allowed : pass_env) passed = passed || name == allowed;
    if (passed) base.passed.push_back(entry);
    if (name == "HOME") base.home = value;
    if (name == "TMPDIR") base.tmpdir = value;
  }
  return base;
}

std::vector<std::string> BuildTaskEnv(const TaskEnvBase& base, const TaskEnvFacts& task) {
  std::map<std::string, std::string> env;  // by name: a later layer replaces an earlier one
  env["PATH"] = base.path;
  auto add = [&env](const std::string& entry) {
    auto [name, value] = Split(entry);
    env.insert_or_assign(std::move(name), std::move(value));
  };
  for (const std::string& entry : base.passed) add(entry);
  env["OMP_NUM_THREADS"] = std::to_string(task.cpus);
  for (const std::string& entry : task.job) add(entry);
  // What the job cannot replace (spec::EnvNameError refuses these names in its env).
  env.erase("OLDPWD");
  env.erase("HOME");
  env.erase("TMPDIR");
  if (task.sandboxed) {
    env["HOME"] = "/tmp";  // its private /tmp: the owner's home is hidden in the sandbox
    env["TMPDIR"] = "/tmp";
  } else {
    if (base.home) env["HOME"] = *base.home;
    if (base.tmpdir) env["TMPDIR"] = *base.tmpdir;
  }
  env["PWD"] = task.task_dir;
  const std::string user = task.slot_uid ? std::to_string(*task.slot_uid) : base.user;
  env["USER"] = user;
  env["LOGNAME"] = user;
  for (const auto& [name, value] : task.pool) env[name] = value;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace idlepool::worker
