// The job file's optional [sandbox] table, read apart from job_spec.cc (which is big); not part
// of the module's contract.
#pragma once

#include <toml++/toml.h>

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "spec/spec.h"

namespace idlepool::spec::internal {

// The keys of [sandbox].
inline constexpr std::string_view kSandboxKeys[] = {"network"};

// Reads `root`'s [sandbox] table, if any, into `spec`: `network = "none"` (the default) or
// `"host"` sets spec.resources.host_network. kInvalidArgument naming the place for anything
// else: "job.toml:7:11: key 'sandbox.network': must be \"none\" or \"host\", got the string
// \"bridge\"", an unknown key ("unknown key 'sandbox.x' ...; allowed here: network"), or a
// [sandbox] that is not a table. `file` is used in messages only; `misplaced_hint` may explain an
// unknown key (toml_util::CheckKeys), e.g. one that belongs at the top level.
[[nodiscard]] absl::Status ReadSandboxTable(
    const std::string& file, const toml::table& root,
    const std::function<std::string(std::string_view name)>& misplaced_hint, JobSpec& spec);

}  // namespace idlepool::spec::internal
