// `idlepool worker`: lends this machine to a pool until SIGTERM or Ctrl-C (which vacate).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/install_service.h"
#include "cli/resources_command.h"
#include "core/defaults.h"
#include "owner/owner_policy_config.h"
#include "platform/gpu.h"
#include "platform/gpu_probe.h"
#include "platform/harden.h"
#include "platform/memory.h"
#include "platform/process.h"
#include "sandbox/probe.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"
#include "text/names.h"
#include "text/units.h"
#include "text/utf8.h"
#include "worker/identity.h"
#include "worker/session.h"
#include "worker/worker.h"

namespace idlepool::cli {
namespace {

namespace fs = std::filesystem;

struct WorkerFlags {
  worker::Options options;
  int64_t heartbeat_ms = core::kDefaultHeartbeat.count();
  CLI::Option* heartbeat_opt = nullptr;
  std::string config, gpus = "all", min_free_disk, cache_size, probe_interval = "10m";
  bool print_default_config = false, dedicated = false, normal_priority = false;
  bool opencl_cpu = false, print_resources = false, resources_json = false;
  bool no_peer = false, no_probe = false, no_calibrate = false;
  bool install_service = false;
  std::string join, token_file;  // --join HOST:PORT, --token-file (else IDLEPOOL_JOIN_TOKEN)
};

// The join token: --token-file, else IDLEPOOL_JOIN_TOKEN (scrubbed from this process's
// environment either way, so tasks never inherit it).
absl::StatusOr<std::string> JoinToken(const WorkerFlags& f) {
  std::string env = platform::TakeSecretFromEnv("IDLEPOOL_JOIN_TOKEN");
  (void)platform::TakeSecretFromEnv("IDLEPOOL_TOKEN");  // not the worker's; never passed on
  if (!f.token_file.empty()) {
    std::ifstream in(f.token_file);
    std::string line;
    if (!std::getline(in, line) || line.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--token-file ", f.token_file, " is empty"));
    }
    return line;
  }
  if (env.empty()) {
    return absl::InvalidArgumentError(
        "this worker has not joined a pool yet: pass --join HOST:PORT with a join token in "
        "--token-file FILE or IDLEPOOL_JOIN_TOKEN (`idlepool token create --role worker` on the "
        "coordinator; the coordinator prints a ready command at start)");
  }
  return env;
}

// The identity kept in the work dir, or a new one from joining. Prints one line and returns
// the exit code on failure (2: a token or pool problem, 1: unreachable).
std::optional<int> EnsureIdentity(WorkerFlags& f, const std::string& address) {
  const std::string dir = worker::IdentityDir(f.options.work_dir);
  auto loaded = worker::LoadIdentity(dir);
  if (!loaded.ok()) return Fail(loaded.status());
  worker::Identity id;
  if (loaded->has_value()) {
    id = std::move(**loaded);
    (void)platform::TakeSecretFromEnv("IDLEPOOL_JOIN_TOKEN");
    (void)platform::TakeSecretFromEnv("IDLEPOOL_TOKEN");
  } else {
    if (address.empty()) return Fail(absl::InvalidArgumentError("--join HOST:PORT is required"));
    auto token = JoinToken(f);
    if (!token.ok()) return Fail(token.status());
    auto joined = worker::Join(address, *token,
                               f.options.name.empty() ? worker::HostName() : f.options.name, dir);
    if (!joined.ok()) {
      std::fprintf(stderr, "idlepool worker: %s\n", std::string(joined.status().message()).c_str());
      return absl::IsUnavailable(joined.status()) ? 1 : 2;
    }
    id = std::move(*joined);
    std::printf("joined the pool at %s as %s (identity in %s; later starts need no token)\n",
                address.c_str(), id.name.c_str(), dir.c_str());
    std::fflush(stdout);
  }
  if (!f.options.name.empty() && f.options.name != id.name) {
    std::fprintf(stderr,
                 "idlepool worker: this work dir's identity is worker %s, not %s; use another "
                 "--work-dir to join as another worker\n",
                 id.name.c_str(), f.options.name.c_str());
    return 2;
  }
  f.options.name = id.name;
  f.options.coordinator = address.empty() ? id.coordinator : address;
  f.options.identity_dir = dir;
  return std::nullopt;
}

void AddOwnerFlags(CLI::App* work, WorkerFlags& f) {
  work->add_option("--config", f.config,
                   "owner policy file (TOML, table [owner]; see --print-default-config)");
  work->add_flag("--print-default-config", f.print_default_config,
                 "print the default owner policy, with comments, and exit");
  work->add_option("--sensors-dir", f.options.sensors_dir,
                   "read the owner's sensors from one-value files in DIR instead of the "
                   "machine's (idle_seconds, on_ac_power, battery_percent, temperature_c, "
                   "lid_closed, owner_cpu_load, sleep_imminent)");
  work->add_flag("--dedicated", f.dedicated,
                 "a machine lent full time: neither owner input nor other load waits for or "
                 "suspends work (start_idle_minutes = 0, max_owner_cpu_load = 1); battery, lid, "
                 "sleep, heat and window rules still hold");
  work->add_flag("--normal-priority", f.normal_priority,
                 "run tasks at normal CPU and I/O priority (default: SCHED_IDLE, nice 19, idle "
                 "I/O)");
}

void AddResourceFlags(CLI::App* work, WorkerFlags& f) {
  work->add_option("--name", f.options.name,
                   "worker name, unique in the pool (default: host name)");
  work->add_option("--memory-mb", f.options.memory_mb, "memory offered (default: not stated)");
  work->add_option("--gpus", f.gpus,
                   "GPUs to offer: all, none, or indexes as --print-resources numbers them "
                   "(0,2)")
      ->capture_default_str();
  work->add_flag("--opencl-cpu", f.opencl_cpu,
                 "also offer CPU-type OpenCL devices (PoCL) as GPUs: for tests and CI, since a "
                 "CPU is not a GPU (also IDLEPOOL_OPENCL_CPU=1)");
  work->add_flag("--print-resources", f.print_resources,
                 "print the cores, memory, slots and GPUs this worker would offer, and what each "
                 "GPU backend (NVML, OpenCL, ROCm SMI, Metal) said, then exit");
  work->add_flag("--json", f.resources_json, "with --print-resources: print JSON");
  work->add_option("--min-free-disk", f.min_free_disk,
                   "take no work while less than this is free under --work-dir: bytes, or "
                   "256M, 1G (default: 256M)");
  work->add_option("--cache-size", f.cache_size,
                   "cap of the blob cache in WORK_DIR/cache: bytes, or 512M, 10G, 1.5GiB "
                   "(default: 10G)");
}

void AddNetworkFlags(CLI::App* work, WorkerFlags& f) {
  work->add_option("--peer-listen", f.options.peer_listen,
                   "where to serve cached blobs to the pool's other workers, HOST:PORT "
                   "(0.0.0.0 = every interface; port 0 = a free one)")
      ->capture_default_str();
  work->add_option("--tunnel-listen", f.options.tunnel_listen,
                   "where the gateway reaches this worker's service replicas (TLS, pool "
                   "certificates only), HOST:PORT; empty: no replicas reachable here")
      ->capture_default_str();
  work->add_flag("--no-peer", f.no_peer,
                 "neither serve blobs to peers nor fetch from them: every input comes from the "
                 "coordinator");
  work->add_option("--probe-interval", f.probe_interval,
                   "measure the link to the coordinator again this often: 30s, 10m, 1h; 0 = only "
                   "on join")
      ->capture_default_str();
  work->add_flag("--no-probe", f.no_probe,
                 "never measure the link (the planner then assumes a default link)");
  work->add_flag("--no-calibrate", f.no_calibrate, "skip the CPU calibration at start");
  work->add_flag("--no-sandbox", f.options.no_sandbox,
                 "run tasks unsandboxed, as this user, with this user's files in their reach "
                 "(default: every task in its own namespaces; docs/guide/sandbox.md); also env "
                 "IDLEPOOL_NO_SANDBOX=1")
      ->envname("IDLEPOOL_NO_SANDBOX");
  work->add_option("--sandbox-uid-base", f.options.sandbox_uid_base,
                   "as root: slot N's tasks run as uid and gid BASE+N")
      ->check(CLI::Range(uint64_t{100'000}, uint64_t{4'000'000'000}))
      ->capture_default_str();
  work->add_option("--task-pids-max", f.options.task_pids_max,
                   "processes and threads one task may have at once (a fork bomb ends there)")
      ->check(CLI::Range(uint64_t{16}, uint64_t{4'194'304}))
      ->capture_default_str();
  work->add_option("--sandbox-show", f.options.sandbox_show,
                   "also show tasks this dir, read-only (software installed outside /usr and "
                   "/opt); repeatable. Tasks see nothing else of the machine but the system dirs "
                   "(docs/guide/sandbox.md)");
  work->add_option("--device-root", f.options.device_root,
                   "bind GPU device nodes from this dir instead of / (tests: stand-in nodes)")
      ->group("");
  f.heartbeat_opt = work->add_option("--heartbeat-ms", f.heartbeat_ms,
                                     "heartbeat interval (default: the coordinator's)")
                        ->check(CLI::Range(int64_t{10}, int64_t{600'000}));
}

// Prints "idlepool worker: FLAG: why" and returns 2 (bad input).
int BadFlag(const std::string& flag, const absl::Status& st) {
  std::fprintf(stderr, "idlepool worker: %s: %s\n", flag.c_str(),
               std::string(st.message()).c_str());
  return 2;
}

// The tier tasks would run in, probed as the worker does at start (in a scratch dir: this needs
// no work dir); "none" with --no-sandbox or when the probe fails (the reason on stderr).
std::string ProbedTier(bool no_sandbox, uint64_t pids_max) {
  if (no_sandbox) return "none";
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec) / absl::StrCat("idlepool-probe-", ::getpid());
  sandbox::Settings s = sandbox::DetectSettings(dir.string());
  s.pids_max = pids_max;
  auto probed = sandbox::Probe(s);
  fs::remove_all(dir, ec);
  if (!probed.ok()) {
    std::fprintf(stderr, "idlepool worker: %s\n", std::string(probed.status().message()).c_str());
    return "none";
  }
  return std::string(sandbox::TierName(s.tier));
}

// GPUs are discovered before anything else, so --print-resources needs no work dir or token.
// Returns an exit code when the command ends here.
std::optional<int> DiscoverGpus(WorkerFlags& f) {
  auto selection = platform::ParseGpuSelection(f.gpus);
  if (!selection.ok()) {
    std::fprintf(stderr, "idlepool worker: %s\n",
                 std::string(selection.status().message()).c_str());
    return 2;
  }
  platform::GpuDiscoveryOptions gopts;
  gopts.opencl_cpu = f.opencl_cpu;
  gopts.selection = *selection;
  gopts.opencl_probe = platform::SelfGpuProbeCommand();  // OpenCL in a child
  gopts.discover_unoffered = f.print_resources;
  f.options.gpus = platform::GpuInventory::Discover(gopts);
  const platform::GpuInventory& gpus = *f.options.gpus;
  if (f.print_resources) {
    return PrintResources(gpus, {f.options.slots, f.options.memory_mb, f.resources_json,
                                 ProbedTier(f.options.no_sandbox, f.options.task_pids_max)});
  }
  for (const auto& b : gpus.backends()) spdlog::info("gpu discovery: {}: {}", b.backend, b.message);
  for (uint32_t m : gpus.missing()) {
    spdlog::warn("--gpus: there is no GPU {} ({} found); not offered", m, gpus.discovered().size());
  }
  for (const auto& g : gpus.offered()) {
    spdlog::info("offering gpu {}: {} {}, {} MiB, apis {}", g.index, g.vendor, g.name, g.memory_mb,
                 absl::StrJoin(g.apis, ","));
  }
  return std::nullopt;
}

// The flags that need parsing or checking, into f.options; 0, or the exit code (2).
int CheckFlags(WorkerFlags& f) {
  worker::Options& o = f.options;
  if (o.work_dir.empty()) {
    std::fprintf(stderr, "idlepool worker: --work-dir is required\n");
    return 2;
  }
  // A dir shown to tasks must be an absolute dir that exists: anything else would be dropped
  // without a word, and the tasks that need it fail far from here.
  for (const std::string& dir : o.sandbox_show) {
    std::error_code ec;
    if (dir.empty() || dir[0] != '/' || !std::filesystem::is_directory(dir, ec)) {
      std::fprintf(stderr,
                   "idlepool worker: --sandbox-show '%s' is not an absolute path to a dir: give "
                   "the full path of an existing dir\n",
                   dir.c_str());
      return 2;
    }
  }
  if (!f.min_free_disk.empty()) {
    auto bytes = text::ParseByteSize(f.min_free_disk);
    if (!bytes.ok()) return BadFlag("--min-free-disk", bytes.status());
    o.min_free_disk_bytes = *bytes;
  }
  // HOST:PORT (or [v6]:PORT), port 0..65535: refused here with exit 2, not by gRPC later.
  if (auto hp = text::SplitHostPort(o.peer_listen); !hp.ok()) {
    return BadFlag("--peer-listen", hp.status());
  }
  if (!o.tunnel_listen.empty()) {
    if (auto hp = text::SplitHostPort(o.tunnel_listen); !hp.ok()) {
      return BadFlag("--tunnel-listen", hp.status());
    }
  }
  if (!f.cache_size.empty()) {
    auto bytes = text::ParseByteSize(f.cache_size);
    if (!bytes.ok()) return BadFlag("--cache-size", bytes.status());
    o.cache_bytes = *bytes;
  }
  if (!f.config.empty()) {
    auto policy = owner::LoadPolicyConfig(f.config);
    if (!policy.ok()) return BadSpec(policy.status());  // missing, too large or wrong: exit 2
    o.policy = *policy;
  }
  if (f.dedicated) owner::MakeDedicated(&o.policy);
  std::error_code ec;
  if (!o.sensors_dir.empty() && !fs::is_directory(o.sensors_dir, ec)) {
    std::fprintf(stderr, "idlepool worker: --sensors-dir %s is not a directory%s\n",
                 o.sensors_dir.c_str(), ec ? (" (" + ec.message() + ")").c_str() : "");
    return 2;
  }
  auto every = text::ParseDuration(f.probe_interval);
  if (!every.ok()) return BadFlag("--probe-interval", every.status());
  o.probe_interval = *every;
  o.low_priority = !f.normal_priority;
  o.peers = !f.no_peer;
  o.probe = !f.no_probe;
  o.calibrate = !f.no_calibrate;
  if (f.heartbeat_opt->count() > 0) o.heartbeat = core::Millis(f.heartbeat_ms);
  return 0;
}

// The owner policy the unit reads: --config's file copied, else the default (an existing one is
// kept: an admin may have edited it).
absl::Status WriteServicePolicy(const std::string& config) {
  const fs::path path = fs::path(kServiceConfigDir) / "owner.toml";
  std::error_code ec;
  if (config.empty() && fs::exists(path, ec)) return absl::OkStatus();
  fs::create_directories(kServiceConfigDir, ec);
  if (!config.empty()) {
    fs::copy_file(config, path, fs::copy_options::overwrite_existing, ec);
  } else {
    std::ofstream out(path, std::ios::trunc);
    out << owner::DefaultConfigToml();
    if (!out.flush()) ec = std::make_error_code(std::errc::io_error);
  }
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot write ", path.string(), ": ", ec.message()));
  }
  fs::permissions(path, fs::perms(0644), ec);
  std::printf("wrote %s%s\n", path.c_str(), config.empty() ? " (the default owner policy)" : "");
  return absl::OkStatus();
}

// --install-service: joins the pool as root into the service's work dir (a token that cannot
// be used fails here, where a person reads it), hands the identity to the user idlepool, writes
// the unit's configuration and starts it. Nothing secret is kept: the unit needs no token.
int InstallService(WorkerFlags& f, const Common& common, const CLI::App& sub) {
  if (absl::Status st = NeedRoot("worker"); !st.ok()) return Fail(st);
  const std::string work_dir = std::string(kServiceDataDir) + "/worker";
  if (!f.options.work_dir.empty() && f.options.work_dir != work_dir) {
    std::fprintf(stderr,
                 "idlepool worker: --install-service keeps the worker's work dir in %s: leave "
                 "out --work-dir\n",
                 work_dir.c_str());
    return 2;
  }
  f.options.work_dir = work_dir;
  auto args = GivenArgs(sub, {"--join", "--coordinator", "--token-file", "--work-dir", "--config",
                              "--install-service"});
  if (!args.ok()) return Fail(args.status());
  if (int rc = CheckFlags(f); rc != 0) return rc;
  const ServiceUnit unit{"idlepool-worker.service",
                         "worker",
                         std::string(kServiceConfigDir) + "/worker.env",
                         "IDLEPOOL_WORKER_ARGS",
                         {"worker", "--work-dir", work_dir, "--config",
                          std::string(kServiceConfigDir) + "/owner.toml"}};
  // The package's user and unit are checked before the join spends a token.
  if (absl::Status st = GiveToServiceUser(work_dir, 0700); !st.ok()) return Fail(st);
  if (absl::Status st = WriteArgsFile(unit, *args); !st.ok()) return Fail(st);
  if (absl::Status st = WriteServicePolicy(f.config); !st.ok()) return Fail(st);
  const std::string address = !f.join.empty() ? f.join : common.coordinator;
  if (auto rc = EnsureIdentity(f, address)) return *rc;
  if (absl::Status st = GiveToServiceUser(work_dir, 0700); !st.ok()) return Fail(st);
  return EnableAndStart(unit, *args);
}

int RunWorker(WorkerFlags& f, const Common& common, const CLI::App& sub) {
  platform::MakeNonDumpable();  // a same-user task cannot read this process through /proc
  platform::HideInitialEnvironment();       // nor can a root one find the owner's variables there
  platform::KeepLargeBlocksOutOfTheHeap();  // a light idle worker: platform/memory.h
  if (f.print_default_config) {
    std::printf("%s", owner::DefaultConfigToml().c_str());
    return 0;
  }
  if (const std::string& name = f.options.name; !name.empty()) {
    if (std::string why = text::NameProblem(name); !why.empty()) {
      std::fprintf(stderr,
                   "idlepool worker: --name \"%s\": %s (a worker name must be printable, "
                   "visible text)\n",
                   text::VisibleText(name).c_str(), why.c_str());
      return 2;
    }
  }
  if (auto rc = DiscoverGpus(f)) return *rc;
  if (f.install_service) return InstallService(f, common, sub);
  if (int rc = CheckFlags(f); rc != 0) return rc;
  const std::string address = !f.join.empty() ? f.join : common.coordinator;
  if (auto rc = EnsureIdentity(f, address)) return *rc;
  platform::BlockTerminationSignals();
  f.options.task_fd_limit = RaiseDescriptorLimit("worker");
  worker::Worker w(f.options);
  std::thread waiter([&] {
    platform::WaitForTerminationSignal();
    w.Stop();
  });
  waiter.detach();
  absl::Status st = w.Run();
  if (st.ok()) return 0;
  // Refused by its pool (revoked, an expired certificate, another protocol version): starting
  // again cannot help, so exit 2, which the systemd unit does not restart.
  if (absl::IsPermissionDenied(st) || absl::IsFailedPrecondition(st)) {
    std::fprintf(stderr, "idlepool: %s\n", std::string(st.message()).c_str());
    return 2;
  }
  return Fail(st);
}

}  // namespace

Command AddWorkerCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<WorkerFlags>();
  auto* work = app.add_subcommand("worker", "lend this machine to a pool");
  work->add_option("--join", f->join,
                   "the coordinator to join, HOST:PORT (the first start; later starts reuse the "
                   "identity in the work dir)");
  work->add_option("--coordinator", common.coordinator, "the coordinator, HOST:PORT (as --join)");
  work->add_option("--token-file", f->token_file,
                   "join token file (else env IDLEPOOL_JOIN_TOKEN); only the first start needs it")
      ->check(CLI::ExistingFile);
  work->add_flag("--install-service", f->install_service,
                 "as root, on a machine with the idlepool package: join (with --join and "
                 "--token-file), write /etc/idlepool/worker.env and owner.toml (--config's, or "
                 "the default) and enable and start the unit idlepool-worker, which runs as the "
                 "user idlepool with its work dir in /var/lib/idlepool/worker");
  work->add_option("--slots", f->options.slots, "CPU slots offered (default: number of cores)");
  work->add_option("--work-dir", f->options.work_dir,
                   "task dirs, logs and the blob cache (required)");
  AddOwnerFlags(work, *f);
  AddResourceFlags(work, *f);
  AddNetworkFlags(work, *f);
  return {work, [f, &common, work] { return RunWorker(*f, common, *work); }};
}

}  // namespace idlepool::cli
