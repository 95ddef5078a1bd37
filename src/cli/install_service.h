// `--install-service` of `idlepool worker` and `idlepool coordinator`: makes the command given
// run from now on as the packaged systemd unit (packaging/deb/idlepool-*.service), as the system
// user idlepool, with its data under /var/lib/idlepool and its options in an environment file
// under /etc/idlepool. The package's postinst made the user and the dirs; these helpers write
// the files, hand the data to the user and enable the unit. Single-threaded, for a command that
// runs as root once.
#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace idlepool::cli {

inline constexpr char kServiceUser[] = "idlepool";
inline constexpr char kServiceConfigDir[] = "/etc/idlepool";
inline constexpr char kServiceDataDir[] = "/var/lib/idlepool";

// One packaged unit and what its ExecStart takes.
struct ServiceUnit {
  std::string unit;                     // "idlepool-worker.service"
  std::string command;                  // "worker": the subcommand, for messages
  std::string env_file;                 // "/etc/idlepool/worker.env"
  std::string args_var;                 // "IDLEPOOL_WORKER_ARGS": the options the unit passes on
  std::vector<std::string> fixed_args;  // what ExecStart gives before them (after the binary)
};

// kFailedPrecondition naming `command` unless this process runs as root.
absl::Status NeedRoot(const std::string& command);

// The options given to `sub` on its command line (or from their environment variables), as
// arguments again: "--slots 2", "--no-sandbox"; options whose long name is in `skip` ("--join")
// are left out. kInvalidArgument for a value the unit's environment file cannot carry
// (whitespace, quotes, backslash, $).
absl::StatusOr<std::vector<std::string>> GivenArgs(const CLI::App& sub,
                                                   const std::vector<std::string>& skip);

// Makes `dir` (mode 0700 or as given) and everything under it belong to the user idlepool.
// kFailedPrecondition when the user is missing (the package is not installed).
absl::Status GiveToServiceUser(const std::string& dir, unsigned mode);

// Writes unit.env_file ("ARGS_VAR=a b c", 0644; it holds no secret) in kServiceConfigDir.
absl::Status WriteArgsFile(const ServiceUnit& unit, const std::vector<std::string>& args);

// Enables and starts (or restarts) the unit with systemctl and prints what it did; where
// systemd is not running (a chroot, a container) prints one line saying so, with the command
// that starts the same thing by hand. The exit code: 0, or 1 when systemctl failed.
int EnableAndStart(const ServiceUnit& unit, const std::vector<std::string>& args);

}  // namespace idlepool::cli
