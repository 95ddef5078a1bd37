// ServeBridge: what the coordinator's gateway (serve/gateway.h) must know of the pool, kept up
// to date from the core and the worker sessions (issue 17). A service job is a gateway service
// (named by the job's name; an openai one also by its model); each running replica attempt is
// a gateway replica, reached through the tunnel of the worker running it (Hello.tunnel_address,
// serve/tunnel_server.h) and named by its attempt id. A replica enters starting (the gateway
// probes its health path through the tunnel until it answers 200), leaves when its attempt ends
// (exit, preemption, kill, or its worker's lease ran out), and drains the moment its worker
// says its owner came back (ReplicaDraining). A worker that reconnects with another tunnel
// address gets its replicas re-added there.
//
// Retiring (serve_bridge_retire.cc): a replica the core cancels (scaled down, job cancelled)
// drains instead of leaving at once, as its worker does (worker/owner_monitor.h, Retire): no new
// request, in-flight ones get the service's drain_seconds. Sweep (every autoscaler tick) removes
// it when its drain time is over, or earlier once the gateway has no request on it and no
// gateway of its own watches (Jobs.WatchGateway: their requests are not seen here); then the
// retired hook tells its worker to stop it now. A cancelled service stays routable (for its
// draining replicas' requests) until its last retiring replica is removed.
//
// It records everything even while no gateway is attached (serving off, or not started yet):
// Attach replays the record, so `idlepool services` and a later start see the same replicas.
//
// Thread safety: every method from any thread; one mutex guards the record and is held across
// gateway control calls (each waits a few microseconds for the gateway's io thread, which
// never calls back in here), so the gateway sees the calls in the order they were made.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/types.h"
#include "idlepool.pb.h"
#include "serve/gateway.h"

namespace idlepool::coordinator {

// A service as the gateway routes it, from its job's [service] table (also `idlepool gateway`'s).
serve::ServiceSpec GatewayServiceSpec(const std::string& name, const v1::ServiceSpec& spec);

class ServeBridge {
 public:
  // The gateway is started: replay what is known. Null: detach (before the gateway stops).
  void Attach(serve::Gateway* gateway, std::string url);
  std::string url() const;  // "https://host:port" of the attached gateway; "" when none
  // What the attached gateway served since the last call (serve::Gateway::TakeServed); empty
  // when none is attached.
  std::vector<serve::ServedCount> TakeServed();

  // Core thread (after the records are committed). A service is known to the gateway from its
  // submission (or the coordinator's restore) on, so requests to one with no replica queue.
  void ServiceStarted(core::JobId job, const v1::JobSpec& spec);
  void ReplicaCreated(core::JobId job, const v1::JobSpec& spec, core::AttemptId attempt,
                      uint32_t index, const std::string& worker);
  // `retire`: the core cancelled it; it drains first (see above).
  void ReplicaEnded(core::AttemptId attempt, bool retire = false);
  void ServiceEnded(core::JobId job);
  // Session threads. `address` "" : the worker serves no tunnel.
  void WorkerTunnel(const std::string& worker, const std::string& address);
  // The machine's readings (cleaned): its replicas' weight (replica_weight.h) follows them.
  void WorkerSensors(const std::string& worker, const v1::SensorReadings& sensors);
  void WorkerGpus(const std::string& worker, const std::vector<v1::GpuDevice>& gpus);
  // Only the worker running an attempt may drain it; others' ids are ignored.
  void Draining(const std::string& worker, const std::vector<uint64_t>& attempts);

  // Removes retiring replicas whose drain is over (or drained early: then the hook runs for
  // it, outside the lock) and cancelled services with none left. `now`: a steady clock.
  void Sweep(serve::Time now);
  // Called with (worker, attempt) for a replica drained before its time (set once, before use).
  void SetRetiredHook(std::function<void(const std::string&, core::AttemptId)> hook);
  // A gateway of its own starts (+1) or stops (-1) watching (gateway_watch.cc).
  void Watching(int delta);

  struct ReplicaView {
    core::AttemptId attempt = 0;
    uint32_t index = 0;
    std::string worker;
    bool draining = false;
    bool reachable = false;  // its worker announced a tunnel
  };
  std::vector<ReplicaView> Replicas(core::JobId job) const;
  // Whether `attempt` is a retiring replica still draining here (its kills are the bridge's).
  bool Retiring(core::AttemptId attempt) const;
  uint32_t Starts(core::JobId job, uint32_t index) const;  // replicas created, this run
  // The gateway's routing state (Gateway::SnapshotJson); "" when none is attached.
  std::string GatewaySnapshot() const;

  // For gateways of their own (Jobs.WatchGateway): the whole state, and its version, which
  // grows with every change. WaitChange blocks until the version differs from `seen` or
  // `timeout` passed; returns the version.
  uint64_t Export(v1::GatewayState* out) const;
  uint64_t WaitChange(uint64_t seen, std::chrono::milliseconds timeout) const;

 private:
  struct Service {
    std::string name;
    v1::JobSpec spec;
    bool added = false;
    bool ending = false;  // cancelled: removed with its last retiring replica
  };
  struct Replica {
    core::JobId job = 0;
    uint32_t index = 0;
    std::string worker;
    bool added = false;
    bool draining = false;
    // Retiring: the core ended it; removed by Sweep at retire_by (set by the first Sweep to
    // now + drain) or once `idle` (the gateway's drained callback, on its io thread).
    bool retiring = false;
    std::chrono::milliseconds drain{0};
    std::optional<serve::Time> retire_by;
    std::shared_ptr<std::atomic<bool>> idle;
  };
  void DrainInGateway(core::AttemptId attempt, Replica& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A cancelled service still draining under the name (or model) of `job`'s, submitted anew,
  // ends now: its replicas are removed (what they had in flight is cut).
  void EndClashing(core::JobId job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts retiring `r`; false when it cannot drain (no drain_seconds, unreachable).
  bool StartRetiring(core::AttemptId attempt, Replica& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++version_;
    changed_.notify_all();
  }
  void AddService(core::JobId job, Service& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddReplica(core::AttemptId attempt, Replica& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveReplica(core::AttemptId attempt, Replica& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recomputes the worker's weight; its replicas get it when it moved by kWeightStep or more.
  void Reweigh(const std::string& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Machine {
    v1::SensorReadings sensors;
    google::protobuf::RepeatedPtrField<v1::GpuDevice> gpus;
    double weight = 1;
  };

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 1;
  serve::Gateway* gateway_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::string url_ ABSL_GUARDED_BY(mu_);
  std::map<core::JobId, Service> services_ ABSL_GUARDED_BY(mu_);
  std::map<core::AttemptId, Replica> replicas_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> tunnels_ ABSL_GUARDED_BY(mu_);  // worker -> host:port
  std::map<std::string, Machine> machines_ ABSL_GUARDED_BY(mu_);     // worker -> readings
  std::map<std::pair<core::JobId, uint32_t>, uint32_t> starts_ ABSL_GUARDED_BY(mu_);
  int watchers_ ABSL_GUARDED_BY(mu_) = 0;
  // Replicas removed outside Sweep whose workers Sweep tells to stop: cut short by EndClashing,
  // or retired when they could not drain (no drain_seconds, no tunnel).
  std::vector<std::pair<std::string, core::AttemptId>> stop_now_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&, core::AttemptId)> retired_hook_;
};

}  // namespace idlepool::coordinator
