// `idlepool coordinator`: runs the pool's coordinator until SIGTERM or Ctrl-C.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "blob/space.h"
#include "cli/command.h"
#include "cli/install_service.h"
#include "coordinator/coordinator.h"
#include "coordinator/server_identity.h"
#include "core/defaults.h"
#include "platform/harden.h"
#include "platform/memory.h"
#include "platform/process.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"
#include "text/units.h"

namespace idlepool::cli {
namespace {

struct CoordinatorFlags {
  coordinator::Options options;
  int64_t lease_ms = core::kDefaultLeaseTimeout.count();
  int64_t unhealthy_backoff_ms = core::HealthRule{}.backoff.count();
  int64_t forget_ms = std::chrono::duration_cast<core::Millis>(std::chrono::hours(1)).count();
  int64_t heartbeat_ms = core::kDefaultHeartbeat.count();
  int64_t partial_idle_ms = blob::kPartialIdleLimit.count();
  std::string http = "127.0.0.1:7879";
  CLI::Option* http_opt = nullptr;
  std::string serve = "127.0.0.1:7880";
  CLI::Option* serve_opt = nullptr;
  std::string worker_cert_ttl = "30d";
  std::string keep_finished = "0";  // keep every finished job
  std::string blob_grace = "1h";    // blob::kDefaultBlobGrace
  int64_t gc_every_ms = 600'000;
  bool install_service = false;
  std::string usage_half_life = "1d";
  std::string fair_preemption_after = "10m";
};

// --usage-half-life and --fair-preemption-after (text::ParseDuration; `off` for the latter)
// into the options; an error names the flag.
absl::Status SetSharing(CoordinatorFlags& f) {
  auto half = text::ParseDuration(f.usage_half_life);
  if (!half.ok() || *half < std::chrono::minutes(1) || *half > std::chrono::hours(24 * 365)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--usage-half-life '", f.usage_half_life,
                     "': ", half.ok() ? "must be between 1m and 365d" : half.status().message(),
                     " (e.g. 1d, 7d, 12h)"));
  }
  f.options.usage.half_life = *half;
  if (f.fair_preemption_after == "off") {
    f.options.fair_preemption.after = std::nullopt;
    return absl::OkStatus();
  }
  auto after = text::ParseDuration(f.fair_preemption_after);
  if (!after.ok() || *after > std::chrono::hours(24 * 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--fair-preemption-after '", f.fair_preemption_after,
                     "': ", after.ok() ? "at most 30d" : after.status().message(),
                     " (e.g. 10m, 1h, 30s; off: never vacate for fair share)"));
  }
  f.options.fair_preemption.after = *after;
  return absl::OkStatus();
}

// --keep-finished and --blob-grace (text::ParseDuration) into the options; an error names the flag.
absl::Status SetCollection(CoordinatorFlags& f) {
  auto keep = text::ParseDuration(f.keep_finished);
  if (!keep.ok() || *keep > std::chrono::hours(24 * 36500)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--keep-finished '", f.keep_finished, "': ",
        keep.ok() ? "at most 36500d" : keep.status().message(), " (e.g. 30d, 12h; 0: keep all)"));
  }
  auto grace = text::ParseDuration(f.blob_grace);
  if (!grace.ok() || *grace > std::chrono::hours(24 * 365)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--blob-grace '", f.blob_grace,
                     "': ", grace.ok() ? "at most 365d" : grace.status().message()));
  }
  f.options.keep_finished = *keep;
  f.options.blob_grace = *grace;
  f.options.gc_every = std::chrono::milliseconds(f.gc_every_ms);
  return absl::OkStatus();
}

// What to tell the user at start: where it listens, the pool CA, a ready join command (a join
// token made now: an hour, any number of machines), how people log in, the dashboard. A
// wildcard host is never printed as an address to use: the commands and URLs name the host the
// coordinator advertises (its certificate covers it).
void PrintWelcome(const coordinator::Options& options, coordinator::Coordinator& c) {
  auto listen = text::SplitHostPort(options.listen);
  const std::string listen_host = listen.ok() ? listen->host : "";
  const std::string listened = text::JoinHostPort(listen_host, c.port());
  const std::string host = coordinator::AdvertisedHost(c.server_names(), listen_host);
  const std::string addr = text::JoinHostPort(host, c.port());
  std::printf("idlepool coordinator listening on %s, TLS only (data dir %s)\n", listened.c_str(),
              options.data_dir.c_str());
  if (text::IsWildcardHost(listen_host)) {
    std::printf("reachable as: %s (the names its certificate covers; --advertise sets them)\n",
                absl::StrJoin(c.server_names(), ", ").c_str());
  }
  std::printf("pool CA sha256:%s (%s %s/ca.pem)\n", c.ca_pin().c_str(),
              c.ca_created() ? "created now in" : "from", options.data_dir.c_str());
  auto join = c.CreateToken("worker", 3600, -1, "");
  if (join.ok()) {
    std::printf(
        "join a machine (this join token works for an hour, for any number of machines):\n"
        "  IDLEPOOL_JOIN_TOKEN=%s idlepool worker --join %s --work-dir "
        "/var/tmp/idlepool-worker\n",
        join->c_str(), addr.c_str());
  }
  std::printf(
      "people and scripts: make an access token here, then log in once where you work:\n"
      "  idlepool token create --role submit --data-dir %s\n  idlepool login %s\n",
      options.data_dir.c_str(), addr.c_str());
  if (c.http_port() != 0) {
    const std::string web = coordinator::AdvertisedHost(c.server_names(), c.http_host());
    std::printf(
        "dashboard (log in with an access token; it is signed by the pool CA, %s/ca.pem):\n"
        "  https://%s/\n",
        options.data_dir.c_str(), text::JoinHostPort(web, c.http_port()).c_str());
  }
  if (!c.serve_url().empty()) {
    std::printf(
        "serving gateway (services; bearer key: an access token of role submit; pool CA):\n"
        "  %s/v1 (OpenAI clients), %s/services/NAME/ (HTTP services)\n",
        c.serve_url().c_str(), c.serve_url().c_str());
  }
  std::fflush(stdout);
}

// The flags into f.options; 0, or the exit code after saying what is wrong.
int ApplyFlags(CoordinatorFlags& f) {
  if (f.options.data_dir.empty()) {
    return Fail(absl::InvalidArgumentError("--data-dir is required"));
  }
  f.options.lease_timeout = core::Millis(f.lease_ms);
  f.options.heartbeat = core::Millis(f.heartbeat_ms);
  f.options.partial_idle_limit = std::chrono::milliseconds(f.partial_idle_ms);
  f.options.forget_workers_after = core::Millis(f.forget_ms);
  f.options.unhealthy_backoff = core::Millis(f.unhealthy_backoff_ms);
  f.options.http = f.http == "off" ? "" : f.http;
  f.options.http_required = f.http_opt->count() > 0;
  f.options.serve_listen = f.serve == "off" ? "" : f.serve;
  f.options.serve_required = f.serve_opt->count() > 0;
  auto ttl = text::ParseDuration(f.worker_cert_ttl);
  if (!ttl.ok() || *ttl < std::chrono::seconds(30) || *ttl > std::chrono::hours(24 * 365)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--worker-cert-ttl '", f.worker_cert_ttl,
                     "': ", ttl.ok() ? "must be from 30s to 365d" : ttl.status().message())));
  }
  f.options.worker_cert_validity_s = std::chrono::duration_cast<std::chrono::seconds>(*ttl).count();
  if (absl::Status st = SetCollection(f); !st.ok()) return Fail(st);
  if (absl::Status st = SetSharing(f); !st.ok()) return Fail(st);
  return 0;
}

// --install-service: the options given go to /etc/idlepool/coordinator.env, the data dir to the
// user idlepool, and the unit idlepool-coordinator is enabled and started.
int InstallService(CoordinatorFlags& f, const CLI::App& sub) {
  if (absl::Status st = NeedRoot("coordinator"); !st.ok()) return Fail(st);
  const std::string data_dir = std::string(kServiceDataDir) + "/coordinator";
  if (!f.options.data_dir.empty() && f.options.data_dir != data_dir) {
    std::fprintf(stderr,
                 "idlepool coordinator: --install-service keeps the coordinator's data in %s: "
                 "leave out --data-dir\n",
                 data_dir.c_str());
    return 2;
  }
  f.options.data_dir = data_dir;
  if (int rc = ApplyFlags(f); rc != 0) return rc;
  auto args = GivenArgs(sub, {"--data-dir", "--install-service"});
  if (!args.ok()) return Fail(args.status());
  const ServiceUnit unit{"idlepool-coordinator.service",
                         "coordinator",
                         std::string(kServiceConfigDir) + "/coordinator.env",
                         "IDLEPOOL_COORDINATOR_ARGS",
                         {"coordinator", "--data-dir", data_dir}};
  if (absl::Status st = GiveToServiceUser(data_dir, 0700); !st.ok()) return Fail(st);
  if (absl::Status st = WriteArgsFile(unit, *args); !st.ok()) return Fail(st);
  int rc = EnableAndStart(unit, *args);
  if (rc == 0) {
    std::printf("tokens, as root here: idlepool token create --role worker --data-dir %s\n",
                data_dir.c_str());
  }
  return rc;
}

int RunCoordinator(CoordinatorFlags& f, const CLI::App& sub) {
  if (f.install_service) return InstallService(f, sub);
  platform::MakeNonDumpable();  // its memory holds the CA key
  // Upload chunks (1 MiB messages) are mapped and unmapped each: a burst of uploads leaves no
  // resident heap behind (platform/memory.h).
  platform::KeepLargeBlocksOutOfTheHeap();
  platform::BlockTerminationSignals();
  RaiseDescriptorLimit("coordinator");
  if (int rc = ApplyFlags(f); rc != 0) return rc;
  auto c = coordinator::Coordinator::Start(f.options);
  if (!c.ok()) return Fail(c.status());
  PrintWelcome(f.options, **c);
  std::thread waiter([&] {
    int sig = platform::WaitForTerminationSignal();
    spdlog::info("signal {}: shutting down", sig);
    (*c)->Shutdown();
  });
  absl::Status st = (*c)->Wait();
  if (!st.ok()) {
    std::fprintf(stderr, "idlepool: coordinator stopped: %s\n", st.ToString().c_str());
    std::_Exit(1);
  }
  waiter.join();
  return 0;
}

}  // namespace

Command AddCoordinatorCommand(CLI::App& app, Common&) {
  auto f = std::make_shared<CoordinatorFlags>();
  f->options.data_dir = "";
  auto* coord = app.add_subcommand("coordinator", "run the coordinator");
  coord->add_option("--listen", f->options.listen, "address to listen on (host:port)")
      ->capture_default_str();
  coord->add_option("--data-dir", f->options.data_dir,
                    "store, blobs, the pool CA and credentials (made 0700; required, except "
                    "with --install-service)");
  coord->add_flag("--install-service", f->install_service,
                  "as root, on a machine with the idlepool package: write the options given to "
                  "/etc/idlepool/coordinator.env and enable and start the unit "
                  "idlepool-coordinator, which runs as the user idlepool with its data in "
                  "/var/lib/idlepool/coordinator");
  coord
      ->add_option("--advertise", f->options.advertise,
                   "names and addresses workers and people use to reach this coordinator, for "
                   "its certificate (default: host name and this machine's addresses)")
      ->delimiter(',');
  coord->add_option("--lease-timeout-ms", f->lease_ms, "a worker silent this long is lost")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));
  coord
      ->add_option("--heartbeat-ms", f->heartbeat_ms,
                   "heartbeat interval of the workers (one given its own --heartbeat-ms keeps it)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{600'000}));
  coord
      ->add_option("--max-connections-per-address", f->options.max_connections_per_address,
                   "connections to the gRPC port at once from one address (IPv6: one /64), for "
                   "many workers behind one NAT address; cut to a quarter of the descriptors "
                   "it may use")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  // Hidden (group ""): tests shorten an unhealthy worker's first backoff (10 min).
  coord
      ->add_option("--unhealthy-backoff-ms", f->unhealthy_backoff_ms,
                   "an unhealthy worker's first backoff, doubling up to 4 h")
      ->check(CLI::Range(int64_t{100}, int64_t{4} * 3'600'000))
      ->group("");
  // Hidden (group ""): tests shorten the life of abandoned partial uploads.
  coord
      ->add_option("--partial-idle-ms", f->partial_idle_ms,
                   "a partial upload with no bytes for this long is removed")
      ->check(CLI::Range(int64_t{100}, int64_t{86'400'000}))
      ->group("");
  coord
      ->add_option("--forget-workers-after-ms", f->forget_ms,
                   "a worker gone (left or lost) this long leaves the coordinator's memory; the "
                   "store keeps its history")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{30} * 24 * 3'600'000));
  f->http_opt = coord->add_option(
      "--http", f->http,
      "dashboard, JSON API and /metrics: HOST:PORT or PORT (host 127.0.0.1), port 0 = a free "
      "one, off = none (the default address, when taken, only warns)");
  f->http_opt->capture_default_str();
  f->serve_opt = coord->add_option(
      "--serve-listen", f->serve,
      "the serving gateway (services' OpenAI and HTTP endpoint, HTTPS, access tokens of role "
      "submit as bearer keys): HOST:PORT, port 0 = a free one, off = none (the default address, "
      "when taken, only warns)");
  f->serve_opt->capture_default_str();
  coord
      ->add_option("--worker-cert-ttl", f->worker_cert_ttl,
                   "lifetime of the certificates given to workers, e.g. 7d; each worker renews "
                   "its own at two thirds of it")
      ->capture_default_str();
  coord
      ->add_option("--keep-finished", f->keep_finished,
                   "delete finished jobs (rows, outputs, logs, blobs nothing else uses) this long "
                   "after they finished, e.g. 30d, 12h, 90m; 0 keeps them until `idlepool delete`")
      ->capture_default_str();
  coord
      ->add_option("--blob-grace", f->blob_grace,
                   "an unreferenced blob is collected once untouched this long (uploads about "
                   "to be named by a submission or a report)")
      ->capture_default_str();
  coord
      ->add_option("--usage-half-life", f->usage_half_life,
                   "fair share: how fast users' past usage fades (what a user ran this long ago "
                   "counts half), e.g. 1d, 7d, 12h")
      ->capture_default_str();
  coord
      ->add_option("--fair-preemption-after", f->fair_preemption_after,
                   "vacate other users' attempts (least work lost first, never a service's) for "
                   "a user held below half of its fair share this long, e.g. 10m, 30s; off: never")
      ->capture_default_str();
  // Hidden: tests run retention and collection often.
  coord->add_option("--gc-every-ms", f->gc_every_ms, "how often retention and collection run")
      ->check(CLI::Range(int64_t{100}, int64_t{86'400'000}))
      ->group("");
  return {coord, [f, coord] { return RunCoordinator(*f, *coord); }};
}

}  // namespace idlepool::cli
