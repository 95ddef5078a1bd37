// The coordinator's worker sessions: one Session per open WorkerSession.Session stream, and the
// registry of them with what each welcomed worker's Hello said (host name, GPUs, the address of
// its Peer service).
//
// Threads: a Session's handler thread reads the stream and a writer thread of its own drains its
// outbox, so the core thread (which sends through Send) never blocks on a slow worker. The
// registry is called from the session handlers, the core thread and the read RPCs.
// Ownership: sessions are shared (std::shared_ptr) between the registry, their handler and
// their writer. Locking: Session::mu guards its outbox; SessionRegistry::mu_ everything else.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/types.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"

namespace idlepool::coordinator {

// What one session may have queued for its worker: a worker that does not read its stream is cut
// (Session::Send), never buffered without end. A worker that reads drains its queue as fast as
// the core fills it; the largest honest burst is a Hello's kills (at most kMaxListedAttempts,
// coordinator/worker_input.h) and one assignment per slot (4096 slots). Bytes as serialized; an
// assignment of a job with 100,000 inputs is about 15 MB, so several fit.
inline constexpr size_t kMaxOutboxMessages = 32768;
inline constexpr size_t kMaxOutboxBytes = size_t{128} << 20;
// Events one session may have waiting in the core's queue (CoreLoop::PostItem): its handler stops
// reading the stream until the core caught up, so a worker that floods it is held back by the
// stream's flow control instead of growing the queue.
inline constexpr int kMaxSessionEventsInCore = 1024;

// One worker session stream.
struct Session {
  core::SessionId id = 0;
  std::string worker;
  std::string hostname;
  std::string sandbox;  // its Hello's sandbox tier (HelloSandbox)
  grpc::ServerContext* ctx = nullptr;
  grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream = nullptr;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<v1::CoordinatorMessage> outbox ABSL_GUARDED_BY(mu);
  size_t outbox_bytes ABSL_GUARDED_BY(mu) = 0;
  bool end_after_flush ABSL_GUARDED_BY(mu) = false;  // set after a Refused message
  bool done ABSL_GUARDED_BY(mu) = false;             // the handler is leaving; the writer must stop
  bool cut ABSL_GUARDED_BY(mu) = false;  // its worker did not read: the stream is being cancelled
  bool left = false;                     // it said Leaving (handler thread only)
  // Its events posted to the core and not yet taken (kMaxSessionEventsInCore); in_core_cv wakes
  // the handler waiting for room.
  int in_core ABSL_GUARDED_BY(mu) = 0;
  std::condition_variable in_core_cv;

  // Queues `m` (dropped once the handler is leaving, or the session was cut); `end`: close the
  // stream after it. A message that would take the queue past kMaxOutboxMessages or
  // kMaxOutboxBytes cuts the session instead: the queue is dropped and the stream cancelled (its
  // worker must say hello again). Any thread.
  void Send(v1::CoordinatorMessage m, bool end = false);
  // The writer thread's body: writes the outbox until done, a failed write or an end.
  void WriterLoop();
  // The handler is leaving: the writer stops.
  void Finish();
};

// A GPU whose `unavailable` changed with live readings: its index and new value ("" = free).
using GpuFlip = std::pair<uint32_t, std::string>;

// What a welcomed Hello said of its machine, for display (WorkerInfo.hostname, .sandbox).
struct HelloHost {
  std::string hostname;
  std::string sandbox;
};

class SessionRegistry {
 public:
  void Add(std::shared_ptr<Session> s);
  void Remove(core::SessionId id);
  // nullptr when the session is gone.
  std::shared_ptr<Session> Find(core::SessionId id);
  // Every open session of `worker` (a lost worker may still have one).
  std::vector<std::shared_ptr<Session>> OpenOf(const std::string& worker);
  // Every open session.
  std::vector<std::shared_ptr<Session>> All();

  // The core welcomed a session of `worker`: what its Hello said. An empty peer_address
  // forgets the previous one.
  void Welcomed(const std::string& worker, HelloHost host, std::vector<v1::GpuDevice> gpus,
                const std::string& peer_address);
  // Live readings onto the devices the worker's Hello listed; returns the devices whose
  // `unavailable` changed; nullopt when no Hello of the worker was welcomed.
  std::optional<std::vector<GpuFlip>> UpdateGpus(const std::string& worker,
                                                 const std::vector<v1::GpuDevice>& live);
  // Fills the host name, sandbox tier, GPUs and (only while `connected`) the peer address of
  // `out->worker()`.
  void Describe(bool connected, v1::WorkerInfo* out);
  // Drops what the Hellos of these workers said (the core forgot them).
  void Forget(const std::vector<std::string>& workers);

 private:
  std::mutex mu_;
  std::map<core::SessionId, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, HelloHost> hosts_ ABSL_GUARDED_BY(mu_);
  // worker -> the GPUs its last accepted Hello listed (WorkerInfo.gpus)
  std::map<std::string, std::vector<v1::GpuDevice>> gpus_ ABSL_GUARDED_BY(mu_);
  // worker -> its Peer service host:port
  std::map<std::string, std::string> peer_addresses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace idlepool::coordinator
