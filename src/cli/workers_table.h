// `idlepool workers`' table: one row per worker, columns sized to their content.
//
// A table for a terminal fits its width: columns are left out least useful first (UP, LINK,
// CPU, GPUS, SANDBOX, SEEN, HOST, SLOTS) until the rest fits, and the last column (OWNER, which
// carries the policy's reason) is cut at the edge. WORKER, STATE, ACTIVITY, BUSY and OWNER always
// stay. width 0: every column, nothing cut (`--wide`, a pipe).
//
// Pure: the reply and a width in, text out (lines end in '\n'); thread-safe.
#pragma once

#include <string>

#include "idlepool.pb.h"

namespace idlepool::cli {

std::string WorkersTable(const v1::ListWorkersReply& reply, int width);

}  // namespace idlepool::cli
