// `idlepool profile JOB | --key K | --spec JOB.toml [--max-samples N] [--json]`: where the time of
// a job's succeeded attempts went (staging inputs, running, uploading outputs), per worker, from
// the coordinator's history (Pool.GetProfile). With --key or --spec, the history of every job
// with that profile key (spec/profile_key.h): earlier runs of the same command on the same
// inputs. --spec computes the key locally (hashing the spec's inputs) without submitting.
//
// Text: one line per worker (attempts, median stage/run/upload/wall seconds, bytes staged and
// uploaded), then the jobs the samples come from. JSON: {"profile_key", "jobs": [...],
// "samples": [...] (newest first), "workers": [...] (by name)}; times in ms in samples, seconds
// (medians) in workers.
//
// Thread safety: call from one thread. Returns the process exit code: 0, 1 (the coordinator
// failed or refused), 2 bad arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/client.h"

namespace idlepool::cli {

struct ProfileOptions {
  std::optional<uint64_t> job;
  std::string key;
  std::string spec_file;
  uint32_t max_samples = 0;  // 0: the coordinator's default (200)
  bool json = false;
};

int RunProfile(PoolClient& client, const ProfileOptions& o);

}  // namespace idlepool::cli
