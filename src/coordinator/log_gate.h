// LogGate: how many LogChunks of one worker session reach the core thread (session_service.h).
// An honest worker sends at most one chunk per running attempt per second (worker/log_shipper.h)
// and, as an attempt ends, what it had not sent yet (at most 17 chunks). A worker credential
// could send far more, and each chunk is fenced on the core thread: a token bucket per session
// admits `per_second` chunks a second with bursts of `burst`, and refuses the rest, counted. A
// refused chunk is a gap in its attempt's kept log, as if the worker had dropped it.
//
// Pure: `now` passed in. One thread (the session's handler).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/types.h"

namespace idlepool::coordinator {

struct LogGateOptions {
  double per_second = 0;
  double burst = 0;
};

// The gate of a session whose Hello offered `cpus` slots: two chunks a second per slot, within
// [16, 128] a second (each admitted chunk costs the core thread a file append, about a
// millisecond on a slow disk), and 17 (an ending attempt's catch-up) per slot at once, at most
// 2,048.
LogGateOptions LogGateFor(uint32_t cpus);

class LogGate {
 public:
  LogGate(LogGateOptions options, core::MonoTime now)
      : options_(options), tokens_(options.burst), last_(now) {}

  // True when a chunk arriving at `now` may go on; false (counted) when it is over the rate.
  bool Admit(core::MonoTime now);
  uint64_t refused() const { return refused_; }

 private:
  LogGateOptions options_;
  double tokens_;
  core::MonoTime last_;
  uint64_t refused_ = 0;
};

}  // namespace idlepool::coordinator
