// Session: the worker's one session with the coordinator — the stream, heartbeats, reconnects,
// and delivery of every message the other units send.
//
// Serve() connects out (so the worker works behind NAT), says Hello (the handler fills in what
// the worker holds), resends what must survive a reconnect (the owner state, unacknowledged
// reports), heartbeats at the coordinator's interval (Welcome.heartbeat_ms unless the worker
// was given its own; at most a third of the lease), and hands each coordinator message to the
// handler. When the stream ends it reconnects after a backoff (100 ms doubling to 1 s, so a
// restarted coordinator finds its workers back well within the lease timeout; 5 s after a
// refusal at Hello) until the worker stops.
//
// The channel and every stub are created here, once (Connect): the session's, and a separate
// connection for link probes so probe bytes never queue in front of heartbeats.
//
// Threads: Serve() on the worker's Run thread (its reads run there; a heartbeat thread per
// session); Send() from any thread (serialised by mu_); Leave() from Worker::Stop. Handler
// calls come from the Run thread, one at a time. Ownership: the handler and stop signal are the
// worker's. Errors: Serve returns kPermissionDenied (certificate refused or revoked),
// kFailedPrecondition (this worker refused: protocol, capacity), OK once the worker stops.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "worker/stop_signal.h"

namespace idlepool::worker {

// This machine's host name (Hello.hostname; the worker's default name); "worker" if unknown.
[[nodiscard]] std::string HostName();

class SessionHandler {
 public:
  virtual ~SessionHandler() = default;
  // Before each Hello is sent: the worker's part of it (capacity, cache, attempts held).
  virtual void FillHello(v1::Hello* hello) = 0;
  // Right after the Hello, under the session's send lock: what goes next (the owner state,
  // reports not yet acknowledged).
  virtual void AfterHello(std::vector<v1::WorkerMessage>* then) = 0;
  virtual void OnWelcome() = 0;
  virtual void OnAssign(const v1::Assignment& assignment) = 0;
  virtual void OnKill(const v1::Kill& kill) = 0;
  virtual void OnAck(const v1::ReportAck& ack) = 0;
  // The pool's revocations (in the Welcome, then at every change), for the worker's own ports.
  virtual void OnRevocations(const v1::Revocations& revocations) {}
};

struct SessionConfig {
  std::string coordinator;  // host:port
  // The worker's mTLS credentials (trust/grpc_tls.h), re-read from its identity files, so a
  // renewed certificate is used from the next connection on.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // True when the certificate is due for renewal (identity.h): the session ends, Serve calls
  // `renew` and reconnects. Either may be empty (no renewal).
  std::function<bool()> renewal_due;
  std::function<absl::Status()> renew;
  std::string name;  // the worker's
  std::string boot_id;
  uint32_t slots = 0;                                  // for the log line on joining
  std::optional<std::chrono::milliseconds> heartbeat;  // unset: the coordinator's
};

// The heartbeat period of a welcomed worker: its own (--heartbeat-ms) when given, else the
// coordinator's (Welcome.heartbeat_ms; core::kDefaultHeartbeat when 0), and never more than a
// third of the coordinator's lease timeout: a worker slower than its lease would be lost while
// healthy. `capped_from`: what was asked, when the lease cut it down. Pure.
struct Heartbeat {
  std::chrono::milliseconds period{0};
  std::optional<std::chrono::milliseconds> capped_from;
};
[[nodiscard]] Heartbeat HeartbeatFor(std::optional<std::chrono::milliseconds> own,
                                     const v1::Welcome& welcome);

class Session {
 public:
  Session(SessionConfig config, StopSignal& stop, SessionHandler& handler);

  // Creates the channel and the stubs (with `probe`, the probe connection too).
  void Connect(bool probe);
  // The coordinator's blob service (inputs, outputs, checkpoints) and, with `probe`, its probe
  // service on a connection of its own. Valid after Connect, for the Session's lifetime.
  [[nodiscard]] v1::Blobs::Stub* blobs() const { return blobs_.get(); }
  [[nodiscard]] v1::Probes::Stub* probes() const { return probes_.get(); }

  // Serves sessions until the worker stops (see above).
  [[nodiscard]] absl::Status Serve();

  // Sends `m` on the current session; dropped when none is up (the next Hello resends what
  // must survive).
  void Send(const v1::WorkerMessage& m);

  // Sends `leaving`, half-closes, gives the coordinator up to 2 s to end the session (a cancel
  // right after the write could drop it), then cancels.
  void Leave(const v1::WorkerMessage& leaving);

 private:
  using Stream = grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>;
  grpc::Status RunOnce(bool* welcomed);
  v1::WorkerMessage Hello();
  // Installs the stream and sends the Hello and what follows it; false when stopping.
  bool Open(Stream* stream, grpc::ClientContext* ctx, const v1::WorkerMessage& hello);
  void Dispatch(const v1::CoordinatorMessage& msg, bool* welcomed);
  void Welcomed(const v1::Welcome& welcome);
  void Heartbeats();
  void RenewIfDue();
  // Waits about `d` (less when the worker stops) while letting the channel connect. This process
  // makes only synchronous calls, and gRPC moves a connection attempt (TCP, then TLS) forward only
  // while a thread waits on that channel, else every 5 s from its backup poller: a plain sleep
  // between sessions left each handshake to run past its deadline, and the worker never came
  // back after a partition (issue 16).
  void Pause(std::chrono::milliseconds d);

  const SessionConfig config_;
  StopSignal& stop_;
  SessionHandler& handler_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerSession::Stub> session_;
  std::unique_ptr<v1::Blobs::Stub> blobs_;
  std::unique_ptr<v1::Probes::Stub> probes_;
  std::atomic<std::chrono::milliseconds> heartbeat_;
  bool refused_ = false;  // the last session was refused (Run thread only)

  std::mutex mu_;  // serialises writes on the stream
  Stream* stream_ ABSL_GUARDED_BY(mu_) = nullptr;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::condition_variable stream_cv_;  // stream_ became nullptr (the session ended)

  // The heartbeat thread of the current session.
  std::mutex hb_mu_;
  std::condition_variable hb_cv_;
  bool session_over_ ABSL_GUARDED_BY(hb_mu_) = false;
  bool hb_changed_ ABSL_GUARDED_BY(hb_mu_) = false;  // the interval changed: restart the wait
};

}  // namespace idlepool::worker
