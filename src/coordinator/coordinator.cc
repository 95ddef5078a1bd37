#include "coordinator/coordinator.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "blob/blob.h"
#include "blob/store.h"
#include "coordinator/availability.h"
#include "coordinator/planner.h"
#include "coordinator/pool_metrics.h"
#include "coordinator/timeline.h"
#include "coordinator/tracker.h"
#include "text/utf8.h"
#include "wire/wire.h"
#include "core/scheduler.h"
#include "grpcpp/grpcpp.h"
#include "http/http_server.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "platform/process.h"
#include "platform/random.h"
#include "status_convert.h"
#include "spdlog/spdlog.h"
#include "spec/profile_key.h"
#include "spec/spec.h"
#include "store/store.h"

namespace idlepool::coordinator {
namespace fs = std::filesystem;

namespace {

constexpr const char* kTokenKey = "x-idlepool-token";
constexpr int kMaxMessageBytes = 128 << 20;  // a 64 MiB items file plus framing fits
constexpr uint32_t kProtocolVersion = 1;
constexpr size_t kMaxLogTail = 4096;
constexpr size_t kMaxCachedBlobs = 20000;  // per Hello or CacheChange (proto: Hello.cached)
// Link probes (proto: Probe, ProbeDown, ProbeUp): at most 64 MiB per transfer, 1 MiB per message;
// one throughput probe at a time, with at most kMaxProbeWaiters waiting up to kProbeWait each.
constexpr uint64_t kMaxProbeBytes = uint64_t{64} << 20;
constexpr size_t kMaxProbeMessage = 1 << 20;
constexpr size_t kProbeChunk = 256 << 10;
constexpr int kMaxProbeWaiters = 16;
constexpr core::Millis kProbeWait{60000};
// Worker rows (store::WorkerRecord): written when they change, at most every kBookWriteGap, and
// all of them every kBookRefresh (their availability grows while nothing changes).
constexpr core::Millis kBookWriteGap{500};
constexpr core::Millis kBookRefresh{60000};
// Worker events (store::WorkerEvent) are kept 30 days, and at most 1M rows (the newest): a month
// of a busy pool's timelines, bounded for a flapping one. Trimmed with every kBookRefresh.
constexpr int64_t kEventKeepMs = int64_t{30} * 24 * 3600 * 1000;
constexpr size_t kEventMaxRows = 1'000'000;
// GetJobTimeline: attempts by default and at most (TimelineRequest.max_attempts), and events.
constexpr uint32_t kTimelineMaxAttempts = 20000;
constexpr size_t kTimelineMaxEvents = 100000;

// The readings a worker sent, with every non-finite number dropped (unknown).
v1::SensorReadings CleanSensors(const v1::SensorReadings& in) {
  v1::SensorReadings out;
  auto finite = [](bool has, double v) { return has && std::isfinite(v); };
  if (finite(in.has_temperature_c(), in.temperature_c())) out.set_temperature_c(in.temperature_c());
  if (finite(in.has_battery_percent(), in.battery_percent())) {
    out.set_battery_percent(in.battery_percent());
  }
  if (in.has_on_ac_power()) out.set_on_ac_power(in.on_ac_power());
  if (in.has_lid_closed()) out.set_lid_closed(in.lid_closed());
  if (finite(in.has_idle_seconds(), in.idle_seconds())) out.set_idle_seconds(in.idle_seconds());
  if (finite(in.has_owner_cpu_load(), in.owner_cpu_load())) {
    out.set_owner_cpu_load(in.owner_cpu_load());
  }
  return out;
}



// One worker session stream. The handler thread reads; a writer thread drains `outbox`, so the
// core thread never blocks on a slow worker.
struct Session {
  core::SessionId id = 0;
  std::string worker;
  std::string hostname;
  grpc::ServerContext* ctx = nullptr;
  grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream = nullptr;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<v1::CoordinatorMessage> outbox;
  bool end_after_flush = false;  // set after a Refused message
  bool done = false;             // the handler is leaving; the writer must stop
  bool left = false;             // it said Leaving (handler thread only)

  void Send(v1::CoordinatorMessage m, bool end = false) {
    std::lock_guard lock(mu);
    if (done) return;
    outbox.push_back(std::move(m));
    if (end) end_after_flush = true;
    cv.notify_one();
  }

  void WriterLoop() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return done || !outbox.empty() || end_after_flush; });
      if (done) return;
      while (!outbox.empty()) {
        v1::CoordinatorMessage m = std::move(outbox.front());
        outbox.pop_front();
        lock.unlock();
        bool ok = stream->Write(m);
        lock.lock();
        if (!ok) {
          ctx->TryCancel();
          return;
        }
      }
      if (end_after_flush) {
        ctx->TryCancel();
        return;
      }
    }
  }
};

// Serialises throughput probes: one transfer at a time, so workers joining together each
// measure the link alone rather than a share of it. Thread-safe.
class ProbeGate {
 public:
  // Waits for the gate; false when too many already wait, the wait passed `deadline`, or the
  // call was cancelled.
  bool Enter(grpc::ServerContext* ctx, const platform::Clock& clock, core::MonoTime deadline) {
    std::unique_lock lock(mu_);
    if (waiting_ >= kMaxProbeWaiters) return false;
    ++waiting_;
    while (busy_ && !ctx->IsCancelled() && clock.Now() < deadline) {
      cv_.wait_for(lock, core::Millis(100));
    }
    --waiting_;
    if (busy_) return false;
    busy_ = true;
    return true;
  }
  void Leave() {
    std::lock_guard lock(mu_);
    busy_ = false;
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false;
  int waiting_ = 0;
};

// What the coordinator needs to build assignments for a running job.
struct JobInfo {
  v1::JobSpec spec;
  std::vector<spec::TaskParams> tasks;
  // Some task may have a checkpoint in the store: only then does an assignment read it.
  bool any_checkpoint = false;
};

using spec::kMaxCheckpointFiles;

class CoordinatorImpl final : public Coordinator, public v1::Pool::Service {
 public:
  CoordinatorImpl(const Options& options, const platform::Clock& clock)
      : options_(options),
        clock_(clock),
        blobs_((fs::path(options.data_dir) / "blobs").string()),
        sched_(core::Options{.lease_timeout = options.lease_timeout,
                             .stall_threshold = options.lease_timeout / 2}) {}

  ~CoordinatorImpl() override { Shutdown(); }

  absl::Status Init() {
    std::error_code ec;
    fs::create_directories(options_.data_dir, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create data dir ", options_.data_dir, ": ", ec.message()));
    }
    // One coordinator per data dir: two would both write the store and hand out the same
    // attempt ids.
    auto lock = platform::FileLock::Acquire((fs::path(options_.data_dir) / "LOCK").string());
    if (!lock.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "another coordinator is using this data dir: ", lock.status().message()));
    }
    lock_ = std::move(*lock);
    auto token = LoadOrCreateToken(options_.data_dir, &token_created_);
    if (!token.ok()) return token.status();
    token_ = *token;
    if (auto st = blobs_.Init(clock_.WallMs()); !st.ok()) return st;
    auto store = store::OpenSqliteStore((fs::path(options_.data_dir) / "pool.db").string());
    if (!store.ok()) return store.status();
    store_ = std::move(*store);
    auto restored = store_->Load();
    if (!restored.ok()) return restored.status();
    for (const auto& job : restored->jobs) {
      if (job.state != core::JobState::kRunning) continue;
      auto rec = store_->GetJob(job.spec.job);
      if (!rec.ok()) return rec.status();
      JobInfo info;
      if (!info.spec.ParseFromString(rec->spec)) {
        return absl::DataLossError(absl::StrCat("job ", job.spec.job, ": stored spec unreadable"));
      }
      auto tasks = spec::ExpandTasks(wire::FromProto(info.spec));
      if (!tasks.ok()) return tasks.status();
      info.tasks = std::move(*tasks);
      info.any_checkpoint = true;  // not known without a query; assignments will look
      jobs_[job.spec.job] = std::move(info);
    }
    // Locality needs each running job's inputs; the store keeps them only in the spec.
    for (auto& job : restored->jobs) {
      auto it = jobs_.find(job.spec.job);
      if (it == jobs_.end()) continue;
      for (const auto& in : it->second.spec.inputs()) {
        job.spec.inputs.push_back(core::BlobRef{in.sha256(), in.size()});
      }
    }
    sched_.Restore(*restored, clock_.Now());
    auto known = store_->ListWorkers();
    if (!known.ok()) return known.status();
    {
      std::lock_guard lock(book_mu_);
      for (auto& r : *known) {
        availability_.Restore(r.worker, AvailabilityTotals{r.up_ms, r.down_ms, r.up_periods,
                                                           r.down_periods});
        records_[r.worker] = std::move(r);
      }
    }
    probe_payload_ = blob::PseudoRandomBytes(kProbeChunk);
    book_thread_ = std::thread([this] { BookLoop(); });
    spdlog::info("store: {} jobs, {} running attempts awaiting their workers",
                 restored->jobs.size(), restored->running.size());

    grpc::ServerBuilder builder;
    builder.AddListeningPort(options_.listen, grpc::InsecureServerCredentials(), &port_);
    // gRPC sets SO_REUSEPORT by default, which lets a second coordinator bind the same port and
    // steal half the connections. A port in use must be an error.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.RegisterService(this);
    builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
    builder.SetMaxSendMessageSize(kMaxMessageBytes);
    // Keep dead TCP connections from holding a session open for long.
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
    }
    pool_metrics_.SetStartTime(static_cast<double>(clock_.WallMs()) / 1000.0);
    core_thread_ = std::thread([this] { CoreLoop(); });
    predict_thread_ = std::thread([this] { PredictLoop(); });
    return StartHttp();
  }

  int port() const override { return port_; }
  const std::string& token() const override { return token_; }
  bool token_created() const override { return token_created_; }
  int http_port() const override { return http_ ? http_->port() : 0; }
  std::string http_host() const override { return http_ ? http_->host() : ""; }

  void Shutdown() override {
    {
      std::lock_guard lock(shutdown_mu_);
      if (shut_down_) return;
      shut_down_ = true;
    }
    // First: its handlers ask the core thread, and its event streams must end.
    if (http_) http_->Shutdown();
    shutting_down_.store(true);
    if (server_) server_->Shutdown(platform::DeadlineAfter(std::chrono::seconds(1)));
    {
      std::lock_guard lock(predict_mu_);
      predict_stop_ = true;
      predict_cv_.notify_all();
    }
    if (predict_thread_.joinable()) predict_thread_.join();  // before the core thread: it queries it
    {
      std::lock_guard lock(queue_mu_);
      stopping_ = true;
      queue_cv_.notify_all();
    }
    if (core_thread_.joinable()) core_thread_.join();
    {
      std::lock_guard lock(book_mu_);
      book_stop_ = true;
      book_cv_.notify_all();
    }
    if (book_thread_.joinable()) book_thread_.join();  // writes every row once more
    std::lock_guard lock(done_mu_);
    finished_ = true;
    done_cv_.notify_all();
  }

  absl::Status Wait() override {
    std::unique_lock lock(done_mu_);
    done_cv_.wait(lock, [&] { return finished_ || !fatal_.ok(); });
    return fatal_;
  }

  // ------------------------------------------------------------------------------------------
  // RPCs

  grpc::Status Session(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream)
      override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    v1::WorkerMessage first;
    if (!stream->Read(&first)) return grpc::Status::OK;
    if (!first.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "session must start with Hello");
    }
    const v1::Hello& hello = first.hello();
    if (hello.protocol_version() != kProtocolVersion) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("worker speaks protocol version ", hello.protocol_version(),
                                       ", this coordinator speaks ", kProtocolVersion,
                                       "; run the same idlepool version on both"));
    }
    if (hello.worker().empty() || hello.worker().size() > 256) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "Hello.worker must be a name of 1 to 256 bytes");
    }
    // Names go to terminals, logs and dashboards as they are: no escape sequences in them.
    if (!text::IsPrintableUtf8(hello.worker())) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "Hello.worker must be printable UTF-8 (no control characters)");
    }
    if (hello.capacity().cpus() == 0 || hello.capacity().cpus() > 4096) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "Hello.capacity.cpus must be between 1 and 4096");
    }
    if (std::string problem = wire::GpusProblem(hello.gpus()); !problem.empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, problem);
    }
    auto session = std::make_shared<struct Session>();
    session->id = next_session_.fetch_add(1);
    session->worker = hello.worker();
    session->hostname = text::PrintableText(text::TruncateUtf8(hello.hostname(), 256));
    session->ctx = ctx;
    session->stream = stream;
    {
      std::lock_guard lock(sessions_mu_);
      sessions_[session->id] = session;
    }
    std::thread writer([session] { session->WriterLoop(); });
    spdlog::info("worker {} ({}) connected, session {}, {} slots, holding {} attempts",
                 hello.worker(), session->hostname, session->id, hello.capacity().cpus(),
                 hello.held_attempts_size());

    core::WorkerHello ev;
    ev.worker = hello.worker();
    ev.session = session->id;
    ev.boot_id = hello.boot_id();
    ev.capacity = wire::FromProto(hello.capacity());
    // The devices it listed are what it offers (an older worker lists none: no GPUs).
    ev.gpus = wire::GpusFromProto(hello.gpus());
    ev.capacity.gpus = static_cast<uint32_t>(ev.gpus.size());
    std::vector<v1::GpuDevice> gpu_info(hello.gpus().begin(), hello.gpus().end());
    ev.held.assign(hello.held_attempts().begin(), hello.held_attempts().end());
    ev.accepting = !hello.not_accepting();
    ev.frozen.assign(hello.frozen_attempts().begin(), hello.frozen_attempts().end());
    ev.cached = CachedBlobs(hello.cached(), kMaxCachedBlobs);
    ev.delivering.assign(hello.delivering_attempts().begin(), hello.delivering_attempts().end());
    const std::string peer_address = PeerAddress(hello.peer_address(), ctx->peer());
    // Calibration: a figure out of range (or from an old worker: 0) reads as unknown.
    const double cpu_score =
        std::isfinite(hello.cpu_score()) && hello.cpu_score() > 0 && hello.cpu_score() < 1e7
            ? hello.cpu_score()
            : 0.0;
    const uint32_t cores = hello.cores() <= 65536 ? hello.cores() : 0;
    std::vector<std::string> cached;
    for (const auto& b : ev.cached) cached.push_back(b.sha256);
    Post(std::move(ev));
    // Welcome only a session the core accepted (a name clash is refused instead), so a worker
    // never reads "joined" and then a refusal.
    PostItem(Item{std::nullopt, [this, session, peer_address, cpu_score, cores,
                                 cached = std::move(cached), gpu_info = std::move(gpu_info)] {
                    for (const core::WorkerView& w : sched_.Workers()) {
                      if (w.worker != session->worker || w.session != session->id ||
                          w.state != core::WorkerState::kConnected) {
                        continue;
                      }
                      {
                        std::lock_guard lock(sessions_mu_);
                        hostnames_[session->worker] = session->hostname;
                        gpus_[session->worker] = gpu_info;
                        if (peer_address.empty()) {
                          peer_addresses_.erase(session->worker);
                        } else {
                          peer_addresses_[session->worker] = peer_address;
                        }
                      }
                      {
                        std::lock_guard lock(tracker_mu_);
                        tracker_.Connected(session->worker, session->id, peer_address, cached);
                      }
                      BookHello(session->worker, session->id, session->hostname, cpu_score,
                                cores);
                      RecordConnected(session->worker, session->id);
                      v1::CoordinatorMessage welcome;
                      welcome.mutable_welcome()->set_heartbeat_ms(
                          static_cast<uint32_t>(options_.heartbeat.count()));
                      welcome.mutable_welcome()->set_lease_timeout_ms(
                          static_cast<uint32_t>(options_.lease_timeout.count()));
                      session->Send(std::move(welcome));
                    }
                  }});

    v1::WorkerMessage msg;
    while (stream->Read(&msg)) {
      if (msg.has_heartbeat()) {
        Post(core::WorkerHeartbeat{session->worker, session->id});
      } else if (msg.has_report()) {
        Post(ToCoreReport(*session, msg.report()));
      } else if (msg.has_leaving()) {
        const auto& v = msg.leaving().vacated_attempts();
        Post(core::WorkerLeaving{session->worker, session->id,
                                 std::vector<core::AttemptId>(v.begin(), v.end())});
        if (!session->left) RecordSessionEnd(session->worker, session->id, "left");
        session->left = true;
        spdlog::info("worker {} is leaving; {} attempts vacated", session->worker, v.size());
      } else if (msg.has_owner_state()) {
        const v1::OwnerState& o = msg.owner_state();
        core::OwnerStateChanged ev;
        ev.worker = session->worker;
        ev.session = session->id;
        ev.accepting = o.accepting();
        ev.state = text::PrintableText(text::TruncateUtf8(o.state(), 32));
        ev.reason = text::PrintableText(text::TruncateUtf8(o.reason(), 256));
        ev.cause = text::PrintableText(text::TruncateUtf8(o.cause(), 32));
        ev.suspended.assign(o.suspended_attempts().begin(), o.suspended_attempts().end());
        spdlog::info("worker {}: owner policy says {} ({}){}", session->worker, ev.state,
                     ev.reason, ev.accepting ? "" : "; no new work");
        // On the core thread, in session order after the hello's welcome.
        std::optional<v1::SensorReadings> sensors;
        if (o.has_sensors()) sensors = CleanSensors(o.sensors());
        PostItem(Item{core::Event(ev), [this, worker = session->worker, id = session->id,
                                        state = ev.state, cause = ev.cause, reason = ev.reason,
                                        sensors = std::move(sensors)] {
                        NoteOwner(worker, id, state, cause, reason, sensors);
                      }});
      } else if (msg.has_cache()) {
        core::CacheChanged ev;
        ev.worker = session->worker;
        ev.session = session->id;
        ev.added = CachedBlobs(msg.cache().added(), kMaxCachedBlobs);
        for (const auto& sha : msg.cache().removed()) {
          if (ev.removed.size() >= kMaxCachedBlobs) break;
          if (blob::IsSha256Hex(sha)) ev.removed.push_back(sha);
        }
        std::vector<std::string> added;
        for (const auto& b : ev.added) added.push_back(b.sha256);
        // In session order with the hello's Connected (both run on the core thread).
        PostItem(Item{core::Event(ev), [this, worker = session->worker, id = session->id,
                                        added = std::move(added), removed = ev.removed] {
                        std::lock_guard lock(tracker_mu_);
                        tracker_.CacheChanged(worker, id, added, removed);
                      }});
      } else if (msg.has_sensors()) {
        PostItem(Item{std::nullopt, [this, worker = session->worker, id = session->id,
                                     sensors = CleanSensors(msg.sensors())] {
                        NoteOwner(worker, id, "", "", "", sensors);
                        PoolChanged();  // no core event: tell the dashboards here
                      }});
      } else if (msg.has_gpus()) {
        // Live readings (GpuReadings): kept for WorkerInfo.gpus; the devices held by the owner
        // policy go to the core. Only the offered indexes, only the live fields are taken.
        core::GpusHeld ev;
        ev.worker = session->worker;
        ev.session = session->id;
        std::vector<v1::GpuDevice> live;
        for (const v1::GpuDevice& g : msg.gpus().devices()) {
          if (live.size() >= static_cast<size_t>(wire::kMaxGpus)) break;
          v1::GpuDevice d;
          d.set_index(g.index());
          if (g.has_temperature_c() && std::isfinite(g.temperature_c())) {
            d.set_temperature_c(g.temperature_c());
          }
          if (g.has_utilization() && std::isfinite(g.utilization())) {
            d.set_utilization(std::clamp(g.utilization(), 0.0, 1.0));
          }
          if (g.has_memory_used_mb()) d.set_memory_used_mb(g.memory_used_mb());
          d.set_unavailable(text::PrintableText(text::TruncateUtf8(g.unavailable(), 32)));
          if (!d.unavailable().empty()) ev.held.push_back(d.index());
          live.push_back(std::move(d));
        }
        PostItem(Item{core::Event(ev), [this, worker = session->worker, id = session->id,
                                        live = std::move(live)] {
                        NoteGpus(worker, id, live);
                      }});
      } else if (msg.has_link()) {
        BookLink(session->worker, session->id, msg.link());
      } else if (msg.has_checkpoint()) {
        core::CheckpointSaved ev;
        ev.worker = session->worker;
        ev.session = session->id;
        ev.attempt = msg.checkpoint().attempt();
        std::string problem = CheckpointProblem(msg.checkpoint().files(), &ev.files);
        if (!problem.empty()) {
          // The previous checkpoint stays; the attempt goes on.
          spdlog::warn("worker {}: checkpoint of attempt {} ignored: {}", session->worker,
                       ev.attempt, problem);
        } else {
          Post(std::move(ev));
        }
      }
      // Unknown or repeated Hello messages are ignored: one Hello per session.
    }
    PostItem(Item{core::Event(core::SessionClosed{session->worker, session->id}),
                  [this, worker = session->worker, id = session->id] {
                    std::lock_guard lock(tracker_mu_);
                    tracker_.Disconnected(worker, id);
                  }});
    {
      std::lock_guard lock(session->mu);
      session->done = true;
      session->cv.notify_all();
    }
    writer.join();
    {
      std::lock_guard lock(sessions_mu_);
      sessions_.erase(session->id);
    }
    if (!session->left && !shutting_down_.load()) {
      RecordSessionEnd(session->worker, session->id, "disconnected");
    }
    spdlog::info("worker {} session {} closed", session->worker, session->id);
    return grpc::Status::OK;
  }

  // Blob calls: the logic lives in blob::BlobStore; these only adapt the streams.
  grpc::Status PutBlob(grpc::ServerContext* ctx, grpc::ServerReader<v1::BlobChunk>* reader,
                       v1::PutBlobReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    auto got = blobs_.ReceiveUpload([&](v1::BlobChunk* m) {
      if (!reader->Read(m)) return false;
      pool_metrics_.BytesReceived(m->data().size());
      return true;
    });
    if (!got.ok()) return wire::ToGrpc(got.status());
    *reply = *got;
    return grpc::Status::OK;
  }

  grpc::Status GetBlob(grpc::ServerContext* ctx, const v1::GetBlobRequest* req,
                       grpc::ServerWriter<v1::BlobChunk>* writer) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    return wire::ToGrpc(
        blobs_.ServeRange(*req, [&](const v1::BlobChunk& m) {
          pool_metrics_.BytesServed(m.data().size());
          return writer->Write(m);
        }));
  }

  grpc::Status HasBlobs(grpc::ServerContext* ctx, const v1::HasBlobsRequest* req,
                        v1::HasBlobsReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    *reply = blobs_.Query(*req);
    return grpc::Status::OK;
  }

  grpc::Status GetManifest(grpc::ServerContext* ctx, const v1::GetManifestRequest* req,
                           v1::BlobManifest* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    auto m = blobs_.GetManifest(req->sha256());
    if (!m.ok()) return wire::ToGrpc(m.status());
    *reply = blob::ToProto(*m);
    return grpc::Status::OK;
  }

  // Peer-to-peer: the manifest and where the blob's chunks are (see tracker.h).
  grpc::Status LocateBlob(grpc::ServerContext* ctx, const v1::LocateBlobRequest* req,
                          v1::LocateBlobReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    if (auto st = CheckPeerRequest(req->sha256(), req->worker()); !st.ok()) return st;
    auto m = blobs_.GetManifest(req->sha256());
    if (!m.ok()) return wire::ToGrpc(m.status());
    std::vector<PeerRef> peers;
    {
      std::lock_guard lock(tracker_mu_);
      peers = tracker_.Locate(req->sha256(), m->chunk_count(), req->worker(), clock_.Now());
    }
    *reply->mutable_manifest() = blob::ToProto(*m);
    for (const auto& p : peers) {
      auto* out = reply->add_peers();
      out->set_worker(p.worker);
      out->set_address(p.address);
      out->set_complete(p.complete);
    }
    return grpc::Status::OK;
  }

  // One chunk of the coordinator's choosing among those the worker wants (see tracker.h).
  grpc::Status FetchChunk(grpc::ServerContext* ctx, const v1::FetchChunkRequest* req,
                          v1::ChunkData* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    if (auto st = CheckPeerRequest(req->sha256(), req->worker()); !st.ok()) return st;
    auto size = blobs_.SizeOf(req->sha256());
    if (!size.ok()) return wire::ToGrpc(size.status());
    const uint64_t chunks = blob::ChunkCountFor(*size);
    if (req->wanted_size() == 0 || static_cast<uint64_t>(req->wanted_size()) > chunks) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("FetchChunk.wanted must list 1 to ", chunks,
                                       " chunks, got ", req->wanted_size()));
    }
    std::vector<uint32_t> wanted(req->wanted().begin(), req->wanted().end());
    absl::StatusOr<uint32_t> index;
    {
      std::lock_guard lock(tracker_mu_);
      index = tracker_.Choose(req->sha256(), static_cast<uint32_t>(chunks), wanted,
                              req->worker(), clock_.Now(), req->no_usable_peer());
    }
    if (!index.ok()) return wire::ToGrpc(index.status());
    auto data = blobs_.ReadChunk(req->sha256(), *index);
    if (!data.ok()) return wire::ToGrpc(data.status());
    reply->set_sha256(req->sha256());
    reply->set_index(*index);
    reply->set_data(std::move(*data));
    pool_metrics_.BytesServed(reply->data().size());
    return grpc::Status::OK;
  }

  // Link probes (worker/measure.h). A round trip: nothing to do.
  grpc::Status Probe(grpc::ServerContext* ctx, const v1::ProbeRequest* req,
                     v1::ProbeReply*) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    if (req->bytes() != 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Probe.bytes must be 0");
    }
    return grpc::Status::OK;
  }

  // Throughput down: once this probe has the gate, an empty message (go), then the bytes.
  grpc::Status ProbeDown(grpc::ServerContext* ctx, const v1::ProbeRequest* req,
                         grpc::ServerWriter<v1::ProbeData>* writer) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    if (req->bytes() == 0 || req->bytes() > kMaxProbeBytes) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("ProbeDown.bytes must be 1 to ", kMaxProbeBytes));
    }
    if (!probe_gate_.Enter(ctx, clock_, clock_.Now() + kProbeWait)) return ProbeBusy();
    struct Leave {
      ProbeGate& g;
      ~Leave() { g.Leave(); }
    } leave{probe_gate_};
    v1::ProbeData d;
    if (!writer->Write(d)) return grpc::Status::OK;
    for (uint64_t sent = 0; sent < req->bytes(); sent += kProbeChunk) {
      d.set_data(probe_payload_.data(), std::min<uint64_t>(kProbeChunk, req->bytes() - sent));
      if (!writer->Write(d)) return grpc::Status::OK;
    }
    return grpc::Status::OK;
  }

  // Throughput up: the announced size, go, the bytes, and the time from go to the last byte.
  grpc::Status ProbeUp(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::ProbeReply, v1::ProbeData>* stream) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    v1::ProbeData head;
    if (!stream->Read(&head)) return grpc::Status::OK;
    const uint64_t want = head.bytes();
    if (want == 0 || want > kMaxProbeBytes || !head.data().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("ProbeUp must start with ProbeData.bytes of 1 to ",
                                       kMaxProbeBytes, " and no data"));
    }
    if (!probe_gate_.Enter(ctx, clock_, clock_.Now() + kProbeWait)) return ProbeBusy();
    struct Leave {
      ProbeGate& g;
      ~Leave() { g.Leave(); }
    } leave{probe_gate_};
    const int64_t t0 = platform::SteadyNanos();
    if (!stream->Write(v1::ProbeReply{})) return grpc::Status::OK;
    uint64_t got = 0;
    v1::ProbeData d;
    while (got < want && stream->Read(&d)) {
      if (d.data().size() > kMaxProbeMessage || d.bytes() != 0) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "ProbeUp: data messages carry at most 1 MiB and no size");
      }
      got += d.data().size();
    }
    const int64_t t1 = platform::SteadyNanos();
    if (got != want) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("ProbeUp: got ", got, " bytes, announced ", want));
    }
    v1::ProbeReply r;
    r.set_bytes(got);
    r.set_elapsed_us(static_cast<uint64_t>(std::max<int64_t>(1, (t1 - t0) / 1000)));
    stream->Write(r);
    return grpc::Status::OK;
  }

  grpc::Status SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req,
                         v1::SubmitJobReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    const v1::JobSpec& proto = req->spec();
    spec::JobSpec spec = wire::FromProto(proto);
    if (auto st = spec::Validate(spec); !st.ok()) return wire::ToGrpc(st);
    for (const auto& in : proto.inputs()) {
      if (!blobs_.Has(in.sha256())) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            absl::StrCat("input '", in.path(), "' (blob ", in.sha256(),
                                         ") was not uploaded before SubmitJob"));
      }
      std::error_code ec;
      if (fs::file_size(blobs_.PathOf(in.sha256()), ec) != in.size() || ec) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            absl::StrCat("input '", in.path(), "' claims ", in.size(),
                                         " bytes but its blob holds a different size"));
      }
    }
    auto tasks = spec::ExpandTasks(spec);
    if (!tasks.ok()) return wire::ToGrpc(tasks.status());
    if (tasks->empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "job has no tasks");
    }
    store::NewJob job;
    job.name = spec.name;
    job.spec = proto.SerializeAsString();
    job.sched.task_count = static_cast<uint32_t>(tasks->size());
    job.sched.resources = spec.resources;
    job.sched.max_attempts = spec.max_attempts;
    job.sched.timeout = core::Millis(static_cast<int64_t>(spec.timeout_s) * 1000);
    std::vector<std::string> input_hashes;
    for (const auto& in : proto.inputs()) {
      job.sched.inputs.push_back(core::BlobRef{in.sha256(), in.size()});
      input_hashes.push_back(in.sha256());
      job.input_bytes += in.size();
    }
    job.input_files = static_cast<uint32_t>(proto.inputs_size());
    job.profile_key = spec::ProfileKeyOf(spec, std::move(input_hashes));
    auto id = store_->InsertJob(job, clock_.WallMs());
    if (!id.ok()) return wire::ToGrpc(id.status());
    // Durable now. Hand it to the core and answer once the core knows it, so a status call
    // right after submit always finds the job.
    job.sched.job = *id;
    uint32_t count = job.sched.task_count;
    auto info = std::make_shared<JobInfo>(JobInfo{proto, std::move(*tasks)});
    auto done = std::make_shared<std::promise<void>>();
    auto fut = done->get_future();
    PostItem(Item{core::Event(job.sched), [this, info, id = *id, done] {
                    jobs_[id] = std::move(*info);
                    done->set_value();
                  }});
    fut.wait();
    spdlog::info("job {} '{}' submitted: {} tasks", *id, spec.name, count);
    {
      std::lock_guard lock(predict_mu_);
      awaiting_[*id] = AwaitingPrediction{proto, count, false};
      predict_cv_.notify_all();
    }
    reply->set_job(*id);
    reply->set_tasks(count);
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext* ctx, const v1::JobRef* req,
                      v1::JobStatus* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    return FillJobStatus(req->job(), /*with_failures=*/true, reply);
  }

  grpc::Status ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest*,
                        v1::ListJobsReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    return ListJobsInternal(reply);
  }

  // ListJobs without the token check (also the HTTP API's GET /api/v1/jobs).
  grpc::Status ListJobsInternal(v1::ListJobsReply* reply) {
    auto jobs = Query<std::vector<core::JobSummary>>([this] { return sched_.Jobs(); });
    for (const auto& s : jobs) {
      auto st = FillJobStatus(s.job, false, reply->add_jobs());
      if (!st.ok()) return st;
    }
    return grpc::Status::OK;
  }

  grpc::Status ListOutputs(grpc::ServerContext* ctx, const v1::JobRef* req,
                           grpc::ServerWriter<v1::ListOutputsReply>* writer) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    auto job = store_->GetJobHeader(req->job());
    if (absl::IsNotFound(job.status())) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", req->job()));
    }
    if (!job.ok()) return wire::ToGrpc(job.status());
    auto outputs = store_->ListOutputs(req->job());
    if (!outputs.ok()) return wire::ToGrpc(outputs.status());
    constexpr int kTasksPerPage = 10000;
    constexpr size_t kPageBytes = 16 << 20;  // well under the 128 MiB message limit
    size_t page_bytes = 0;
    v1::ListOutputsReply page;
    page.set_state(core::ToString(job->state));
    v1::TaskOutputs* cur = nullptr;
    for (const auto& o : *outputs) {
      if (!cur || cur->index() != o.index) {
        if (page.tasks_size() == kTasksPerPage || page_bytes > kPageBytes) {
          if (!writer->Write(page)) return grpc::Status::OK;
          page.clear_tasks();
          page_bytes = 0;
        }
        cur = page.add_tasks();
        cur->set_index(o.index);
      }
      auto* f = cur->add_files();
      f->set_path(o.file.path);
      f->set_sha256(o.file.sha256);
      f->set_size(o.file.size);
      page_bytes += o.file.path.size() + 96;  // path, hash, size and framing, roughly
    }
    writer->Write(page);
    return grpc::Status::OK;
  }

  grpc::Status ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest*,
                           v1::ListWorkersReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    return ListWorkersInternal(reply);
  }

  // ListWorkers without the token check (also the HTTP API's GET /api/v1/workers and /metrics).
  grpc::Status ListWorkersInternal(v1::ListWorkersReply* reply) {
    auto now = clock_.Now();
    auto workers = Query<std::vector<core::WorkerView>>([this] { return sched_.Workers(); });
    std::lock_guard lock(sessions_mu_);
    for (const auto& w : workers) {
      auto* out = reply->add_workers();
      out->set_worker(w.worker);
      out->set_state(w.state == core::WorkerState::kConnected      ? "connected"
                     : w.state == core::WorkerState::kDisconnected ? "disconnected"
                     : w.state == core::WorkerState::kLeft         ? "left"
                                                                   : "lost");
      *out->mutable_capacity() = wire::ToProto(w.capacity);
      out->set_slots_busy(w.slots_busy);
      out->set_attempts_running(w.attempts_running);
      out->set_last_seen_ms_ago((now - w.last_seen).count());
      out->set_accepting(w.accepting);
      out->set_owner_state(w.owner_state);
      out->set_owner_reason(w.owner_reason);
      out->set_owner_cause(w.owner_cause);
      out->set_activity(WorkerActivity({out->state(), w.owner_state, w.owner_cause,
                                        w.attempts_running}));
      auto it = hostnames_.find(w.worker);
      if (it != hostnames_.end()) out->set_hostname(it->second);
      if (auto g = gpus_.find(w.worker); g != gpus_.end()) {
        for (const v1::GpuDevice& d : g->second) *out->add_gpus() = d;
      }
      for (uint32_t i : w.gpus_busy) out->add_gpus_busy(i);
      out->set_cache_bytes(w.cache_bytes);
      out->set_cache_blobs(w.cache_blobs);
      auto p = peer_addresses_.find(w.worker);
      if (p != peer_addresses_.end() && w.state == core::WorkerState::kConnected) {
        out->set_peer_address(p->second);  // only while it can serve
      }
    }
    // Measurements, and the workers known only from the store (not seen since this start).
    const int64_t now_ms = MonoMs(now), wall_ms = clock_.WallMs();
    std::lock_guard book(book_mu_);
    std::set<std::string> listed;
    for (auto& out : *reply->mutable_workers()) {
      listed.insert(out.worker());
      auto r = records_.find(out.worker());
      if (r != records_.end()) FillMeasurements(r->second, now_ms, wall_ms, &out);
      auto s = sensors_.find(out.worker());
      if (s != sensors_.end()) *out.mutable_sensors() = s->second;
    }
    for (const auto& [name, r] : records_) {
      if (listed.count(name)) continue;
      auto* out = reply->add_workers();
      out->set_worker(name);
      out->set_state("disconnected");
      out->set_hostname(r.hostname);
      out->set_activity("disconnected");
      out->set_last_seen_ms_ago(-1);  // not since this coordinator started
      out->set_accepting(false);
      FillMeasurements(r, now_ms, wall_ms, out);
    }
    return grpc::Status::OK;
  }

  grpc::Status CancelJob(grpc::ServerContext* ctx, const v1::JobRef* req,
                         v1::CancelJobReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    auto known = Query<bool>([this, id = req->job()] { return sched_.Job(id).has_value(); });
    if (!known) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", req->job()));
    }
    // Answer only once the cancellation is committed: a cancel acknowledged and then undone by
    // a crash would run the job again.
    auto done = std::make_shared<std::promise<void>>();
    auto fut = done->get_future();
    PostItem(Item{core::Event(core::JobCancelled{req->job()}), nullptr,
                  [done] { done->set_value(); }});
    fut.wait();
    auto state = Query<std::string>([this, id = req->job()] {
      auto s = sched_.Job(id);
      return std::string(s ? core::ToString(s->state) : "unknown");
    });
    reply->set_state(state);
    return grpc::Status::OK;
  }

  // The planner (planner.h): a job's predicted makespan on this pool and on its best machine.
  grpc::Status PlanJob(grpc::ServerContext* ctx, const v1::PlanRequest* req,
                       v1::PlanReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    const v1::JobSpec& proto = req->spec();
    spec::JobSpec spec = wire::FromProto(proto);
    if (auto st = spec::Validate(spec); !st.ok()) return wire::ToGrpc(st);
    auto tasks = spec::TaskCount(spec);
    if (!tasks.ok()) return wire::ToGrpc(tasks.status());
    if (*tasks == 0) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "job has no tasks");
    if (!std::isfinite(req->task_s()) || req->task_s() < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "PlanRequest.task_s must be finite and >= 0 (0: use the profile)");
    }
    for (const auto& in : proto.inputs()) {
      if (!blob::IsSha256Hex(in.sha256())) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            absl::StrCat("input '", in.path(), "': sha256 must be 64 hex digits"));
      }
    }
    std::vector<std::string> only(req->workers().begin(), req->workers().end());
    std::string unknown;
    std::vector<PlanWorker> workers = GatherPlanWorkers(proto, only, &unknown);
    if (!unknown.empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("worker '", unknown,
                                       "' is not connected and accepting work (see `idlepool "
                                       "workers`)"));
    }
    uint32_t fit = 0;
    for (const PlanWorker& w : workers) fit += SlotsFor(w.capacity, spec.resources) > 0 ? 1 : 0;
    reply->set_workers_available(fit);
    const std::string key = ProfileKeyOf(proto, spec);
    reply->set_profile_key(key);
    PlanJobFacts facts = FactsOf(proto, spec, *tasks);
    if (req->task_s() > 0) facts.task_s = req->task_s();
    if (req->has_output_bytes()) facts.output_bytes = static_cast<double>(req->output_bytes());
    auto samples = store_->ListSucceededAttempts({key, 0, kPlanSamples});
    if (!samples.ok()) return wire::ToGrpc(samples.status());
    auto p = coordinator::Predict(facts, workers, *samples,
                                  facts.task_s ? "given task time" : HistoryBasis(*samples, 0),
                                  clock_.WallMs());
    if (!p.ok()) {
      if (absl::IsFailedPrecondition(p.status()) && fit > 0) {
        reply->set_needs_calibration(true);
        return grpc::Status::OK;
      }
      return wire::ToGrpc(p.status());
    }
    *reply->mutable_prediction() = std::move(*p);
    return grpc::Status::OK;
  }

  grpc::Status GetProfile(grpc::ServerContext* ctx, const v1::ProfileRequest* req,
                          v1::ProfileReply* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    constexpr uint32_t kDefaultSamples = 200, kMaxSamples = 5000;
    store::SucceededAttemptsQuery q;
    q.job = req->job();
    if (q.job != 0 && !req->profile_key().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "GetProfile: give a job or a profile key, not both");
    }
    if (q.job == 0) {
      if (!blob::IsSha256Hex(req->profile_key())) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "GetProfile: profile_key must be 64 lowercase hex digits (or give a "
                            "job)");
      }
      q.profile_key = req->profile_key();
    }
    q.limit = req->max_samples() == 0 ? kDefaultSamples
                                      : std::min(req->max_samples(), kMaxSamples);
    std::set<core::JobId> job_ids;
    if (q.job != 0) {
      auto rec = store_->GetJobHeader(q.job);
      if (absl::IsNotFound(rec.status())) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", q.job));
      }
      if (!rec.ok()) return wire::ToGrpc(rec.status());
      reply->set_profile_key(rec->profile_key);
      job_ids.insert(q.job);
    } else {
      reply->set_profile_key(q.profile_key);
    }
    auto attempts = store_->ListSucceededAttempts(q);
    if (!attempts.ok()) return wire::ToGrpc(attempts.status());
    for (const store::AttemptRecord& a : *attempts) {
      v1::ProfileSample* p = reply->add_samples();
      p->set_worker(a.worker);
      p->set_job(a.task.job);
      p->set_task(a.task.index);
      p->set_attempt(a.attempt);
      p->set_stage_ms(a.timing.stage_ms);
      p->set_run_ms(a.timing.run_ms);
      p->set_upload_ms(a.timing.upload_ms);
      p->set_resumed(a.timing.resumed);
      p->set_wall_ms(static_cast<uint64_t>(std::max<int64_t>(a.ended_ms - a.started_ms, 0)));
      p->set_ended_ms(a.ended_ms);
      ToProto(a.transfer, p->mutable_transfer());
      job_ids.insert(a.task.job);
    }
    for (core::JobId id : job_ids) {
      auto rec = store_->GetJobHeader(id);
      if (!rec.ok()) return wire::ToGrpc(rec.status());
      v1::ProfileJob* j = reply->add_jobs();
      j->set_job(id);
      j->set_name(rec->name);
      j->set_state(core::ToString(rec->state));
      j->set_tasks(rec->sched.task_count);
      j->set_input_bytes(rec->input_bytes);
      j->set_input_files(rec->input_files);
      j->set_profile_key(rec->profile_key);
    }
    return grpc::Status::OK;
  }

  // A job's attempts (log tails included) and the events of the workers that ran them, from its
  // submission to its end (now while it runs).
  grpc::Status GetJobTimeline(grpc::ServerContext* ctx, const v1::TimelineRequest* req,
                              v1::JobTimeline* reply) override {
    if (auto st = CheckToken(ctx); !st.ok()) return st;
    return GetJobTimelineInternal(*req, reply);
  }

  // The body of GetJobTimeline, without the token check; the HTTP API's
  // /api/v1/jobs/N/timeline[.svg] calls it too.
  grpc::Status GetJobTimelineInternal(const v1::TimelineRequest& request, v1::JobTimeline* reply) {
    const v1::TimelineRequest* req = &request;
    const core::JobId job = req->job();
    if (auto st = FillJobStatus(job, /*with_failures=*/true, reply->mutable_job()); !st.ok()) {
      return st;
    }
    const int64_t now_ms = clock_.WallMs();
    reply->set_now_ms(now_ms);
    auto attempts = store_->ListAttempts(job);
    if (!attempts.ok()) return wire::ToGrpc(attempts.status());
    const std::vector<uint64_t> next = NextAttempts(*attempts);  // before any is dropped
    const uint32_t max_attempts = req->max_attempts() == 0
                                      ? kTimelineMaxAttempts
                                      : std::min(req->max_attempts(), kTimelineMaxAttempts);
    const size_t first = attempts->size() > max_attempts ? attempts->size() - max_attempts : 0;
    if (first > 0) reply->set_truncated(true);  // ListAttempts is by id: the newest are last
    std::set<std::string> workers;
    for (size_t i = first; i < attempts->size(); ++i) {
      const store::AttemptRecord& a = (*attempts)[i];
      workers.insert(a.worker);
      v1::TimelineAttempt* t = reply->add_attempts();
      t->set_attempt(a.attempt);
      t->set_task(a.task.index);
      t->set_worker(a.worker);
      t->set_outcome(core::ToString(a.outcome));
      t->set_started_ms(a.started_ms);
      t->set_ended_ms(a.ended_ms);
      t->set_exit_code(a.exit_code);
      // The stored message carries the log tail after it (for `status`); here it has its own field.
      std::string message = a.message;
      const std::string suffix = "\n" + a.log_tail;
      if (!a.log_tail.empty() && message.size() >= suffix.size() &&
          message.compare(message.size() - suffix.size(), suffix.size(), suffix) == 0) {
        message.resize(message.size() - suffix.size());
      }
      t->set_message(std::move(message));
      t->set_log_tail(a.log_tail);
      t->set_suspensions(a.suspensions);
      t->set_lost_ms(static_cast<uint64_t>(std::max<int64_t>(a.lost_ms, 0)));
      ToProto(a.transfer, t->mutable_transfer());
      v1::AttemptTiming* tm = t->mutable_timing();
      tm->set_stage_ms(a.timing.stage_ms);
      tm->set_run_ms(a.timing.run_ms);
      tm->set_upload_ms(a.timing.upload_ms);
      tm->set_resumed(a.timing.resumed);
      t->set_next_attempt(next[i]);
    }
    if (workers.empty()) return grpc::Status::OK;
    store::WorkerEventsQuery q;
    q.workers.assign(workers.begin(), workers.end());
    q.from_ms = reply->job().submitted_ms();
    q.to_ms = reply->job().finished_ms() > 0 ? reply->job().finished_ms() : now_ms;
    q.limit = kTimelineMaxEvents + 1;
    auto events = store_->ListWorkerEvents(q);
    if (!events.ok()) return wire::ToGrpc(events.status());
    const size_t skip = events->size() > kTimelineMaxEvents ? events->size() - kTimelineMaxEvents
                                                            : 0;
    if (skip > 0) reply->set_truncated(true);
    for (size_t i = skip; i < events->size(); ++i) {
      const store::WorkerEvent& e = (*events)[i];
      v1::WorkerEvent* o = reply->add_events();
      o->set_worker(e.worker);
      o->set_at_ms(e.at_ms);
      o->set_kind(e.kind);
      o->set_state(e.state);
      o->set_cause(e.cause);
      o->set_reason(e.reason);
    }
    return grpc::Status::OK;
  }

 private:
  static void ToProto(const core::Transfer& t, v1::Transfer* o) {
    o->set_input_bytes(t.input_bytes);
    o->set_cached_bytes(t.cached_bytes);
    o->set_coordinator_bytes(t.coordinator_bytes);
    o->set_peer_bytes(t.peer_bytes);
    o->set_output_bytes(t.output_bytes);
    o->set_cache_hits(static_cast<uint32_t>(std::min<uint64_t>(t.cache_hits, UINT32_MAX)));
    o->set_cache_misses(static_cast<uint32_t>(std::min<uint64_t>(t.cache_misses, UINT32_MAX)));
  }

  struct Item {
    std::optional<core::Event> event;
    std::function<void()> fn;  // runs on the core thread before `event` is applied
    // Runs once the records of the batch holding `event` are committed: an RPC that must not
    // answer before its effect is durable waits for it.
    std::function<void()> after_commit = {};
    int64_t queued_ns = 0;  // platform::SteadyNanos() when posted (scheduling latency metric)
  };

  static grpc::Status ProbeBusy() {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "busy with other workers' link probes; try again later");
  }

  static grpc::Status CheckPeerRequest(const std::string& sha256, const std::string& worker) {
    if (!blob::IsSha256Hex(sha256)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "sha256 must be 64 lowercase hex");
    }
    if (worker.empty() || worker.size() > 256) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "worker must be a name of 1 to 256 bytes");
    }
    return grpc::Status::OK;
  }

  grpc::Status CheckToken(grpc::ServerContext* ctx) const {
    const auto& md = ctx->client_metadata();
    auto it = md.find(kTokenKey);
    if (it == md.end()) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "no pool token; pass --token or set IDLEPOOL_TOKEN");
    }
    const auto& got = it->second;
    if (got.size() != token_.size() || CRYPTO_memcmp(got.data(), token_.data(), got.size()) != 0) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "wrong pool token");
    }
    return grpc::Status::OK;
  }

  // Why an output path reported by a worker cannot be committed, or "" if it can: a normalized
  // relative UTF-8 path ("a/b.png"; "frame..png" is fine, ".." as a component is not).

  // Checks everything a worker reports before the core sees it: a report the store would
  // refuse must never reach it (the coordinator stops on a store error).
  core::AttemptReport ToCoreReport(const struct Session& s, const v1::AttemptReport& r) {
    core::AttemptReport ev;
    ev.worker = s.worker;
    ev.session = s.id;
    ev.attempt = r.attempt();
    ev.exit_code = r.exit_code();
    ev.message = text::TruncateUtf8(r.message(), 1024);
    if (!r.log_tail().empty()) ev.message += "\n" + text::TruncateUtf8(r.log_tail(), kMaxLogTail);
    ev.log_tail = text::TailUtf8(r.log_tail(), kMaxLogTail);
    switch (r.result()) {
      case v1::AttemptReport::SUCCEEDED: ev.result = core::ReportResult::kSucceeded; break;
      case v1::AttemptReport::TIMED_OUT: ev.result = core::ReportResult::kTimedOut; break;
      case v1::AttemptReport::PREEMPTED: ev.result = core::ReportResult::kPreempted; break;
      case v1::AttemptReport::MACHINE_FAULT: ev.result = core::ReportResult::kMachineFault; break;
      default: ev.result = core::ReportResult::kFailed; break;
    }
    if (r.has_transfer()) {
      const v1::Transfer& t = r.transfer();
      // Bounded (a petabyte, a billion files) so that sums cannot overflow the store's int64.
      auto b = [](uint64_t v) { return std::min<uint64_t>(v, 1ull << 50); };
      auto n = [](uint64_t v) { return std::min<uint64_t>(v, 1ull << 30); };
      ev.transfer = core::Transfer{b(t.input_bytes()),       b(t.cached_bytes()),
                                   b(t.coordinator_bytes()), b(t.peer_bytes()),
                                   b(t.output_bytes()),      n(t.cache_hits()),
                                   n(t.cache_misses())};
    }
    if (r.has_timing()) {
      // Each bounded by a year, so that sums over attempts cannot overflow.
      const v1::AttemptTiming& t = r.timing();
      auto y = [](uint64_t v) { return std::min<uint64_t>(v, 365ull * 24 * 3600 * 1000); };
      ev.timing = core::AttemptTiming{y(t.stage_ms()), y(t.run_ms()), y(t.upload_ms()),
                                      t.resumed()};
    }
    if (ev.result == core::ReportResult::kPreempted) {
      // Work lost is bounded by what could plausibly have run: a year.
      ev.lost = core::Millis(std::min<uint64_t>(r.lost_ms(), 365ull * 24 * 3600 * 1000));
      if (r.has_checkpoint()) {
        std::vector<core::OutputFile> files;
        std::string problem = CheckpointProblem(r.checkpoint(), &files);
        if (problem.empty()) {
          ev.checkpoint = std::move(files);
        } else {
          spdlog::warn("worker {}: final checkpoint of attempt {} ignored: {}", s.worker,
                       r.attempt(), problem);
        }
      }
    }
    if (ev.result != core::ReportResult::kSucceeded) return ev;
    // Outputs are uploaded before the report. One that is missing, of another size, listed
    // twice, or at a path that could escape the output dir fails the attempt instead of
    // committing a hole.
    std::string problem = CheckFiles(r.outputs(), &ev.outputs, "output");
    if (!problem.empty()) {
      ev.result = core::ReportResult::kFailed;
      ev.message = std::move(problem);
    }
    return ev;
  }

  // Cache entries as a worker lists them: well-formed hashes only, at most `max`.
  static std::vector<core::BlobRef> CachedBlobs(
      const google::protobuf::RepeatedPtrField<v1::CachedBlob>& in, size_t max) {
    std::vector<core::BlobRef> out;
    for (const auto& b : in) {
      if (out.size() >= max) break;
      if (blob::IsSha256Hex(b.sha256())) out.push_back(core::BlobRef{b.sha256(), b.size()});
    }
    return out;
  }

  // Where other workers reach a worker's Peer service: its announced host:port, with a wildcard
  // or missing host replaced by the address its session comes from (gRPC's "ipv4:1.2.3.4:5" or
  // "ipv6:[::1]:5"). Empty when it announced nothing or something unusable.
  static std::string PeerAddress(const std::string& announced, const std::string& grpc_peer) {
    if (announced.empty() || announced.size() > 256) return "";
    const size_t colon = announced.rfind(':');
    if (colon == std::string::npos || colon + 1 == announced.size()) return "";
    const std::string host = announced.substr(0, colon), port = announced.substr(colon + 1);
    if (port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(port) == 0 || std::stoi(port) > 65535) {
      return "";
    }
    // A host name, an IPv4 address or a bracketed IPv6 one: never a gRPC scheme ("unix:/path")
    // or anything with a path, which other workers would otherwise be told to dial.
    const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
    if (host.find_first_of("/ \t@") != std::string::npos ||
        (!bracketed && host.find(':') != std::string::npos)) {
      return "";
    }
    if (!host.empty() && host != "0.0.0.0" && host != "[::]") return announced;
    std::string from = grpc_peer;
    if (absl::StartsWith(from, "ipv4:")) from = from.substr(5);
    else if (absl::StartsWith(from, "ipv6:")) from = from.substr(5);
    else return "";
    const size_t c = from.rfind(':');
    if (c == std::string::npos) return "";
    return absl::StrCat(from.substr(0, c), ":", port);
  }

  // Checks files as they come from a worker (outputs, checkpoints): each at a safe relative path,
  // listed once, and already uploaded with the size it claims. Returns "" and fills `out`, or
  // what is wrong.
  std::string CheckFiles(const google::protobuf::RepeatedPtrField<v1::OutputFile>& files,
                         std::vector<core::OutputFile>* out, const char* what = "file") {
    std::set<std::string> seen;
    for (const auto& f : files) {
      std::string problem = spec::RelativePathError(f.path()).value_or("");
      if (problem.empty() && !seen.insert(f.path()).second) problem = "is listed twice";
      if (problem.empty() && !blobs_.Has(f.sha256())) problem = "was not uploaded";
      if (problem.empty()) {
        std::error_code ec;
        auto size = fs::file_size(blobs_.PathOf(f.sha256()), ec);
        if (ec || size != f.size()) problem = "has a size that does not match its blob";
      }
      if (!problem.empty()) {
        out->clear();
        return absl::StrCat(what, " '", text::TruncateUtf8(f.path(), 256), "' ", problem);
      }
      out->push_back(core::OutputFile{f.path(), f.sha256(), f.size()});
    }
    return "";
  }

  std::string CheckpointProblem(const google::protobuf::RepeatedPtrField<v1::OutputFile>& files,
                                std::vector<core::OutputFile>* out) {
    if (static_cast<size_t>(files.size()) > kMaxCheckpointFiles) {
      return absl::StrCat(files.size(), " files (at most ", kMaxCheckpointFiles, ")");
    }
    return CheckFiles(files, out);
  }

  void Post(core::Event ev) { PostItem(Item{std::move(ev), nullptr}); }

  void PostItem(Item item) {
    item.queued_ns = platform::SteadyNanos();
    std::lock_guard lock(queue_mu_);
    queue_.push_back(std::move(item));
    queue_cv_.notify_one();
  }

  template <typename T>
  T Query(std::function<T()> fn) {
    auto p = std::make_shared<std::promise<T>>();
    auto fut = p->get_future();
    PostItem(Item{std::nullopt, [p, fn = std::move(fn)] { p->set_value(fn()); }});
    return fut.get();
  }

  // ---- planner support (planner.h) ----

  std::string ProfileKeyOf(const v1::JobSpec& proto, const spec::JobSpec& spec) const {
    std::vector<std::string> hashes;
    for (const auto& in : proto.inputs()) hashes.push_back(in.sha256());
    return spec::ProfileKeyOf(spec, std::move(hashes));
  }

  static PlanJobFacts FactsOf(const v1::JobSpec& proto, const spec::JobSpec& spec,
                              uint64_t tasks) {
    PlanJobFacts f;
    f.tasks = tasks;
    f.resources = spec.resources;
    for (const auto& in : proto.inputs()) f.input_bytes += static_cast<double>(in.size());
    return f;
  }

  // "history: 12 attempts of 2 earlier jobs" / "this job's first 3 attempts".
  static std::string HistoryBasis(const std::vector<store::AttemptRecord>& samples,
                                  core::JobId own) {
    std::set<core::JobId> jobs;
    size_t mine = 0;
    for (const auto& a : samples) {
      jobs.insert(a.task.job);
      if (a.task.job == own) ++mine;
    }
    if (own != 0 && mine == samples.size()) {
      return absl::StrCat("this job's first ", mine, " attempts");
    }
    return absl::StrCat("history: ", samples.size(), " attempts of ", jobs.size(),
                        jobs.size() == 1 ? " job" : " jobs", " with this profile");
  }

  // Connected, accepting workers (all, or those named in `only`; the first named one that is
  // not such a worker goes to *unknown), with their measurements and whether their caches hold
  // every input of `proto`.
  std::vector<PlanWorker> GatherPlanWorkers(const v1::JobSpec& proto,
                                            const std::vector<std::string>& only,
                                            std::string* unknown) {
    auto views = Query<std::vector<core::WorkerView>>([this] { return sched_.Workers(); });
    std::vector<PlanWorker> out;
    std::set<std::string> wanted(only.begin(), only.end());
    for (const auto& v : views) {
      if (v.state != core::WorkerState::kConnected || !v.accepting) continue;
      if (!wanted.empty() && !wanted.count(v.worker)) continue;
      PlanWorker w;
      w.name = v.worker;
      w.capacity = v.capacity;
      out.push_back(std::move(w));
    }
    if (unknown) {
      for (const auto& name : only) {
        bool found = std::any_of(out.begin(), out.end(),
                                 [&](const PlanWorker& w) { return w.name == name; });
        if (!found) {
          *unknown = name;
          break;
        }
      }
    }
    const int64_t now_ms = MonoMs(clock_.Now());
    {
      std::lock_guard lock(book_mu_);
      for (PlanWorker& w : out) {
        auto r = records_.find(w.name);
        if (r != records_.end()) w.record = r->second;
        if (auto a = availability_.Get(w.name, now_ms)) {
          w.up_ms = a->totals.up_ms;
          w.down_ms = a->totals.down_ms;
          w.up_periods = a->totals.up_periods;
        }
      }
    }
    {
      std::lock_guard lock(tracker_mu_);
      for (PlanWorker& w : out) {
        w.holds_assets = std::all_of(proto.inputs().begin(), proto.inputs().end(),
                                     [&](const v1::Input& in) {
                                       return tracker_.IsHolder(w.name, in.sha256());
                                     });
      }
    }
    return out;
  }

  // Predicts job `id` from the history of its profile key (including its own attempts when it
  // has some) and keeps the prediction (store and cache). Errors are logged: a job without a
  // prediction runs the same.
  bool PredictAndKeep(core::JobId id, const v1::JobSpec& proto, uint64_t tasks, bool history_only) {
    spec::JobSpec spec = wire::FromProto(proto);
    const std::string key = ProfileKeyOf(proto, spec);
    auto samples = store_->ListSucceededAttempts({key, 0, kPlanSamples});
    if (!samples.ok()) {
      spdlog::warn("job {}: cannot read its profile: {}", id, samples.status().ToString());
      return false;
    }
    if (history_only) {  // a prediction made before the job ran: none of its own attempts
      std::erase_if(*samples, [id](const store::AttemptRecord& a) { return a.task.job == id; });
      if (samples->empty()) return false;
    }
    std::vector<PlanWorker> workers = GatherPlanWorkers(proto, {}, nullptr);
    auto p = coordinator::Predict(FactsOf(proto, spec, tasks), workers, *samples,
                                  HistoryBasis(*samples, id), clock_.WallMs());
    if (!p.ok()) {
      if (!absl::IsFailedPrecondition(p.status())) {
        spdlog::warn("job {}: no prediction: {}", id, p.status().ToString());
      }
      return false;
    }
    if (absl::Status st = store_->PutJobPrediction(id, p->SerializeAsString()); !st.ok()) {
      spdlog::warn("job {}: cannot store its prediction: {}", id, st.ToString());
    }
    spdlog::info("job {}: predicted makespan {:.1f} s on {} workers ({}; single machine {:.1f} s)",
                 id, p->makespan_s(), p->workers_size(), p->basis(), p->single_makespan_s());
    std::lock_guard lock(predict_mu_);
    predictions_[id] = std::move(*p);
    return true;
  }

  // Jobs without history wait for their first kPredictAfter successes (fewer for a smaller job,
  // but never all of them: a prediction made once every task is done would predict nothing).
  static constexpr uint32_t kPredictAfter = 3;

  void PredictLoop() {
    std::unique_lock lock(predict_mu_);
    while (!predict_stop_) {
      predict_cv_.wait_for(lock, std::chrono::milliseconds(500));
      if (predict_stop_) return;
      auto awaiting = awaiting_;
      lock.unlock();
      for (const auto& [id, job] : awaiting) {
        if (!job.history_tried) {
          const bool made = PredictAndKeep(id, job.spec, job.tasks, true);
          std::lock_guard l(predict_mu_);
          if (made) {
            awaiting_.erase(id);
            continue;
          }
          if (auto it = awaiting_.find(id); it != awaiting_.end()) it->second.history_tried = true;
        }
        auto s = Query<std::optional<core::JobSummary>>([this, id] { return sched_.Job(id); });
        bool done = !s || s->state != core::JobState::kRunning ||
                    s->succeeded >= s->tasks;  // too late to predict
        if (!done && s->succeeded >= std::min<uint32_t>(kPredictAfter, s->tasks)) {
          PredictAndKeep(id, job.spec, job.tasks, false);
          done = true;
        }
        if (done) {
          std::lock_guard l(predict_mu_);
          awaiting_.erase(id);
        }
      }
      lock.lock();
    }
  }

  // The job's prediction, from the cache or the store; nullopt when it has none.
  std::optional<v1::Prediction> PredictionOf(core::JobId id) {
    {
      std::lock_guard lock(predict_mu_);
      auto it = predictions_.find(id);
      if (it != predictions_.end()) return it->second;
    }
    std::optional<v1::Prediction> p;
    auto bytes = store_->GetJobPrediction(id);
    if (bytes.ok() && !bytes->empty()) {
      v1::Prediction parsed;
      if (parsed.ParseFromString(*bytes)) p = std::move(parsed);
    }
    std::lock_guard lock(predict_mu_);
    // Cache only a prediction, or the absence of one for a job nobody will predict any more.
    if (predictions_.size() > 4096) predictions_.clear();  // a cache, bounded
    if (p || !awaiting_.count(id)) predictions_[id] = p;
    return p;
  }

  grpc::Status FillJobStatus(core::JobId id, bool with_failures, v1::JobStatus* out) {
    auto summary = Query<std::optional<core::JobSummary>>([this, id] { return sched_.Job(id); });
    if (!summary) return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", id));
    auto rec = store_->GetJobHeader(id);  // never the spec: this runs on every poll
    if (!rec.ok()) return wire::ToGrpc(rec.status());
    out->set_job(id);
    out->set_name(rec->name);
    out->set_state(core::ToString(summary->state));
    out->set_tasks(summary->tasks);
    out->set_pending(summary->pending);
    out->set_running(summary->running);
    out->set_succeeded(summary->succeeded);
    out->set_failed(summary->failed);
    out->set_cancelled(summary->cancelled);
    out->set_attempts(summary->counters.attempts);
    out->set_failures(summary->counters.failures);
    out->set_preemptions(summary->counters.preemptions);
    out->set_attempts_lost(summary->counters.lost);
    out->set_workers_lost(summary->workers_lost);
    out->set_fits_no_worker(summary->fits_no_worker);
    out->set_suspensions(summary->counters.suspensions);
    out->set_lost_ms(static_cast<uint64_t>(summary->counters.lost_work.count()));
    out->set_machine_faults(summary->counters.machine_faults);
    ToProto(summary->counters.transfer, out->mutable_transfer());
    out->set_profile_key(rec->profile_key);
    if (with_failures) {  // GetJob only: ListJobs stays small
      if (auto p = PredictionOf(id)) *out->mutable_prediction() = std::move(*p);
    }
    out->set_submitted_ms(rec->submitted_ms);
    out->set_finished_ms(rec->finished_ms);
    if (with_failures && summary->failed > 0) {
      auto tasks = store_->ListTasks(id);
      auto attempts = store_->ListAttempts(id);
      if (tasks.ok() && attempts.ok()) {
        std::map<uint32_t, std::string> last_message, last_tail;
        for (const auto& a : *attempts) {
          last_message[a.task.index] = a.message;
          last_tail[a.task.index] = a.log_tail;
        }
        for (const auto& t : *tasks) {
          if (t.state != core::TaskState::kFailed) continue;
          auto* f = out->add_failed_tasks();
          f->set_index(t.task.index);
          f->set_message(last_message[t.task.index]);
          f->set_log_tail(last_tail[t.task.index]);
        }
      }
    }
    return grpc::Status::OK;
  }

  // ------------------------------------------------------------------------------------------
  // What the pool measured of its workers (issue 6): link, calibration, availability. Kept in
  // records_ (guarded by book_mu_) and written to the store by the book thread, never by the core
  // thread's group commit.

  static int64_t MonoMs(core::MonoTime t) {
    return std::chrono::duration_cast<core::Millis>(t.time_since_epoch()).count();
  }

  store::WorkerRecord& BookEntry(const std::string& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(book_mu_) {
    auto [it, inserted] = records_.try_emplace(worker);
    if (inserted) {
      it->second.worker = worker;
      it->second.first_seen_ms = clock_.WallMs();
    }
    return it->second;
  }

  void MarkDirty(const std::string& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(book_mu_) {
    dirty_.insert(worker);
    book_cv_.notify_all();
  }

  // A welcomed session: its hello's calibration and host name.
  void BookHello(const std::string& worker, core::SessionId session, const std::string& hostname,
                 double cpu_score, uint32_t cores) {
    std::lock_guard lock(book_mu_);
    book_sessions_[worker] = session;
    store::WorkerRecord& r = BookEntry(worker);
    if (r.hostname != hostname || r.cpu_score != cpu_score || r.cores != cores) {
      r.hostname = hostname;
      // A worker run with --no-calibrate keeps its last known score.
      if (cpu_score > 0) r.cpu_score = cpu_score;
      if (cores > 0) r.cores = cores;
      MarkDirty(worker);
    }
  }

  // LinkMeasured from a session; ignored unless the session is the worker's welcomed one.
  void BookLink(const std::string& worker, core::SessionId session, const v1::LinkMeasured& m) {
    constexpr uint64_t kMaxRate = uint64_t{1} << 40;       // 1 TB/s
    constexpr uint64_t kMaxRttUs = uint64_t{3600} * 1000000;  // an hour
    if (m.rtt_us() > kMaxRttUs || m.down_bytes_per_s() > kMaxRate ||
        m.up_bytes_per_s() > kMaxRate || m.probe_bytes() > kMaxProbeBytes) {
      spdlog::warn("worker {}: link measurement out of range, ignored", worker);
      return;
    }
    std::lock_guard lock(book_mu_);
    auto s = book_sessions_.find(worker);
    if (s == book_sessions_.end() || s->second != session) return;
    store::WorkerRecord& r = BookEntry(worker);
    // The estimate is the best of its recent probes (planner.h, BestOfRecentProbes); the log
    // line shows this probe.
    const int64_t wall_ms = clock_.WallMs();
    std::vector<LinkProbe>& recent = link_probes_[worker];
    if (recent.empty() && r.link_measured_ms > 0) {  // the stored estimate, e.g. after a restart
      recent.push_back({r.link_measured_ms, r.rtt_us, r.down_bytes_per_s, r.up_bytes_per_s});
    }
    recent.push_back({wall_ms, static_cast<int64_t>(m.rtt_us()),
                      static_cast<int64_t>(m.down_bytes_per_s()),
                      static_cast<int64_t>(m.up_bytes_per_s())});
    const LinkProbe best = BestOfRecentProbes(recent, wall_ms);
    r.link_measured_ms = wall_ms;
    r.rtt_us = best.rtt_us;
    r.down_bytes_per_s = best.down_bytes_per_s;
    r.up_bytes_per_s = best.up_bytes_per_s;
    r.probe_bytes = static_cast<int64_t>(m.probe_bytes());
    MarkDirty(worker);
    spdlog::info("worker {}: link round trip {:.2f} ms, down {:.1f} MB/s, up {:.1f} MB/s", worker,
                 m.rtt_us() / 1000.0, m.down_bytes_per_s() / 1e6, m.up_bytes_per_s() / 1e6);
  }

  // Core thread, every tick: a worker is up while connected and accepting work. Workers known
  // only from the store (not seen since this start) are down.
  void ObserveAvailability(core::MonoTime now) {
    // Sessions end because the coordinator stops, not because workers went away: not down time
    // (README: time the coordinator is not running counts neither way).
    if (shutting_down_.load()) return;
    const std::vector<core::WorkerView> views = sched_.Workers();
    const int64_t now_ms = MonoMs(now);
    std::lock_guard lock(book_mu_);
    std::set<std::string> seen;
    for (const auto& w : views) {
      seen.insert(w.worker);
      BookEntry(w.worker);
      const bool up = w.state == core::WorkerState::kConnected && w.accepting;
      if (availability_.Observe(w.worker, up, now_ms)) MarkDirty(w.worker);
    }
    for (const auto& [name, r] : records_) {
      if (!seen.count(name) && availability_.Observe(name, false, now_ms)) MarkDirty(name);
    }
  }

  // The record with its availability as of `now_ms`.
  store::WorkerRecord Snapshot(const store::WorkerRecord& r, int64_t now_ms) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(book_mu_) {
    store::WorkerRecord out = r;
    if (auto a = availability_.Get(r.worker, now_ms)) {
      out.up_ms = a->totals.up_ms;
      out.down_ms = a->totals.down_ms;
      out.up_periods = a->totals.up_periods;
      out.down_periods = a->totals.down_periods;
    }
    return out;
  }

  // --- Worker events and sensors (book_mu_; written to the store by the book thread) --------

  void AddEvent(const std::string& worker, const char* kind, const std::string& state = "",
                const std::string& cause = "", const std::string& reason = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(book_mu_) {
    pending_events_.push_back(store::WorkerEvent{worker, clock_.WallMs(), kind, state, cause,
                                                 reason});
    book_cv_.notify_all();
  }

  // Core thread: the core welcomed `session`. Its first owner state is recorded again even when
  // it says what the worker said before it went away.
  void RecordConnected(const std::string& worker, core::SessionId session) {
    std::lock_guard lock(book_mu_);
    event_sessions_[worker] = session;
    owner_seen_.erase(worker);
    AddEvent(worker, "connected");
  }

  // A session ended ("disconnected") or said it is leaving ("left"): recorded only for the
  // worker's welcomed session, once.
  void RecordSessionEnd(const std::string& worker, core::SessionId session, const char* kind) {
    std::lock_guard lock(book_mu_);
    auto it = event_sessions_.find(worker);
    if (it == event_sessions_.end() || it->second != session) return;
    event_sessions_.erase(it);
    AddEvent(worker, kind);
  }

  // Core thread: the core declared the worker lost.
  void RecordLost(const std::string& worker) {
    std::lock_guard lock(book_mu_);
    event_sessions_.erase(worker);
    AddEvent(worker, "lost");
  }

  // Core thread, before the core applies the OwnerState (state non-empty) or on a
  // WorkerMessage.sensors (state empty): keeps the readings, and records an "owner" event when
  // the state or cause differs from the last one recorded. Ignored unless `session` is the
  // worker's welcomed one.
  // Core thread: a session's live GPU readings (GpuReadings) onto the devices its Hello listed
  // (WorkerInfo.gpus); readings of an old session are dropped.
  void NoteGpus(const std::string& worker, core::SessionId session,
                const std::vector<v1::GpuDevice>& live) {
    {
      std::lock_guard lock(book_mu_);
      auto it = event_sessions_.find(worker);
      if (it == event_sessions_.end() || it->second != session) return;
    }
    std::vector<std::pair<uint32_t, std::string>> flipped;  // device, its new `unavailable`
    {
      std::lock_guard lock(sessions_mu_);
      auto g = gpus_.find(worker);
      if (g == gpus_.end()) return;
      for (const v1::GpuDevice& l : live) {
        for (v1::GpuDevice& d : g->second) {
          if (d.index() != l.index()) continue;
          if (d.unavailable() != l.unavailable()) flipped.emplace_back(d.index(), l.unavailable());
          d.clear_temperature_c();
          d.clear_utilization();
          d.clear_memory_used_mb();
          if (l.has_temperature_c()) d.set_temperature_c(l.temperature_c());
          if (l.has_utilization()) d.set_utilization(l.utilization());
          if (l.has_memory_used_mb()) d.set_memory_used_mb(l.memory_used_mb());
          d.set_unavailable(l.unavailable());
        }
      }
    }
    if (!flipped.empty()) {
      // Worker events (kind "gpu"): "held" with cause gpu_owner / gpu_temperature, or "free".
      std::lock_guard lock(book_mu_);
      for (const auto& [index, cause] : flipped) {
        AddEvent(worker, "gpu", cause.empty() ? "free" : "held", cause,
                 absl::StrCat("GPU ", index));
      }
    }
    PoolChanged();
  }

  void NoteOwner(const std::string& worker, core::SessionId session, const std::string& state,
                 const std::string& cause, const std::string& reason,
                 const std::optional<v1::SensorReadings>& sensors) {
    std::lock_guard lock(book_mu_);
    auto it = event_sessions_.find(worker);
    if (it == event_sessions_.end() || it->second != session) return;
    if (sensors) sensors_[worker] = *sensors;
    if (state.empty()) return;
    auto& seen = owner_seen_[worker];
    if (seen.first == state && seen.second == cause) return;
    seen = {state, cause};
    AddEvent(worker, "owner", state, cause, reason);
  }

  // The book thread: writes worker events as they come, changed rows (at most every
  // kBookWriteGap, or with events), every row every
  // kBookRefresh, and every row once more at shutdown. A failed write is logged, not fatal: these
  // are measurements, and the next write carries them again.
  void BookLoop() {
    auto next_full = clock_.Now() + kBookRefresh;
    std::unique_lock lock(book_mu_);
    while (true) {
      book_cv_.wait_for(lock, std::max(core::Millis(0), next_full - clock_.Now()),
                        [&] { return book_stop_ || !dirty_.empty() || !pending_events_.empty(); });
      const bool stop = book_stop_;
      const auto now = clock_.Now();
      bool trim = false;
      if (stop || now >= next_full) {
        for (const auto& [name, r] : records_) dirty_.insert(name);
        next_full = now + kBookRefresh;
        trim = true;
      }
      std::vector<store::WorkerRecord> rows;
      for (const auto& name : dirty_) {
        auto it = records_.find(name);
        if (it == records_.end()) continue;
        rows.push_back(Snapshot(it->second, MonoMs(now)));
        rows.back().updated_ms = clock_.WallMs();
      }
      dirty_.clear();
      std::vector<store::WorkerEvent> events;
      events.swap(pending_events_);
      lock.unlock();
      if (!events.empty()) {
        if (absl::Status st = store_->AppendWorkerEvents(events); !st.ok()) {
          spdlog::warn("cannot store {} worker events: {}", events.size(), st.ToString());
        }
      }
      if (trim) {
        const int64_t before_ms = clock_.WallMs() - kEventKeepMs;
        if (absl::Status st = store_->TrimWorkerEvents(before_ms, kEventMaxRows); !st.ok()) {
          spdlog::warn("cannot trim worker events: {}", st.ToString());
        }
      }
      if (!rows.empty()) {
        if (absl::Status st = store_->PutWorkers(rows); !st.ok()) {
          spdlog::warn("cannot store worker measurements: {}", st.ToString());
        }
      }
      lock.lock();
      if (stop) return;
      // Worker rows wait kBookWriteGap; events go at once (a live timeline shows them).
      book_cv_.wait_for(lock, kBookWriteGap,
                        [&] { return book_stop_ || !pending_events_.empty(); });
    }
  }

  void FillMeasurements(const store::WorkerRecord& r, int64_t now_ms, int64_t wall_ms,
                        v1::WorkerInfo* out) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(book_mu_) {
    if (r.link_measured_ms > 0) {
      v1::LinkInfo* l = out->mutable_link();
      l->set_rtt_ms(static_cast<double>(r.rtt_us) / 1000.0);
      l->set_down_bytes_per_s(static_cast<uint64_t>(r.down_bytes_per_s));
      l->set_up_bytes_per_s(static_cast<uint64_t>(r.up_bytes_per_s));
      l->set_probe_bytes(static_cast<uint64_t>(r.probe_bytes));
      l->set_measured_ms_ago(std::max<int64_t>(0, wall_ms - r.link_measured_ms));
    }
    out->set_cpu_score(r.cpu_score);
    out->set_cores(r.cores);
    if (auto a = availability_.Get(r.worker, now_ms)) {
      v1::Availability* o = out->mutable_availability();
      o->set_up_fraction(a->up_fraction());
      o->set_mean_up_s(a->mean_up_s());
      o->set_mean_down_s(a->mean_down_s());
      o->set_up_periods(a->totals.up_periods);
      o->set_down_periods(a->totals.down_periods);
      o->set_observed_s(a->observed_s());
      o->set_up(a->up);
      o->set_since_s(static_cast<double>(a->since_ms) / 1000.0);
    }
  }

  // The core thread: the only thread that touches sched_ and jobs_.
  void CoreLoop() {
    auto next_tick = clock_.Now() + options_.tick;
    std::deque<Item> batch;
    std::vector<core::Decision> decisions;
    while (true) {
      {
        std::unique_lock lock(queue_mu_);
        auto wait = std::max<core::Millis>(core::Millis(0), next_tick - clock_.Now());
        queue_cv_.wait_for(lock, wait, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        batch.swap(queue_);
      }
      decisions.clear();
      std::vector<std::function<void()>> committed;
      std::vector<int64_t> queued_ns;  // of the batch's events (idlepool_scheduling_seconds)
      bool visible = false;            // an event a dashboard shows even without records
      for (auto& item : batch) {
        if (item.fn) item.fn();
        if (item.event) {
          queued_ns.push_back(item.queued_ns);
          visible = visible || !std::holds_alternative<core::WorkerHeartbeat>(*item.event);
          auto d = sched_.Apply(*item.event, clock_.Now());
          std::move(d.begin(), d.end(), std::back_inserter(decisions));
        }
        if (item.after_commit) committed.push_back(std::move(item.after_commit));
      }
      batch.clear();
      auto now = clock_.Now();
      if (now >= next_tick) {
        auto d = sched_.Apply(core::Tick{}, now);
        std::move(d.begin(), d.end(), std::back_inserter(decisions));
        ObserveAvailability(now);
        next_tick = now + options_.tick;
      }
      if (decisions.empty()) {
        for (auto& fn : committed) fn();
        BatchDone(queued_ns, visible);
        continue;
      }
      bool has_records = std::any_of(decisions.begin(), decisions.end(), core::IsRecord);
      if (has_records) {
        const int64_t commit_start = platform::SteadyNanos();
        absl::Status st = store_->Apply(decisions, clock_.WallMs());
        pool_metrics_.OnCommit(static_cast<double>(platform::SteadyNanos() - commit_start) / 1e9);
        if (!st.ok()) {
          // Memory and disk would disagree from here on; stop and let a restart recover.
          spdlog::critical("store write failed, stopping the coordinator: {}", st.ToString());
          std::lock_guard lock(done_mu_);
          fatal_ = st;
          done_cv_.notify_all();
          return;
        }
      }
      Dispatch(decisions);
      for (auto& fn : committed) fn();
      pool_metrics_.OnDecisions(decisions);
      BatchDone(queued_ns, visible || has_records);
    }
  }

  // ---- HTTP server (http/http_server.h) and metrics (pool_metrics.h) ----

  // After a core batch: its events' scheduling latency; the dashboard's state version moves
  // when the batch changed something it shows (records, or a worker/job/owner event).
  void BatchDone(const std::vector<int64_t>& queued_ns, bool changed) {
    const int64_t now = platform::SteadyNanos();
    for (int64_t q : queued_ns) pool_metrics_.OnScheduled(static_cast<double>(now - q) / 1e9);
    if (changed) PoolChanged();
  }

 public:
  // Something a dashboard shows changed outside the core (e.g. a worker's sensor readings):
  // event streams tell their clients. Cheap; any thread.
  void PoolChanged() { feed_.Bump(); }

 private:
  static absl::Status ToAbsl(const grpc::Status& s) {
    return s.ok() ? absl::OkStatus()
                  : absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }

  // The HTTP server's reads: the same internal methods the gRPC handlers call.
  class HttpReads final : public http::PoolReader {
   public:
    explicit HttpReads(CoordinatorImpl& c) : c_(c) {}
    absl::StatusOr<v1::ListWorkersReply> ListWorkers() override {
      v1::ListWorkersReply r;
      if (auto st = c_.ListWorkersInternal(&r); !st.ok()) return ToAbsl(st);
      return r;
    }
    absl::StatusOr<v1::ListJobsReply> ListJobs() override {
      v1::ListJobsReply r;
      if (auto st = c_.ListJobsInternal(&r); !st.ok()) return ToAbsl(st);
      return r;
    }
    absl::StatusOr<v1::JobStatus> GetJob(uint64_t job) override {
      v1::JobStatus r;
      if (auto st = c_.FillJobStatus(job, /*with_failures=*/true, &r); !st.ok()) return ToAbsl(st);
      return r;
    }
    absl::StatusOr<v1::JobTimeline> GetJobTimeline(const v1::TimelineRequest& req) override {
      v1::JobTimeline r;
      if (auto st = c_.GetJobTimelineInternal(req, &r); !st.ok()) return ToAbsl(st);
      return r;
    }
    std::string Metrics() override { return c_.pool_metrics_.Render(); }

   private:
    CoordinatorImpl& c_;
  };

  absl::Status StartHttp() {
    pool_metrics_.registry().SetCollector([this] {
      v1::ListWorkersReply workers;
      (void)ListWorkersInternal(&workers);
      auto jobs = Query<std::vector<core::JobSummary>>([this] { return sched_.Jobs(); });
      pool_metrics_.SetPool(workers, jobs);
    });
    if (options_.http.empty()) return absl::OkStatus();
    http::ServerOptions o;
    o.address = options_.http;
    o.token = token_;
    auto server = http::Server::Start(o, http_reads_, feed_);
    if (!server.ok()) {
      if (options_.http_required || absl::IsInvalidArgument(server.status())) {
        return server.status();
      }
      spdlog::warn("{}; running without the dashboard", std::string(server.status().message()));
      return absl::OkStatus();
    }
    http_ = std::move(*server);
    spdlog::info("dashboard at http://{}:{}/", http_->host(), http_->port());
    return absl::OkStatus();
  }

  std::shared_ptr<struct Session> FindSession(core::SessionId id) {
    std::lock_guard lock(sessions_mu_);
    auto it = sessions_.find(id);
    return it == sessions_.end() ? nullptr : it->second;
  }

  void Dispatch(const std::vector<core::Decision>& decisions) {
    for (const auto& d : decisions) {
      if (auto* a = std::get_if<core::AssignAttempt>(&d)) {
        auto s = FindSession(a->session);
        auto it = jobs_.find(a->task.job);
        if (!s || it == jobs_.end() || a->task.index >= it->second.tasks.size()) continue;
        const v1::JobSpec& spec = it->second.spec;
        v1::CoordinatorMessage m;
        auto* as = m.mutable_assign();
        as->set_attempt(a->attempt);
        as->set_job(a->task.job);
        as->set_job_name(spec.name());
        *as->mutable_task() = wire::ToProto(it->second.tasks[a->task.index]);
        *as->mutable_command() = spec.command();
        *as->mutable_inputs() = spec.inputs();
        *as->mutable_outputs() = spec.outputs();
        as->set_allow_empty_outputs(spec.allow_empty_outputs());
        *as->mutable_resources() = spec.resources();
        as->set_timeout_s(spec.timeout_s());
        for (uint32_t g : a->gpus) as->add_gpus(g);
        if (it->second.any_checkpoint) {
          auto ckpt = store_->GetCheckpoint(a->task);
          if (!ckpt.ok()) {
            // Starting from scratch loses work but nothing else: say so and go on.
            spdlog::warn("attempt {}: cannot read the checkpoint of task {}: {}", a->attempt,
                         a->task.index, std::string(ckpt.status().message()));
          } else {
            for (const auto& f : *ckpt) {
              auto* o = as->add_checkpoint();
              o->set_path(f.path);
              o->set_sha256(f.sha256);
              o->set_size(f.size);
            }
          }
        }
        s->Send(std::move(m));
      } else if (auto* c = std::get_if<core::TaskCheckpointed>(&d)) {
        auto it = jobs_.find(c->task.job);
        if (it != jobs_.end()) it->second.any_checkpoint = true;
      } else if (auto* k = std::get_if<core::KillAttempt>(&d)) {
        if (auto s = FindSession(k->session)) {
          v1::CoordinatorMessage m;
          *m.mutable_kill() = wire::ToKill(k->attempt, k->reason);
          s->Send(std::move(m));
        }
      } else if (auto* ack = std::get_if<core::AckReport>(&d)) {
        if (auto s = FindSession(ack->session)) {
          v1::CoordinatorMessage m;
          m.mutable_ack()->set_attempt(ack->attempt);
          m.mutable_ack()->set_accepted(ack->accepted);
          m.mutable_ack()->set_reason(ack->reason);
          s->Send(std::move(m));
        }
      } else if (auto* r = std::get_if<core::RefuseSession>(&d)) {
        if (auto s = FindSession(r->session)) {
          spdlog::warn("refused session {} of worker {}: {}", r->session, r->worker, r->reason);
          v1::CoordinatorMessage m;
          m.mutable_refused()->set_reason(r->reason);
          s->Send(std::move(m), /*end=*/true);
        }
      } else if (auto* j = std::get_if<core::JobChanged>(&d)) {
        if (j->state != core::JobState::kRunning) {
          jobs_.erase(j->job);
          spdlog::info("job {} {}", j->job, core::ToString(j->state));
        }
      } else if (auto* l = std::get_if<core::WorkerLost>(&d)) {
        RecordLost(l->worker);
        spdlog::warn("worker {} lost (silent for {} ms); its attempts are requeued", l->worker,
                     options_.lease_timeout.count());
        // A lost worker whose stream is somehow still open (a frozen process, a half-dead
        // connection) must say hello again, so its stale attempts are reconciled and killed.
        std::vector<std::shared_ptr<struct Session>> open;
        {
          std::lock_guard lock(sessions_mu_);
          for (auto& [id, s] : sessions_) {
            if (s->worker == l->worker) open.push_back(s);
          }
        }
        for (auto& s : open) {
          v1::CoordinatorMessage m;
          m.mutable_refused()->set_reason("lease expired; reconnect to re-register");
          s->Send(std::move(m), /*end=*/true);
        }
      }
    }
  }

  Options options_;
  const platform::Clock& clock_;
  std::unique_ptr<platform::FileLock> lock_;
  blob::BlobStore blobs_;
  std::unique_ptr<store::Store> store_;
  std::string token_;
  bool token_created_ = false;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  PoolMetrics pool_metrics_;
  http::ChangeFeed feed_;
  HttpReads http_reads_{*this};
  std::unique_ptr<http::Server> http_;

  // Core thread state.
  core::Scheduler sched_;
  std::map<core::JobId, JobInfo> jobs_;  // running jobs only
  std::thread core_thread_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;

  std::mutex sessions_mu_;
  std::map<core::SessionId, std::shared_ptr<struct Session>> sessions_;
  std::map<std::string, std::string> hostnames_;
  // worker -> the GPUs its last accepted Hello listed (WorkerInfo.gpus)
  std::map<std::string, std::vector<v1::GpuDevice>> gpus_;
  std::map<std::string, std::string> peer_addresses_;  // worker -> its Peer service host:port
  // Peer-to-peer tracker: fed on the core thread (hellos, cache changes, closes), asked by the
  // LocateBlob and FetchChunk handlers.
  std::mutex tracker_mu_;
  Tracker tracker_ ABSL_GUARDED_BY(tracker_mu_);
  std::atomic<core::SessionId> next_session_{1};

  // Worker measurements (see BookLoop).
  std::mutex book_mu_;
  std::condition_variable book_cv_;
  std::map<std::string, store::WorkerRecord> records_ ABSL_GUARDED_BY(book_mu_);
  std::map<std::string, core::SessionId> book_sessions_ ABSL_GUARDED_BY(book_mu_);  // welcomed
  AvailabilityTracker availability_ ABSL_GUARDED_BY(book_mu_);
  std::map<std::string, std::vector<LinkProbe>> link_probes_ ABSL_GUARDED_BY(book_mu_);  // oldest first
  std::set<std::string> dirty_ ABSL_GUARDED_BY(book_mu_);
  // Worker events not yet stored; each worker's welcomed session (for its events), the owner
  // state and cause last recorded, and its sensors as it last said.
  std::vector<store::WorkerEvent> pending_events_ ABSL_GUARDED_BY(book_mu_);
  std::map<std::string, core::SessionId> event_sessions_ ABSL_GUARDED_BY(book_mu_);
  std::map<std::string, std::pair<std::string, std::string>> owner_seen_ ABSL_GUARDED_BY(book_mu_);
  std::map<std::string, v1::SensorReadings> sensors_ ABSL_GUARDED_BY(book_mu_);
  bool book_stop_ ABSL_GUARDED_BY(book_mu_) = false;
  std::thread book_thread_;

  // Predictions (planner.h), cached; jobs waiting to be predicted (PredictLoop).
  struct AwaitingPrediction {
    v1::JobSpec spec;
    uint64_t tasks = 0;
    bool history_tried = false;
  };
  std::mutex predict_mu_;
  std::condition_variable predict_cv_;
  std::map<core::JobId, std::optional<v1::Prediction>> predictions_ ABSL_GUARDED_BY(predict_mu_);
  std::map<core::JobId, AwaitingPrediction> awaiting_ ABSL_GUARDED_BY(predict_mu_);
  bool predict_stop_ ABSL_GUARDED_BY(predict_mu_) = false;
  std::thread predict_thread_;
  std::atomic<bool> shutting_down_{false};  // Shutdown began: availability is no longer observed
  std::string probe_payload_;  // kProbeChunk incompressible bytes, sent by ProbeDown
  ProbeGate probe_gate_;

  std::mutex shutdown_mu_;
  bool shut_down_ = false;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool finished_ = false;
  absl::Status fatal_;
};

}  // namespace

absl::StatusOr<std::string> LoadOrCreateToken(const std::string& data_dir, bool* created) {
  *created = false;
  std::string path = (fs::path(data_dir) / "pool.token").string();
  std::ifstream in(path);
  if (in) {
    std::string token;
    std::getline(in, token);
    if (token.size() < 32) {
      return absl::DataLossError(absl::StrCat(path, ": pool token is too short or empty"));
    }
    return token;
  }
  std::string token = platform::RandomHex(32);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::FailedPreconditionError(absl::StrCat("cannot create ", tmp));
  std::string line = token + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot write ", path));
  }
  *created = true;
  return token;
}

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(const Options& options,
                                                                const platform::Clock& clock) {
  if (options.data_dir.empty()) return absl::InvalidArgumentError("--data-dir is required");
  auto impl = std::make_unique<CoordinatorImpl>(options, clock);
  if (auto st = impl->Init(); !st.ok()) return st;
  return std::unique_ptr<Coordinator>(std::move(impl));
}

}  // namespace idlepool::coordinator
