#include "worker/worker.h"

#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "worker/gpu_binding.h"
#include "owner/gpu_policy.h"
#include "worker/outbox.h"
#include "blob/peer_server.h"
#include "blob/swarm.h"
#include "blob/transfer.h"
#include "worker/blob_cache.h"
#include "worker/measure.h"
#include "text/utf8.h"
#include "wire/wire.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/cgroup.h"
#include "platform/linux_sensors.h"
#include "platform/process.h"
#include "platform/random.h"
#include "platform/sensors.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"

extern char** environ;

namespace idlepool::worker {
namespace fs = std::filesystem;

namespace {

constexpr const char* kTokenKey = "x-idlepool-token";

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "worker";
  return buf;
}

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

// GPU live readings (GpuInventory::ReadLive) at most this often: NVML's utilisation sample
// period is 1/6 s to 1 s, and an owner's GPU process is noticed within a few seconds.
constexpr core::Millis kGpuReadGap{2000};
// GpuReadings alone at most this often, unless a device's `unavailable` changed (then at once).
constexpr core::Millis kGpuSendGap{5000};

// True when `now` differs from `sent` enough to tell the coordinator (proto: GpuReadings).
bool GpusChanged(const std::vector<v1::GpuDevice>& sent, const std::vector<v1::GpuDevice>& now) {
  if (sent.size() != now.size()) return true;
  for (size_t i = 0; i < now.size(); ++i) {
    const v1::GpuDevice& a = sent[i];
    const v1::GpuDevice& b = now[i];
    if (a.unavailable() != b.unavailable()) return true;
    if (a.has_temperature_c() != b.has_temperature_c() ||
        std::abs(a.temperature_c() - b.temperature_c()) >= 1) {
      return true;
    }
    if (a.has_utilization() != b.has_utilization() ||
        std::abs(a.utilization() - b.utilization()) >= 0.05) {
      return true;
    }
    const double used_by = 0.05 * static_cast<double>(b.memory_mb());
    if (a.has_memory_used_mb() != b.has_memory_used_mb() ||
        std::abs(static_cast<double>(a.memory_used_mb()) -
                 static_cast<double>(b.memory_used_mb())) > std::max(1.0, used_by)) {
      return true;
    }
  }
  return false;
}

double Seconds(core::MonoTime t) { return static_cast<double>(t.time_since_epoch().count()) / 1e3; }

// Sensor readings on their own (WorkerMessage.sensors) at most this often (proto: SensorReadings).
constexpr core::Millis kSensorsGap{5000};

v1::SensorReadings ToProto(const Readings& r) {
  v1::SensorReadings out;
  if (r.temperature_c) out.set_temperature_c(*r.temperature_c);
  if (r.battery_percent) out.set_battery_percent(*r.battery_percent);
  if (r.on_ac_power) out.set_on_ac_power(*r.on_ac_power);
  if (r.lid_closed) out.set_lid_closed(*r.lid_closed);
  if (r.idle_seconds) out.set_idle_seconds(*r.idle_seconds);
  if (r.owner_cpu_load) out.set_owner_cpu_load(*r.owner_cpu_load);
  return out;
}

// True when `now` differs from `sent` enough to tell the coordinator (proto: SensorReadings):
// temperature by >= 1 C, battery by >= 1 point, a boolean flipped, or a sensor appeared or went.
// Idle time and owner load change all the time: they go with owner states only.
bool SensorsChanged(const Readings& sent, const Readings& now) {
  auto moved = [](const std::optional<double>& a, const std::optional<double>& b, double by) {
    if (a.has_value() != b.has_value()) return true;
    if (!a) return false;
    if (std::isnan(*a) || std::isnan(*b)) return std::isnan(*a) != std::isnan(*b);
    return std::abs(*a - *b) >= by;
  };
  return moved(sent.temperature_c, now.temperature_c, 1) ||
         moved(sent.battery_percent, now.battery_percent, 1) ||
         sent.on_ac_power != now.on_ac_power || sent.lid_closed != now.lid_closed;
}

// A checkpoint dir's regular files, relative paths in sorted order, with what identifies their
// content cheaply (size and mtime): equal fingerprints mean nothing to upload.
struct DirEntry {
  std::string rel;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};
std::vector<DirEntry> ListFiles(const std::string& dir) {
  std::vector<DirEntry> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    DirEntry e;
    e.rel = it->path().string().substr(dir.size() + 1);
    e.size = static_cast<uint64_t>(st.st_size);
    e.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.rel < b.rel; });
  return out;
}
std::string Fingerprint(const std::vector<DirEntry>& files) {
  std::string f;
  for (const auto& e : files) absl::StrAppend(&f, e.rel, "\n", e.size, " ", e.mtime_ns, "\n");
  return f;
}

// Bytes an attempt moved (AttemptReport.transfer). Updated by the threads that stage and upload
// for the attempt, hence atomic.
struct TransferFigures {
  std::atomic<uint64_t> input_bytes{0}, cached_bytes{0}, coordinator_bytes{0}, peer_bytes{0},
      output_bytes{0};
  std::atomic<uint32_t> cache_hits{0}, cache_misses{0};

  // `from_coordinator` and `from_peers`: bytes this attempt's fetch received from each.
  void Staged(uint64_t size, bool hit, uint64_t from_coordinator, uint64_t from_peers) {
    input_bytes += size;
    coordinator_bytes += from_coordinator;
    peer_bytes += from_peers;
    if (hit) {
      cached_bytes += size;
      ++cache_hits;
    } else {
      ++cache_misses;
    }
  }
  void ToProto(v1::Transfer* t) const {
    t->set_input_bytes(input_bytes);
    t->set_cached_bytes(cached_bytes);
    t->set_coordinator_bytes(coordinator_bytes);
    t->set_peer_bytes(peer_bytes);
    t->set_output_bytes(output_bytes);
    t->set_cache_hits(cache_hits);
    t->set_cache_misses(cache_misses);
  }
};

}  // namespace

class Worker::Impl {
 public:
  Impl(Options options, const platform::Clock& clock)
      : options_(std::move(options)),
        clock_(clock),
        boot_id_(platform::RandomHex(16)),
        cache_((fs::path(options_.work_dir) / "cache").string(), options_.cache_bytes),
        outbox_((fs::path(options_.work_dir) / "outbox").string()) {
    if (options_.name.empty()) options_.name = HostName();
    if (options_.slots == 0) options_.slots = std::max(1u, std::thread::hardware_concurrency());
    heartbeat_ = options_.heartbeat.value_or(core::kDefaultHeartbeat);
  }

  ~Impl() {
    Stop();
    JoinAttemptThreads();
    JoinOwnerThreads();
    JoinProbeThread();
  }

  const std::string& boot_id() const { return boot_id_; }

  absl::Status Run() {
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
    fs::create_directories(fs::path(options_.work_dir) / "attempts", ec);
    fs::create_directories(fs::path(options_.work_dir) / "spare", ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot use work dir ", options_.work_dir, ": ", ec.message()));
    }
    if (auto st = cache_.Init(clock_.WallMs()); !st.ok()) return st;
    if (options_.peers) {
      blob::PeerServerOptions po;
      po.listen = options_.peer_listen;
      po.token = options_.token;
      auto server = blob::PeerServer::Start(cache_.store(), po);
      if (!server.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat("--peer-listen: ", server.status().message()));
      }
      peer_server_ = std::move(*server);
      spdlog::info("serving cached blobs to peers on {}", peer_server_->address());
    }
    // Finished attempts an earlier run of this worker filed but could not deliver: delivered now
    // (their tasks were requeued when that run ended; the coordinator still takes a success
    // whose task has not succeeded elsewhere meanwhile).
    auto filed = outbox_.Open();
    if (!filed.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot use work dir ", options_.work_dir, ": ", filed.status().message()));
    }
    std::vector<v1::AttemptReport> to_redeliver = std::move(*filed);
    // Held from the first hello on, as delivering: the coordinator gives each back to this worker
    // (rather than rerun its task elsewhere) while its outputs go up.
    for (const auto& r : to_redeliver) {
      auto a = std::make_shared<Attempt>();
      a->id = r.attempt();
      a->dir = (fs::path(options_.work_dir) / "attempts" / std::to_string(r.attempt())).string();
      a->filed = true;
      attempts_[a->id] = a;
    }

    // Containment: one cgroup per attempt where the machine allows it.
    std::string why;
    cgroups_ = platform::TaskCgroups::Open(
        absl::StrCat(std::hash<std::string>{}(work_dir_real_) & 0xffffffffffffull), &why);
    if (cgroups_) {
      if (int n = cgroups_->KillLeftovers(); n > 0) {
        spdlog::warn("killed {} task cgroups left running by an earlier run of this worker", n);
      }
      spdlog::info("tasks run in their own cgroups under {}", cgroups_->path());
    } else {
      spdlog::warn("no cgroups for tasks ({}): a task's child that leaves its process group "
                   "(setsid) can survive a kill; owner CPU load is unknown",
                   why);
    }
    if (!options_.sensors_dir.empty()) {
      auto fake = platform::FakeSensorDir::Open(options_.sensors_dir);
      if (!fake.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat("--sensors-dir: ", fake.status().message()));
      }
      sensors_ = std::move(*fake);
    } else {
      platform::TaskCgroups* groups = cgroups_.get();
      // The pool's own CPU: its tasks (their cgroups) and this worker itself.
      sensors_ = platform::OpenDefaultSensors(
          groups ? std::function<double()>(
                       [groups] { return groups->CpuSeconds() + platform::SelfCpuSeconds(); })
                 : std::function<double()>());
    }
    policy_state_ = PolicyState{Mode::kIdle, Seconds(clock_.Now())};
    OwnerStep();  // the first hello already says whether this worker accepts work
    owner_thread_ = std::thread([this] { OwnerLoop(); });
    checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });

    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(128 << 20);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    // Reconnect quickly after a coordinator restart; the default backoff reaches minutes.
    // gRPC's defaults (1 s initial, 20 s minimum connect backoff, up to 120 s) would keep a
    // worker away well past the lease timeout after a coordinator restart, and its attempts
    // would be lost instead of re-adopted.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    channel_ = grpc::CreateCustomChannel(options_.coordinator, grpc::InsecureChannelCredentials(),
                                         args);
    stub_ = v1::Blobs::NewStub(channel_);
    session_stub_ = v1::WorkerSession::NewStub(channel_);
    if (options_.calibrate) {
      calibration_ = Calibrate();
      spdlog::info("calibration: {:.0f} MB/s of SHA-256 per core, {} cores", calibration_.cpu_score,
                   calibration_.cores);
    }
    if (options_.probe) {
      // Its own connection (a local subchannel pool), so probe bytes never queue in front of
      // the session's heartbeats.
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      probe_stub_ = v1::Probes::NewStub(grpc::CreateCustomChannel(
          options_.coordinator, grpc::InsecureChannelCredentials(), args));
      probe_thread_ = std::thread([this] { ProbeLoop(); });
    }
    if (!to_redeliver.empty()) {
      spdlog::info("outbox: {} finished attempts from an earlier run to deliver",
                   to_redeliver.size());
      outbox_thread_ =
          std::thread([this, reports = std::move(to_redeliver)] { Redeliver(reports); });
    }

    core::Millis backoff{100};
    while (!stopping_) {
      bool welcomed = false;
      grpc::Status st = RunSession(&welcomed);
      if (st.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
        return absl::PermissionDeniedError(absl::StrCat("coordinator ", options_.coordinator,
                                                        " refused the token: ",
                                                        st.error_message()));
      }
      if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
          st.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
        return absl::FailedPreconditionError(absl::StrCat(
            "coordinator ", options_.coordinator, " refused this worker: ", st.error_message()));
      }
      if (stopping_) break;
      if (welcomed) backoff = core::Millis(100);
      if (!welcomed && refused_) {
        // Refused at hello (its name is taken by a live worker): that will not change soon.
        backoff = core::Millis(5000);
      }
      refused_ = false;
      spdlog::warn("session with {} ended ({}); reconnecting in {} ms", options_.coordinator,
                   st.ok() ? "closed" : st.error_message(), backoff.count());
      WaitStop(backoff);
      // At most 1 s between tries: a coordinator restart must find its workers back well within
      // the lease timeout, so their running attempts are re-adopted rather than re-run.
      backoff = std::min(backoff * 2, core::Millis(1000));
    }
    JoinAttemptThreads();
    JoinOwnerThreads();
    JoinProbeThread();
    if (outbox_thread_.joinable()) outbox_thread_.join();
    if (peer_server_) peer_server_->Shutdown();
    return absl::OkStatus();
  }

  void Stop() {
    if (stopping_.exchange(true)) return;
    probe_cancel_.Cancel();
    {
      std::lock_guard lock(stop_mu_);  // the probe thread waits on stop_cv_
      stop_cv_.notify_all();
    }
    {
      std::lock_guard lock(mu_);
      if (!attempts_.empty()) {
        spdlog::info("worker {} stopping: vacating {} attempts", options_.name, attempts_.size());
      }
    }
    accepting_ = false;
    // Every attempt still running is vacated as for the owner (SIGTERM, grace, checkpoint,
    // PREEMPTED report: never a failure). Finished attempts whose reports are on their way are
    // kept until acknowledged.
    std::vector<std::shared_ptr<Attempt>> all;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, a] : attempts_) all.push_back(a);
    }
    // First say so: a preemption report must not bring the task straight back here.
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
    const auto grace = core::Millis(static_cast<int64_t>(options_.policy.vacate_grace_s * 1000));
    for (auto& a : all) {
      if (Vacate(*a, grace, "worker stopped (SIGTERM or shutdown)")) {
        leaving.mutable_leaving()->add_vacated_attempts(a->id);
      }
    }
    JoinAttemptThreads();  // each vacated attempt has sent its report
    {
      std::unique_lock lock(mu_);
      acked_cv_.wait_for(lock, std::chrono::seconds(5), [&] { return attempts_.empty(); });
    }
    // Attempts whose reports could not be delivered are handed back by the Leaving message.
    // Then half-close and give the coordinator a moment to read it and end the session: a
    // cancel right after the write could drop Leaving (the coordinator would see a disconnect).
    {
      std::unique_lock lock(stream_mu_);
      if (stream_) {
        stream_->Write(leaving);
        stream_->WritesDone();
        stream_cv_.wait_for(lock, std::chrono::seconds(2), [&] { return stream_ == nullptr; });
      }
      if (ctx_) ctx_->TryCancel();
    }
    std::lock_guard lock(stop_mu_);
    stop_cv_.notify_all();
  }

 private:
  struct Attempt {
    uint64_t id = 0;
    v1::Assignment assignment;
    // Its GPUs' environment (worker/gpu_binding.h), bound when it was assigned.
    std::vector<std::pair<std::string, std::string>> gpu_env;
    std::vector<uint32_t> gpus;  // its devices (Assignment.gpus)
    std::string dir;  // path prefix: DIR.task/, DIR.checkpoint/, DIR.stdout.log, DIR.stderr.log
    std::mutex mu;
    std::unique_ptr<platform::Process> process;  // set while the command runs
    bool killed = false;    // killed by the coordinator: no report
    bool finished = false;  // report built, awaiting acknowledgement
    bool filed = false;     // its outputs are in the outbox: a stale kill no longer drops them
    bool undelivered = false;  // filed, but the worker stopped before it was uploaded
    v1::AttemptReport report;
    std::unique_ptr<platform::TaskCgroup> cgroup;  // outlives `process`
    // Timing (AttemptReport.timing): the assignment arrived, the process started, it ended.
    core::MonoTime assigned{};
    core::MonoTime started{};
    core::MonoTime exited{};
    // Owner actions.
    bool vacating = false;
    std::string vacate_reason;
    core::MonoTime vacate_at{};
    bool frozen = false;
    bool gpu_frozen = false;  // frozen because one of its GPUs is held (GpuStep), guarded by mu
    core::MonoTime frozen_since{};
    std::vector<std::pair<core::MonoTime, core::MonoTime>> frozen_spans;
    // Blobs staged from the cache stay pinned (never evicted) while the attempt exists.
    std::vector<BlobCache::Pin> pins;  // guarded by mu
    TransferFigures transfer;
    // Checkpoints: what was last uploaded (or restored).
    std::mutex ckpt_mu;  // one upload at a time; guards the fields below
    std::string ckpt_fingerprint;
    std::vector<v1::OutputFile> ckpt_files;
    core::MonoTime ckpt_uploaded_at{};
  };

  void WaitStop(core::Millis d) {
    std::unique_lock lock(stop_mu_);
    stop_cv_.wait_for(lock, d, [&] { return stopping_.load(); });
  }

  grpc::Status RunSession(bool* welcomed) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata(kTokenKey, options_.token);
    auto stream = session_stub_->Session(ctx.get());
    v1::WorkerMessage hello_msg;
    auto* hello = hello_msg.mutable_hello();
    hello->set_protocol_version(1);
    hello->set_version(IDLEPOOL_VERSION);
    hello->set_worker(options_.name);
    hello->set_boot_id(boot_id_);
    hello->mutable_capacity()->set_cpus(options_.slots);
    hello->mutable_capacity()->set_memory_mb(options_.memory_mb);
    if (options_.gpus) {
      // Every offered device, with readings taken now (a few NVML calls).
      const auto gpus = options_.gpus->ReadLive();
      hello->mutable_capacity()->set_gpus(static_cast<uint32_t>(gpus.size()));
      for (const auto& g : gpus) {
        v1::GpuDevice* d = hello->add_gpus();
        GpuToProto(g, d);
        d->set_unavailable(GpuUnavailable(g.index));
      }
    }
    hello->set_hostname(HostName());
    hello->set_not_accepting(!accepting_);
    hello->set_cpu_score(calibration_.cpu_score);
    hello->set_cores(calibration_.cores);
    cache_.TakeChanges();  // the Hello lists the whole cache: queued changes are in it
    for (auto& b : cache_.Contents(kMaxHelloCached)) *hello->add_cached() = std::move(b);
    if (peer_server_) hello->set_peer_address(peer_server_->address());
    std::vector<std::shared_ptr<Attempt>> finished;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, a] : attempts_) {
        hello->add_held_attempts(id);
        std::lock_guard alock(a->mu);
        if (a->filed) hello->add_delivering_attempts(id);
        if (a->finished) finished.push_back(a);
        if (a->frozen) hello->add_frozen_attempts(id);
      }
    }
    {
      // The devices this session offers: assignments are checked against them.
      std::lock_guard lock(mu_);
      offered_gpus_.assign(hello->gpus().begin(), hello->gpus().end());
    }
    {
      std::lock_guard lock(stream_mu_);
      if (stopping_) return grpc::Status::CANCELLED;
      stream_ = stream.get();
      ctx_ = ctx.get();
      stream_->Write(hello_msg);
      {
        std::lock_guard olock(owner_mu_);
        if (owner_sent_.has_owner_state()) stream_->Write(owner_sent_);
      }
      // Reports that were not acknowledged before the last session ended go again.
      for (auto& a : finished) {
        v1::WorkerMessage m;
        std::lock_guard alock(a->mu);
        *m.mutable_report() = a->report;
        stream_->Write(m);
      }
    }

    std::atomic<bool> session_over{false};
    std::atomic<bool> hb_changed{false};  // the interval changed: restart the wait
    std::mutex hb_mu;
    std::condition_variable hb_cv;
    std::thread heartbeat([&] {
      v1::WorkerMessage hb;
      hb.mutable_heartbeat();
      std::unique_lock lock(hb_mu);
      while (!session_over) {
        hb_cv.wait_for(lock, heartbeat_.load(),
                       [&] { return session_over.load() || hb_changed.load(); });
        if (session_over) break;
        hb_changed = false;
        std::lock_guard slock(stream_mu_);
        if (stream_ && !stream_->Write(hb)) break;
      }
    });

    v1::CoordinatorMessage msg;
    while (stream->Read(&msg)) {
      if (msg.has_welcome()) {
        *welcomed = true;
        spdlog::info("worker {} joined {} (boot {}), {} slots", options_.name,
                     options_.coordinator, boot_id_.substr(0, 8), options_.slots);
        // The coordinator's heartbeat unless this worker was given its own; at least three
        // per lease either way: a worker slower than its lease would be lost while healthy.
        core::Millis beat = options_.heartbeat.value_or(
            msg.welcome().heartbeat_ms() > 0 ? core::Millis(msg.welcome().heartbeat_ms())
                                             : core::kDefaultHeartbeat);
        core::Millis lease(msg.welcome().lease_timeout_ms());
        if (lease.count() > 0 && beat > lease / 3) {
          spdlog::warn("heartbeat {} ms is too slow for the coordinator's {} ms lease; using {} ms",
                       beat.count(), lease.count(), (lease / 3).count());
          beat = lease / 3;
        }
        if (beat != heartbeat_.load()) {
          heartbeat_ = beat;
          std::lock_guard lock(hb_mu);
          hb_changed = true;
          hb_cv.notify_all();
        }
        Joined();
      } else if (msg.has_assign()) {
        StartAttempt(msg.assign());
      } else if (msg.has_kill()) {
        KillAttempt(msg.kill());
      } else if (msg.has_ack()) {
        OnAck(msg.ack());
      } else if (msg.has_refused()) {
        spdlog::error("coordinator refused this worker: {}", msg.refused().reason());
        refused_ = true;
      }
    }
    {
      std::lock_guard lock(hb_mu);
      session_over = true;
      hb_cv.notify_all();
    }
    heartbeat.join();
    {
      std::lock_guard lock(stream_mu_);
      stream_ = nullptr;
      ctx_ = nullptr;
    }
    stream_cv_.notify_all();
    return stream->Finish();
  }

  void Send(const v1::WorkerMessage& m) {
    std::lock_guard lock(stream_mu_);
    if (stream_) stream_->Write(m);  // if the session is down, the next Hello resends reports
  }

  void StartAttempt(const v1::Assignment& as) {
    auto a = std::make_shared<Attempt>();
    a->id = as.attempt();
    a->assignment = as;
    a->assigned = clock_.Now();
    a->dir = (fs::path(options_.work_dir) / "attempts" / std::to_string(as.attempt())).string();
    if (stopping_ || !accepting_) {
      // Assigned while the Leaving message or a "not accepting" owner state was in flight:
      // hand it straight back, a preemption (never a failure).
      v1::WorkerMessage m;
      m.mutable_report()->set_attempt(as.attempt());
      m.mutable_report()->set_result(v1::AttemptReport::PREEMPTED);
      m.mutable_report()->set_message(stopping_ ? "worker is leaving"
                                                : "the machine's owner policy accepts no work now");
      Send(m);
      return;
    }
    {
      std::lock_guard lock(mu_);
      GpuBinding binding =
          BindGpus(std::vector<uint32_t>(as.gpus().begin(), as.gpus().end()), offered_gpus_);
      if (!binding.problem.empty()) {
        // Not the task's fault: a machine fault sends it elsewhere, never counted against it.
        spdlog::warn("attempt {}: refused: {}", as.attempt(), binding.problem);
        v1::WorkerMessage m;
        m.mutable_report()->set_attempt(as.attempt());
        m.mutable_report()->set_result(v1::AttemptReport::MACHINE_FAULT);
        m.mutable_report()->set_message(text::TruncateUtf8(binding.problem, 1024));
        Send(m);
        return;
      }
      a->gpu_env = std::move(binding.env);
      a->gpus.assign(as.gpus().begin(), as.gpus().end());
      if (attempts_.count(a->id)) return;
      attempts_[a->id] = a;
      run_queue_.push_back(a);
      // Runner threads are kept and reused (creating a thread per attempt was a visible cost
      // for short tasks); a new one is started only when none is idle, so no attempt waits.
      if (idle_runners_ == 0) {
        threads_.emplace_back([this] { RunnerLoop(); });
      } else {
        runner_cv_.notify_one();
      }
    }
  }

  void RunnerLoop() {
    std::unique_lock lock(mu_);
    while (true) {
      ++idle_runners_;
      runner_cv_.wait(lock, [&] { return !run_queue_.empty() || runners_exit_; });
      --idle_runners_;
      if (run_queue_.empty()) return;  // told to exit, nothing left to run
      std::shared_ptr<Attempt> a = std::move(run_queue_.front());
      run_queue_.pop_front();
      lock.unlock();
      RunAttempt(std::move(a));
      lock.lock();
    }
  }

  void JoinAttemptThreads() {
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
    std::lock_guard lock(mu_);
    runners_exit_ = false;
  }

  void KillAttempt(const v1::Kill& kill) {
    const uint64_t id = kill.attempt();
    const std::string& reason = kill.reason();
    std::shared_ptr<Attempt> a;
    {
      std::lock_guard lock(mu_);
      auto it = attempts_.find(id);
      if (it == attempts_.end()) return;
      a = it->second;
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
      spdlog::info("attempt {}: killed by the coordinator ({})", id, reason);
      a->killed = true;
      if (a->process) a->process->Kill(SIGKILL);
      drop = a->finished;
    }
    if (drop) Forget(id);
  }

  void OnAck(const v1::ReportAck& ack) {
    if (!ack.accepted()) {
      spdlog::warn("attempt {}: report refused by the coordinator: {}", ack.attempt(),
                   ack.reason());
    }
    Forget(ack.attempt());
  }

  void Forget(uint64_t id) {
    std::shared_ptr<Attempt> a;
    {
      std::lock_guard lock(mu_);
      auto it = attempts_.find(id);
      if (it == attempts_.end()) return;
      a = it->second;
      attempts_.erase(it);
      acked_cv_.notify_all();
    }
    // Four names side by side rather than one directory around them: a no-op task then costs
    // two inodes, not five, which is most of the per-task file system work.
    std::error_code ec;
    RemoveTree(a->dir + ".task");
    {
      std::lock_guard lock(a->ckpt_mu);  // an upload in flight finishes first
    }
    RecycleDir(a->dir + ".checkpoint");
    fs::remove(a->dir + ".stdout.log", ec);
    fs::remove(a->dir + ".stderr.log", ec);
    outbox_.Remove(id);
  }

  // Delivers outbox entries left by an earlier run (held in attempts_ since Run started): uploads
  // their outputs, then sends their reports (resent after every reconnect until acknowledged,
  // like any finished attempt). An entry the coordinator kills (job cancelled, task done
  // elsewhere) is dropped.
  void Redeliver(std::vector<v1::AttemptReport> reports) {
    for (auto& r : reports) {
      std::shared_ptr<Attempt> a;
      {
        std::lock_guard lock(mu_);
        auto it = attempts_.find(r.attempt());
        if (it == attempts_.end()) continue;  // forgotten meanwhile
        a = it->second;
      }
      absl::Status st = DeliverOutputs(*a, r, &a->transfer.output_bytes);
      if (st.code() == absl::StatusCode::kCancelled && stopping_) return;
      if (!st.ok()) {
        if (OutputDamaged(st)) {
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
  void KillLeftoverProcessGroups() {
    const std::string want = "IDLEPOOL_WORK_DIR=" + work_dir_real_;
    std::set<pid_t> groups;
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
      pid_t pid = std::stoi(name);
      if (pid == ::getpid()) continue;
      std::ifstream env(it->path() / "environ", std::ios::binary);
      std::string var;
      while (std::getline(env, var, '\0')) {
        if (var != want) continue;
        pid_t pgid = ::getpgid(pid);
        if (pgid > 1 && pgid != ::getpgrp()) groups.insert(pgid);
        break;
      }
    }
    for (pid_t g : groups) {
      spdlog::warn("killing process group {} left running by an earlier run of this worker", g);
      ::kill(-g, SIGKILL);
    }
  }

  // Checkpoint dirs are recycled: an emptied dir is renamed into a spare pool and renamed back
  // for the next attempt. On ext4, allocating fresh inodes after many deletions (mkdir) was the
  // largest per-task cost of short tasks; a rename allocates nothing. Only checkpoint dirs. A task dir is always new: it is the working directory a
  // process that escaped its group (setsid) keeps, and a reused one would let it write into
  // another task's outputs. Tasks address checkpoint dirs by path, which a rename invalidates.
  absl::Status MakeDir(const std::string& path) {
    while (true) {
      std::string spare;
      {
        std::lock_guard lock(spare_mu_);
        if (spare_dirs_.empty()) break;
        spare = std::move(spare_dirs_.back());
        spare_dirs_.pop_back();
      }
      // Checked again at reuse: something that escaped its process group (setsid) may have
      // written into the dir after it was emptied. Such a dir is discarded, never reused.
      std::error_code ec;
      if (fs::is_empty(spare, ec) && !ec && ::rename(spare.c_str(), path.c_str()) == 0) {
        return absl::OkStatus();
      }
      RemoveTree(spare);
    }
    if (::mkdir(path.c_str(), 0755) == 0) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }

  // Removes everything below `dir` (not `dir` itself), also subdirs a task made read-only.
  static void RemoveContents(const fs::path& dir) {
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code ec2;
      if (it->is_directory(ec2) && !it->is_symlink(ec2)) RemoveContents(it->path());
      fs::remove(it->path(), ec2);
    }
  }

  static void RemoveTree(const fs::path& dir) {
    RemoveContents(dir);
    std::error_code ec;
    fs::remove(dir, ec);
    if (ec) spdlog::warn("cannot remove {}: {}", dir.string(), ec.message());
  }

  void RecycleDir(const std::string& path) {
    RemoveContents(path);
    std::error_code ec;
    if (fs::is_empty(path, ec) && !ec) {
      std::lock_guard lock(spare_mu_);
      if (spare_dirs_.size() < kMaxSpareDirs) {
        std::string spare = absl::StrCat(options_.work_dir, "/spare/", next_spare_++);
        if (::rename(path.c_str(), spare.c_str()) == 0) {
          spare_dirs_.push_back(std::move(spare));
          return;
        }
      }
    }
    RemoveTree(path);
  }

  // Runs on a runner thread.
  void RunAttempt(std::shared_ptr<Attempt> a) {
    v1::AttemptReport report;
    report.set_attempt(a->id);
    Execute(*a, &report);
    a->transfer.ToProto(report.mutable_transfer());
    FillTiming(*a, /*with_upload=*/true, report.mutable_timing());
    bool send = false;
    std::unique_ptr<platform::Process> process;
    std::unique_ptr<platform::TaskCgroup> cgroup;
    {
      std::lock_guard lock(a->mu);
      if (a->frozen) {
        a->frozen = false;
        a->frozen_spans.emplace_back(a->frozen_since, clock_.Now());
      }
      process = std::move(a->process);
      cgroup = std::move(a->cgroup);
      if (a->undelivered) {
        // Left in the outbox for the next run of this worker; nothing to report now.
      } else if (!a->killed) {
        a->finished = true;
        a->report = report;
        send = true;
      }
    }
    // Outside the lock: the group goes after the process that may still signal it, and after
    // the report (emptying or removing a group can wait for a straggler to die).
    process.reset();
    bool undelivered;
    {
      std::lock_guard lock(a->mu);
      undelivered = a->undelivered;
    }
    if (send) {
      v1::WorkerMessage m;
      *m.mutable_report() = report;
      Send(m);
    } else if (!undelivered) {
      Forget(a->id);
    }
    ReleaseCgroup(std::move(cgroup));
  }

  // Task cgroups are reused: creating and removing one per attempt cost a fifth of the
  // throughput of short tasks. A group is reused only once empty and thawed; a group that still
  // holds a process (an escapee being killed) is removed instead (its destructor kills it).
  std::unique_ptr<platform::TaskCgroup> AcquireCgroup(absl::Status* error) {
    {
      std::lock_guard lock(cgroup_mu_);
      if (!spare_cgroups_.empty()) {
        auto g = std::move(spare_cgroups_.back());
        spare_cgroups_.pop_back();
        return g;
      }
    }
    auto group = cgroups_->Create(absl::StrCat("g", next_cgroup_.fetch_add(1)));
    if (!group.ok()) {
      *error = group.status();
      return nullptr;
    }
    return std::move(*group);
  }

  void ReleaseCgroup(std::unique_ptr<platform::TaskCgroup> group) {
    if (!group) return;
    if (group->Populated() || !group->Thaw().ok()) return;  // destroyed: kills and removes it
    std::lock_guard lock(cgroup_mu_);
    if (spare_cgroups_.size() < kMaxSpareCgroups) spare_cgroups_.push_back(std::move(group));
  }

  bool Abandoned(Attempt& a) {
    std::lock_guard lock(a.mu);
    return a.killed;
  }

  // Staging (inputs, checkpoint) stops for a vacate too: the attempt is handed back at once.
  bool StagingStopped(Attempt& a) {
    std::lock_guard lock(a.mu);
    return a.killed || a.vacating;
  }

  bool Vacating(Attempt& a) {
    std::lock_guard lock(a.mu);
    return a.vacating;
  }

  void Execute(Attempt& a, v1::AttemptReport* report) {
    const v1::Assignment& as = a.assignment;
    std::string task_dir = a.dir + ".task";
    std::string ckpt_dir = a.dir + ".checkpoint";
    if (::mkdir(task_dir.c_str(), 0755) != 0) {
      const int err = errno;
      const std::string why = absl::StrCat("cannot create ", task_dir, ": ", std::strerror(err));
      if (err == ENOSPC || err == EDQUOT) return MachineFault(report, why);
      return Fail(report, why);
    }
    if (absl::Status st = MakeDir(ckpt_dir); !st.ok()) {
      if (LowOnDisk()) return MachineFault(report, std::string(st.message()));
      return Fail(report, std::string(st.message()));
    }

    // Stage inputs: fetch each blob into the cache once, then link it into the task dir.
    std::set<std::string> input_paths;
    for (const auto& in : as.inputs()) {
      input_paths.insert(in.path());
      absl::Status st = EnsureCached(in, a);
      if (!st.ok() && Vacating(a)) return Preempted(a, report);
      if (st.code() == absl::StatusCode::kResourceExhausted) {
        return MachineFault(report, absl::StrCat("cannot stage input '", in.path(), "': ",
                                                 st.message()));
      }
      if (!st.ok()) return Fail(report, absl::StrCat("cannot stage input '", in.path(), "': ",
                                                     st.message()));
      std::string dst = task_dir + "/" + in.path();
      st = blob::CloneOrCopy(cache_.PathOf(in.sha256()), dst);
      if (st.code() == absl::StatusCode::kResourceExhausted) {
        return MachineFault(report, std::string(st.message()));
      }
      if (!st.ok()) return Fail(report, std::string(st.message()));
      ::chmod(dst.c_str(), (in.mode() & 0777) | 0400);
    }

    // Restore the task's latest checkpoint, from whichever worker saved it.
    for (const auto& f : as.checkpoint()) {
      if (auto why = spec::RelativePathError(f.path())) {
        return Fail(report, absl::StrCat("checkpoint file '", text::TruncateUtf8(f.path(), 256),
                                         "' ", *why));
      }
      absl::Status st = EnsureCachedBlob(f.sha256(), f.size(), a);
      if (!st.ok() && Vacating(a)) return Preempted(a, report);
      if (st.code() == absl::StatusCode::kResourceExhausted || (!st.ok() && LowOnDisk())) {
        return MachineFault(report, absl::StrCat("cannot restore checkpoint file '", f.path(),
                                                 "': ", st.message()));
      }
      if (!st.ok()) return Fail(report, absl::StrCat("cannot restore checkpoint file '", f.path(),
                                                     "': ", st.message()));
      std::string dst = ckpt_dir + "/" + f.path();
      std::error_code ec;
      fs::create_directories(fs::path(dst).parent_path(), ec);
      st = blob::CloneOrCopy(cache_.PathOf(f.sha256()), dst);
      if (st.code() == absl::StatusCode::kResourceExhausted) {
        return MachineFault(report, std::string(st.message()));
      }
      if (!st.ok()) return Fail(report, std::string(st.message()));
      ::chmod(dst.c_str(), 0644);
    }
    {
      std::lock_guard lock(a.ckpt_mu);
      a.ckpt_fingerprint = Fingerprint(ListFiles(ckpt_dir));
      a.ckpt_files.assign(as.checkpoint().begin(), as.checkpoint().end());
      a.ckpt_uploaded_at = clock_.Now();
    }
    if (as.checkpoint_size() > 0) {
      spdlog::info("attempt {}: restored a checkpoint of {} files", a.id, as.checkpoint_size());
    }

    spec::TaskParams params = wire::FromProto(as.task());
    std::vector<std::string> cmd(as.command().begin(), as.command().end());
    auto argv = spec::RenderCommand(cmd, params, task_dir, ckpt_dir);
    if (!argv.ok()) return Fail(report, std::string(argv.status().message()));

    if (cgroups_) {
      absl::Status error;
      a.cgroup = AcquireCgroup(&error);
      if (!a.cgroup) return Fail(report, std::string(error.message()));
    }
    platform::SpawnOptions sp;
    sp.argv = *argv;
    sp.cgroup = a.cgroup.get();
    sp.low_priority = options_.low_priority;
    sp.cwd = task_dir;
    sp.stdout_path = a.dir + ".stdout.log";
    sp.stderr_path = a.dir + ".stderr.log";
    for (char** e = environ; *e; ++e) {
      // The GPU variables are the attempt's own (below), never the worker's.
      if (std::strncmp(*e, "IDLEPOOL_", 9) != 0 &&
          std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0 &&
          std::strncmp(*e, "CUDA_DEVICE_ORDER=", 18) != 0 &&
          std::strncmp(*e, "ROCR_VISIBLE_DEVICES=", 21) != 0) {
        sp.env.emplace_back(*e);
      }
    }
    uint32_t cpus = std::max(1u, as.resources().cpus());
    auto add = [&](const std::string& k, const std::string& v) { sp.env.push_back(k + "=" + v); };
    add("IDLEPOOL_JOB_ID", std::to_string(as.job()));
    add("IDLEPOOL_JOB_NAME", as.job_name());
    add("IDLEPOOL_TASK_INDEX", std::to_string(params.index));
    add("IDLEPOOL_ATTEMPT_ID", std::to_string(a.id));
    add("IDLEPOOL_TASK_DIR", task_dir);
    add("IDLEPOOL_CHECKPOINT_DIR", ckpt_dir);
    add("IDLEPOOL_WORKER", options_.name);
    add("IDLEPOOL_WORK_DIR", work_dir_real_);
    add("IDLEPOOL_CPUS", std::to_string(cpus));
    add("OMP_NUM_THREADS", std::to_string(cpus));
    for (const auto& [k, v] : a.gpu_env) add(k, v);
    if (!params.chunk.frames.empty()) {
      add("IDLEPOOL_FRAMES", spec::JoinFrames(params.chunk.frames));
      if (params.chunk.frames.size() == 1) {
        add("IDLEPOOL_FRAME", std::to_string(params.chunk.frames[0]));
      }
      add("IDLEPOOL_FRAME_START", std::to_string(params.chunk.start));
      add("IDLEPOOL_FRAME_END", std::to_string(params.chunk.end));
      add("IDLEPOOL_FRAME_STEP", std::to_string(params.chunk.step));
    }
    if (!params.item.empty()) add("IDLEPOOL_ITEM", params.item);

    bool freeze_now = false;
    {
      // Checked and spawned under one lock: a vacate either comes first (handed back, never
      // started) or finds the process to terminate.
      std::unique_lock lock(a.mu);
      if (a.killed) return Fail(report, "stopped before it started");
      if (a.vacating) {
        lock.unlock();  // Preempted() takes a.mu itself
        return Preempted(a, report);
      }
      // Read before the spawn, so that run time (AttemptReport.timing) never misses the
      // task's first moments: it is at least as long as the task ran.
      const core::MonoTime spawn_at = clock_.Now();
      auto proc = platform::Process::Start(sp);
      if (!proc.ok()) {
        report->set_exit_code(127);
        return Fail(report, std::string(proc.status().message()));
      }
      a.process = std::move(*proc);
      a.started = spawn_at;
      // The owner became active while this attempt was staging (or uses one of its GPUs, or one
      // is too hot): it starts frozen.
      const bool gpu_held = AnyGpuHeld(a.gpus);
      if (suspended_ || gpu_held) {
        freeze_now = true;
        if (!a.process->Suspend().ok()) spdlog::warn("attempt {}: freeze is slow", a.id);
        a.frozen = true;
        a.gpu_frozen = gpu_held && !suspended_;
        a.frozen_since = a.started;
      }
    }
    if (freeze_now) SendSuspended({a.id});
    platform::Process* proc = a.process.get();  // owned by `a`, reset only by RunAttempt
    platform::ExitInfo exit = proc->Wait(core::Millis(static_cast<int64_t>(as.timeout_s()) * 1000),
                                         options_.kill_grace);
    {
      std::unique_lock lock(a.mu);
      a.exited = clock_.Now();
      if (a.vacating) {
        lock.unlock();
        report->set_exit_code(exit.exit_code);
        report->set_log_tail(text::TailUtf8(exit.stderr_tail, 2048));
        return Preempted(a, report);
      }
    }
    report->set_exit_code(exit.exit_code);
    report->set_log_tail(text::TailUtf8(exit.stderr_tail, 2048));
    if (exit.timed_out) {
      report->set_result(v1::AttemptReport::TIMED_OUT);
      report->set_message(absl::StrCat("timed out after ", as.timeout_s(), " s"));
      return;
    }
    if ((exit.signal != 0 || exit.exit_code != 0) && LowOnDisk()) {
      // The task most likely failed for want of space: the machine's fault, not the task's.
      return MachineFault(report, absl::StrCat("the task failed (",
                                               exit.signal != 0
                                                   ? absl::StrCat("signal ", exit.signal)
                                                   : absl::StrCat("exit code ", exit.exit_code),
                                               ") while the disk was full: ", DiskReason()));
    }
    if (exit.signal != 0) {
      return Fail(report, absl::StrCat("killed by signal ", exit.signal));
    }
    if (exit.exit_code != 0) return Fail(report, absl::StrCat("exit code ", exit.exit_code));

    // Collect outputs. A pattern that matches nothing fails the attempt: a render that wrote no
    // frame must not count as done.
    std::set<std::string> seen;
    std::error_code real_ec;
    const std::string real_task_dir = fs::canonical(task_dir, real_ec).string();
    for (const auto& pattern : as.outputs()) {
      std::string full = task_dir + "/" + pattern;
      glob_t g{};
      int rc = ::glob(full.c_str(), 0, nullptr, &g);
      size_t matched = 0;
      if (rc == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) {
          std::string path = g.gl_pathv[i];
          struct stat st;
          if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
          std::string rel = path.substr(task_dir.size() + 1);
          if (input_paths.count(rel)) continue;  // staged inputs are not outputs
          if (!text::IsValidUtf8(rel)) {
            ::globfree(&g);
            report->clear_outputs();
            return Fail(report, absl::StrCat("output file name '", rel,
                                             "' is not valid UTF-8; rename it in the command"));
          }
          // A symlink may point inside the task dir (latest.png -> frame10.png), never out of
          // it: an output is the task's work, not a file of the lending machine.
          std::error_code ec;
          fs::path real = fs::canonical(path, ec);
          if (ec || real.string().rfind(real_task_dir + "/", 0) != 0) {
            ::globfree(&g);
            report->clear_outputs();
            return Fail(report, absl::StrCat("output '", rel,
                                             "' is a link to a file outside the task dir"));
          }
          ++matched;
          if (!seen.insert(rel).second) continue;
          auto digest = blob::HashFile(path);
          if (!digest.ok()) {
            ::globfree(&g);
            return Fail(report, std::string(digest.status().message()));
          }
          if (digest->size == 0 && !as.allow_empty_outputs()) {
            ::globfree(&g);
            report->clear_outputs();
            return Fail(report, absl::StrCat("output '", rel, "' is empty (0 bytes); set "
                                             "allow_empty_outputs = true if that is a result"));
          }
          auto* o = report->add_outputs();
          o->set_path(rel);
          o->set_sha256(digest->sha256);
          o->set_size(digest->size);
        }
      }
      ::globfree(&g);
      if (matched == 0) {
        report->clear_outputs();
        return Fail(report, absl::StrCat("output pattern '", pattern, "' matched no file"));
      }
    }
    // File the outputs and the report in the durable outbox: from here on the work survives cut
    // links, coordinator restarts and a restart of this worker.
    report->set_result(v1::AttemptReport::SUCCEEDED);
    a.transfer.ToProto(report->mutable_transfer());
    FillTiming(a, /*with_upload=*/false, report->mutable_timing());
    if (absl::Status st = outbox_.File(*report, task_dir); !st.ok()) {
      report->clear_outputs();
      if (st.code() == absl::StatusCode::kResourceExhausted) {
        return MachineFault(report, absl::StrCat("cannot keep the outputs: ", st.message()));
      }
      return Fail(report, std::string(st.message()));
    }
    {
      std::lock_guard lock(a.mu);
      a.filed = true;
    }
    // Never a reason to run the task again.
    absl::Status st = DeliverOutputs(a, *report, &a.transfer.output_bytes);
    if (st.ok()) return;
    report->clear_outputs();
    if (OutputDamaged(st)) {
      // Its bytes no longer match what was hashed when the task ended (something truncated or
      // rewrote it since): the task's result cannot be trusted.
      return Fail(report, std::string(st.message()));
    }
    if (stopping_) {
      // Filed: the next run of this worker delivers it (see Redeliver). No report now.
      std::lock_guard lock(a.mu);
      a.undelivered = true;
      return;
    }
    return Fail(report, "stopped while uploading outputs");
  }

  // Uploads the outputs of `report`, filed in the outbox, until the coordinator has them all;
  // retried with backoff. OK; kDataLoss/kNotFound when an output no longer holds the bytes that
  // were hashed (message names it); kCancelled when the attempt is killed (cancelled, or done
  // elsewhere) or the worker stops. Adds the bytes sent to `*sent`.
  absl::Status DeliverOutputs(Attempt& a, const v1::AttemptReport& report,
                              std::atomic<uint64_t>* sent) {
    core::Millis backoff{200};
    for (const auto& o : report.outputs()) {
      while (true) {
        if (Abandoned(a) || stopping_) return absl::CancelledError("attempt stopped");
        absl::Status st = UploadIfMissing(outbox_.PathOf(a.id, o.path()), o,
                                          /*follow_symlinks=*/true, sent);
        if (st.ok()) break;
        if (OutputDamaged(st)) {
          return absl::Status(st.code(), absl::StrCat("output '", o.path(),
                                                      "' changed after the task ended (",
                                                      st.message(), ")"));
        }
        spdlog::warn("attempt {}: upload of {} failed ({}); retrying in {} ms", a.id, o.path(),
                     std::string(st.message()), backoff.count());
        WaitStop(backoff);
        backoff = std::min(backoff * 2, core::Millis(5000));
      }
    }
    return absl::OkStatus();
  }

  // An upload error that retrying cannot fix: the local file no longer holds the bytes that were
  // hashed (kDataLoss: changed; kNotFound: gone). Anything else (the coordinator unreachable, or
  // busy with a conflicting upload of the same blob) is retried.
  static bool OutputDamaged(const absl::Status& st) {
    return st.code() == absl::StatusCode::kDataLoss || st.code() == absl::StatusCode::kNotFound;
  }

  // The machine failed the attempt, not the task: its disk is full. Reported MACHINE_FAULT
  // (never counted against the task); this worker takes no work until space frees.
  void MachineFault(v1::AttemptReport* report, const std::string& message) {
    report->set_result(v1::AttemptReport::MACHINE_FAULT);
    report->set_message(text::TruncateUtf8(message, 1024));
    DiskFull(message);
  }

  // Stops taking work until options_.min_free_disk_bytes are free again (checked by the owner
  // loop). Told to the coordinator before the attempt's report, so the task is not sent back.
  void DiskFull(const std::string& why) {
    if (disk_full_.exchange(true)) return;
    accepting_ = false;
    spdlog::warn("disk full under {} ({}): taking no work until {} MiB are free",
                 options_.work_dir, why, options_.min_free_disk_bytes >> 20);
    v1::WorkerMessage m;
    {
      std::lock_guard lock(owner_mu_);
      m = owner_sent_;
    }
    auto* o = m.mutable_owner_state();
    o->set_accepting(false);
    if (o->state().empty()) o->set_state("run");
    o->set_reason(text::TruncateUtf8(DiskReason(), 200));
    o->clear_suspended_attempts();
    {
      std::lock_guard lock(owner_mu_);
      owner_sent_ = m;
    }
    Send(m);
  }

  std::string DiskReason() const {
    auto inodes = FreeDiskInodes(options_.work_dir);
    if (inodes && *inodes < kMinFreeInodes) {
      return absl::StrCat("disk full: ", *inodes, " free inodes under the work dir, need ",
                          kMinFreeInodes);
    }
    auto free = FreeDiskBytes(options_.work_dir);
    return absl::StrCat("disk full: ", free ? absl::StrCat(*free >> 20, " MiB") : "?",
                        " free under the work dir, need ", options_.min_free_disk_bytes >> 20,
                        " MiB");
  }

  // True when the work dir's file system has less than the minimum free, in bytes or in inodes
  // (a task that creates many small files runs out of inodes first).
  bool LowOnDisk() const {
    auto free = FreeDiskBytes(options_.work_dir);
    auto inodes = FreeDiskInodes(options_.work_dir);
    return (free && *free < options_.min_free_disk_bytes) || (inodes && *inodes < kMinFreeInodes);
  }
  // Free inodes below which the disk counts as full: room for a few attempts' dirs and logs.
  static constexpr uint64_t kMinFreeInodes = 64;

  // Everything put in a report is valid UTF-8 (protobuf refuses anything else, and the session
  // would be torn down over it): messages are cut on character boundaries, invalid bytes
  // replaced.
  static void Fail(v1::AttemptReport* report, const std::string& message) {
    report->set_result(v1::AttemptReport::FAILED);
    report->set_message(text::TruncateUtf8(message, 1024));
  }

  // Uploads `path` as blob `o` unless the coordinator has it (resuming a cut upload); adds the
  // bytes sent to `*sent` when given.
  absl::Status UploadIfMissing(const std::string& path, const v1::OutputFile& o,
                               bool follow_symlinks = true, std::atomic<uint64_t>* sent = nullptr) {
    blob::TransferOptions opts;
    opts.follow_symlinks = follow_symlinks;
    // Not cancelled when the worker stops: a vacated attempt's final checkpoint still goes up.
    opts.retry.max_tries = 3;  // callers retry further on their own schedule
    opts.retry.wait = [this](std::chrono::milliseconds d) { WaitStop(d); };
    Moving moving(moving_);
    auto stats = blob::UploadResumable(stub_.get(), options_.token, path,
                                       blob::FileDigest{o.sha256(), o.size()}, opts);
    if (!stats.ok()) return stats.status();
    if (sent != nullptr) *sent += stats->bytes_sent;
    return absl::OkStatus();
  }

  absl::Status EnsureCached(const v1::Input& in, Attempt& a) {
    return EnsureCachedBlob(in.sha256(), in.size(), a);
  }

  // Makes blob `sha256` available (verified, pinned for the attempt's life) at
  // cache_.PathOf(sha256), fetching it (resumably) when the cache lacks it.
  absl::Status EnsureCachedBlob(const std::string& sha256, uint64_t size, Attempt& a) {
    if (!blob::IsSha256Hex(sha256)) return absl::InvalidArgumentError("bad blob hash");
    blob::TransferOptions opts;
    opts.cancelled = [&] { return StagingStopped(a); };
    opts.retry.max_tries = 5;
    opts.retry.wait = [this](std::chrono::milliseconds d) { WaitStop(d); };
    uint64_t from_coordinator = 0, from_peers = 0;  // by this call's fetch
    // A network blip is never the task's fault: transport errors are retried (resuming from the
    // chunks already held) for as long as the attempt is wanted. If the coordinator gives up on
    // the attempt meanwhile (lease expired), it kills it and staging stops.
    core::Millis backoff{500};
    auto transient = [](const absl::Status& st) {
      return st.code() == absl::StatusCode::kUnavailable ||
             st.code() == absl::StatusCode::kDeadlineExceeded ||
             st.code() == absl::StatusCode::kAborted;
    };
    absl::StatusOr<BlobCache::Pin> pin = absl::UnavailableError("not fetched yet");
    Moving moving(moving_);
    while (true) {
      pin = cache_.Acquire(sha256, size, [&](blob::BlobStore& store) -> absl::StatusOr<uint64_t> {
        if (!peer_server_) {
          auto got = blob::DownloadToStore(stub_.get(), options_.token, sha256, size, store, opts);
          if (!got.ok()) return got.status();
          from_coordinator = got->bytes_received;
          return got->bytes_received;
        }
        blob::SwarmOptions so;
        so.worker = options_.name;
        so.token = options_.token;
        so.cancelled = opts.cancelled;
        so.retry = opts.retry;
        so.clock = &clock_;
        so.seed = std::hash<std::string>{}(boot_id_ + sha256);
        auto got = blob::SwarmDownload(stub_.get(), sha256, size, store, so);
        if (!got.ok()) return got.status();
        from_coordinator = got->coordinator_bytes;
        from_peers = got->peer_bytes;
        if (got->chunks_rejected > 0) {
          spdlog::warn("blob {}: {} chunks failed verification and were fetched again",
                       sha256.substr(0, 12), got->chunks_rejected);
        }
        return got->coordinator_bytes + got->peer_bytes;
      });
      if (pin.ok() || !transient(pin.status()) || StagingStopped(a) || stopping_) break;
      spdlog::warn("attempt {}: fetching blob {} failed ({}); retrying in {} ms", a.id,
                   sha256.substr(0, 12), std::string(pin.status().message()), backoff.count());
      WaitStop(backoff);
      backoff = std::min(backoff * 2, core::Millis(5000));
    }
    SendCacheChanges();
    if (!pin.ok()) return pin.status();
    a.transfer.Staged(size, pin->hit(), from_coordinator, from_peers);
    std::lock_guard lock(a.mu);
    a.pins.push_back(std::move(*pin));
    return absl::OkStatus();
  }

  // Tells the coordinator what the cache gained and lost (dropped while no session is up: the
  // next Hello lists the whole cache).
  void SendCacheChanges() {
    v1::WorkerMessage m;
    *m.mutable_cache() = cache_.TakeChanges();
    if (m.cache().added_size() > 0 || m.cache().removed_size() > 0) Send(m);
  }

  // --- The owner --------------------------------------------------------------------------

  void OwnerLoop() {
    while (!stopping_) {
      // Woken by any sensor change; at least once a second for idle time and time windows,
      // every 100 ms while a vacate before sleep is in progress.
      sensors_->WaitForChange(sleep_pending_ ? core::Millis(100) : core::Millis(1000));
      if (stopping_) break;
      OwnerStep();
    }
  }

  void JoinOwnerThreads() {
    {
      std::lock_guard lock(stop_mu_);
      stop_cv_.notify_all();
    }
    if (owner_thread_.joinable()) owner_thread_.join();
    if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  }

  // One policy evaluation: sample, decide, act, tell the coordinator when the decision changed.
  void OwnerStep() {
    Readings r = sensors_->Read();
    // Without cgroups the pool's own load cannot be told apart from the owner's: a real owner
    // CPU load reading would count our tasks and suspend them for their own work.
    if (!cgroups_ && options_.sensors_dir.empty()) r.owner_cpu_load.reset();
    const core::MonoTime now = clock_.Now();
    const platform::WeekTime wt = platform::LocalWeekTime();
    const Decision d = Decide(r, options_.policy, policy_state_, Seconds(now),
                              LocalTime{wt.weekday, wt.minute_of_day});
    policy_state_ = Advance(policy_state_, d, Seconds(now));
    const bool sleep = r.sleep_imminent.value_or(false);

    std::vector<std::shared_ptr<Attempt>> all;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, a] : attempts_) all.push_back(a);
    }
    std::vector<uint64_t> frozen_now;
    suspended_ = d.action == Action::kSuspend;
    // A full disk takes no work until enough is free again (running attempts go on).
    if (disk_full_ && !LowOnDisk()) {
      disk_full_ = false;
      spdlog::info("disk space is back under {}: taking work again", options_.work_dir);
    } else if (!disk_full_ && LowOnDisk()) {
      disk_full_ = true;
      spdlog::warn("{}: taking no work", DiskReason());
    }
    const bool disk_full = disk_full_;
    accepting_ = d.action == Action::kRun && !stopping_ && !disk_full;
    if (d.action == Action::kSuspend) {
      for (auto& a : all) {
        std::lock_guard lock(a->mu);
        if (!a->process || a->finished || a->vacating || a->frozen || a->killed) continue;
        if (absl::Status st = a->process->Suspend(); !st.ok()) {
          spdlog::warn("attempt {}: {}", a->id, std::string(st.message()));
        }
        a->frozen = true;
        a->frozen_since = now;
        frozen_now.push_back(a->id);
      }
    } else if (d.action == Action::kRun) {
      for (auto& a : all) {
        std::lock_guard lock(a->mu);
        if (!a->frozen) continue;
        if (AnyGpuHeld(a->gpus)) {  // its GPU is still held: GpuStep thaws it
          a->gpu_frozen = true;
          continue;
        }
        if (a->process) a->process->Resume();
        a->frozen = false;
        a->frozen_spans.emplace_back(a->frozen_since, now);
      }
    } else {
      // Tell the coordinator before any attempt is handed back, or it would assign it here again.
      if (d.action != last_action_) SendOwnerState(d, {}, r);
      const double grace_s = sleep ? std::min(options_.policy.vacate_grace_s, kSleepVacateGraceS)
                                   : options_.policy.vacate_grace_s;
      for (auto& a : all) {
        Vacate(*a, core::Millis(static_cast<int64_t>(grace_s * 1000)),
               absl::StrCat("vacated: ", d.reason));
      }
    }

    // Told again when the rule behind it changes too (a keypress, then the heat), so the
    // coordinator never shows a stale reason.
    bool told_otherwise;  // the coordinator was last told otherwise (DiskFull() tells it too)
    {
      std::lock_guard lock(owner_mu_);
      told_otherwise = owner_sent_.has_owner_state() &&
                       owner_sent_.owner_state().accepting() != accepting_.load();
    }
    // A vacate that is new was told above, before the hand-backs; a vacate whose cause changed
    // (the lid closed, then the charger was pulled) is told here.
    const bool told_above = d.action == Action::kVacate && d.action != last_action_;
    const bool changed = d.action != last_action_ || d.cause != last_cause_ ||
                         disk_full != last_disk_full_ || told_otherwise;
    last_cause_ = d.cause;
    last_disk_full_ = disk_full;
    if (changed || !frozen_now.empty()) {
      if (changed) {
        spdlog::info("owner policy: {} ({}){}", ToString(d.action), d.reason,
                     frozen_now.empty() ? "" : absl::StrCat("; froze ", frozen_now.size(),
                                                            " attempts"));
      }
      if (!told_above) SendOwnerState(d, frozen_now, r);
      last_action_ = d.action;
    }
    SendSensorsIfChanged(r, now);
    GpuStep(now);

    // The machine is about to sleep: once nothing runs any more, let it.
    if (sleep) {
      bool busy = false;
      for (auto& a : all) {
        std::lock_guard lock(a->mu);
        busy = busy || (!a->finished && !a->killed);
      }
      sleep_pending_ = busy;
      if (!busy) sensors_->ReleaseSleepDelay();
    } else {
      sleep_pending_ = false;
    }
  }

  // --- GPUs of the owner (worker/gpu_policy.h) ----------------------------------------------

  // Any thread: whether the owner policy holds any of `gpus` (offered indexes).
  bool AnyGpuHeld(const std::vector<uint32_t>& gpus) {
    std::lock_guard lock(gpu_mu_);
    for (uint32_t i : gpus) {
      if (i < gpu_holds_.size() && gpu_holds_[i].held) return true;
    }
    return false;
  }

  // Any thread: GpuDevice.unavailable of offered device `index` ("" when free).
  std::string GpuUnavailable(uint32_t index) {
    std::lock_guard lock(gpu_mu_);
    if (index >= gpu_holds_.size() || !gpu_holds_[index].held) return "";
    return ToString(gpu_holds_[index].cause);
  }

  // Owner thread, every owner step: at most every kGpuReadGap, re-reads the offered GPUs, decides
  // per device (DecideGpu: the owner's processes are the device's minus the pool's task
  // processes), freezes or vacates the attempts that own a held device and thaws those whose
  // devices are all free again, and sends GpuReadings (at once when a hold changed).
  void GpuStep(core::MonoTime now) {
    if (!options_.gpus) return;
    if (gpu_read_at_ && now - *gpu_read_at_ < kGpuReadGap) return;
    gpu_read_at_ = now;
    const std::vector<platform::GpuDevice> devices = options_.gpus->ReadLive();
    if (devices.empty()) return;
    std::vector<std::shared_ptr<Attempt>> all;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, a] : attempts_) all.push_back(a);
    }
    // The pool's own processes: every attempt's process tree (its cgroup, else its process
    // group), and this worker.
    std::vector<int64_t> pool = {static_cast<int64_t>(::getpid())};
    for (auto& a : all) {
      std::lock_guard lock(a->mu);
      if (!a->process) continue;
      for (pid_t p : a->process->TreePids()) pool.push_back(p);
    }
    bool holds_changed = false;
    std::vector<GpuHold> holds;
    {
      std::lock_guard lock(gpu_mu_);
      gpu_holds_.resize(devices.size());
      for (size_t i = 0; i < devices.size(); ++i) {
        const GpuReading reading{devices[i].temperature_c,
                                 OwnerProcesses(devices[i].pids, pool)};
        std::string reason;
        const GpuHold next = DecideGpu(reading, options_.policy.gpu, gpu_holds_[i], &reason);
        if (next != gpu_holds_[i]) {
          holds_changed = true;
          if (next.held) {
            spdlog::info("GPU {}: held ({}): its GPU tasks wait, it takes no new GPU work", i,
                         reason);
          } else {
            spdlog::info("GPU {}: free again", i);
          }
        }
        gpu_holds_[i] = next;
      }
      holds = gpu_holds_;
    }
    auto held = [&](const Attempt& a, GpuCause* cause) {
      for (uint32_t i : a.gpus) {
        if (i < holds.size() && holds[i].held) {
          *cause = holds[i].cause;
          return true;
        }
      }
      return false;
    };
    std::vector<uint64_t> frozen_now;
    const bool owner_suspended = suspended_;
    for (auto& a : all) {
      GpuCause cause = GpuCause::kNone;
      const bool is_held = held(*a, &cause);
      // Held by the owner with owner_use = "vacate", or frozen for its GPU for as long as the
      // policy lets any suspension last (vacate_after_suspend_s): give the task back, so it goes
      // on elsewhere instead of holding the device's memory for the owner's whole session.
      bool too_long = false;
      if (is_held) {
        std::lock_guard lock(a->mu);
        too_long = a->gpu_frozen &&
                   now - a->frozen_since >= core::Millis(static_cast<int64_t>(
                                                options_.policy.vacate_after_suspend_s * 1000));
      }
      if (is_held && (too_long || (cause == GpuCause::kOwnerUse &&
                                   options_.policy.gpu.owner_use == GpuOwnerUse::kVacate))) {
        bool running;
        {
          std::lock_guard lock(a->mu);
          running = a->process && !a->finished && !a->killed && !a->vacating;
        }
        if (running) {
          Vacate(*a, core::Millis(static_cast<int64_t>(options_.policy.vacate_grace_s * 1000)),
                 too_long ? absl::StrCat("vacated: suspended too long: ", ToString(cause))
                          : std::string("vacated: the owner uses its GPU"));
        }
        continue;
      }
      std::lock_guard lock(a->mu);
      if (!a->process || a->finished || a->killed || a->vacating) continue;
      if (is_held && !a->frozen) {
        if (absl::Status st = a->process->Suspend(); !st.ok()) {
          spdlog::warn("attempt {}: {}", a->id, std::string(st.message()));
        }
        a->frozen = true;
        a->gpu_frozen = true;
        a->frozen_since = now;
        frozen_now.push_back(a->id);
        spdlog::info("attempt {}: suspended ({})", a->id, ToString(cause));
      } else if (!is_held && a->gpu_frozen) {
        a->gpu_frozen = false;
        if (owner_suspended) continue;  // the owner policy keeps it frozen; its kRun thaws it
        a->process->Resume();
        a->frozen = false;
        a->frozen_spans.emplace_back(a->frozen_since, now);
        spdlog::info("attempt {}: resumed (its GPUs are free)", a->id);
      }
    }
    if (!frozen_now.empty()) SendSuspended(frozen_now);

    std::vector<v1::GpuDevice> readings;
    for (const auto& d : devices) {
      v1::GpuDevice g;
      g.set_index(d.index);
      g.set_memory_mb(d.memory_mb);
      if (d.temperature_c) g.set_temperature_c(*d.temperature_c);
      if (d.utilization) g.set_utilization(*d.utilization);
      if (d.memory_used_mb) g.set_memory_used_mb(*d.memory_used_mb);
      if (d.index < holds.size() && holds[d.index].held) {
        g.set_unavailable(ToString(holds[d.index].cause));
      }
      readings.push_back(std::move(g));
    }
    if (!holds_changed) {
      if (!GpusChanged(gpus_sent_, readings)) return;
      if (gpus_sent_at_ && now - *gpus_sent_at_ < kGpuSendGap) return;
    }
    gpus_sent_ = readings;
    gpus_sent_at_ = now;
    v1::WorkerMessage m;
    for (auto& g : readings) *m.mutable_gpus()->add_devices() = std::move(g);
    Send(m);
  }

  // Owner thread. `r`: the readings the decision was made from.
  void SendOwnerState(const Decision& d, const std::vector<uint64_t>& frozen_now,
                      const Readings& r) {
    v1::WorkerMessage m;
    auto* o = m.mutable_owner_state();
    o->set_accepting(accepting_);
    o->set_state(ToString(d.action));
    o->set_cause(d.action == Action::kRun ? ToString(Cause::kNone) : ToString(d.cause));
    *o->mutable_sensors() = ToProto(r);
    sensors_sent_ = r;
    o->set_reason(text::TruncateUtf8(
        disk_full_ && d.action == Action::kRun ? DiskReason() : d.reason, 200));
    {
      std::lock_guard lock(owner_mu_);
      owner_sent_ = m;
    }
    for (uint64_t id : frozen_now) o->add_suspended_attempts(id);
    Send(m);
  }

  // Owner thread: the readings alone when they changed noticeably since last sent (with an owner
  // state or alone), at most every kSensorsGap. They also replace those of the owner state resent
  // after each hello.
  void SendSensorsIfChanged(const Readings& r, core::MonoTime now) {
    if (!SensorsChanged(sensors_sent_, r)) return;
    if (sensors_sent_at_ && now - *sensors_sent_at_ < kSensorsGap) return;
    sensors_sent_ = r;
    sensors_sent_at_ = now;
    v1::WorkerMessage m;
    *m.mutable_sensors() = ToProto(r);
    {
      std::lock_guard lock(owner_mu_);
      if (owner_sent_.has_owner_state()) {
        *owner_sent_.mutable_owner_state()->mutable_sensors() = m.sensors();
      }
    }
    Send(m);
  }

  // Tells the coordinator about attempts frozen outside an owner state change.
  void SendSuspended(const std::vector<uint64_t>& ids) {
    v1::WorkerMessage m;
    {
      std::lock_guard lock(owner_mu_);
      m = owner_sent_;
    }
    auto* o = m.mutable_owner_state();
    for (uint64_t id : ids) o->add_suspended_attempts(id);
    Send(m);
  }

  // Starts vacating `a` (no-op when it is finished, killed or already vacating): SIGTERM now,
  // SIGKILL after `grace`; the runner thread then uploads the checkpoint and reports PREEMPTED.
  // An attempt still staging its inputs is handed back before it starts. True when started.
  bool Vacate(Attempt& a, core::Millis grace, const std::string& reason) {
    std::lock_guard lock(a.mu);
    // A filed attempt has finished its work: it is delivered, never vacated.
    if (a.finished || a.killed || a.filed) return false;
    if (a.vacating) {
      if (a.process) a.process->Terminate(grace);  // a shorter grace (sleep) takes effect
      return true;
    }
    a.vacating = true;
    a.vacate_reason = reason;
    a.vacate_at = clock_.Now();
    if (a.frozen) {
      a.frozen = false;
      a.frozen_spans.emplace_back(a.frozen_since, a.vacate_at);
    }
    if (a.process) a.process->Terminate(grace);
    spdlog::info("attempt {}: {} (grace {} ms)", a.id, reason, grace.count());
    return true;
  }

  // Where the attempt's time went, as of now: staging from the assignment's arrival to the
  // process's start (all of it when the process never started), running until it ended less the
  // time it was frozen for the owner, and from its end until now (hashing, uploading) when
  // `with_upload`. Monotonic milliseconds.
  void FillTiming(Attempt& a, bool with_upload, v1::AttemptTiming* t) {
    core::MonoTime assigned, started, exited, frozen_since;
    bool frozen;
    std::vector<std::pair<core::MonoTime, core::MonoTime>> spans;
    {
      std::lock_guard lock(a.mu);
      assigned = a.assigned;
      started = a.started;
      exited = a.exited;
      frozen = a.frozen;
      frozen_since = a.frozen_since;
      spans = a.frozen_spans;
    }
    const core::MonoTime now = clock_.Now();
    auto ms = [](core::MonoTime from, core::MonoTime to) {
      return static_cast<uint64_t>(std::max<int64_t>((to - from).count(), 0));
    };
    t->set_resumed(a.assignment.checkpoint_size() > 0);
    if (assigned == core::MonoTime{}) return;  // filed by an earlier run: nothing measured here
    if (started == core::MonoTime{}) {
      t->set_stage_ms(ms(assigned, now));
      return;
    }
    const core::MonoTime end = exited == core::MonoTime{} ? now : exited;
    if (frozen) spans.emplace_back(frozen_since, end);
    int64_t frozen_ms = 0;
    for (const auto& [b, e] : spans) {
      const core::MonoTime lo = std::max(b, started), hi = std::min(e, end);
      if (hi > lo) frozen_ms += (hi - lo).count();
    }
    t->set_stage_ms(ms(assigned, started));
    t->set_run_ms(ms(started, end) - std::min<uint64_t>(ms(started, end), frozen_ms));
    if (with_upload) t->set_upload_ms(ms(end, now));
  }

  // The report of a vacated attempt: its final checkpoint and the work it loses.
  void Preempted(Attempt& a, v1::AttemptReport* report) {
    std::string reason;
    core::MonoTime vacate_at, started;
    std::vector<std::pair<core::MonoTime, core::MonoTime>> spans;
    {
      std::lock_guard lock(a.mu);
      reason = a.vacate_reason;
      vacate_at = a.vacate_at;
      started = a.started;
      spans = a.frozen_spans;
    }
    report->set_result(v1::AttemptReport::PREEMPTED);
    report->set_message(text::TruncateUtf8(reason, 1024));
    if (started == core::MonoTime{}) return;  // never started: nothing to save, nothing lost
    const std::string ckpt_dir = a.dir + ".checkpoint";
    absl::StatusOr<std::vector<v1::OutputFile>> files = UploadCheckpoint(a, /*force=*/true);
    int64_t newest_ns = 0;
    if (files.ok()) {
      report->set_has_checkpoint(true);
      for (auto& f : *files) *report->add_checkpoint() = f;
    } else {
      spdlog::warn("attempt {}: final checkpoint not saved: {}", a.id,
                   std::string(files.status().message()));
    }
    for (const auto& e : ListFiles(ckpt_dir)) newest_ns = std::max(newest_ns, e.mtime_ns);
    // Work since the checkpoint dir last changed (or since the start), frozen time excluded.
    const core::MonoTime now = clock_.Now();
    core::MonoTime from = started;
    if (newest_ns > 0) {
      const int64_t age_ms = clock_.WallMs() - newest_ns / 1000000;
      from = std::max(started, now - core::Millis(std::max<int64_t>(age_ms, 0)));
    }
    core::Millis lost{0};
    if (vacate_at > from) {
      lost = std::chrono::duration_cast<core::Millis>(vacate_at - from);
      for (const auto& [b, e] : spans) {
        const core::MonoTime lo = std::max(b, from), hi = std::min(e, vacate_at);
        if (hi > lo) lost -= std::chrono::duration_cast<core::Millis>(hi - lo);
      }
    }
    report->set_lost_ms(static_cast<uint64_t>(std::max<int64_t>(lost.count(), 0)));
  }

  // Uploads the attempt's checkpoint dir when it changed since the last upload (or always, with
  // `force`) and returns its files. kUnavailable while a file changes under the hash (the task
  // writes it: retried next round) or an upload fails; kAborted when nothing changed.
  absl::StatusOr<std::vector<v1::OutputFile>> UploadCheckpoint(Attempt& a, bool force) {
    std::lock_guard lock(a.ckpt_mu);
    const std::string dir = a.dir + ".checkpoint";
    std::vector<DirEntry> entries = ListFiles(dir);
    const std::string fp = Fingerprint(entries);
    if (fp == a.ckpt_fingerprint && !force) return absl::AbortedError("unchanged");
    if (fp == a.ckpt_fingerprint) return a.ckpt_files;
    std::vector<v1::OutputFile> files;
    if (entries.size() > spec::kMaxCheckpointFiles) {
      if (a.ckpt_fingerprint != "too many") {
        spdlog::warn("attempt {}: its checkpoint dir holds {} files, more than the {} a checkpoint "
                     "may have: not saved (keep state in fewer files)",
                     a.id, entries.size(), spec::kMaxCheckpointFiles);
      }
      a.ckpt_fingerprint = "too many";
      return absl::ResourceExhaustedError("too many files in the checkpoint dir");
    }
    for (const auto& e : entries) {
      // The coordinator refuses a whole checkpoint over one bad name: leave such files out.
      if (auto why = spec::RelativePathError(e.rel)) {
        spdlog::warn("attempt {}: checkpoint file '{}' {}; left out of the checkpoint", a.id,
                     text::TruncateUtf8(e.rel, 200), *why);
        continue;
      }
      const std::string path = dir + "/" + e.rel;
      auto digest = blob::HashFile(path, /*follow_symlinks=*/false);
      if (!digest.ok()) return digest.status();
      struct stat st;
      if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != e.size ||
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec !=
              e.mtime_ns || digest->size != e.size) {
        return absl::UnavailableError(absl::StrCat("checkpoint file ", e.rel,
                                                   " changed while it was read"));
      }
      v1::OutputFile f;
      f.set_path(e.rel);
      f.set_sha256(digest->sha256);
      f.set_size(digest->size);
      if (absl::Status st2 = UploadIfMissing(path, f, /*follow_symlinks=*/false,
                                             &a.transfer.output_bytes);
          !st2.ok()) {
        return st2;
      }
      files.push_back(std::move(f));
    }
    a.ckpt_fingerprint = fp;
    a.ckpt_files = files;
    a.ckpt_uploaded_at = clock_.Now();
    return files;
  }

  // Uploads checkpoint dirs that changed, at most every checkpoint_interval_s per attempt.
  void CheckpointLoop() {
    const core::Millis interval(
        static_cast<int64_t>(options_.policy.checkpoint_interval_s * 1000));
    while (!stopping_) {
      WaitStop(core::Millis(std::min<int64_t>(1000, std::max<int64_t>(interval.count() / 4, 50))));
      if (stopping_) break;
      std::vector<std::shared_ptr<Attempt>> all;
      {
        std::lock_guard lock(mu_);
        for (auto& [id, a] : attempts_) all.push_back(a);
      }
      const core::MonoTime now = clock_.Now();
      for (auto& a : all) {
        {
          std::lock_guard lock(a->mu);
          if (!a->process || a->finished || a->vacating || a->killed) continue;
        }
        {
          std::lock_guard lock(a->ckpt_mu);
          if (now - a->ckpt_uploaded_at < interval) continue;
        }
        auto files = UploadCheckpoint(*a, /*force=*/false);
        if (!files.ok()) {
          if (files.status().code() != absl::StatusCode::kAborted) {
            spdlog::info("attempt {}: checkpoint upload deferred: {}", a->id,
                         std::string(files.status().message()));
          }
          continue;
        }
        v1::WorkerMessage m;
        m.mutable_checkpoint()->set_attempt(a->id);
        for (auto& f : *files) *m.mutable_checkpoint()->add_files() = f;
        Send(m);
        spdlog::info("attempt {}: checkpoint saved ({} files)", a->id, files->size());
      }
    }
  }

  // --- Measurements (worker/measure.h) ----------------------------------------------------------

  // Counts the threads moving inputs or outputs (a periodic link probe waits for none).
  class Moving {
   public:
    explicit Moving(std::atomic<int>& n) : n_(n) { ++n_; }
    ~Moving() { --n_; }
    Moving(const Moving&) = delete;
    Moving& operator=(const Moving&) = delete;

   private:
    std::atomic<int>& n_;
  };

  // A Welcome arrived: the probe thread resends the last measurement or probes.
  void Joined() {
    std::lock_guard lock(stop_mu_);
    ++joins_;
    stop_cv_.notify_all();
  }

  void SendLink(const LinkMeasurement& m) {
    v1::WorkerMessage msg;
    auto* l = msg.mutable_link();
    l->set_rtt_us(static_cast<uint64_t>(m.rtt_us));
    l->set_down_bytes_per_s(m.down_bytes_per_s);
    l->set_up_bytes_per_s(m.up_bytes_per_s);
    l->set_probe_bytes(m.probe_bytes);
    Send(msg);
  }

  // Probes the link after the first Welcome, then every probe_interval (deferred while inputs
  // or outputs move, skipped after a whole interval of that); after each later Welcome it
  // resends the last result. A failed probe is logged and tried again after a backoff (5 s,
  // doubling, at most the interval; 5 min when the interval is 0).
  void ProbeLoop() {
    const core::Millis interval = options_.probe_interval;
    uint64_t seen_joins = 0;
    std::optional<LinkMeasurement> last;
    std::optional<core::MonoTime> due, deferred_since;
    int failures = 0;  // probes failed in a row
    while (true) {
      bool joined = false;
      {
        std::unique_lock lock(stop_mu_);
        auto ready = [&] {
          return stopping_.load() || joins_ != seen_joins || (due && clock_.Now() >= *due);
        };
        if (due) {
          stop_cv_.wait_for(lock, std::max(core::Millis(0), *due - clock_.Now()), ready);
        } else {
          stop_cv_.wait(lock, ready);
        }
        if (stopping_) return;
        joined = joins_ != seen_joins;
        seen_joins = joins_;
      }
      const core::MonoTime now = clock_.Now();
      if (joined && last) {
        SendLink(*last);  // a restarted coordinator may not have it
        continue;
      }
      if (!joined && !(due && now >= *due)) continue;
      // A rejoin after failed probes keeps their backoff: on a link that breaks under load, each
      // probe would otherwise break the session, and each rejoin start the next probe at once.
      if (joined && !last && failures > 0 && due && now < *due) continue;
      if (last && moving_.load() > 0) {
        if (!deferred_since) deferred_since = now;
        if (now - *deferred_since < std::max(interval, core::Millis(1000))) {
          due = now + core::Millis(1000);
        } else {
          spdlog::info("link probe skipped: inputs or outputs kept moving for {} s",
                       interval.count() / 1000);
          deferred_since.reset();
          due = now + interval;
        }
        continue;
      }
      deferred_since.reset();
      LinkProbeOptions po;
      po.token = options_.token;
      po.canceller = &probe_cancel_;
      absl::StatusOr<LinkMeasurement> m = MeasureLink(probe_stub_.get(), po);
      if (stopping_) return;
      if (m.ok()) {
        last = *m;
        SendLink(*m);
        spdlog::info("link to {}: round trip {:.2f} ms, down {:.1f} MB/s, up {:.1f} MB/s "
                     "(probes of {} KiB)",
                     options_.coordinator, m->rtt_us / 1000.0, m->down_bytes_per_s / 1e6,
                     m->up_bytes_per_s / 1e6, m->probe_bytes >> 10);
      } else {
        // The coordinator may be busy serving other workers' probes (its gate refuses waiters
        // past a minute) or briefly away: try again soon, backing off 5 s, 10 s, 20 s... up to the
        // interval (5 min when probing only on join).
        const core::Millis cap = interval.count() > 0 ? interval : core::Millis(300000);
        const core::Millis backoff =
            std::min(cap, core::Millis(int64_t{5000} << std::min(failures, 6)));
        ++failures;
        spdlog::warn("link probe failed (tried again in {} s): {}", backoff.count() / 1000,
                     m.status().ToString());
        due = clock_.Now() + backoff;
        continue;
      }
      failures = 0;
      if (interval.count() > 0) {
        due = clock_.Now() + interval;
      } else {
        due.reset();
      }
    }
  }

  void JoinProbeThread() {
    probe_cancel_.Cancel();
    if (probe_thread_.joinable()) probe_thread_.join();
  }

  Options options_;
  const platform::Clock& clock_;
  const std::string boot_id_;
  BlobCache cache_;
  Outbox outbox_;
  std::thread outbox_thread_;  // Redeliver
  std::unique_ptr<platform::FileLock> work_dir_lock_;
  std::string work_dir_real_;  // canonical work dir, marks this worker's tasks
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Blobs::Stub> stub_;
  std::unique_ptr<v1::WorkerSession::Stub> session_stub_;
  std::unique_ptr<blob::PeerServer> peer_server_;  // set in Run before sessions start
  std::atomic<bool> stopping_{false};
  std::unique_ptr<platform::TaskCgroups> cgroups_;
  static constexpr size_t kMaxSpareCgroups = 64;
  std::mutex cgroup_mu_;
  std::vector<std::unique_ptr<platform::TaskCgroup>> spare_cgroups_;  // empty, thawed
  std::atomic<uint64_t> next_cgroup_{0};
  std::unique_ptr<platform::SensorSource> sensors_;
  std::thread owner_thread_, checkpoint_thread_;
  PolicyState policy_state_;              // owner thread only (and Run before it starts)
  std::optional<Action> last_action_;     // owner thread only; none before the first step
  Cause last_cause_ = Cause::kNone;       // owner thread only
  Readings sensors_sent_;                 // owner thread only: the readings last sent
  std::optional<core::MonoTime> gpu_read_at_;  // owner thread only: GPUs last read (GpuStep)
  std::vector<v1::GpuDevice> gpus_sent_;       // owner thread only: GpuReadings last sent
  std::optional<core::MonoTime> gpus_sent_at_;  // owner thread only
  std::mutex gpu_mu_;
  std::vector<GpuHold> gpu_holds_;  // per offered GPU index; guarded by gpu_mu_
  std::optional<core::MonoTime> sensors_sent_at_;  // owner thread only: last sent alone
  bool last_disk_full_ = false;           // owner thread only
  std::atomic<bool> disk_full_{false};    // see DiskFull()
  std::atomic<bool> accepting_{true};     // the owner policy allows new work
  std::atomic<bool> suspended_{false};    // the owner policy says suspend
  std::atomic<bool> sleep_pending_{false};
  std::mutex owner_mu_;
  v1::WorkerMessage owner_sent_;          // the last OwnerState sent, resent after each hello
  bool refused_ = false;  // the last session was refused (read by Run's thread only)
  std::vector<v1::GpuDevice> offered_gpus_;  // as the last Hello listed them; guarded by mu_
  std::atomic<core::Millis> heartbeat_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  uint64_t joins_ = 0;  // Welcomes received; guarded by stop_mu_
  // Measurements: calibration_ is written in Run before sessions start.
  Calibration calibration_;
  std::atomic<int> moving_{0};  // threads staging inputs or uploading (Moving)
  std::unique_ptr<v1::Probes::Stub> probe_stub_;
  std::thread probe_thread_;
  ProbeCanceller probe_cancel_;

  std::mutex stream_mu_;  // serialises writes on the session stream
  grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>* stream_ = nullptr;
  std::condition_variable stream_cv_;  // stream_ became nullptr (the session ended)
  grpc::ClientContext* ctx_ = nullptr;

  static constexpr size_t kMaxSpareDirs = 256;
  std::mutex spare_mu_;
  std::vector<std::string> spare_dirs_;
  uint64_t next_spare_ = 0;

  std::mutex mu_;  // guards attempts_, threads_, run_queue_, idle_runners_, runners_exit_
  std::condition_variable acked_cv_;  // attempts_ shrank
  std::map<uint64_t, std::shared_ptr<Attempt>> attempts_;
  std::vector<std::thread> threads_;  // runner threads
  std::condition_variable runner_cv_;
  std::deque<std::shared_ptr<Attempt>> run_queue_;
  int idle_runners_ = 0;
  bool runners_exit_ = false;
};

Worker::Worker(Options options, const platform::Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}
Worker::~Worker() = default;
absl::Status Worker::Run() { return impl_->Run(); }
void Worker::Stop() { impl_->Stop(); }
const std::string& Worker::boot_id() const { return impl_->boot_id(); }

}  // namespace idlepool::worker
