// The profile key of a job: names "the same work" across submissions, so the planner can use
// the history of finished attempts of earlier jobs to predict a new one.
//
// Key = lowercase hex SHA-256 over a length-prefixed encoding of
//   - the command template, element by element, exactly as in the spec (placeholders unrendered),
//   - the resources (cpus, gpus, memory_mb),
//   - the content hashes (SHA-256 hex) of the job's inputs, sorted (input order and staged paths
//     do not matter; a file listed twice counts twice).
// Resubmitting a spec on the same inputs gives the same key; a changed command, resource request
// or input (a new scene, another model) gives another. The task decomposition (frames, items,
// count) is left out on purpose: a different frame range of the same scene is the same work per
// task. Frames per task (`chunk`, frames jobs; 0 otherwise) is in: a chunk of 10 frames is 10
// times the work of one (appended only when non-zero). Pure and thread-safe. The encoding is versioned ("idlepool.profile.v1"); never change it
// without bumping the version (stored keys would stop matching).
#pragma once

#include <string>
#include <vector>

#include "core/types.h"
#include "spec/spec.h"

namespace idlepool::spec {

[[nodiscard]] std::string ProfileKey(const std::vector<std::string>& command,
                                     const core::Resources& resources,
                                     std::vector<std::string> input_sha256,
                                     uint32_t frames_per_task = 0);

// The key of a parsed spec whose inputs hash to `input_sha256`: ProfileKey with the spec's
// command and resources, and its chunk for a frames job (0 otherwise).
[[nodiscard]] std::string ProfileKeyOf(const JobSpec& spec, std::vector<std::string> input_sha256);

}  // namespace idlepool::spec
