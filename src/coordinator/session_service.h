// The WorkerSession service: one bidi stream per connected worker. The handler checks the
// Hello, registers the session (sessions.h) and posts it to the core; the core thread welcomes
// only a session it accepted (a name clash is refused instead). Then each WorkerMessage becomes
// a core event (heartbeats, reports, leaving, owner state, cache changes, GPU readings,
// checkpoints) or goes to the worker book (link measurements, sensors) or the log keeper (an
// attempt's output), in session order.
// Bounded per session (sessions.h): a session with kMaxSessionEventsInCore events waiting in the
// core's queue is not read until the core caught up, and one whose worker does not read its
// answers is cut; message lists are capped by worker_input.h.
//
// Threads: gRPC's handler threads, one per session, concurrently; functions it posts run on the
// core thread. Holds references (each must outlive it) to what it feeds; no state of its own
// beyond the next session id (atomic).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "blob/store.h"
#include "coordinator/auth.h"
#include "coordinator/coordinator.h"
#include "coordinator/core_loop.h"
#include "coordinator/log_gate.h"
#include "coordinator/log_keeper.h"
#include "coordinator/revocation_book.h"
#include "coordinator/serve_bridge.h"
#include "coordinator/sessions.h"
#include "coordinator/shared_tracker.h"
#include "coordinator/worker_book.h"
#include "grpcpp/grpcpp.h"
#include "http/http_server.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"

namespace idlepool::coordinator {

struct SessionServiceDeps {
  const Authorizer& authz;
  const Options& options;  // heartbeat and lease timeout, told in Welcome
  const platform::Clock& clock;  // for each session's log gate (log_gate.h)
  CoreLoop& core;
  SessionRegistry& sessions;
  SharedTracker& tracker;
  WorkerBook& book;
  const blob::BlobStore& blobs;  // outputs and checkpoints must be uploaded before reported
  http::ChangeFeed& feed;
  // Set when the coordinator begins to shut down: sessions it ends are not "disconnected".
  const std::atomic<bool>& shutting_down;
  // Service replicas' tunnels and drains, for the gateway (serve_bridge.h); null: not told.
  ServeBridge* serve = nullptr;
  // Attempts' output (LogChunk), kept and fanned out (log_keeper.h); null: dropped.
  LogKeeper* logs = nullptr;
  // What the admin revoked, sent in each Welcome (revocation_book.h); null: an empty list.
  RevocationBook* revocations = nullptr;
};

class SessionService final : public v1::WorkerSession::Service {
 public:
  explicit SessionService(SessionServiceDeps deps) : d_(deps) {}

  grpc::Status Session(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override;

 private:
  using SessionPtr = std::shared_ptr<struct Session>;

  // Posts the hello to the core, and the welcome once the core accepted the session.
  void PostHello(const SessionPtr& session, const v1::Hello& hello, const std::string& peer);
  // On the core thread: a session the core accepted is welcomed (registry, tracker, book).
  void Welcome(const SessionPtr& session, const std::string& peer_address, double cpu_score,
               uint32_t cores, const std::vector<std::string>& cached,
               std::vector<v1::GpuDevice> gpus);
  // Posts `item` to the core for `session`, counted (Session::in_core) until the core takes it.
  void Post(const SessionPtr& session, CoreItem item);
  // Handler thread: waits while `session` has kMaxSessionEventsInCore events in the core's queue;
  // false when its call was cancelled meanwhile.
  bool AwaitCoreRoom(const SessionPtr& session);
  // One message after the Hello.
  // `gate`: the session's log chunks (log_gate.h), handler thread only.
  void Handle(const SessionPtr& session, const v1::WorkerMessage& msg, LogGate& gate);
  void HandleLeaving(const SessionPtr& session, const v1::Leaving& leaving);
  void HandleOwner(const SessionPtr& session, const v1::OwnerState& o);
  void HandleCache(const SessionPtr& session, const v1::CacheChange& cache);
  void HandleGpus(const SessionPtr& session, const v1::GpuReadings& gpus);
  void HandleCheckpoint(const SessionPtr& session, const v1::Checkpoint& checkpoint);
  // A running attempt's output: an empty chunk is dropped at once, one over the session's rate
  // (log_gate.h) too, counted; the rest are fenced on the core thread (in session order, so
  // before the attempt's report), then kept.
  void HandleLog(const SessionPtr& session, const v1::LogChunk& chunk, LogGate& gate);
  // Core thread: live GPU readings onto the devices the Hello listed; readings of an old
  // session are dropped.
  void NoteGpus(const std::string& worker, core::SessionId session,
                const std::vector<v1::GpuDevice>& live);
  // The stream ended: the core, the tracker and the book are told; the writer stops.
  void Close(const SessionPtr& session, std::thread& writer);

  SessionServiceDeps d_;
  std::atomic<core::SessionId> next_session_{1};
};

}  // namespace idlepool::coordinator
