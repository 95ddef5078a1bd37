// `idlepool timeline JOB [--json] [--max-attempts N]`: a job's timeline as the coordinator keeps
// it (Pool.GetJobTimeline): every attempt with its worker, times, outcome, log tail and the
// task's next attempt, and what happened on those workers (owner policy changes, sessions)
// while the job ran. Mostly a client for scripts and tests (`idlepool report` draws it).
//
// JSON (--json): the v1::JobTimeline message as protobuf JSON with the proto's field names,
// every scalar printed (64-bit integers as strings, as protobuf JSON does). Text: one line per
// attempt, then one per event; times in seconds from the job's submission.
//
// Thread safety: call from one thread. Returns the process exit code: 0, 1 (the coordinator
// failed or refused, e.g. an unknown job).
#pragma once

#include <cstdint>

#include "cli/client.h"

namespace idlepool::cli {

struct TimelineOptions {
  uint64_t job = 0;
  uint32_t max_attempts = 0;  // 0: the coordinator's default (20,000)
  bool json = false;
};

int RunTimeline(PoolClient& client, const TimelineOptions& o);

}  // namespace idlepool::cli
