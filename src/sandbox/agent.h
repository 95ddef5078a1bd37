// The sandbox agent: the process that holds one slot's namespaces and starts that slot's tasks
// inside them, run by the worker as `idlepool sandbox-agent` with its Channel on descriptor 3.
//
// Setup (the outer agent): reads the Config, unshares user, mount, IPC, UTS (and, unless the
// network is the host's, network) namespaces, asks the worker to write its uid and gid maps
// (kNeedMaps), takes the slot's uid and gid, applies the mounts (mounts.h), then unshares a PID
// namespace and forks its init.
// The init (PID 1 there) mounts /proc, gives up every capability (bounding set, ambient,
// effective), sets no_new_privs and non-dumpable (no task may ptrace or read it), restricts
// itself with Landlock (landlock.h), says kReady and serves kLaunch requests, one task at a time:
// each task is forked with its own session, the cgroup entered before exec, its limits
// (RLIMIT_NPROC = pids_max, RLIMIT_NOFILE) and priority set. When the task's leader exits, every
// other process in the namespace is killed and reaped, the scratch dirs (/tmp, /var/tmp,
// /dev/shm) emptied and System V IPC objects removed before kExited is sent: nothing a task
// started or left outlives it or reaches the slot's next task. Signals the task's processes send to
// -1 or to PID 1 never reach the init (the kernel protects a namespace's init), and nothing outside
// the namespace is visible. A task whose processes and threads reach pids_max, or whose
// processes' resident memory passes its memory_bytes (read every 100 ms), is killed (kExited
// says which). End of file on the channel (the worker stopped or died) ends the init, and with it
// every process of the namespace.
//
// Single-threaded. Exit status: 0 after the channel closed, 1 when setup failed (after kError).
#pragma once

#include <string>
#include <vector>

#include "sandbox/messages.h"

namespace idlepool::sandbox {

inline constexpr char kAgentSubcommand[] = "sandbox-agent";
inline constexpr int kAgentChannelFd = 3;
// The second channel: the worker asks for connections to a port on the sandbox's loopback
// (kConnect); the outer agent, which lives in the sandbox's network namespace but outside its
// PID namespace (no task can reach it), connects and hands the socket back (kConnected). This is
// how a service replica that listens on its own loopback (network "none") is reached, through
// its worker only.
inline constexpr int kAgentConnectFd = 4;

[[noreturn]] void AgentMain();

namespace internal {
// The init's loop (agent_init.cc), entered as PID 1 after setup.
[[noreturn]] void RunInit(int channel_fd, const Config& config);
}  // namespace internal

}  // namespace idlepool::sandbox
