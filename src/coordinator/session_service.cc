#include "coordinator/session_service.h"

#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "coordinator/probe_service.h"
#include "coordinator/worker_input.h"
#include "spdlog/spdlog.h"
#include "status_convert.h"
#include "text/utf8.h"

namespace idlepool::coordinator {

grpc::Status SessionService::Session(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) {
  trust::Principal who;
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.WorkerSession/Session", &who); !st.ok()) {
    return st;
  }
  v1::WorkerMessage first;
  if (!stream->Read(&first)) return grpc::Status::OK;
  if (!first.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "session must start with Hello");
  }
  const v1::Hello& hello = first.hello();
  if (absl::Status st = CheckHello(hello); !st.ok()) return wire::ToGrpc(st);
  // A worker's name is its certificate's: it cannot open a session (and so report, hold or
  // deliver attempts) as another worker.
  if (hello.worker() != who.name) {
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat("Hello.worker \"", text::PrintableText(hello.worker()),
                     "\" is not the name in this worker's certificate (\"", who.name, "\")"));
  }
  auto session = std::make_shared<struct Session>();
  session->id = next_session_.fetch_add(1);
  session->worker = hello.worker();
  session->hostname = text::PrintableText(text::TruncateUtf8(hello.hostname(), 256));
  session->sandbox = HelloSandbox(hello);
  session->ctx = ctx;
  session->stream = stream;
  d_.sessions.Add(session);
  std::thread writer([session] { session->WriterLoop(); });
  spdlog::info("worker {} ({}) connected, session {}, {} slots, holding {} attempts",
               hello.worker(), session->hostname, session->id, hello.capacity().cpus(),
               hello.held_attempts_size());
  PostHello(session, hello, ctx->peer());
  LogGate gate(LogGateFor(hello.capacity().cpus()), d_.clock.Now());
  v1::WorkerMessage msg;
  while (AwaitCoreRoom(session) && stream->Read(&msg)) Handle(session, msg, gate);
  if (gate.refused() > 0) {
    spdlog::warn("worker {} session {}: {} log chunks over the rate were dropped", session->worker,
                 session->id, gate.refused());
  }
  Close(session, writer);
  return grpc::Status::OK;
}

void SessionService::PostHello(const SessionPtr& session, const v1::Hello& hello,
                               const std::string& peer) {
  core::WorkerHello ev = HelloEvent(hello, session->id);
  std::vector<v1::GpuDevice> gpus(hello.gpus().begin(), hello.gpus().end());
  const std::string peer_address = PeerAddress(hello.peer_address(), peer);
  // The same rules as the peer address: a wildcard host is the address the session comes from.
  const std::string tunnel_address = PeerAddress(hello.tunnel_address(), peer);
  const double cpu_score = HelloCpuScore(hello);
  const uint32_t cores = HelloCores(hello);
  std::vector<std::string> cached;
  for (const auto& b : ev.cached) cached.push_back(b.sha256);
  Post(session, CoreItem{core::Event(std::move(ev)), nullptr});
  // Its link as last measured (the workers table after a restart), until it measures again.
  if (const int64_t down = d_.book.DownBytesPerS(session->worker); down > 0) {
    Post(session, CoreItem{core::Event(core::LinkRate{session->worker, double(down)}), nullptr});
  }
  // Welcome only a session the core accepted (a name clash is refused instead), so a worker
  // never reads "joined" and then a refusal.
  Post(session,
       CoreItem{std::nullopt, [this, session, peer_address, tunnel_address, cpu_score, cores,
                               cached = std::move(cached), gpus = std::move(gpus)]() mutable {
                  Welcome(session, peer_address, cpu_score, cores, cached, std::move(gpus));
                  if (d_.serve) d_.serve->WorkerTunnel(session->worker, tunnel_address);
                }});
}

void SessionService::Welcome(const SessionPtr& session, const std::string& peer_address,
                             double cpu_score, uint32_t cores,
                             const std::vector<std::string>& cached,
                             std::vector<v1::GpuDevice> gpus) {
  // This worker's view only: a hello never copies the whole pool.
  if (auto w = d_.core.sched().Worker(session->worker);
      w && w->session == session->id && w->state == core::WorkerState::kConnected) {
    d_.sessions.Welcomed(session->worker, {session->hostname, session->sandbox}, gpus,
                         peer_address);
    {
      std::lock_guard lock(d_.tracker.mu);
      d_.tracker.tracker.Connected(session->worker, session->id, peer_address, cached);
    }
    d_.book.Hello(session->worker, session->id, session->hostname, cpu_score, cores);
    d_.book.RecordConnected(session->worker, session->id);
    v1::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_heartbeat_ms(
        static_cast<uint32_t>(d_.options.heartbeat.count()));
    welcome.mutable_welcome()->set_lease_timeout_ms(
        static_cast<uint32_t>(d_.options.lease_timeout.count()));
    if (d_.revocations == nullptr) {
      welcome.mutable_welcome()->mutable_revocations();  // known: nothing revoked
      session->Send(std::move(welcome));
    } else {
      d_.revocations->Welcome(*session, std::move(welcome));
    }
  }
}

void SessionService::Handle(const SessionPtr& session, const v1::WorkerMessage& msg,
                            LogGate& gate) {
  if (msg.has_heartbeat()) {
    Post(session, CoreItem{core::WorkerHeartbeat{session->worker, session->id}, nullptr});
  } else if (msg.has_report()) {
    Post(session,
         CoreItem{ToCoreReport(d_.blobs, session->worker, session->id, msg.report()), nullptr});
  } else if (msg.has_leaving()) {
    HandleLeaving(session, msg.leaving());
  } else if (msg.has_owner_state()) {
    HandleOwner(session, msg.owner_state());
  } else if (msg.has_cache()) {
    HandleCache(session, msg.cache());
  } else if (msg.has_sensors()) {
    if (d_.serve) d_.serve->WorkerSensors(session->worker, CleanSensors(msg.sensors()));
    Post(session, CoreItem{std::nullopt, [this, worker = session->worker, id = session->id,
                                          sensors = CleanSensors(msg.sensors())] {
                             d_.book.NoteOwner(worker, id, "", "", "", sensors);
                             d_.feed.Bump();  // no core event: tell the dashboards here
                           }});
  } else if (msg.has_gpus()) {
    HandleGpus(session, msg.gpus());
  } else if (msg.has_link()) {
    const int64_t down = d_.book.Link(session->worker, session->id, msg.link(), kMaxProbeBytes);
    if (down > 0) {  // locality counts this worker's missing bytes at its own rate
      Post(session, CoreItem{core::Event(core::LinkRate{session->worker, double(down)}), nullptr});
    }
  } else if (msg.has_checkpoint()) {
    HandleCheckpoint(session, msg.checkpoint());
  } else if (msg.has_log()) {
    HandleLog(session, msg.log(), gate);
  } else if (msg.has_draining()) {
    // Straight to the gateway, not through the core: no new request within milliseconds.
    if (d_.serve) {
      const auto& ids = msg.draining().attempts();
      d_.serve->Draining(session->worker, std::vector<uint64_t>(ids.begin(), ids.end()));
    }
  }
  // Unknown or repeated Hello messages are ignored: one Hello per session.
}

void SessionService::HandleLeaving(const SessionPtr& session, const v1::Leaving& leaving) {
  core::WorkerLeaving ev = LeavingEvent(session->worker, session->id, leaving);
  const size_t vacated = ev.vacated.size();
  Post(session, CoreItem{core::Event(std::move(ev)), nullptr});
  if (!session->left) d_.book.RecordSessionEnd(session->worker, session->id, "left");
  session->left = true;
  spdlog::info("worker {} is leaving; {} attempts vacated", session->worker, vacated);
}

void SessionService::HandleOwner(const SessionPtr& session, const v1::OwnerState& o) {
  core::OwnerStateChanged ev = OwnerEvent(session->worker, session->id, o);
  spdlog::info("worker {}: owner policy says {} ({}){}", session->worker, ev.state, ev.reason,
               ev.accepting ? "" : "; no new work");
  // On the core thread, in session order after the hello's welcome.
  std::optional<v1::SensorReadings> sensors;
  if (o.has_sensors()) sensors = CleanSensors(o.sensors());
  if (d_.serve && sensors) d_.serve->WorkerSensors(session->worker, *sensors);
  Post(session, CoreItem{core::Event(ev),
                         [this, worker = session->worker, id = session->id, state = ev.state,
                          cause = ev.cause, reason = ev.reason, sensors = std::move(sensors)] {
                           d_.book.NoteOwner(worker, id, state, cause, reason, sensors);
                         }});
}

void SessionService::HandleCache(const SessionPtr& session, const v1::CacheChange& cache) {
  core::CacheChanged ev = CacheEvent(session->worker, session->id, cache);
  std::vector<std::string> added;
  for (const auto& b : ev.added) added.push_back(b.sha256);
  // In session order with the hello's Connected (both run on the core thread).
  Post(session, CoreItem{core::Event(ev), [this, worker = session->worker, id = session->id,
                                           added = std::move(added), removed = ev.removed] {
                           std::lock_guard lock(d_.tracker.mu);
                           d_.tracker.tracker.CacheChanged(worker, id, added, removed);
                         }});
}

void SessionService::HandleGpus(const SessionPtr& session, const v1::GpuReadings& gpus) {
  // Live readings (GpuReadings): kept for WorkerInfo.gpus (only the offered indexes); the
  // devices held by the owner policy go to the core.
  std::vector<v1::GpuDevice> live;
  core::GpusHeld ev = GpusEvent(session->worker, session->id, gpus, &live);
  if (d_.serve) d_.serve->WorkerGpus(session->worker, live);
  Post(session,
       CoreItem{core::Event(ev), [this, worker = session->worker, id = session->id,
                                  live = std::move(live)] { NoteGpus(worker, id, live); }});
}

void SessionService::HandleCheckpoint(const SessionPtr& session, const v1::Checkpoint& checkpoint) {
  core::CheckpointSaved ev;
  ev.worker = session->worker;
  ev.session = session->id;
  ev.attempt = checkpoint.attempt();
  std::string problem = CheckpointProblem(d_.blobs, checkpoint.files(), &ev.files);
  if (!problem.empty()) {
    // The previous checkpoint stays; the attempt goes on.
    spdlog::warn("worker {}: checkpoint of attempt {} ignored: {}", session->worker, ev.attempt,
                 problem);
  } else {
    Post(session, CoreItem{core::Event(std::move(ev)), nullptr});
  }
}

void SessionService::HandleLog(const SessionPtr& session, const v1::LogChunk& chunk,
                               LogGate& gate) {
  if (!d_.logs) return;
  if (chunk.data().size() > kMaxLogChunkBytes) {
    spdlog::debug("worker {}: log chunk of attempt {} over {} bytes ignored", session->worker,
                  chunk.attempt(), kMaxLogChunkBytes);
    return;
  }
  // Nothing to keep (a gap it would open shows with the next chunk that has output): never
  // worth a trip to the core thread.
  if (chunk.data().empty()) return;
  if (!gate.Admit(d_.clock.Now())) {
    if (gate.refused() == 1) {
      spdlog::warn(
          "worker {}: session {} sends log chunks faster than an honest worker; those "
          "over the rate are dropped (counted when the session ends)",
          session->worker, session->id);
    }
    return;
  }
  Post(session, CoreItem{std::nullopt,
                         [this, worker = session->worker, id = session->id,
                          attempt = chunk.attempt(), offset = chunk.offset(), data = chunk.data()] {
                           // Only an attempt running on this session: never another worker's,
                           // nor one ended, moved or re-adopted elsewhere.
                           auto task = d_.core.sched().RunningOn(attempt, worker, id);
                           if (task) d_.logs->Append(*task, attempt, offset, data);
                         }});
}

void SessionService::Post(const SessionPtr& session, CoreItem item) {
  {
    std::lock_guard lock(session->mu);
    ++session->in_core;
  }
  item.fn = [session, fn = std::move(item.fn)] {
    if (fn) fn();
    {
      std::lock_guard lock(session->mu);
      --session->in_core;
    }
    session->in_core_cv.notify_one();
  };
  d_.core.PostItem(std::move(item));
}

bool SessionService::AwaitCoreRoom(const SessionPtr& session) {
  std::unique_lock lock(session->mu);
  while (session->in_core >= kMaxSessionEventsInCore) {
    if (session->ctx->IsCancelled()) return false;  // cut, or the coordinator stops
    session->in_core_cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  return true;
}

void SessionService::NoteGpus(const std::string& worker, core::SessionId session,
                              const std::vector<v1::GpuDevice>& live) {
  if (!d_.book.IsWelcomed(worker, session)) return;
  std::optional<std::vector<GpuFlip>> flipped = d_.sessions.UpdateGpus(worker, live);
  if (!flipped) return;
  d_.book.GpuEvents(worker, *flipped);
  d_.feed.Bump();
}

void SessionService::Close(const SessionPtr& session, std::thread& writer) {
  d_.core.PostItem(CoreItem{core::Event(core::SessionClosed{session->worker, session->id}),
                            [this, worker = session->worker, id = session->id] {
                              std::lock_guard lock(d_.tracker.mu);
                              d_.tracker.tracker.Disconnected(worker, id);
                            }});
  session->Finish();
  writer.join();
  d_.sessions.Remove(session->id);
  if (!session->left && !d_.shutting_down.load()) {
    d_.book.RecordSessionEnd(session->worker, session->id, "disconnected");
  }
  spdlog::info("worker {} session {} closed", session->worker, session->id);
}

}  // namespace idlepool::coordinator
