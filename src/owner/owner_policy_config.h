// Reading the owner policy (PolicyConfig) from TOML.
//
// The file holds one table, [owner], whose keys are all optional (an absent key keeps the
// PolicyConfig{} default; an absent [owner] table gives the defaults):
//   start_idle_minutes           number >= 0
//   resume_idle_seconds          number >= 0
//   vacate_after_suspend_seconds number >= 0
//   on_battery                   "run" | "suspend" | "vacate"
//   max_temperature_c            number in 30..150
//   max_owner_cpu_load           number in 0..1
//   vacate_grace_seconds         number in 0..3600
//   checkpoint_interval_seconds  number in 1..86400
//   windows                      array of tables {days, start, end}:
//       days  = "daily" | "mon-fri" | "sat,sun" | "mon-wed,fri" (ranges go forward)
//       start = "HH:MM", end = "HH:MM" (two digits each, 00:00..23:59)
//   accept_users                 array of at most 256 user names: only their tasks run here
//                                (absent or empty: everyone's)
//   refuse_users                 array of at most 256 user names: their tasks never run here
// and an optional table [gpu] (PolicyConfig::gpu, owner/gpu_policy.h):
//   owner_use                    "suspend" | "vacate" | "ignore"
//   max_temperature_c            number in 30..150
// and an optional table [sandbox]:
//   allow_host_network           true | false (PolicyConfig::allow_host_network, default true)
//   memory_mb                    number >= 0 (PolicyConfig::task_memory_mb; 0: the default)
//   task_dir_mb                  number >= 0 (PolicyConfig::task_dir_mb; 0: the default)
//   path                         absolute dirs separated by ':' (PolicyConfig::task_path)
//   pass_env                     array of at most 64 variable names (spec::EnvNameError's rules;
//                                not PATH: `path` sets it)
// Unknown keys, wrong types and out-of-range values are errors of the form
// "FILE:LINE:COL: key 'owner.x': ..." (kInvalidArgument). DefaultConfigToml() round-trips.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "owner/owner_policy.h"

namespace idlepool::owner {

// Parses `toml`; `file_name` is used only in messages.
absl::StatusOr<PolicyConfig> ParsePolicyConfig(std::string_view toml, const std::string& file_name);

// Reads and parses the file at `path`: kNotFound (naming the path) when it does not exist.
absl::StatusOr<PolicyConfig> LoadPolicyConfig(const std::string& path);

}  // namespace idlepool::owner
