// The mount side of a slot's sandbox, applied by its agent (agent.h) inside its own user and
// mount namespaces, and the lists of what a task sees and what is hidden in that, built by the
// worker.
//
// A task sees what is put in on purpose, never the host's root minus a list (an allowlist: a
// dir the lists do not name, such as a coordinator's data dir anywhere, is simply not there).
// OpenSources opens what will be bound back; ApplyMounts builds the task's root:
//   - an empty tmpfs made the root (pivot_root), the host's root kept out of reach until
//     MountProc detaches it;
//   - Config::show (VisiblePaths: /usr, /etc, /opt... ) bound from the host read-only, nosuid and
//     nodev at the same paths, a symbolic link made again as one; empty /home, /root, /run, /mnt,
//     /media, /srv and /var;
//   - a /dev of its own (tmpfs) holding only Config::devices, bound from the host's nodes, plus
//     /dev/fd, /dev/stdin, /dev/stdout, /dev/stderr and a private /dev/shm;
//   - Config::hide (secrets inside the shown paths) each covered by an empty read-only tmpfs or
//     /dev/null, Config::scratch each an empty writable tmpfs (mode 1777);
//   - the slot dir bound back read-only at its own path, Config::writable (its task and
//     checkpoint dirs) writable, Config::ro_binds read-only.
// MountProc mounts the sandbox's own /proc (call it as PID 1 of the new PID namespace), then
// detaches the host's root and makes the task's root read-only.
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

// What a task sees of the host (pure): the system dirs /usr, /bin, /sbin, /lib* (links kept as
// links), /etc, /opt, /sys, the font and TeX caches under /var, plus `extra` (the worker's
// --sandbox-show). Sorted, each given once.
std::vector<std::string> VisiblePaths(const std::vector<std::string>& extra);
// What a sandbox hides inside the `visible` paths (pure: the inputs are read by the caller): the
// system's secrets in /etc (shadow, sudoers, TLS private keys, Kerberos keytab, VPN and Wi-Fi
// secrets), and `work_dir`, `home` (the worker user's) and `other_homes` (from the password
// database) where they lie inside a visible path. Sorted, each given once.
std::vector<std::string> HiddenPaths(const std::string& work_dir, const std::string& home,
                                     const std::vector<std::string>& other_homes,
                                     const std::vector<std::string>& visible);
// The device nodes every task gets.
std::vector<std::string> BaseDevices();

}  // namespace idlepool::sandbox
