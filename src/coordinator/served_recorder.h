// ServedRecorder: adds what the coordinator's gateway served (requests and tokens by user and
// worker, serve/served_usage.h) to the store's usage by day, so `idlepool usage` counts them and
// they survive restarts. It saves every kServedSaveEvery, when usage is read (JobService calls
// Save first, so what `idlepool usage` prints is current), and once more at Stop, before the
// gateway stops.
//
// Errors: a save the store refuses is logged and its counts are lost (usage is accounting, not
// state the pool depends on); nothing is retried.
// Thread safety: Save from any thread (serialised); Start/Stop from the coordinator's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "coordinator/serve_bridge.h"
#include "platform/clock.h"
#include "store/store.h"

namespace idlepool::coordinator {

inline constexpr std::chrono::seconds kServedSaveEvery{60};

class ServedRecorder {
 public:
  ServedRecorder(ServeBridge& bridge, store::Store& store, const platform::Clock& clock)
      : bridge_(bridge), store_(store), clock_(clock) {}
  ~ServedRecorder() { Stop(); }
  ServedRecorder(const ServedRecorder&) = delete;
  ServedRecorder& operator=(const ServedRecorder&) = delete;

  void Start();
  void Stop();  // saves once more; idempotent
  void Save();

 private:
  ServeBridge& bridge_;
  store::Store& store_;
  const platform::Clock& clock_;
  std::mutex save_mu_;  // one save at a time: the rows taken are written in order
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace idlepool::coordinator
