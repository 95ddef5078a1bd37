// Keeping the process's secrets to itself (issue 16): a same-user task must not read the worker's
// memory or environment through /proc, and secrets never stay in the environment a child
// inherits.
//
// Thread-safety: call both early in main, before threads start (they touch process-wide state).
#pragma once

#include <string>

namespace idlepool::platform {

// prctl(PR_SET_DUMPABLE, 0): /proc/PID/{environ,mem,maps,...} become readable by root only and
// ptrace by the same user is refused; no core dumps. Children that exec are dumpable again (the
// kernel resets it), so tasks are unaffected. Returns false when the kernel refused.
bool MakeNonDumpable();

// The value of environment variable `name` ("" when unset), after overwriting it in place (the
// bytes /proc/PID/environ shows) and removing it from the environment children inherit.
std::string TakeSecretFromEnv(const char* name);

}  // namespace idlepool::platform
