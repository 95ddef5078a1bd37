#include "platform/clock.h"

#include <ctime>

#include <thread>

namespace idlepool::platform {

core::MonoTime RealClock::Now() const {
  auto since = std::chrono::steady_clock::now().time_since_epoch();
  return core::MonoTime(std::chrono::duration_cast<core::Millis>(since));
}

int64_t RealClock::WallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const Clock& SystemClock() {
  static const RealClock clock;
  return clock;
}

std::chrono::system_clock::time_point DeadlineAfter(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t ThreadCpuNanos() {
  struct timespec ts;
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void SleepFor(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

WeekTime LocalWeekTime() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return WeekTime{(tm.tm_wday + 6) % 7, tm.tm_hour * 60 + tm.tm_min};
}

}  // namespace idlepool::platform
