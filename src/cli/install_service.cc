#include "cli/install_service.h"

#include <pwd.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

extern char** environ;

namespace idlepool::cli {
namespace {

namespace fs = std::filesystem;

// Where the package puts its units (Debian 12 ships units in /lib; /usr/lib after the merge).
bool UnitInstalled(const std::string& unit) {
  std::error_code ec;
  for (const char* dir :
       {"/lib/systemd/system/", "/usr/lib/systemd/system/", "/etc/systemd/system/"}) {
    if (fs::exists(std::string(dir) + unit, ec)) return true;
  }
  return false;
}

// systemd is this machine's init (what sd_booted(3) checks): else a chroot or a container.
bool SystemdRunning() {
  std::error_code ec;
  return fs::is_directory("/run/systemd/system", ec);
}

// Runs systemctl ARGS, its output through; true when it exits 0.
bool Systemctl(std::vector<std::string> args) {
  args.insert(args.begin(), "systemctl");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawnp(&pid, "systemctl", nullptr, nullptr, argv.data(), environ) != 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A unit's name without ".service", for the commands it prints.
std::string Short(const std::string& unit) { return unit.substr(0, unit.rfind(".service")); }

}  // namespace

absl::Status NeedRoot(const std::string& command) {
  if (::geteuid() == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("idlepool ", command, " --install-service writes ", kServiceConfigDir, " and ",
                   kServiceDataDir, " and enables a system unit: run it as root (sudo)"));
}

absl::StatusOr<std::vector<std::string>> GivenArgs(const CLI::App& sub,
                                                   const std::vector<std::string>& skip) {
  std::vector<std::string> args;
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty()) continue;
    const std::string name = "--" + opt->get_lnames().front();
    if (name == "--help" || std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    if (opt->get_expected_min() == 0) {  // a flag
      args.push_back(name);
      continue;
    }
    for (const std::string& value : opt->results()) {
      if (value.empty() || value.find_first_of(" \t\n\r'\"\\$") != std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " '", value,
                         "': --install-service cannot pass a value that is empty or has "
                         "spaces, quotes, backslashes or $ to the unit; choose another value"));
      }
      args.push_back(name);
      args.push_back(value);
    }
  }
  return args;
}

absl::Status GiveToServiceUser(const std::string& dir, unsigned mode) {
  const struct passwd* pw = ::getpwnam(kServiceUser);
  if (pw == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("there is no user ", kServiceUser,
                     ": install the idlepool package first (sudo apt "
                     "install ./idlepool_*.deb makes it; docs/guide/install.md)"));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot make ", dir, ": ", ec.message()));
  ::chmod(dir.c_str(), mode);
  auto give = [&](const fs::path& p) -> absl::Status {
    if (::lchown(p.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot give ", p.string(), " to ", kServiceUser, ": ", strerror(errno)));
    }
    return absl::OkStatus();
  };
  if (absl::Status st = give(dir); !st.ok()) return st;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (absl::Status st = give(it->path()); !st.ok()) return st;
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot walk ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status WriteArgsFile(const ServiceUnit& unit, const std::vector<std::string>& args) {
  if (!UnitInstalled(unit.unit)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the systemd unit ", unit.unit,
                     " is not installed: install the idlepool package first "
                     "(docs/guide/install.md)"));
  }
  std::error_code ec;
  fs::create_directories(kServiceConfigDir, ec);
  const std::string tmp = unit.env_file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "# Written by `idlepool " << unit.command << " --install-service`: the options "
        << Short(unit.unit) << ".service passes on\n# (run it again, or edit this and `systemctl "
        << "restart " << Short(unit.unit) << "`). No secrets here.\n"
        << unit.args_var << "=" << absl::StrJoin(args, " ") << "\n";
    if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  ::chmod(tmp.c_str(), 0644);
  fs::rename(tmp, unit.env_file, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot write ", unit.env_file, ": ", ec.message()));
  std::printf("wrote %s\n", unit.env_file.c_str());
  return absl::OkStatus();
}

int EnableAndStart(const ServiceUnit& unit, const std::vector<std::string>& args) {
  const std::string name = Short(unit.unit);
  if (!SystemdRunning()) {
    std::vector<std::string> cmd = {"runuser", "-u", kServiceUser, "--", "/usr/bin/idlepool"};
    cmd.insert(cmd.end(), unit.fixed_args.begin(), unit.fixed_args.end());
    cmd.insert(cmd.end(), args.begin(), args.end());
    std::printf(
        "systemd is not running here (no /run/systemd/system: a chroot or a container), so %s "
        "is installed but not started; start it by hand with: %s\n",
        unit.unit.c_str(), absl::StrJoin(cmd, " ").c_str());
    return 0;
  }
  if (!Systemctl({"daemon-reload"}) || !Systemctl({"enable", unit.unit}) ||
      !Systemctl({"restart", unit.unit})) {
    std::fprintf(stderr,
                 "idlepool %s: systemctl could not enable and start %s: see `systemctl "
                 "status %s` and `journalctl -u %s`\n",
                 unit.command.c_str(), unit.unit.c_str(), name.c_str(), name.c_str());
    return 1;
  }
  std::printf(
      "enabled and started %s (as user %s; it starts at boot): `systemctl status %s`, "
      "`journalctl -u %s -f`\n",
      unit.unit.c_str(), kServiceUser, name.c_str(), name.c_str());
  return 0;
}

}  // namespace idlepool::cli
