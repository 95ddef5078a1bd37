// The sandbox protocol: what the worker and a slot's agent (agent.h) say over their Channel.
//
//   worker -> agent   kSetup(Config), kMapsDone, kLaunch(LaunchRequest, fds: stdout, stderr
//                     [, cgroup.procs]), kSignal(signal number)
//   on the connect channel: worker -> agent kConnect(port), agent -> worker kConnected(errno;
//                     fd: a TCP socket connected to 127.0.0.1:port in the sandbox's network)
//   agent -> worker   kNeedMaps (after unshare: the worker writes its uid and gid maps),
//                     kReady(landlock ABI), kError(text), kStarted(pid in the sandbox; fd: pidfd),
//                     kExecFailed(errno), kExited(wait status, pids limit reached)
//
// Plain values: any thread. Errors: Decode* return kInvalidArgument for a body that does not
// parse (the agent then answers kError; the worker treats a bad answer as a dead sandbox).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idlepool::sandbox {

enum class Msg : uint64_t {
  kSetup = 1,
  kMapsDone = 2,
  kLaunch = 3,
  kSignal = 4,
  kConnect = 5,  // on the connect channel (agent.h kAgentConnectFd): value = TCP port
  kNeedMaps = 10,
  kReady = 11,
  kError = 12,
  kStarted = 13,
  kExecFailed = 14,
  kExited = 15,
  kConnected = 16,  // value = errno (0: connected; fd: the socket)
};

// What one slot's sandbox looks like (see docs/guide/sandbox.md). Paths are absolute.
struct Config {
  uint64_t uid = 0;  // the tasks' user and group, inside and outside (mapped 1:1)
  uint64_t gid = 0;
  bool drop_groups = false;           // setgroups(0): only a root worker (tier uid) may
  bool host_network = false;          // false: a network namespace of its own with only loopback
  std::string slot_dir;               // bound read-only at the same path
  std::vector<std::string> writable;  // in it: bound writable (the task and checkpoint dirs)
  std::vector<std::string> show;      // the host's paths a task sees, read-only (an allowlist)
  std::vector<std::string> hide;      // inside those: each covered, empty and read-only
  std::vector<std::string> scratch;   // each an empty writable tmpfs (/tmp, /dev/shm)
  std::vector<std::string> devices;   // device nodes bound into the sandbox's own /dev
  std::string device_root;            // where they are bound from ("": the host's; tests)
  std::vector<std::string> ro_binds;  // shown again read-only inside a hidden path
  uint64_t pids_max = 4096;           // processes and threads of one task, all together
  bool landlock = true;               // restrict file access with Landlock where the kernel has it
  uint64_t scratch_bytes = 0;         // size= of each scratch tmpfs (sandbox/limits.h); 0: tmpfs's
  uint64_t task_dir_bytes = 0;        // what the writable dirs may hold together; 0: no limit
};

struct LaunchRequest {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string cwd;
  std::string path;  // PATH to look a bare argv[0] up in (the worker's)
  uint64_t nofile_soft = 0;
  bool low_priority = false;
  bool has_cgroup = false;  // a third descriptor: the cgroup's cgroup.procs, opened for writing
  uint64_t memory_bytes = 0;  // resident memory of all its processes together; 0: no limit
};

struct ExitReport {
  int wait_status = 0;
  bool pids_limit = false;    // the task reached Config::pids_max and was killed
  bool memory_limit = false;  // its processes' resident memory passed memory_bytes: killed
  uint64_t disk_limit = 0;    // its task and checkpoint dirs passed this many bytes: killed
};

std::string EncodeSetup(const Config& c);
[[nodiscard]] absl::StatusOr<Config> DecodeSetup(std::string_view body);
std::string EncodeLaunch(const LaunchRequest& r);
[[nodiscard]] absl::StatusOr<LaunchRequest> DecodeLaunch(std::string_view body);
std::string EncodeExited(const ExitReport& e);
[[nodiscard]] absl::StatusOr<ExitReport> DecodeExited(std::string_view body);
// A message with only its type and up to one number or text.
std::string EncodeSimple(Msg type, uint64_t value = 0, std::string_view text = {});
struct Simple {
  Msg type;
  uint64_t value = 0;
  std::string text;
};
[[nodiscard]] absl::StatusOr<Simple> DecodeSimple(std::string_view body);
// The type of any message (its first field).
[[nodiscard]] absl::StatusOr<Msg> TypeOf(std::string_view body);

}  // namespace idlepool::sandbox
