// The process's file descriptor limit (RLIMIT_NOFILE): raised once at start, read by whoever
// budgets descriptors (gate/connection_gate.h), and given back to the tasks a worker spawns.
//
// Most systems start a process with a soft limit of 1,024 and a much higher hard limit (systemd:
// 524,288), so that programs which still use select(2) keep working; a server that holds one
// descriptor per connection raises its own soft limit to the hard one, and its children get the
// soft limit it started with (platform::SpawnOptions::nofile_soft).
//
// Thread safety: RaiseFdLimit once, early in main(), before threads start; the rest any thread.
#pragma once

#include <cstdint>

namespace idlepool::platform {

struct FdLimit {
  uint64_t soft_before = 0;  // the soft limit the process started with
  uint64_t soft = 0;         // the soft limit now
  uint64_t hard = 0;
};

// Raises the soft limit to the hard one, at most kMaxRaisedFds (an unlimited hard limit is not
// a number of descriptors anyone needs). Never lowers it. When the kernel refuses, the limit
// stays as it was (soft == soft_before).
inline constexpr uint64_t kMaxRaisedFds = 1 << 20;
FdLimit RaiseFdLimit();

// The current soft limit (0 when it cannot be read).
uint64_t FdSoftLimit();

// How many descriptors the process has open (/proc/self/fd); -1 when that cannot be read.
int64_t OpenFdCount();

// Fewer than `margin` descriptors are left below the soft limit (false when unknown).
bool FewFdsLeft(uint64_t margin);

}  // namespace idlepool::platform
