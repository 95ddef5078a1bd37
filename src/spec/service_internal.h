// The job file's optional [service] table and the rules a service spec follows, apart from
// job_spec.cc (which is big); not part of the module's contract (spec/service.h is).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "spec/spec.h"

namespace idlepool::spec::internal {

// The keys of [service].
inline constexpr std::string_view kServiceKeys[] = {
    "replicas",       "min_replicas",  "max_replicas",        "protocol", "model", "health",
    "max_concurrent", "drain_seconds", "replicas_per_machine"};

// Reads `root`'s [service] table, if any, into spec.service (left empty without one), with its
// types and ranges, and refuses what a service file may not have: a way to split into tasks
// (frames, items, items_file, count, chunk), outputs (outputs, allow_empty_outputs), and
// [retry]'s keys. kInvalidArgument naming the place: "job.toml:9:18: key
// 'service.max_concurrent': must be at most 4096, got 5000", "job.toml:3:1: key 'count': a
// service has no 'count': ...", an unknown key ("unknown key 'service.x' ...; allowed here: ..."),
// both replica forms, min_replicas without max_replicas, protocol "openai" without model, or a
// [service] that is not a table. The rules on values that Validate also checks (min <= max, the
// protocol's name, model and health) are left to ServiceProblem. `file` is used in messages only;
// `misplaced_hint` may explain an unknown key (toml_util::CheckKeys).
[[nodiscard]] absl::Status ReadServiceTable(
    const std::string& file, const toml::table& root,
    const std::function<std::string(std::string_view name)>& misplaced_hint, JobSpec& spec);

// What is wrong with a service spec (spec.service set), or nullopt: a field other than command
// and inputs that a service may not have (frames, items, count, chunk, outputs,
// allow_empty_outputs, retry.timeout_s), or a [service] value out of its rules (service.h).
// `field` is the key ("service.model", "count"); the message reads after it.
struct ServiceProblem {
  std::string field;
  std::string message;
};
[[nodiscard]] std::optional<ServiceProblem> CheckService(const JobSpec& spec);

}  // namespace idlepool::spec::internal
