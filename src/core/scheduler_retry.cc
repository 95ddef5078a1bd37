// Retries with backoff: a batch task whose attempt failed or timed out waits before it is
// placeable again (see "Retries" in scheduler.h). Same thread rules as the rest of the Scheduler.
#include <algorithm>
#include <cstdint>

#include "core/scheduler.h"

namespace idlepool::core {
namespace {

// SplitMix64's finalizer (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014): a well-mixed 64-bit hash of its input, no state.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

Millis Scheduler::RetryWait(const RetryBackoff& retry, TaskKey task, uint32_t failures) {
  if (retry.backoff <= Millis{0} || failures == 0) return Millis{0};
  const uint32_t doublings = std::min<uint32_t>(failures - 1, 30);
  const double base =
      std::min(static_cast<double>(retry.backoff.count()) * double(1ull << doublings),
               static_cast<double>(retry.max.count()));
  const uint64_t h = Mix(Mix(task.job) ^ (uint64_t{task.index} << 20) ^ failures);
  const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  const double wait = std::min(base * (1.0 + unit / 4.0), static_cast<double>(retry.max.count()));
  return Millis{static_cast<int64_t>(wait)};
}

void Scheduler::Requeue(const TaskKey& key, bool failed, MonoTime now) {
  const JobRec& job = jobs_.at(key.job);
  const Millis wait = failed && !job.spec.service
                          ? RetryWait(job.spec.retry, key, job.tasks[key.index].failures)
                          : Millis{0};
  if (wait > Millis{0}) {
    restarts_[key] = now + wait;  // RestartDue (scheduler_service.cc) makes it pending then
  } else if (!job.waiting) {
    AddPending(key);
  }
}

}  // namespace idlepool::core
