// LinkProber: measures the link to the coordinator for the planner (worker/measure.h).
//
// Probes after the first Welcome, then every `interval` (0 = only on join), deferred while
// inputs or outputs move (TransferGauge; skipped after a whole interval of that); after each
// later Welcome it resends the last result (a restarted coordinator may not have it). A failed
// probe is logged and tried again after a backoff (5 s, doubling, at most the interval; 5 min
// when the interval is 0). Results go to the coordinator as WorkerMessage.link.
//
// Threads: its own (Start/Join); Joined() and Stop() from any thread (the session's reader,
// Worker::Stop). Locking: one mutex guards the join count and the wait. Ownership: the probe
// stub is the worker's (created where the session's stub is), as are the gauge and the stop
// signal. Units: milliseconds.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "worker/measure.h"
#include "worker/sender.h"
#include "worker/stop_signal.h"
#include "worker/transfers.h"

namespace idlepool::worker {

struct LinkProberConfig {
  std::string coordinator;  // for log lines
  std::string token;
  std::chrono::milliseconds interval{0};
};

class LinkProber {
 public:
  LinkProber(LinkProberConfig config, v1::Probes::Stub* stub, const platform::Clock& clock,
             const TransferGauge& gauge, const StopSignal& stop, Sender send);
  ~LinkProber() { Join(); }
  LinkProber(const LinkProber&) = delete;
  LinkProber& operator=(const LinkProber&) = delete;

  void Start();
  void Joined();  // a Welcome arrived
  void Stop();    // wakes the thread and cancels a probe in flight (the stop signal is raised)
  void Join();

 private:
  void Loop();
  // Waits for a join, the due time or the stop; *joined: a Welcome arrived. False: stopping.
  bool Wait(const std::optional<core::MonoTime>& due, bool* joined);
  void SendLink(const LinkMeasurement& m);

  const LinkProberConfig config_;
  v1::Probes::Stub* const stub_;
  const platform::Clock& clock_;
  const TransferGauge& gauge_;
  const StopSignal& stop_;
  const Sender send_;
  ProbeCanceller cancel_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t joins_ ABSL_GUARDED_BY(mu_) = 0;  // Welcomes received
  uint64_t seen_joins_ = 0;                  // probe thread only
};

}  // namespace idlepool::worker
