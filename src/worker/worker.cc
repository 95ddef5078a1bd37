// The worker: wires its units together (worker.h says what it does). The units:
//   session.h        the stream, Hello, heartbeats, reconnects, Send
//   attempt_runner.h one attempt: stage -> run -> collect -> upload, and its report
//   owner_monitor.h  sensors -> owner policy -> freeze / thaw / vacate (GPUs too)
//   checkpointer.h   periodic and final checkpoint uploads
//   link_prober.h    link measurements for the planner
// This file keeps the attempt table (assignments in, kills and acknowledgements, the runner
// threads), the work dir's setup, the outbox's redelivery, and Stop().
#include "worker/worker.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "blob/peer_server.h"
#include "platform/cgroup.h"
#include "platform/environment.h"
#include "platform/fd_limit.h"
#include "platform/linux_sensors.h"
#include "platform/process.h"
#include "platform/random.h"
#include "platform/sensors.h"
#include "sandbox/limits.h"
#include "spdlog/spdlog.h"
#include "text/utf8.h"
#include "trust/ca.h"
#include "trust/revocations.h"
#include "wire/wire.h"
#include "worker/attempt.h"
#include "worker/attempt_runner.h"
#include "worker/blob_cache.h"
#include "worker/cgroup_pool.h"
#include "worker/checkpointer.h"
#include "worker/gpu_binding.h"
#include "worker/identity.h"
#include "worker/launcher.h"
#include "worker/link_prober.h"
#include "worker/measure.h"
#include "worker/outbox.h"
#include "worker/owner_monitor.h"
#include "worker/recycled_dirs.h"
#include "worker/replica_tunnel.h"
#include "worker/sandbox_slots.h"
#include "worker/session.h"
#include "worker/stop_signal.h"
#include "worker/task_env.h"
#include "worker/transfers.h"

namespace idlepool::worker {
namespace fs = std::filesystem;
namespace {

// Hello.gpus: one discovered device (platform/gpu.h) as the protocol states it.
void GpuToProto(const platform::GpuDevice& g, v1::GpuDevice* out) {
  out->set_index(g.index);
  out->set_vendor(g.vendor);
  out->set_name(g.name);
  out->set_memory_mb(g.memory_mb);
  out->set_uuid(g.uuid);
  for (const auto& api : g.apis) out->add_apis(api);
  out->set_cuda_id(g.cuda_id);
  out->set_opencl_id(g.opencl_id);
  if (g.temperature_c) out->set_temperature_c(*g.temperature_c);
  if (g.utilization) out->set_utilization(*g.utilization);
  if (g.memory_used_mb) out->set_memory_used_mb(*g.memory_used_mb);
}

Options Defaulted(Options o) {
  if (o.name.empty()) {
    auto id = LoadIdentity(o.identity_dir);
    o.name = id.ok() && id->has_value() ? (*id)->name : HostName();
  }
  if (o.slots == 0) o.slots = std::max(1u, std::thread::hardware_concurrency());
  return o;
}

}  // namespace

class Worker::Impl final : public SessionHandler {
 public:
  Impl(Options options, const platform::Clock& clock);
  ~Impl() override;

  const std::string& boot_id() const { return boot_id_; }
  absl::Status Run();
  void Stop();

  // SessionHandler (the Run thread).
  void FillHello(v1::Hello* hello) override;
  void AfterHello(std::vector<v1::WorkerMessage>* then) override;
  void OnWelcome() override {
    if (prober_) prober_->Joined();
  }
  void OnAssign(const v1::Assignment& as) override;
  void OnKill(const v1::Kill& kill) override;
  void OnAck(const v1::ReportAck& ack) override;
  void OnRevocations(const v1::Revocations& r) override;

 private:
  // Run's steps.
  absl::Status PrepareWorkDir();
  absl::Status StartPeerServer();
  absl::Status StartTunnel();
  absl::StatusOr<std::vector<v1::AttemptReport>> ReopenOutbox();
  void OpenCgroups();
  absl::Status OpenSandbox();
  absl::Status OpenSensors();
  void StartUnits(std::vector<v1::AttemptReport> to_redeliver);
  void KillLeftoverProcessGroups();

  void Send(const v1::WorkerMessage& m) { session_.Send(m); }
  AttemptList Snapshot();
  void RunnerLoop();
  void JoinAttemptThreads();
  void VacateAndLeave();  // Stop's work, done by its first caller
  void JoinThreads();
  void Forget(uint64_t id);
  void Redeliver(std::vector<v1::AttemptReport> reports);
  void HandBack(const v1::Assignment& as, v1::AttemptReport::Result result,
                const std::string& message);

  Options options_;
  const platform::Clock& clock_;
  const std::string boot_id_;
  StopSignal stop_;
  BlobCache cache_;
  Outbox outbox_;
  RecycledDirs dirs_;
  RealLauncher launcher_;
  TransferGauge gauge_;
  Session session_;  // creates the stubs
  OwnerMonitor owner_;
  Checkpointer checkpointer_;
  LogShipper log_shipper_{[this](const v1::WorkerMessage& m) { Send(m); }};
  std::unique_ptr<LinkProber> prober_;  // null: no probes
  // Set in Run before sessions start.
  std::unique_ptr<platform::FileLock> work_dir_lock_;
  std::string work_dir_real_;  // canonical work dir, marks this worker's tasks
  std::unique_ptr<blob::PeerServer> peer_server_;
  std::unique_ptr<ReplicaTunnel> tunnel_;  // null: --no-tunnel
  // What the pool revoked, as the coordinator said; both ports refuse it (trust/revocations.h).
  std::shared_ptr<trust::RevocationList> revocations_ = std::make_shared<trust::RevocationList>();
  std::unique_ptr<platform::TaskCgroups> cgroups_;
  std::unique_ptr<CgroupPool> cgroup_pool_;
  std::unique_ptr<SandboxSlots> sandboxes_;  // null: --no-sandbox
  std::unique_ptr<BlobTransfers> transfers_;
  std::unique_ptr<AttemptRunner> runner_;
  Calibration calibration_;
  std::thread outbox_thread_;   // Redeliver
  AttemptList hello_finished_;  // Run thread: reports resent after the Hello being built

  std::mutex mu_;
  std::condition_variable acked_cv_;  // attempts_ shrank
  std::map<uint64_t, std::shared_ptr<Attempt>> attempts_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::GpuDevice> offered_gpus_ ABSL_GUARDED_BY(mu_);  // as the last Hello listed
  // Runner threads are kept and reused (a thread per attempt was a visible cost for short
  // tasks); a new one is started only when none is idle, so no attempt waits.
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::condition_variable runner_cv_;
  std::deque<std::shared_ptr<Attempt>> run_queue_ ABSL_GUARDED_BY(mu_);
  int idle_runners_ ABSL_GUARDED_BY(mu_) = 0;
  bool runners_exit_ ABSL_GUARDED_BY(mu_) = false;

  // Stop and the Run thread's end both join the runner threads; the second caller waits for
  // the first (a runner told to exit must never be left waiting, nor reports left unsent).
  // The certificate and its renewal (identity.h): the heartbeat thread asks, Serve renews.
  trust::TlsFiles TlsFilesOf() const;
  bool RenewalDue();
  absl::Status Renew();
  std::mutex identity_mu_;
  std::optional<Identity> identity_ ABSL_GUARDED_BY(identity_mu_);

  std::mutex join_mu_;  // taken before mu_
  // Stop may be called from several threads (a signal, the destructor): each caller returns
  // only once the first one has finished, so nothing is destroyed under a Stop still running.
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
};

Worker::Impl::Impl(Options options, const platform::Clock& clock)
    : options_(Defaulted(std::move(options))),
      clock_(clock),
      boot_id_(platform::RandomHex(16)),
      cache_((fs::path(options_.work_dir) / "cache").string(), options_.cache_bytes),
      outbox_((fs::path(options_.work_dir) / "outbox").string()),
      dirs_(options_.work_dir),
      session_(SessionConfig{options_.coordinator, trust::WorkerChannelCredentials(TlsFilesOf()),
                             [this] { return RenewalDue(); }, [this] { return Renew(); },
                             options_.name, boot_id_, options_.slots, options_.heartbeat},
               stop_, *this),
      owner_(
          OwnerMonitorConfig{options_.policy, options_.gpus, options_.work_dir,
                             options_.min_free_disk_bytes},
          clock_, stop_, [this] { return Snapshot(); },
          [this](const v1::WorkerMessage& m) { Send(m); }),
      checkpointer_(clock_, [this](const UploadSource& source, const v1::OutputFile& f,
                                   std::atomic<uint64_t>* sent) {
        return transfers_->Upload(source, f, sent);
      }) {
  session_.Connect(options_.probe);
  if (options_.probe) {
    prober_ = std::make_unique<LinkProber>(
        LinkProberConfig{options_.coordinator, "", options_.probe_interval}, session_.probes(),
        clock_, gauge_, stop_, [this](const v1::WorkerMessage& m) { Send(m); });
  }
}

trust::TlsFiles Worker::Impl::TlsFilesOf() const {
  const fs::path d(options_.identity_dir);
  return trust::TlsFiles{(d / "key.pem").string(), (d / "cert.pem").string(),
                         (d / "ca.pem").string()};
}

bool Worker::Impl::RenewalDue() {
  std::lock_guard lock(identity_mu_);
  if (!identity_) {
    auto id = LoadIdentity(options_.identity_dir);
    if (!id.ok() || !id->has_value()) return false;
    identity_ = std::move(**id);
  }
  return worker::RenewalDue(*identity_, clock_.WallMs() / 1000);
}

absl::Status Worker::Impl::Renew() {
  std::lock_guard lock(identity_mu_);
  if (!identity_) return absl::FailedPreconditionError("no identity loaded");
  absl::Status st = worker::Renew(&*identity_, options_.identity_dir);
  if (st.ok() && tunnel_) tunnel_->SetCertificate(identity_->tls.cert_pem, identity_->tls.key_pem);
  return st;
}

Worker::Impl::~Impl() {
  Stop();
  JoinThreads();
}

void Worker::Impl::JoinThreads() {
  JoinAttemptThreads();
  stop_.Notify();
  owner_.Join();
  checkpointer_.Join();
  log_shipper_.Join();
  if (prober_) prober_->Join();
  if (outbox_thread_.joinable()) outbox_thread_.join();
}

absl::Status Worker::Impl::Run() {
  if (absl::Status st = PrepareWorkDir(); !st.ok()) return st;
  if (absl::Status st = OpenSandbox(); !st.ok()) return st;
  if (auto st = cache_.Init(clock_.WallMs()); !st.ok()) return st;
  if (absl::Status st = StartPeerServer(); !st.ok()) return st;
  if (absl::Status st = StartTunnel(); !st.ok()) return st;
  auto to_redeliver = ReopenOutbox();
  if (!to_redeliver.ok()) return to_redeliver.status();
  OpenCgroups();
  if (absl::Status st = OpenSensors(); !st.ok()) return st;
  StartUnits(std::move(*to_redeliver));
  if (absl::Status st = session_.Serve(); !st.ok()) return st;
  JoinThreads();
  if (peer_server_) peer_server_->Shutdown();
  if (tunnel_) tunnel_->Stop();
  return absl::OkStatus();
}

absl::Status Worker::Impl::PrepareWorkDir() {
  std::error_code ec;
  fs::create_directories(options_.work_dir, ec);
  // One worker per work dir: two would wipe each other's attempts.
  auto lock = platform::FileLock::Acquire((fs::path(options_.work_dir) / "LOCK").string());
  if (!lock.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "work dir ", options_.work_dir, " is in use by another worker: ", lock.status().message()));
  }
  work_dir_lock_ = std::move(*lock);
  work_dir_real_ = fs::canonical(options_.work_dir, ec).string();
  // Attempts left by an earlier run of this worker belong to a previous boot: the coordinator
  // has requeued them. Their processes may still run (the worker was SIGKILLed): kill them,
  // then their files are garbage.
  KillLeftoverProcessGroups();
  fs::remove_all(fs::path(options_.work_dir) / "attempts", ec);
  fs::remove_all(fs::path(options_.work_dir) / "spare", ec);
  fs::remove_all(fs::path(options_.work_dir) / "slots", ec);
  fs::create_directories(fs::path(options_.work_dir) / "attempts", ec);
  fs::create_directories(fs::path(options_.work_dir) / "spare", ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot use work dir ", options_.work_dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status Worker::Impl::StartPeerServer() {
  if (!options_.peers) return absl::OkStatus();
  blob::PeerServerOptions po;
  po.listen = options_.peer_listen;
  po.credentials = trust::PeerServerCredentials(TlsFilesOf());
  po.revocations = revocations_;
  auto server = blob::PeerServer::Start(cache_.store(), po);
  if (!server.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--peer-listen: ", server.status().message()));
  }
  peer_server_ = std::move(*server);
  spdlog::info("serving cached blobs to peers on {}", peer_server_->address());
  return absl::OkStatus();
}

// The gateway's tunnels to this worker's replicas (replica_tunnel.h), with its identity's
// certificate (renewals swap it in: Renew).
absl::Status Worker::Impl::StartTunnel() {
  if (options_.tunnel_listen.empty()) return absl::OkStatus();
  auto id = LoadIdentity(options_.identity_dir);
  if (!id.ok()) return id.status();
  if (!id->has_value()) return absl::FailedPreconditionError("no identity: join the pool first");
  ReplicaTunnel::Config c;
  c.listen = options_.tunnel_listen;
  c.key_pem = (*id)->tls.key_pem;
  c.cert_pem = (*id)->tls.cert_pem;
  c.ca_pem = (*id)->tls.ca_pem;
  c.slots = sandboxes_.get();
  c.check_gateway = [revoked = revocations_](const std::string& pem) -> std::optional<std::string> {
    absl::StatusOr<trust::CertInfo> cert = trust::InspectCertificate(pem);
    if (!cert.ok()) return "an unreadable certificate";
    return revoked->Refusal(*cert, "gateway");
  };
  c.find = [this](uint64_t attempt) -> std::shared_ptr<Attempt> {
    std::lock_guard lock(mu_);
    auto it = attempts_.find(attempt);
    return it == attempts_.end() ? nullptr : it->second;
  };
  auto tunnel = ReplicaTunnel::Start(std::move(c));
  if (!tunnel.ok()) return tunnel.status();
  tunnel_ = std::move(*tunnel);
  spdlog::info("serving tunnels to service replicas on {}", tunnel_->address());
  return absl::OkStatus();
}

// Finished attempts an earlier run of this worker filed but could not deliver: delivered now
// (their tasks were requeued when that run ended; the coordinator still takes a success whose
// task has not succeeded elsewhere meanwhile). Held from the first hello on, as delivering: the
// coordinator gives each back to this worker (rather than rerun its task elsewhere) while its
// outputs go up.
absl::StatusOr<std::vector<v1::AttemptReport>> Worker::Impl::ReopenOutbox() {
  auto filed = outbox_.Open();
  if (!filed.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot use work dir ", options_.work_dir, ": ", filed.status().message()));
  }
  std::lock_guard lock(mu_);
  for (const auto& r : *filed) {
    auto a = std::make_shared<Attempt>();
    a->id = r.attempt();
    a->paths = AttemptPaths::For(options_.work_dir, r.attempt());
    a->filed = true;
    attempts_[a->id] = a;
  }
  return filed;
}

// The task sandbox, probed: a worker that cannot sandbox its tasks refuses to start unless told
// --no-sandbox.
absl::Status Worker::Impl::OpenSandbox() {
  if (options_.no_sandbox) {
    options_.sandbox_tier = "none";
    spdlog::warn(
        "--no-sandbox: tasks run as this worker's user, with this user's files, keys and "
        "processes in their reach; lend this machine only to work you trust");
    return absl::OkStatus();
  }
  sandbox::Settings s = sandbox::DetectSettings(work_dir_real_, options_.sandbox_show);
  s.uid_base = options_.sandbox_uid_base;
  s.pids_max = options_.task_pids_max;
  s.device_root = options_.device_root;
  const uint64_t machine = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                           static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  s.task_memory_bytes = sandbox::DefaultTaskMemoryBytes(options_.policy.task_memory_mb, machine);
  s.task_dir_bytes = sandbox::DefaultTaskDirBytes(options_.policy.task_dir_mb,
                                                  FreeDiskBytes(work_dir_real_).value_or(0),
                                                  options_.min_free_disk_bytes, options_.slots);
  auto landlock = sandbox::Probe(s);
  if (!landlock.ok() && options_.sandbox_optional) {
    options_.sandbox_tier = "none";
    spdlog::warn("tasks run unsandboxed, as this user: {}",
                 std::string(landlock.status().message()));
    return absl::OkStatus();
  }
  if (!landlock.ok()) return landlock.status();
  options_.sandbox_tier = std::string(sandbox::TierName(s.tier));
  spdlog::info(
      "tasks run sandboxed (tier {}{}); each task may hold {} MB of memory (unless its "
      "job says) and {} MB in its task dir",
      options_.sandbox_tier,
      *landlock > 0 ? absl::StrCat(", Landlock ABI ", *landlock) : ", no Landlock",
      s.task_memory_bytes >> 20, s.task_dir_bytes >> 20);
  sandboxes_ = std::make_unique<SandboxSlots>(std::move(s));
  return absl::OkStatus();
}

// Containment: one cgroup per attempt where the machine allows it.
void Worker::Impl::OpenCgroups() {
  std::string why;
  cgroups_ = platform::TaskCgroups::Open(
      absl::StrCat(std::hash<std::string>{}(work_dir_real_)&0xffffffffffffull), &why);
  if (!cgroups_) {
    spdlog::warn(
        "no cgroups for tasks ({}): a task's child that leaves its process group "
        "(setsid) can survive a kill; owner CPU load is unknown",
        why);
    return;
  }
  if (int n = cgroups_->KillLeftovers(); n > 0) {
    spdlog::warn("killed {} task cgroups left running by an earlier run of this worker", n);
  }
  spdlog::info("tasks run in their own cgroups under {}", cgroups_->path());
  cgroup_pool_ = std::make_unique<CgroupPool>(cgroups_.get());
}

absl::Status Worker::Impl::OpenSensors() {
  if (!options_.sensors_dir.empty()) {
    auto fake = platform::FakeSensorDir::Open(options_.sensors_dir);
    if (!fake.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--sensors-dir: ", fake.status().message()));
    }
    owner_.SetSensors(std::move(*fake));
    return absl::OkStatus();
  }
  platform::TaskCgroups* groups = cgroups_.get();
  // The pool's own CPU: its tasks (their cgroups) and this worker itself. Without cgroups the
  // pool's own load cannot be told apart from the owner's: a real owner CPU load reading would
  // count our tasks and suspend them for their own work.
  owner_.SetSensors(platform::OpenDefaultSensors(groups ? std::function<double()>([groups] {
                      return groups->CpuSeconds() + platform::SelfCpuSeconds();
                    })
                                                        : std::function<double()>()),
                    /*trust_owner_load=*/groups != nullptr);
  return absl::OkStatus();
}

void Worker::Impl::StartUnits(std::vector<v1::AttemptReport> to_redeliver) {
  transfers_ = std::make_unique<BlobTransfers>(BlobTransfersConfig{
      session_.blobs(), "", options_.name, boot_id_, &cache_, peer_server_.get(),
      trust::WorkerChannelCredentials(TlsFilesOf()), &clock_, &stop_, &gauge_,
      [this](const v1::WorkerMessage& m) { Send(m); }});
  AttemptHooks hooks;
  hooks.owner_suspended = [this] { return owner_.suspended(); };
  hooks.gpu_held = [this](const std::vector<uint32_t>& g) { return owner_.AnyGpuHeld(g); };
  hooks.tell_suspended = [this](const std::vector<uint64_t>& ids) { owner_.SendSuspended(ids); };
  hooks.low_on_disk = [this] { return owner_.LowOnDisk(); };
  hooks.disk_reason = [this] { return owner_.DiskReason(); };
  hooks.disk_full = [this](const std::string& why) { owner_.DiskFull(why); };
  // A task's start needs about ten (pipes, its log files, its cgroup, a pidfd).
  hooks.short_of_fds = [] { return platform::FewFdsLeft(32); };
  hooks.forget = [this](uint64_t id) { Forget(id); };
  // The worker's environment, read once: the tokens are already gone from it.
  TaskEnvBase task_env = TaskEnvBaseFrom(platform::Environment(), options_.policy.task_path,
                                         options_.policy.pass_env, platform::UserName());
  runner_ = std::make_unique<AttemptRunner>(
      AttemptRunnerConfig{options_.name, work_dir_real_, options_.low_priority, options_.kill_grace,
                          options_.task_fd_limit, std::move(task_env)},
      AttemptRunnerDeps{&clock_, &launcher_, transfers_.get(), &outbox_, &dirs_, cgroup_pool_.get(),
                        &checkpointer_, &stop_, [this](const v1::WorkerMessage& m) { Send(m); },
                        std::move(hooks), sandboxes_.get(), &log_shipper_});
  owner_.Step();  // the first hello already says whether this worker accepts work
  owner_.Start();
  checkpointer_.Start(
      owner::SecondsToMillis(options_.policy.checkpoint_interval_s), [this] { return Snapshot(); },
      [this](const v1::WorkerMessage& m) { Send(m); }, stop_);
  log_shipper_.Start(stop_);
  if (options_.calibrate) {
    calibration_ = Calibrate();
    spdlog::info("calibration: {:.0f} MB/s of SHA-256 per core, {} cores", calibration_.cpu_score,
                 calibration_.cores);
  }
  if (prober_) prober_->Start();
  if (!to_redeliver.empty()) {
    spdlog::info("outbox: {} finished attempts from an earlier run to deliver",
                 to_redeliver.size());
    outbox_thread_ = std::thread([this, reports = std::move(to_redeliver)] { Redeliver(reports); });
  }
}

void Worker::Impl::Stop() {
  if (stop_.Raise()) {
    std::unique_lock lock(stop_mu_);
    stop_cv_.wait(lock, [&] { return stopped_; });
    return;
  }
  VacateAndLeave();
  std::lock_guard lock(stop_mu_);
  stopped_ = true;
  stop_cv_.notify_all();
}

void Worker::Impl::VacateAndLeave() {
  if (prober_) prober_->Stop();
  stop_.Notify();
  AttemptList all = Snapshot();
  if (!all.empty()) {
    spdlog::info("worker {} stopping: vacating {} attempts", options_.name, all.size());
  }
  owner_.StopAccepting();
  // Every attempt still running is vacated as for the owner (SIGTERM, grace, checkpoint,
  // PREEMPTED report: never a failure). Finished attempts whose reports are on their way are
  // kept until acknowledged. First say so: a preemption report must not bring the task straight
  // back here.
  {
    v1::WorkerMessage m;
    auto* o = m.mutable_owner_state();
    o->set_accepting(false);
    o->set_state("vacate");
    o->set_reason("worker stopping");
    Send(m);
  }
  v1::WorkerMessage leaving;
  leaving.mutable_leaving();
  const auto grace = owner::SecondsToMillis(options_.policy.vacate_grace_s);
  for (auto& a : all) {
    if (Vacate(*a, grace, "worker stopped (SIGTERM or shutdown)", clock_.Now())) {
      leaving.mutable_leaving()->add_vacated_attempts(a->id);
    }
  }
  JoinAttemptThreads();  // each vacated attempt has sent its report
  {
    std::unique_lock lock(mu_);
    acked_cv_.wait_for(lock, std::chrono::seconds(5), [&] { return attempts_.empty(); });
  }
  // Attempts whose reports could not be delivered are handed back by the Leaving message.
  session_.Leave(leaving);
  stop_.Notify();
}

AttemptList Worker::Impl::Snapshot() {
  AttemptList all;
  std::lock_guard lock(mu_);
  for (auto& [id, a] : attempts_) all.push_back(a);
  return all;
}

void Worker::Impl::FillHello(v1::Hello* hello) {
  hello->mutable_capacity()->set_cpus(options_.slots);
  hello->mutable_capacity()->set_memory_mb(options_.memory_mb);
  if (options_.gpus) {
    // Every offered device, with readings taken now (a few NVML calls).
    const auto gpus = options_.gpus->ReadLive();
    hello->mutable_capacity()->set_gpus(static_cast<uint32_t>(gpus.size()));
    for (const auto& g : gpus) {
      v1::GpuDevice* d = hello->add_gpus();
      GpuToProto(g, d);
      d->set_unavailable(owner_.GpuUnavailable(g.index));
    }
  }
  hello->set_not_accepting(!owner_.accepting());
  hello->set_allow_host_network(options_.policy.allow_host_network);
  for (const std::string& u : options_.policy.accept_users) hello->add_accept_users(u);
  for (const std::string& u : options_.policy.refuse_users) hello->add_refuse_users(u);
  hello->set_sandbox(options_.sandbox_tier);
  hello->set_cpu_score(calibration_.cpu_score);
  hello->set_cores(calibration_.cores);
  cache_.TakeChanges();  // the Hello lists the whole cache: queued changes are in it
  for (auto& b : cache_.Contents(kMaxHelloCached)) *hello->add_cached() = std::move(b);
  if (peer_server_) hello->set_peer_address(peer_server_->address());
  if (tunnel_) hello->set_tunnel_address(tunnel_->address());
  hello_finished_.clear();
  std::lock_guard lock(mu_);
  for (auto& [id, a] : attempts_) {
    hello->add_held_attempts(id);
    std::lock_guard alock(a->mu);
    if (a->filed) hello->add_delivering_attempts(id);
    if (a->finished) hello_finished_.push_back(a);
    if (a->frozen) hello->add_frozen_attempts(id);
  }
  // The devices this session offers: assignments are checked against them.
  offered_gpus_.assign(hello->gpus().begin(), hello->gpus().end());
}

void Worker::Impl::AfterHello(std::vector<v1::WorkerMessage>* then) {
  if (auto owner = owner_.OwnerStateToResend()) then->push_back(std::move(*owner));
  // Reports that were not acknowledged before the last session ended go again.
  for (auto& a : hello_finished_) {
    v1::WorkerMessage m;
    std::lock_guard alock(a->mu);
    *m.mutable_report() = a->report;
    then->push_back(std::move(m));
  }
  hello_finished_.clear();
}

// Assigned while the Leaving message or a "not accepting" owner state was in flight, or not
// runnable here: hand it straight back (never counted against the task).
void Worker::Impl::HandBack(const v1::Assignment& as, v1::AttemptReport::Result result,
                            const std::string& message) {
  v1::WorkerMessage m;
  m.mutable_report()->set_attempt(as.attempt());
  m.mutable_report()->set_result(result);
  m.mutable_report()->set_message(message);
  Send(m);
}

void Worker::Impl::OnAssign(const v1::Assignment& as) {
  if (stop_.stopping() || !owner_.accepting()) {
    return HandBack(
        as, v1::AttemptReport::PREEMPTED,
        stop_.stopping() ? "worker is leaving" : "the machine's owner policy accepts no work now");
  }
  if (as.host_network() && !options_.policy.allow_host_network) {
    // The coordinator places such a job elsewhere (Hello.allow_host_network); one that did not
    // (an older one) gets it back as the machine's refusal, never the task's failure.
    spdlog::warn("attempt {}: refused: its job asks for the host network", as.attempt());
    return HandBack(as, v1::AttemptReport::MACHINE_FAULT,
                    "the machine's owner policy refuses the host network "
                    "([sandbox] allow_host_network = false)");
  }
  auto a = std::make_shared<Attempt>();
  a->id = as.attempt();
  a->assignment = as;
  a->assigned = clock_.Now();
  a->paths = AttemptPaths::For(options_.work_dir, as.attempt());
  std::lock_guard lock(mu_);
  GpuBinding binding =
      BindGpus(std::vector<uint32_t>(as.gpus().begin(), as.gpus().end()), offered_gpus_);
  if (!binding.problem.empty()) {
    // Not the task's fault: a machine fault sends it elsewhere, never counted against it.
    spdlog::warn("attempt {}: refused: {}", as.attempt(), binding.problem);
    return HandBack(as, v1::AttemptReport::MACHINE_FAULT,
                    text::TruncateUtf8(binding.problem, 1024));
  }
  a->gpu_env = std::move(binding.env);
  a->gpus.assign(as.gpus().begin(), as.gpus().end());
  if (sandboxes_) {
    a->slot = sandboxes_->Acquire();
    a->paths = AttemptPaths::InSlot(options_.work_dir, sandboxes_->SlotDir(a->slot), a->id);
    a->device_nodes = GpuDeviceNodes(a->gpus, offered_gpus_);
  }
  if (attempts_.count(a->id)) return;
  attempts_[a->id] = a;
  run_queue_.push_back(a);
  if (idle_runners_ == 0) {
    threads_.emplace_back([this] { RunnerLoop(); });
  } else {
    runner_cv_.notify_one();
  }
}

void Worker::Impl::RunnerLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    ++idle_runners_;
    runner_cv_.wait(lock, [&] { return !run_queue_.empty() || runners_exit_; });
    --idle_runners_;
    if (run_queue_.empty()) return;  // told to exit, nothing left to run
    std::shared_ptr<Attempt> a = std::move(run_queue_.front());
    run_queue_.pop_front();
    lock.unlock();
    runner_->Run(std::move(a));
    lock.lock();
  }
}

void Worker::Impl::JoinAttemptThreads() {
  std::lock_guard join(join_mu_);
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    runners_exit_ = true;
    runner_cv_.notify_all();
    threads.swap(threads_);
  }
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
  // Only ever called once stopping, so the runners stay told to exit: no attempt is taken any
  // more (OnAssign hands them back).
}

void Worker::Impl::OnKill(const v1::Kill& kill) {
  const uint64_t id = kill.attempt();
  std::shared_ptr<Attempt> a;
  {
    std::lock_guard lock(mu_);
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    a = it->second;
  }
  // A service replica scaled down or cancelled drains first (owner_monitor.h, Retire).
  if (kill.code() == v1::KILL_REASON_CANCELLED &&
      owner_.Retire(*a) != OwnerMonitor::Retirement::kNotAReplica) {
    return;
  }
  bool drop = false;
  {
    std::lock_guard lock(a->mu);
    // Finished work is never thrown away for a stale kill (the coordinator lost track of the
    // attempt while its link was down): its report is delivered and may still commit. A job
    // cancelled, or a task already done elsewhere, does drop it.
    if (a->filed && wire::KeepsFinishedOutputs(kill.code())) {
      spdlog::info("attempt {}: coordinator says stale; delivering its finished outputs anyway",
                   id);
      return;
    }
    // A retiring replica's own coordinator holds back other kills of it (core_loop.cc): this
    // one comes from a coordinator that no longer drains it (restarted), so it ends the drain.
    spdlog::info("attempt {}: killed by the coordinator ({})", id, kill.reason());
    a->killed = true;
    if (a->process) a->process->Kill(SIGKILL);
    drop = a->finished;
  }
  if (drop) Forget(id);
}

void Worker::Impl::OnRevocations(const v1::Revocations& r) {
  trust::Revoked revoked;
  for (const v1::RevokedWorker& w : r.workers()) revoked.workers[w.name()] = w.revoked_unix_s();
  revoked.tokens.insert(r.token_ids().begin(), r.token_ids().end());
  revocations_->Replace(std::move(revoked));
}

void Worker::Impl::OnAck(const v1::ReportAck& ack) {
  if (!ack.accepted()) {
    spdlog::warn("attempt {}: report refused by the coordinator: {}", ack.attempt(), ack.reason());
  }
  Forget(ack.attempt());
}

void Worker::Impl::Forget(uint64_t id) {
  std::shared_ptr<Attempt> a;
  {
    std::lock_guard lock(mu_);
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    a = it->second;
    attempts_.erase(it);
    acked_cv_.notify_all();
  }
  std::error_code ec;
  if (a->slot < 0) {  // a sandboxed attempt's dirs are its slot's, emptied when it ended
    RecycledDirs::RemoveTree(a->paths.task_dir);
    {
      std::lock_guard lock(a->ckpt_mu);  // an upload in flight finishes first
    }
    dirs_.Recycle(a->paths.checkpoint_dir);
  }
  fs::remove(a->paths.stdout_log, ec);
  fs::remove(a->paths.stderr_log, ec);
  outbox_.Remove(id);
}

// Delivers outbox entries left by an earlier run (held in attempts_ since Run started): uploads
// their outputs, then sends their reports (resent after every reconnect until acknowledged, like
// any finished attempt). An entry the coordinator kills (job cancelled, task done elsewhere) is
// dropped.
void Worker::Impl::Redeliver(std::vector<v1::AttemptReport> reports) {
  for (auto& r : reports) {
    std::shared_ptr<Attempt> a;
    {
      std::lock_guard lock(mu_);
      auto it = attempts_.find(r.attempt());
      if (it == attempts_.end()) continue;  // forgotten meanwhile
      a = it->second;
    }
    absl::Status st = runner_->DeliverOutputs(*a, r, &a->transfer.output_bytes);
    if (st.code() == absl::StatusCode::kCancelled && stop_.stopping()) return;
    if (AttemptRunner::OutputRefused(st)) {  // refused for good: the attempt failed
      r.clear_outputs();
      r.set_result(v1::AttemptReport::FAILED);
      r.set_message(text::TruncateUtf8(std::string(st.message()), 1024));
    } else if (!st.ok()) {
      if (AttemptRunner::OutputDamaged(st)) {
        spdlog::warn("outbox: attempt {}: {}; dropping the attempt", r.attempt(),
                     std::string(st.message()));
      }
      Forget(r.attempt());
      continue;
    }
    // What this run uploaded counts too (the filed report has what the earlier run did).
    r.mutable_transfer()->set_output_bytes(r.transfer().output_bytes() +
                                           a->transfer.output_bytes.load());
    {
      std::lock_guard lock(a->mu);
      a->finished = true;
      a->report = r;
    }
    spdlog::info("outbox: attempt {} delivered from an earlier run", r.attempt());
    v1::WorkerMessage m;
    *m.mutable_report() = r;
    Send(m);
  }
}

// Every task runs with IDLEPOOL_WORK_DIR set to this worker's work dir, so a restarted worker
// can find and kill what its SIGKILLed predecessor left running (the tasks are in their own
// process groups and outlive it). Costs nothing per task: no pid files.
void Worker::Impl::KillLeftoverProcessGroups() {
  for (pid_t g : platform::ProcessGroupsWithEnv("IDLEPOOL_WORK_DIR=" + work_dir_real_)) {
    spdlog::warn("killing process group {} left running by an earlier run of this worker", g);
    platform::KillProcessGroup(g);
  }
}

Worker::Worker(Options options, const platform::Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}
Worker::~Worker() = default;
absl::Status Worker::Run() { return impl_->Run(); }
void Worker::Stop() { impl_->Stop(); }
const std::string& Worker::boot_id() const { return impl_->boot_id(); }

}  // namespace idlepool::worker
