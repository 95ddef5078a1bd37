// What a task's process does to itself between fork and exec, on every launch path (the worker's
// own with --no-sandbox, platform/process.h; a sandbox agent's, sandbox/agent_init.cc): nothing
// of the worker's reaches the task but its environment, its working dir and its stdio.
//
// Both functions make system calls only (no allocation, no locks): safe in the child of a vfork.
// Each returns 0 or the errno that stops the task from starting.
#pragma once

namespace idlepool::platform {

// Marks every descriptor above 2 close-on-exec (close_range CLOSE_RANGE_CLOEXEC, Linux 5.11; on
// older kernels each descriptor below the hard RLIMIT_NOFILE, at most 2^20, in turn), so that
// exec leaves the task its stdin, stdout and stderr only: never a listening socket, a connection,
// a pipe or a file of the process that started it, even one opened without O_CLOEXEC (Boost.Asio
// opens its sockets so), or by another thread while the child was being made. Descriptors the
// child still needs until exec (its exec-status pipe) stay usable until then.
int CloseOnExecAbove2();

// Joins a new, empty, anonymous session keyring (keyctl KEYCTL_JOIN_SESSION_KEYRING), so the keys
// of the session the worker was started in (`keyctl print @s`) are neither reachable nor
// possessed by the task. 0 as well where the kernel has no keyrings (ENOSYS) or a seccomp filter
// refuses keyctl (EPERM: the task inherits the filter, and cannot reach any keyring either).
int JoinNewSessionKeyring();

}  // namespace idlepool::platform
