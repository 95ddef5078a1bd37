// The sandbox's tiers, the settings a worker runs its slots' sandboxes with, and the probe that
// runs when a worker starts.
//
// Tiers: kUserns (the worker runs as an ordinary user: tasks run as that user, inside user,
// mount, PID, IPC, UTS and network namespaces), kUid (the worker runs as root: the same, and each
// slot under its own unprivileged uid and gid, kDefaultUidBase + slot, no accounts needed), kNone
// (--no-sandbox: tasks run as the worker's user, with the owner's files in reach).
// Probe starts a real sandbox in WORK_DIR/slots/probe and runs `true` in it: a worker whose probe
// fails refuses to start with the reason (user namespaces off, a mount refused, an old kernel).
//
// Plain values and free functions: any thread. Errors: Probe: kFailedPrecondition naming what is
// missing and how to allow it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sandbox/messages.h"

namespace idlepool::sandbox {

enum class Tier { kNone, kUserns, kUid };
std::string_view TierName(Tier t);

// The first uid and gid of a root worker's slots: far above the ranges Debian hands out to
// people (1000..59999) and systemd's dynamic users (61184..65519), inside the 32-bit range every
// tool handles. --sandbox-uid-base moves it (two root workers on one machine need two ranges).
inline constexpr uint64_t kDefaultUidBase = 1'500'000'000;
// Processes and threads one task may have at once (the fork-bomb stop).
inline constexpr uint64_t kDefaultPidsMax = 4096;

struct Settings {
  Tier tier = Tier::kNone;
  std::string work_dir;  // canonical
  std::string agent_exe = "/proc/self/exe";
  uint64_t uid_base = kDefaultUidBase;
  uint64_t pids_max = kDefaultPidsMax;
  std::vector<std::string> show;    // VisiblePaths(), with the worker's --sandbox-show
  std::vector<std::string> hidden;  // HiddenPaths(), read once
  std::string device_root;          // Config::device_root
  // A task's limits (sandbox/limits.h): memory when its job states none (also each scratch
  // tmpfs's size), and what its dirs may hold; 0: none.
  uint64_t task_memory_bytes = 0;
  uint64_t task_dir_bytes = 0;
};

// The tier this process can offer (root: kUid, else kUserns), what tasks see (the system dirs
// and `show`) and the hidden paths in that, from $HOME and the password database.
Settings DetectSettings(const std::string& work_dir, const std::vector<std::string>& show = {});

// The sandbox of slot `slot` (its dir WORK_DIR/slots/<slot>, read-only inside but for its
// task/ and checkpoint/ dirs, which must exist), with the host's network or none, and `devices`
// (GPU nodes) added to the base ones.
Config ConfigFor(const Settings& s, int slot, const std::string& slot_dir, bool host_network,
                 const std::vector<std::string>& devices);

// Runs `true` in a sandbox made with `s`. OK with the Landlock ABI in use (0: none).
[[nodiscard]] absl::StatusOr<int> Probe(const Settings& s);

}  // namespace idlepool::sandbox
