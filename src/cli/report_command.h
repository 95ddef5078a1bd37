// `idlepool report JOB --out FILE.html [--svg] [--max-attempts N]`: the job's report as one
// self-contained HTML file (summary, inline SVG timeline, workers, tasks with log tails; see
// report/timeline_svg.h), or with --svg the timeline alone as an SVG file, from the
// coordinator's Pool.GetJobTimeline. `--out -` writes to stdout; otherwise the file is written
// atomically (a temp file next to it, fsync, rename), so a reader never sees half a report, and
// the command prints "job N: report in FILE".
//
// Thread safety: call from one thread. Returns the process exit code: 0; 1 when the coordinator
// failed or refused (unknown job, a coordinator without timelines) or the file could not be
// written; 2 on bad arguments (also: --out names a missing directory or a directory).
#pragma once

#include <cstdint>
#include <string>

#include "cli/client.h"

namespace idlepool::cli {

struct ReportCommandOptions {
  uint64_t job = 0;
  std::string out;  // FILE, or "-" for stdout
  bool svg = false;
  uint32_t max_attempts = 0;  // 0: the coordinator's default (the newest 20,000)
};

int RunReport(PoolClient& client, const ReportCommandOptions& o);

}  // namespace idlepool::cli
