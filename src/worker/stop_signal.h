// StopSignal: the worker is stopping (Worker::Stop), as a flag and an interruptible wait.
//
// Owned by the worker (worker.cc) and shared by reference with every unit that loops or backs
// off, so that Stop() wakes them all at once. Any thread. One mutex, guarding only the wait.
// Units: milliseconds.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace idlepool::worker {

class StopSignal {
 public:
  [[nodiscard]] bool stopping() const { return stopping_.load(); }
  // Sets the flag; true when it was already set. Waiters are woken by Notify().
  [[nodiscard]] bool Raise() { return stopping_.exchange(true); }
  void Notify() {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
  // Waits `d`, or less when the worker stops meanwhile.
  void WaitFor(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return stopping_.load(); });
  }

 private:
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace idlepool::worker
