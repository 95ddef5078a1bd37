// `idlepool coordinator`: runs the pool's coordinator until SIGTERM or Ctrl-C.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "cli/command.h"
#include "coordinator/coordinator.h"
#include "core/defaults.h"
#include "platform/harden.h"
#include "platform/memory.h"
#include "platform/process.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"

namespace idlepool::cli {
namespace {

struct CoordinatorFlags {
  coordinator::Options options;
  int64_t lease_ms = core::kDefaultLeaseTimeout.count();
  int64_t heartbeat_ms = core::kDefaultHeartbeat.count();
  std::string http = "127.0.0.1:7879";
  CLI::Option* http_opt = nullptr;
};

// What to tell the user at start: where it listens, the pool CA, a ready join command (a join
// token made now: an hour, any number of machines), how people log in, the dashboard. A
// wildcard host is replaced by this machine's name in the commands.
void PrintWelcome(const coordinator::Options& options, coordinator::Coordinator& c) {
  auto listen = text::SplitHostPort(options.listen);
  std::string host = listen.ok() ? listen->host : "";
  const std::string listened = text::JoinHostPort(host, c.port());
  if (text::IsWildcardHost(host)) {
    char buf[256] = {0};
    ::gethostname(buf, sizeof buf - 1);
    host = buf;
  }
  const std::string addr = text::JoinHostPort(host, c.port());
  std::printf("idlepool coordinator listening on %s, TLS only (data dir %s)\n", listened.c_str(),
              options.data_dir.c_str());
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
    std::string web = c.http_host();
    if (text::IsWildcardHost(web)) web = host;
    std::printf(
        "dashboard (log in with an access token; it is signed by the pool CA, %s/ca.pem):\n"
        "  https://%s/\n",
        options.data_dir.c_str(), text::JoinHostPort(web, c.http_port()).c_str());
  }
  std::fflush(stdout);
}

int RunCoordinator(CoordinatorFlags& f) {
  platform::MakeNonDumpable();  // its memory holds the CA key
  platform::KeepLargeBlocksOutOfTheHeap();  // back to its idle size after a burst:
                                            // platform/memory.h
  platform::BlockTerminationSignals();
  f.options.lease_timeout = core::Millis(f.lease_ms);
  f.options.heartbeat = core::Millis(f.heartbeat_ms);
  f.options.http = f.http == "off" ? "" : f.http;
  f.options.http_required = f.http_opt->count() > 0;
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
  coord
      ->add_option("--data-dir", f->options.data_dir,
                   "store, blobs, the pool CA and credentials (made 0700)")
      ->required();
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
  f->http_opt = coord->add_option(
      "--http", f->http,
      "dashboard, JSON API and /metrics: HOST:PORT or PORT (host 127.0.0.1), port 0 = a free "
      "one, off = none (the default address, when taken, only warns)");
  f->http_opt->capture_default_str();
  return {coord, [f] { return RunCoordinator(*f); }};
}

}  // namespace idlepool::cli
