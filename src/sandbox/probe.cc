#include "sandbox/probe.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "sandbox/mounts.h"
#include "sandbox/slot_sandbox.h"

namespace idlepool::sandbox {
namespace {

std::string ReadSysctl(const char* path) {
  std::ifstream in(path);
  std::string v;
  in >> v;
  return v;
}

// What the kernel says about user namespaces, for a failed probe's message.
std::string UsernsHints() {
  std::string hints;
  if (ReadSysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0") {
    hints +=
        " kernel.unprivileged_userns_clone is 0 (sysctl -w kernel.unprivileged_userns_clone=1).";
  }
  if (ReadSysctl("/proc/sys/user/max_user_namespaces") == "0") {
    hints += " user.max_user_namespaces is 0 (sysctl -w user.max_user_namespaces=15000).";
  }
  if (ReadSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1") {
    hints +=
        " AppArmor restricts unprivileged user namespaces "
        "(kernel.apparmor_restrict_unprivileged_userns=1): run the worker as root (tier uid) "
        "or give it an AppArmor profile with `userns,`.";
  }
  return hints;
}

}  // namespace

std::string_view TierName(Tier t) {
  switch (t) {
    case Tier::kUserns:
      return "userns";
    case Tier::kUid:
      return "uid";
    case Tier::kNone:
      break;
  }
  return "none";
}

Settings DetectSettings(const std::string& work_dir, const std::vector<std::string>& show) {
  Settings s;
  s.tier = ::geteuid() == 0 ? Tier::kUid : Tier::kUserns;
  s.work_dir = work_dir;
  std::vector<std::string> homes;
  ::setpwent();
  while (passwd* pw = ::getpwent()) {
    if (pw->pw_uid >= 1000 && pw->pw_dir != nullptr) homes.emplace_back(pw->pw_dir);
  }
  ::endpwent();
  const char* home = std::getenv("HOME");
  s.show = VisiblePaths(show);
  s.hidden = HiddenPaths(work_dir, home ? home : "", homes, s.show);
  return s;
}

Config ConfigFor(const Settings& s, int slot, const std::string& slot_dir, bool host_network,
                 const std::vector<std::string>& devices) {
  Config c;
  if (s.tier == Tier::kUid) {
    c.uid = c.gid = s.uid_base + static_cast<uint64_t>(slot);
    c.drop_groups = true;
  } else {
    c.uid = ::getuid();
    c.gid = ::getgid();
  }
  c.host_network = host_network;
  c.slot_dir = slot_dir;
  c.writable = {slot_dir + "/task", slot_dir + "/checkpoint"};
  c.show = s.show;
  c.hide = s.hidden;
  c.scratch = {"/tmp", "/var/tmp", "/dev/shm"};
  c.devices = BaseDevices();
  c.devices.insert(c.devices.end(), devices.begin(), devices.end());
  c.device_root = s.device_root;
  // Name resolution for host-network tasks where /etc/resolv.conf points into /run.
  if (host_network) c.ro_binds = {"/run/systemd/resolve"};
  c.pids_max = s.pids_max;
  c.scratch_bytes = s.task_memory_bytes;
  c.task_dir_bytes = s.task_dir_bytes;
  return c;
}

absl::StatusOr<int> Probe(const Settings& s) {
  const std::string dir = s.work_dir + "/slots/probe";
  std::error_code ec;
  std::filesystem::create_directories(dir + "/task", ec);
  std::filesystem::create_directories(dir + "/checkpoint", ec);
  if (ec)
    return absl::FailedPreconditionError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  Config c = ConfigFor(s, 0, dir, /*host_network=*/false, {});
  if (s.tier == Tier::kUid) {
    c.uid = c.gid = s.uid_base + 0xffff;  // a uid of its own: no slot's files are touched
  }
  auto sb = SlotSandbox::Start(c, s.agent_exe);
  auto fail = [&](const std::string& why) {
    return absl::FailedPreconditionError(
        absl::StrCat("the task sandbox (tier ", std::string(TierName(s.tier)),
                     ") does not work on this machine: ", why, UsernsHints(),
                     " Start the worker with --no-sandbox to run tasks unsandboxed, as ",
                     "this user, with this user's files in their reach."));
  };
  if (!sb.ok()) return fail(std::string(sb.status().message()));
  platform::SpawnOptions opts;
  opts.argv = {"true"};
  opts.cwd = dir + "/task";
  auto p = (*sb)->Launch(opts);
  if (!p.ok()) return fail(std::string(p.status().message()));
  const platform::ExitInfo exit =
      (*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  if (exit.exit_code != 0) return fail(absl::StrCat("`true` exited with ", exit.exit_code));
  return (*sb)->landlock_abi();
}

}  // namespace idlepool::sandbox
