// The process's own environment and user, read for the environment of the tasks it starts
// (worker/task_env.h).
//
// Thread safety: Environment() copies `environ`, which only main changes (before threads start,
// platform/harden.h); UserName() is reentrant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace idlepool::platform {

// Every "NAME=value" of this process's environment now, in order.
std::vector<std::string> Environment();

// The name of this process's effective user (the password database), else its uid in decimal.
std::string UserName();

// The value of `name` in `env` ("NAME=value" strings; the last one if it is listed twice), "" when
// it is absent; *found, when given, says which.
std::string_view EnvValue(const std::vector<std::string>& env, std::string_view name,
                          bool* found = nullptr);

}  // namespace idlepool::platform
