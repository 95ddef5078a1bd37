// The one place real time is read. Everything else takes a Clock& (or a `now` value) so tests
// and the simulator can substitute their own time.
//
// Thread safety: RealClock is stateless and safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/types.h"

namespace idlepool::platform {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time for timeouts and leases; never jumps with wall-clock changes.
  virtual core::MonoTime Now() const = 0;
  // Wall-clock Unix time in milliseconds, for display and records only.
  virtual int64_t WallMs() const = 0;
};

class RealClock final : public Clock {
 public:
  core::MonoTime Now() const override;
  int64_t WallMs() const override;
};

// Process-wide real clock.
const Clock& SystemClock();

// A wall-clock deadline `d` from now, in the form gRPC deadlines take.
std::chrono::system_clock::time_point DeadlineAfter(std::chrono::milliseconds d);

// The local wall time as day of the week and minute of the day (for the owner's time windows).
struct WeekTime {
  int weekday = 0;        // 0 = Monday .. 6 = Sunday
  int minute_of_day = 0;  // 0..1439
};
WeekTime LocalWeekTime();

// Monotonic nanoseconds (steady clock), for measuring how long a computation took.
int64_t SteadyNanos();

// CPU time consumed by the calling thread (CLOCK_THREAD_CPUTIME_ID), nanoseconds: what a
// computation cost this thread, whatever else the machine ran meanwhile. 0 if unavailable.
int64_t ThreadCpuNanos();

// Blocks the calling thread for `d`. The only sleep in the code base.
void SleepFor(std::chrono::milliseconds d);

}  // namespace idlepool::platform
