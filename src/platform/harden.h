// Keeping the process's secrets to itself (issue 16): a same-user task must not read the worker's
// memory or environment through /proc, and secrets never stay in the environment a child
// inherits.
//
// Thread-safety: call these early in main, before threads start (they touch process-wide state).
#pragma once

#include <string>

namespace idlepool::platform {

// prctl(PR_SET_DUMPABLE, 0): /proc/PID/{environ,mem,maps,...} become readable by root only and
// ptrace by the same user is refused; no core dumps. Children that exec are dumpable again (the
// kernel resets it), so tasks are unaffected. Returns false when the kernel refused.
bool MakeNonDumpable();

// Moves every variable of this process's environment to the heap (getenv, setenv and the
// environment children are given work as before) and zeroes the initial copy the kernel keeps on
// the stack, which is what /proc/PID/environ shows: a process that may read that file (the same
// user where this process is dumpable; root always) no longer finds the owner's secrets there.
// It does not hide them from one that may read this process's memory (root).
void HideInitialEnvironment();

// The value of environment variable `name` ("" when unset), after overwriting it in place (the
// bytes /proc/PID/environ shows) and removing it from the environment children inherit.
std::string TakeSecretFromEnv(const char* name);

}  // namespace idlepool::platform
