// ServiceAutoscaler: the coordinator's loop that scales services between min_replicas and
// max_replicas (issue 17, point 5). Every kAutoscaleEvery it reads each autoscaled service's
// demand from the gateway (requests in flight and queued; replicas ready and starting), asks
// that service's serve::Autoscaler (the pure decision, serve/autoscaler.h) and, when the
// answer differs from what runs, scales it as `idlepool scale` does: the store first, then
// the core (core::ScaleService). Each change is logged with its reason.
//
// Start time, measured per machine: the time from a replica's placement (first seen starting)
// to the first look that finds it ready, the median of the last kStartSamples on each worker.
// The decision gets the slowest median among the machines running the service's replicas now:
// it stretches the scale-down delay (a replica slow to start again is kept longer).
//
// Without a gateway (serving off) nothing is measured and nothing scales: min_replicas runs.
//
// Threads: its own loop thread; Start/Stop from the coordinator's thread. Holds references to
// the core loop, the store and the bridge, which must outlive it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "coordinator/core_loop.h"
#include "coordinator/serve_bridge.h"
#include "serve/autoscaler.h"
#include "store/store.h"

namespace idlepool::coordinator {

// How often demand is read: often enough that a request queued at zero replicas asks for one
// within half a second (a replica then takes seconds to start), rare enough to cost nothing.
inline constexpr std::chrono::milliseconds kAutoscaleEvery{500};
inline constexpr size_t kStartSamples = 8;

class ServiceAutoscaler {
 public:
  ServiceAutoscaler(CoreLoop& core, store::Store& store, ServeBridge& bridge)
      : core_(core), store_(store), bridge_(bridge) {}
  ~ServiceAutoscaler() { Stop(); }
  void Start();
  void Stop();

 private:
  struct Placed {
    serve::Time since;
    std::string worker;
  };
  struct Tracked {
    serve::Autoscaler decide;
    std::map<std::string, std::deque<serve::Micros>> starts;  // per worker: placement to ready
    std::map<uint64_t, Placed> placed;                        // replicas seen starting, by attempt
  };
  void Loop();
  void Step(serve::Time now);
  // Records start times from this look at the gateway (`replicas`: attempt -> state) and returns
  // the slowest per-machine median among the workers running the service's replicas.
  serve::Micros StartTime(Tracked& t, core::JobId job,
                          const std::map<uint64_t, std::string>& replicas, serve::Time now);

  CoreLoop& core_;
  store::Store& store_;
  ServeBridge& bridge_;
  std::map<uint64_t, Tracked> services_;  // loop thread only; by job id
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace idlepool::coordinator
