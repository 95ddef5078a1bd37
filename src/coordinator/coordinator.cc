#include "coordinator/coordinator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "blob/store.h"
#include "coordinator/admin_service.h"
#include "coordinator/auth.h"
#include "coordinator/blob_service.h"
#include "coordinator/collector.h"
#include "coordinator/core_loop.h"
#include "coordinator/job_service.h"
#include "coordinator/join_service.h"
#include "coordinator/log_keeper.h"
#include "coordinator/partial_sweeper.h"
#include "coordinator/pool_metrics.h"
#include "coordinator/predictor.h"
#include "coordinator/probe_service.h"
#include "coordinator/revocation_book.h"
#include "coordinator/serve_bridge.h"
#include "coordinator/serve_mount.h"
#include "coordinator/served_recorder.h"
#include "coordinator/server_identity.h"
#include "coordinator/service_autoscaler.h"
#include "coordinator/session_service.h"
#include "coordinator/sessions.h"
#include "coordinator/shared_tracker.h"
#include "coordinator/user_book.h"
#include "coordinator/worker_book.h"
#include "gate/grpc_port.h"
#include "grpcpp/grpcpp.h"
#include "http/http_server.h"
#include "http/request_checks.h"
#include "platform/clock.h"
#include "platform/process.h"
#include "platform/random.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"
#include "store/store.h"
#include "text/host_port.h"
#include "trust/credential_store.h"
#include "wire/wire.h"

namespace idlepool::coordinator {
namespace fs = std::filesystem;

namespace {

constexpr int kMaxMessageBytes = 128 << 20;  // a 64 MiB items file plus framing fits
// A connection with no call for this long is closed (GOAWAY): one that never made a call holds
// a descriptor no longer; a worker's session is a call, a client reconnects when it needs to.
constexpr std::chrono::milliseconds kMaxIdleConnection{60000};

absl::Status ToAbsl(const grpc::Status& s) {
  return s.ok() ? absl::OkStatus()
                : absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// The HTTP server's reads: the same internal methods the gRPC handlers call.
class HttpReads final : public http::PoolReader {
 public:
  HttpReads(JobService& jobs, PoolMetrics& metrics, std::function<std::string()> serve_metrics)
      : jobs_(jobs), metrics_(metrics), serve_metrics_(std::move(serve_metrics)) {}
  absl::StatusOr<v1::ListWorkersReply> ListWorkers() override {
    v1::ListWorkersReply r;
    if (auto st = jobs_.ListWorkersInternal(&r); !st.ok()) return ToAbsl(st);
    return r;
  }
  absl::StatusOr<v1::ListJobsReply> ListJobs() override {
    v1::ListJobsReply r;
    if (auto st = jobs_.ListJobsInternal(&r); !st.ok()) return ToAbsl(st);
    return r;
  }
  absl::StatusOr<v1::JobStatus> GetJob(uint64_t job) override {
    v1::JobStatus r;
    if (auto st = jobs_.FillJobStatus(job, /*with_failures=*/true, &r); !st.ok()) {
      return ToAbsl(st);
    }
    return r;
  }
  absl::StatusOr<v1::JobTimeline> GetJobTimeline(const v1::TimelineRequest& req) override {
    v1::JobTimeline r;
    if (auto st = jobs_.GetJobTimelineInternal(req, &r); !st.ok()) return ToAbsl(st);
    return r;
  }
  absl::StatusOr<v1::FailedTasksPage> ListFailedTasks(const v1::FailedTasksRequest& req) override {
    v1::FailedTasksPage r;
    if (auto st = jobs_.ListFailedTasksInternal(req, &r); !st.ok()) return ToAbsl(st);
    return r;
  }
  absl::StatusOr<v1::TaskLog> GetTaskLog(const v1::TaskRef& req) override {
    v1::TaskLog r;
    if (auto st = jobs_.GetTaskLogInternal(req, &r); !st.ok()) return ToAbsl(st);
    return r;
  }
  absl::StatusOr<v1::ListServicesReply> ListServices() override {
    v1::ListServicesReply r;
    if (auto st = jobs_.ListServicesInternal(&r); !st.ok()) return ToAbsl(st);
    return r;
  }
  absl::StatusOr<v1::ListUsersReply> ListUsers() override {
    v1::ListUsersReply r;
    if (auto st = jobs_.ListUsersInternal(&r); !st.ok()) return ToAbsl(st);
    return r;
  }
  absl::StatusOr<v1::UsageReply> GetUsage(const v1::UsageRequest& req) override {
    v1::UsageReply r;
    if (auto st = jobs_.GetUsageInternal(req, &r); !st.ok()) return ToAbsl(st);
    return r;
  }
  absl::StatusOr<std::string> GetAttemptLog(uint64_t job, uint64_t attempt) override {
    std::string text;
    if (auto st = jobs_.AttemptLogInternal(job, attempt, &text); !st.ok()) return ToAbsl(st);
    return text;
  }
  // The pool's metrics, then the gateway's (idlepool_serve_*), when it runs.
  std::string Metrics() override {
    v1::UsageReply by_user;
    v1::UsageRequest all;
    std::string users;
    if (jobs_.GetUsageInternal(all, &by_user).ok()) users = RenderUserUsage(by_user);
    return metrics_.Render() + users + serve_metrics_();
  }

 private:
  JobService& jobs_;
  PoolMetrics& metrics_;
  std::function<std::string()> serve_metrics_;
};

// The running jobs of a restored store, with what assignments need (their specs), and each
// restored job's inputs (locality needs them; the store keeps them only in the spec).
absl::StatusOr<std::map<core::JobId, JobInfo>> RestoreJobs(store::Store& store,
                                                           core::RestoredState& restored) {
  std::map<core::JobId, JobInfo> jobs;
  for (const auto& job : restored.jobs) {
    if (job.state != core::JobState::kRunning) continue;
    auto rec = store.GetJob(job.spec.job);
    if (!rec.ok()) return rec.status();
    JobInfo info;
    if (!info.spec.ParseFromString(rec->spec)) {
      return absl::DataLossError(absl::StrCat("job ", job.spec.job, ": stored spec unreadable"));
    }
    auto tasks = spec::ExpandTasks(wire::FromProto(info.spec));
    if (!tasks.ok()) return tasks.status();
    info.tasks = std::move(*tasks);
    info.any_checkpoint = true;  // not known without a query; assignments will look
    jobs[job.spec.job] = std::move(info);
  }
  for (auto& job : restored.jobs) {
    auto it = jobs.find(job.spec.job);
    if (it == jobs.end()) continue;
    for (const auto& in : it->second.spec.inputs()) {
      job.spec.inputs.push_back(core::BlobRef{in.sha256(), in.size()});
    }
    auto own = store.ListTaskInputs(job.spec.job, std::nullopt);
    if (!own.ok()) return own.status();
    it->second.task_inputs = !own->empty();
    for (const store::TaskInputRow& r : *own) {
      job.spec.task_inputs.push_back(core::TaskBlob{r.index, core::BlobRef{r.sha256, r.size}});
    }
    // Its retry backoff, kept only in the spec too (a batch job's; 0 for a spec stored before).
    if (const v1::RetrySpec& r = it->second.spec.retry(); !job.spec.service && r.set()) {
      job.spec.retry =
          core::RetryBackoff{core::Millis(static_cast<int64_t>(r.backoff_s() * 1000)),
                             core::Millis(static_cast<int64_t>(r.max_backoff_s() * 1000))};
      if (r.hold_off_after() != 0) job.spec.hold_off_after = r.hold_off_after();
    }
  }
  return jobs;
}

// The largest blob accepted: kMaxBlobBytes, lowered for tests by IDLEPOOL_FAULT_MAX_BLOB_BYTES
// (a refused output without uploading gigabytes).
uint64_t MaxBlobBytes() {
  const char* v = std::getenv("IDLEPOOL_FAULT_MAX_BLOB_BYTES");
  uint64_t n = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &n) || n == 0 || n > blob::kMaxBlobBytes) {
    return blob::kMaxBlobBytes;
  }
  spdlog::warn("fault injection: blobs over {} bytes are refused", n);
  return n;
}

// The coordinator: owns the store, the blob store, the core loop, the worker book, the
// predictor and the four gRPC services on one server (and the HTTP server). Members are
// declared so that each outlives what refers to it.
class CoordinatorImpl final : public Coordinator {
 public:
  CoordinatorImpl(const Options& options, const platform::Clock& clock)
      : options_(options),
        clock_(clock),
        blobs_((fs::path(options.data_dir) / "blobs").string(),
               blob::StoreOptions{.partial_max_age = options.partial_idle_limit,
                                  .max_blob_bytes = MaxBlobBytes()}),
        sweeper_(blobs_, clock_, options.partial_idle_limit) {}

  ~CoordinatorImpl() override { Shutdown(); }

  absl::Status Init();

  int port() const override { return port_; }
  const std::string& ca_pin() const override { return identity_.ca->pin(); }
  const std::string& ca_pem() const override { return identity_.ca->cert_pem(); }
  bool ca_created() const override { return identity_.ca_created; }
  const std::vector<std::string>& server_names() const override { return identity_.names; }
  absl::StatusOr<std::string> CreateToken(const std::string& role, int64_t ttl_s, int64_t uses,
                                          const std::string& name) override;
  std::string admin_socket() const override {
    return (fs::path(options_.data_dir) / "admin.sock").string();
  }
  int http_port() const override { return http_ ? http_->port() : 0; }
  std::string http_host() const override { return http_ ? http_->host() : ""; }
  std::string serve_url() const override { return serve_bridge_.url(); }

  void Shutdown() override;

  absl::Status Wait() override {
    std::unique_lock lock(done_mu_);
    done_cv_.wait(lock, [&] { return finished_ || !fatal_.ok(); });
    return fatal_;
  }

 private:
  // The data dir, its lock, the TLS identity, the credentials, the blob store and the store,
  // restored.
  absl::Status OpenDataDir(core::RestoredState* restored);
  absl::Status OpenTrust();
  absl::Status StartAdmin();
  // The core loop, book and predictor around the opened store, and the gRPC services.
  void MakeParts();
  absl::Status StartServer();
  absl::Status StartHttp();
  absl::Status StartServe();
  absl::StatusOr<http::ServerOptions> HttpOptions() const;
  void Fatal(absl::Status st) {
    std::lock_guard lock(done_mu_);
    fatal_ = std::move(st);
    done_cv_.notify_all();
  }

  Options options_;
  const platform::Clock& clock_;
  std::unique_ptr<platform::FileLock> lock_;
  blob::BlobStore blobs_;
  PartialSweeper sweeper_;
  std::unique_ptr<store::Store> store_;
  ServerIdentity identity_;
  std::unique_ptr<trust::CredentialStore> credentials_;
  int port_ = 0;
  PoolMetrics pool_metrics_;
  http::ChangeFeed feed_;
  SessionRegistry sessions_;
  SharedTracker tracker_;
  std::atomic<bool> shutting_down_{false};  // Shutdown began: availability is no longer observed

  std::unique_ptr<Authorizer> authz_;
  std::unique_ptr<WorkerBook> book_;
  std::unique_ptr<CoreLoop> core_;
  std::unique_ptr<UserBook> users_;  // shares and quotas (user_book.h)
  std::unique_ptr<Predictor> predictor_;
  std::unique_ptr<LogKeeper> logs_;  // attempts' output under DATA_DIR/logs
  std::unique_ptr<RevocationBook> revocations_;  // told to the workers (revocation_book.h)
  std::unique_ptr<SessionService> session_service_;
  std::unique_ptr<BlobService> blob_service_;
  std::unique_ptr<ProbeService> probe_service_;
  std::unique_ptr<Collector> collector_;
  std::unique_ptr<AdminJobs> admin_jobs_;  // CollectGarbage on admin.sock
  std::unique_ptr<JobService> job_service_;
  std::unique_ptr<JoinService> join_service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<HttpReads> http_reads_;
  ServeBridge serve_bridge_;                       // services and replicas, for the gateway
  std::unique_ptr<ServeMount> serve_;              // the gateway on --serve-listen; null: off
  std::mutex serve_mu_;                            // guards serve_ against the metrics reader
  std::unique_ptr<ServiceAutoscaler> autoscaler_;  // services between min and max replicas
  std::unique_ptr<ServedRecorder> served_;         // the gateway's requests into usage by day
  std::unique_ptr<gate::GrpcPort> grpc_port_;  // before server_: stopped first, destroyed last
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::Server> admin_server_;  // DATA_DIR/admin.sock
  std::unique_ptr<http::Server> http_;
  std::atomic<http::Server*> http_live_{
      nullptr};  // http_ once it serves (the admin thread reads it)

  std::mutex shutdown_mu_;
  bool shut_down_ = false;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool finished_ = false;
  absl::Status fatal_;
};

absl::Status CoordinatorImpl::OpenDataDir(core::RestoredState* restored) {
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
    return absl::FailedPreconditionError(
        absl::StrCat("another coordinator is using this data dir: ", lock.status().message()));
  }
  lock_ = std::move(*lock);
  if (auto st = OpenTrust(); !st.ok()) return st;
  if (auto st = blobs_.Init(clock_.WallMs()); !st.ok()) return st;
  auto store = store::OpenSqliteStore((fs::path(options_.data_dir) / "pool.db").string());
  if (!store.ok()) return store.status();
  store_ = std::move(*store);
  auto loaded = store_->Load();
  if (!loaded.ok()) return loaded.status();
  *restored = std::move(*loaded);
  return absl::OkStatus();
}

void CoordinatorImpl::MakeParts() {
  authz_ = std::make_unique<Authorizer>(*credentials_, clock_);
  book_ = std::make_unique<WorkerBook>(*store_, clock_);
  core_ = std::make_unique<CoreLoop>(
      CoreLoopDeps{options_, clock_, *store_, pool_metrics_, sessions_, *book_, feed_,
                   shutting_down_, [this](absl::Status st) { Fatal(std::move(st)); },
                   [this](const std::vector<core::JobId>& ids) {
                     predictor_->JobsProgressed(ids);  // set below, before the core starts
                   },
                   &serve_bridge_});
  predictor_ = std::make_unique<Predictor>(*store_, clock_, *core_, *book_, tracker_);
  users_ =
      std::make_unique<UserBook>(*store_, *core_, clock_, options_.usage, options_.fair_preemption);
  logs_ = std::make_unique<LogKeeper>(
      LogKeeperOptions{(fs::path(options_.data_dir) / "logs").string()});
  revocations_ = std::make_unique<RevocationBook>(*credentials_);
  session_service_ = std::make_unique<SessionService>(
      SessionServiceDeps{*authz_, options_, clock_, *core_, sessions_, tracker_, *book_, blobs_,
                         feed_, shutting_down_, &serve_bridge_, logs_.get(), revocations_.get()});
  blob_service_ = std::make_unique<BlobService>(*authz_, blobs_, tracker_, pool_metrics_, clock_);
  probe_service_ = std::make_unique<ProbeService>(*authz_, clock_);
  collector_ =
      std::make_unique<Collector>(*store_, blobs_, *core_, clock_,
                                  CollectorOptions{options_.blob_grace, options_.keep_finished,
                                                   options_.gc_every, FaultKillAtFromEnv()});
  collector_->SetJobDeletedHook([this](core::JobId job) {
    if (absl::Status st = logs_->DeleteJob(job); !st.ok()) {
      spdlog::warn("job {} deleted, but its logs were not all removed: {}", job, st.ToString());
    }
  });
  admin_jobs_ = std::make_unique<AdminJobs>(*collector_);
  served_ = std::make_unique<ServedRecorder>(serve_bridge_, *store_, clock_);
  job_service_ = std::make_unique<JobService>(JobServiceDeps{
      *authz_, *core_, *store_, blobs_, *predictor_, *book_, sessions_, clock_, &serve_bridge_,
      identity_.ca.get(), collector_.get(), logs_.get(), users_.get(), served_.get()});
  join_service_ = std::make_unique<JoinService>(*authz_, *credentials_, *identity_.ca, clock_,
                                                options_.worker_cert_validity_s);
  admin_service_ = std::make_unique<AdminService>(*authz_, *credentials_, sessions_,
                                                  identity_.ca->pin(), clock_);
  // A revoked token's dashboard sessions end with it; the workers' ports learn of it (a gateway
  // certificate bound to it) as of a revoked worker.
  admin_service_->OnTokenRevoked([this](const std::string& id) {
    if (http::Server* h = http_live_.load()) h->EndSessionsOf(id);
    revocations_->Changed(sessions_);
  });
  admin_service_->OnResetWorker([this](const std::string& name) -> absl::StatusOr<bool> {
    auto p = std::make_shared<std::promise<std::optional<bool>>>();
    auto was = p->get_future();
    core_->PostItem(
        CoreItem{core::Event(core::WorkerReset{name}), [this, p, name] {
                   const std::optional<core::WorkerView> w = core_->sched().Worker(name);
                   p->set_value(w ? std::optional<bool>(!w->unhealthy.empty()) : std::nullopt);
                 }});
    const std::optional<bool> known = was.get();
    if (!known) return absl::NotFoundError(absl::StrCat("no worker named '", name, "'"));
    return *known;
  });
  admin_service_->OnSetUser([this](const v1::SetUserRequest& req) { return users_->Set(req); });
  admin_service_->OnWorkerRevoked([this](const std::string&) { revocations_->Changed(sessions_); });
  autoscaler_ = std::make_unique<ServiceAutoscaler>(*core_, *store_, serve_bridge_);
  // A retiring replica drained early: its worker stops it now (worker/owner_monitor.h, Retire).
  serve_bridge_.SetRetiredHook([this](const std::string& worker, core::AttemptId attempt) {
    for (auto& s : sessions_.OpenOf(worker)) {
      v1::CoordinatorMessage m;
      *m.mutable_kill() = wire::ToKill(attempt, core::KillReason::kCancelled);
      m.mutable_kill()->set_reason("drained");
      s->Send(std::move(m));
    }
  });
  http_reads_ = std::make_unique<HttpReads>(*job_service_, pool_metrics_, [this] {
    std::lock_guard lock(serve_mu_);
    return serve_ ? serve_->PrometheusText() : std::string();
  });
}

absl::Status CoordinatorImpl::Init() {
  core::RestoredState restored;
  if (auto st = OpenDataDir(&restored); !st.ok()) return st;
  auto jobs = RestoreJobs(*store_, restored);
  if (!jobs.ok()) return jobs.status();
  MakeParts();
  if (auto st = users_->Load(restored); !st.ok()) return st;
  core_->Restore(restored, std::move(*jobs));
  auto known = store_->ListWorkers();
  if (!known.ok()) return known.status();
  book_->Restore(std::move(*known));
  book_->Start();
  spdlog::info("store: {} jobs, {} running attempts awaiting their workers", restored.jobs.size(),
               restored.running.size());
  if (auto st = StartServer(); !st.ok()) return st;
  if (auto st = StartAdmin(); !st.ok()) return st;
  pool_metrics_.SetStartTime(std::chrono::duration<double>(core::Millis(clock_.WallMs())).count());
  core_->Start();
  predictor_->Start();
  sweeper_.Start();
  collector_->Start();
  if (auto st = StartServe(); !st.ok()) return st;
  served_->Start();
  autoscaler_->Start();
  return StartHttp();
}

// The gateway (serve_mount.h). Like the dashboard: an address that cannot be bound stops the
// coordinator only when it was asked for (serve_required); the default one is skipped with a
// warning (another coordinator on this machine holds it).
absl::Status CoordinatorImpl::StartServe() {
  if (options_.serve_listen.empty()) return absl::OkStatus();
  auto mount = ServeMount::Start(options_.serve_listen, identity_, *authz_, clock_, serve_bridge_);
  if (!mount.ok()) {
    if (options_.serve_required || !absl::IsUnavailable(mount.status())) return mount.status();
    spdlog::warn("{}; running without the gateway", std::string(mount.status().message()));
    return absl::OkStatus();
  }
  std::lock_guard lock(serve_mu_);
  serve_ = std::move(*mount);
  spdlog::info("gateway at {}/ (OpenAI clients: {}/v1; signed by the pool CA: {}/ca.pem)",
               serve_->url(), serve_->url(), options_.data_dir);
  return absl::OkStatus();
}

absl::Status CoordinatorImpl::StartServer() {
  grpc::ServerBuilder builder;
  // Our own accept loop (gate/grpc_port.h): caps on connections, a descriptor reserve, and a
  // listener that outlives running out of descriptors; a port in use is an error.
  gate::GrpcPortOptions o;
  o.listener.name = "gRPC port";
  o.listener.limits.max_connections = options_.max_connections;
  o.listener.limits.max_per_peer = options_.max_connections_per_address;
  o.max_idle = kMaxIdleConnection;
  auto grpc_port = gate::GrpcPort::Add(builder, options_.listen,
                                       trust::CoordinatorServerCredentials(identity_.tls), o);
  if (!grpc_port.ok()) return grpc_port.status();
  grpc_port_ = std::move(*grpc_port);
  builder.RegisterService(session_service_.get());
  builder.RegisterService(blob_service_.get());
  builder.RegisterService(probe_service_.get());
  builder.RegisterService(job_service_.get());
  builder.RegisterService(join_service_.get());
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  // Keep dead TCP connections from holding a session open for long.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  server_ = builder.BuildAndStart();
  if (!server_) return absl::UnavailableError(absl::StrCat("cannot serve on ", options_.listen));
  port_ = grpc_port_->port();
  grpc_port_->Start();
  return absl::OkStatus();
}

void CoordinatorImpl::Shutdown() {
  {
    std::lock_guard lock(shutdown_mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  // First: its handlers ask the core thread, and its event streams must end.
  http_live_.store(nullptr);
  if (http_) http_->Shutdown();
  if (served_) served_->Stop();  // what the gateway served is saved while it is still attached
  {
    std::lock_guard lock(serve_mu_);
    if (serve_) serve_->Stop();  // clients' requests are cut; replicas keep running
  }
  shutting_down_.store(true);
  if (admin_server_) admin_server_->Shutdown(platform::DeadlineAfter(std::chrono::seconds(1)));
  if (grpc_port_) grpc_port_->Stop();
  if (server_) server_->Shutdown(platform::DeadlineAfter(std::chrono::seconds(1)));
  if (predictor_) predictor_->Stop();  // before the core thread: it queries it
  if (autoscaler_) autoscaler_->Stop();  // the same
  if (collector_) collector_->Stop();    // the same
  if (core_) core_->Stop();
  if (book_) book_->Stop();  // writes every row once more
  sweeper_.Stop();
  std::lock_guard lock(done_mu_);
  finished_ = true;
  done_cv_.notify_all();
}

// HTTPS with the coordinator's certificate (signed by the pool CA, for the same names), for the
// names it answers to; read and submit access tokens log in (trust.db, as on the gRPC port).
absl::StatusOr<http::ServerOptions> CoordinatorImpl::HttpOptions() const {
  http::ServerOptions o;
  o.address = options_.http;
  auto addr = http::ParseAddress(options_.http);
  if (!addr.ok()) return addr.status();
  o.tls_cert_file = identity_.chain_file;
  o.tls_key_file = identity_.key_file;
  o.allowed_hosts = http::DefaultAllowedHosts(addr->first);
  for (const auto& name : identity_.names) o.allowed_hosts.push_back(name);
  o.authenticate = [this](std::string_view got) { return authz_->TokenPrincipal(got); };
  return o;
}

absl::Status CoordinatorImpl::StartHttp() {
  pool_metrics_.registry().SetCollector([this] {
    v1::ListWorkersReply workers;
    (void)job_service_->ListWorkersInternal(&workers);
    auto jobs =
        core_->Query<std::vector<core::JobSummary>>([this] { return core_->sched().Jobs(); });
    pool_metrics_.SetPool(workers, jobs);
    const size_t core_workers =
        core_->Query<size_t>([this] { return core_->sched().worker_count(); });
    pool_metrics_.SetInMemory(core_workers, book_->size(), predictor_->awaiting());
    const BlobTotals blobs = collector_->Totals();
    pool_metrics_.SetDisk(StoreFileBytes(options_.data_dir), blobs.count, blobs.bytes);
  });
  if (options_.http.empty()) return absl::OkStatus();
  auto o = HttpOptions();
  if (!o.ok()) return o.status();
  auto server = http::Server::Start(*o, *http_reads_, feed_);
  if (!server.ok()) {
    if (options_.http_required || absl::IsInvalidArgument(server.status())) {
      return server.status();
    }
    spdlog::warn("{}; running without the dashboard", std::string(server.status().message()));
    return absl::OkStatus();
  }
  http_ = std::move(*server);
  http_live_.store(http_.get());
  spdlog::info("dashboard at https://{}/ (bound to {}; signed by the pool CA: {}/ca.pem)",
               text::JoinHostPort(AdvertisedHost(identity_.names, http_->host()), http_->port()),
               text::JoinHostPort(http_->host(), http_->port()), options_.data_dir);
  return absl::OkStatus();
}

absl::Status CoordinatorImpl::OpenTrust() {
  ::chmod(options_.data_dir.c_str(), 0700);  // whoever reaches the data dir is the admin
  const fs::path legacy = fs::path(options_.data_dir) / "pool.token";
  if (fs::exists(legacy)) {
    spdlog::warn(
        "{} is from an idlepool before TLS pools and is no longer used: workers join "
        "with join tokens, people log in with access tokens (README: upgrading); "
        "delete it",
        legacy.string());
  }
  auto host = text::SplitHostPort(options_.listen);
  auto identity = MakeServerIdentity(options_.data_dir, options_.advertise,
                                     host.ok() ? host->host : "", clock_.WallMs() / 1000);
  if (!identity.ok()) return identity.status();
  identity_ = std::move(*identity);
  auto creds = trust::CredentialStore::Open((fs::path(options_.data_dir) / "trust.db").string());
  if (!creds.ok()) return creds.status();
  credentials_ = std::move(*creds);
  return absl::OkStatus();
}

absl::Status CoordinatorImpl::StartAdmin() {
  const std::string path = admin_socket();
  std::error_code ec;
  fs::remove(path, ec);  // a stale socket of a coordinator that died (the LOCK is ours now)
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(admin_service_.get());
  builder.RegisterService(admin_jobs_.get());
  admin_server_ = builder.BuildAndStart();
  if (!admin_server_) return absl::UnavailableError(absl::StrCat("cannot listen on ", path));
  ::chmod(path.c_str(), 0600);
  return absl::OkStatus();
}

absl::StatusOr<std::string> CoordinatorImpl::CreateToken(const std::string& role, int64_t ttl_s,
                                                         int64_t uses, const std::string& name) {
  v1::CreateTokenRequest req;
  req.set_role(role);
  req.set_ttl_s(ttl_s);
  req.set_uses(uses);
  req.set_name(name);
  auto reply = admin_service_->Create(req);
  if (!reply.ok()) return reply.status();
  return reply->token();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(const Options& options,
                                                                const platform::Clock& clock) {
  if (options.data_dir.empty()) return absl::InvalidArgumentError("--data-dir is required");
  auto impl = std::make_unique<CoordinatorImpl>(options, clock);
  if (auto st = impl->Init(); !st.ok()) return st;
  return std::unique_ptr<Coordinator>(std::move(impl));
}

}  // namespace idlepool::coordinator
