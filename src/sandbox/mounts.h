// The mount side of a slot's sandbox, applied by its agent (agent.h) inside its own user and
// mount namespaces, and the list of what to hide, built by the worker.
//
// OpenSources opens what will be bound back; ApplyMounts turns the agent's copy of the host's
// mounts into the task's view:
//   - every mount read-only and nosuid (one recursive mount_setattr, Linux >= 5.12);
//   - a /dev of its own (tmpfs) holding only Config::devices, bound from the host's nodes, plus
//     /dev/fd, /dev/stdin, /dev/stdout, /dev/stderr and a private /dev/shm;
//   - Config::hide each covered by an empty tmpfs (read-only), Config::scratch each an empty
//     writable tmpfs (mode 1777);
//   - the slot dir bound back read-only at its own path, Config::writable (its task and
//     checkpoint dirs) writable, Config::ro_binds read-only.
// MountProc mounts the sandbox's own /proc (call it as PID 1 of the new PID namespace).
// BringUpLoopback sets `lo` up in a new network namespace.
//
// Not thread-safe (the agent is single-threaded). Errors: kInternal (kFailedPrecondition for a
// kernel without mount_setattr) naming the step and the path.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sandbox/messages.h"

namespace idlepool::sandbox {

// A path opened before it is covered (O_PATH), bound later through /proc/self/fd: opened while
// the agent still has the worker's rights (a root worker's 0700 work dir), bound after it took
// the slot's user.
struct Source {
  std::string target;
  int fd = -1;  // -1: not there (an optional node)
  bool dir = false;
};
struct Sources {
  Source slot;
  std::vector<Source> devices, ro, rw;
  Sources() = default;
  Sources(Sources&& o) noexcept
      : slot(o.slot), devices(std::move(o.devices)), ro(std::move(o.ro)), rw(std::move(o.rw)) {
    o.slot.fd = -1;
    o.devices.clear();
    o.ro.clear();
    o.rw.clear();
  }
  Sources(const Sources&) = delete;
  ~Sources();  // closes them
};
[[nodiscard]] absl::StatusOr<Sources> OpenSources(const Config& config);
[[nodiscard]] absl::Status ApplyMounts(const Config& config, Sources& sources);
[[nodiscard]] absl::Status MountProc();
[[nodiscard]] absl::Status BringUpLoopback();

// What a sandbox hides (pure: the inputs are read by the caller). Always /home, /root, /run
// (sockets of the owner's session and of system daemons: D-Bus, Docker, ssh and GPG agents),
// /media, /mnt, /srv and /var/mail; plus `work_dir`, `home` (the worker user's) and
// `other_homes` (from the password database) when they are elsewhere. Sorted, each given once.
std::vector<std::string> HiddenPaths(const std::string& work_dir, const std::string& home,
                                     const std::vector<std::string>& other_homes);
// The device nodes every task gets.
std::vector<std::string> BaseDevices();

}  // namespace idlepool::sandbox
