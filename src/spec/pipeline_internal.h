// A job file's `after` list and the backoff keys of its [retry] table, read and checked apart
// from job_spec.cc (which is big); not part of the module's contract.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "spec/spec.h"

namespace idlepool::spec::internal {

// Reads `after = ["render", "12"]` of `root` (an array of non-empty strings) and
// `backoff_s` / `max_backoff_s` of `retry` (numbers, integer or float; `retry` may be null) into
// `spec`. kInvalidArgument naming the place for a wrong type: "job.toml:3:9: key
// 'retry.backoff_s': must be a number of seconds, got the string \"1s\"". The rules on values
// (ranges, backoff_s <= max_backoff_s) are PipelineProblem's, which ParseJobToml applies after.
// `file` is used in messages only.
[[nodiscard]] absl::Status ReadAfterAndBackoff(const std::string& file, const toml::table& root,
                                               const toml::table* retry, JobSpec& spec);

// What is wrong with `spec`'s after list or retry backoff, or nullopt: backoff_s or
// max_backoff_s not finite, below 0 or over kMaxBackoffS; backoff_s over max_backoff_s; more than
// kMaxAfter entries; an entry empty, longer than kMaxAfterBytes or not valid UTF-8; the same
// entry twice. `field` is the key ("retry.backoff_s", "after"); the message reads after it;
// `index` is the element of `after` (-1: none).
struct PipelineProblem {
  std::string field;
  std::string message;
  int index = -1;
};
[[nodiscard]] std::optional<PipelineProblem> CheckPipeline(const JobSpec& spec);

}  // namespace idlepool::spec::internal
