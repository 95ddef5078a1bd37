// idlepool-gateway-harness: the serving gateway (src/serve/gateway.h) as a process of its own,
// for tests and benches, with the parts the coordinator and workers will supply stood in for:
// the key (--key-file: one bearer key, its first line), the services and replicas (flags), the
// health checks (--health-poll: GET /health on each replica every 100 ms until it answers 200,
// then SetReady; without it every replica is ready at once) and the control calls (stdin).
//
//   idlepool-gateway-harness --listen 127.0.0.1:0 --key-file F
//       --service NAME:openai:MODEL:MAXC | NAME:http::MAXC   (repeatable)
//       --replica NAME:ID:HOST:PORT                           (repeatable)
//       [--health-poll] [--queue-deadline-ms N] [--connect-ms N] [--first-byte-ms N] [--gap-ms N]
//       [--max-queue N] [--body-max N] [--idle-ms N]
//
// stdout: "listening on HOST:PORT" first, then one line per event: "ready ID", "ok COMMAND"
// after each stdin command ran (so a test knows it took effect), "drained ID" when a drained
// replica's last request ended, "error COMMAND: why". stdin commands, one a line:
//   drain ID | remove ID | ready ID | weight ID W | add NAME ID HOST PORT
//   metrics FILE (Prometheus text) | json FILE (the snapshot)
// Exit codes: 2 on bad options, 1 when it cannot listen.
#include <signal.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "platform/clock.h"
#include "platform/fd_limit.h"
#include "serve/gateway.h"
#include "spdlog/spdlog.h"

namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using idlepool::serve::Gateway;
using idlepool::serve::ReplicaId;

std::mutex out_mu;
void Say(const std::string& line) {
  std::lock_guard lock(out_mu);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

// A decimal number up to `max`, or nullopt.
std::optional<uint64_t> Number(const std::string& s, uint64_t max) {
  char* end = nullptr;
  uint64_t v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v > max) return std::nullopt;
  return v;
}

struct ReplicaFlag {
  std::string service, host;
  ReplicaId id = 0;
  uint16_t port = 0;
};

// GET /health within 1 s: the status, or 0 when the replica did not answer.
int Health(const ReplicaFlag& r) {
  net::io_context io;
  boost::beast::tcp_stream s(io);
  http::request<http::empty_body> req(http::verb::get, "/health", 11);
  req.set(http::field::host, r.host);
  http::response<http::string_body> res;
  boost::beast::flat_buffer buf;
  int status = 0;
  s.expires_after(std::chrono::seconds(1));
  s.async_connect(net::ip::tcp::endpoint(net::ip::make_address(r.host), r.port),
                  [&](boost::system::error_code ec) {
                    if (ec) return;
                    http::async_write(s, req, [&](boost::system::error_code ec, size_t) {
                      if (ec) return;
                      http::async_read(s, buf, res, [&](boost::system::error_code ec, size_t) {
                        if (!ec) status = res.result_int();
                      });
                    });
                  });
  io.run();
  return status;
}

void PollHealth(Gateway& g, std::vector<ReplicaFlag> replicas) {
  std::vector<bool> ready(replicas.size(), false);
  for (;;) {
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (ready[i] || Health(replicas[i]) != 200) continue;
      ready[i] = g.SetReady(replicas[i].id).ok();
      Say("ready " + std::to_string(replicas[i].id));
    }
    idlepool::platform::SleepFor(std::chrono::milliseconds(100));
  }
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::rename((path + ".tmp").c_str(), path.c_str());
}

// One stdin command; "" when done, else why not.
std::string Command(Gateway& g, const std::string& line) {
  std::istringstream in(line);
  std::string cmd, arg;
  in >> cmd >> arg;
  auto status = [](idlepool::serve::Status s) { return s.ok() ? "" : std::string(s.message); };
  ReplicaId id = std::strtoull(arg.c_str(), nullptr, 10);
  if (cmd == "drain") {
    return status(g.Drain(id, [id] { Say("drained " + std::to_string(id)); }));
  }
  if (cmd == "remove") return status(g.Remove(id));
  if (cmd == "ready") return status(g.SetReady(id));
  if (cmd == "weight") {
    double w = -1;
    in >> w;
    return status(g.SetWeight(id, w));
  }
  if (cmd == "add") {
    std::string host;
    ReplicaId rid = 0;
    int port = 0;
    in >> rid >> host >> port;
    return status(g.AddReplica(arg, rid, host, static_cast<uint16_t>(port)));
  }
  if (cmd == "metrics") return WriteFile(arg, g.PrometheusText()), "";
  if (cmd == "json") return WriteFile(arg, g.SnapshotJson()), "";
  return "unknown command";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The serving gateway with its services, replicas and key given on the command line"};
  idlepool::serve::GatewayOptions o;
  o.listen = "127.0.0.1:0";
  std::string key_file;
  std::vector<std::string> service_flags, replica_flags;
  bool health_poll = false;
  bool verbose = false;
  int queue_deadline_ms = 30000, connect_ms = 5000, first_byte_ms = 120000, gap_ms = 30000,
      idle_ms = 75000;
  uint32_t max_queue = 1024;
  app.add_option("--listen", o.listen, "HOST:PORT")->capture_default_str();
  app.add_option("--key-file", key_file, "a file whose first line is the bearer key")->required();
  app.add_option("--service", service_flags, "NAME:openai:MODEL:MAXC or NAME:http::MAXC");
  app.add_option("--replica", replica_flags, "SERVICE:ID:HOST:PORT");
  app.add_flag("--verbose", verbose, "log each failed upstream attempt");
  app.add_flag("--health-poll", health_poll, "SetReady once GET /health answers 200");
  app.add_option("--queue-deadline-ms", queue_deadline_ms)->capture_default_str();
  app.add_option("--connect-ms", connect_ms)->capture_default_str();
  app.add_option("--first-byte-ms", first_byte_ms)->capture_default_str();
  app.add_option("--gap-ms", gap_ms)->capture_default_str();
  app.add_option("--idle-ms", idle_ms, "client connections idle this long are closed")
      ->capture_default_str();
  app.add_option("--max-queue", max_queue)->capture_default_str();
  app.add_option("--body-max", o.body_bytes_max)->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::string key;
  std::getline(std::ifstream(key_file), key);
  if (key.empty()) {
    std::fprintf(stderr, "gateway-harness: --key-file %s: no key on its first line\n",
                 key_file.c_str());
    return 2;
  }
  o.authenticate = [key](std::string_view k) -> std::optional<idlepool::serve::KeyGrant> {
    if (k != key) return std::nullopt;
    return idlepool::serve::KeyGrant{"harness", "harness", {}};
  };
  o.connect_timeout = std::chrono::milliseconds(connect_ms);
  o.first_byte_timeout = std::chrono::milliseconds(first_byte_ms);
  o.gap_timeout = std::chrono::milliseconds(gap_ms);
  o.idle_timeout = std::chrono::milliseconds(idle_ms);
  signal(SIGPIPE, SIG_IGN);
  idlepool::platform::RaiseFdLimit();  // thousands of open streams: past a shell's soft limit
  if (verbose) spdlog::set_level(spdlog::level::debug);
  Gateway g(o);
  try {
    g.Start();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gateway-harness: cannot listen: %s\n", e.what());
    return 1;
  }
  for (const std::string& f : service_flags) {
    std::vector<std::string> p = Split(f, ':');
    if (p.size() != 4 || (p[1] != "openai" && p[1] != "http") || !Number(p[3], 1 << 20)) {
      std::fprintf(stderr, "gateway-harness: --service %s: not NAME:PROTOCOL:MODEL:MAXC\n",
                   f.c_str());
      return 2;
    }
    idlepool::serve::ServiceSpec spec;
    spec.name = p[0];
    spec.protocol =
        p[1] == "http" ? idlepool::serve::Protocol::kHttp : idlepool::serve::Protocol::kOpenAI;
    spec.model = p[2];
    spec.routing.max_concurrent = static_cast<uint32_t>(*Number(p[3], 1 << 20));
    spec.routing.queue_deadline = std::chrono::milliseconds(queue_deadline_ms);
    spec.routing.max_queue = max_queue;
    if (auto s = g.AddService(spec); !s.ok()) {
      std::fprintf(stderr, "gateway-harness: --service %s: %s\n", f.c_str(), s.message);
      return 2;
    }
  }
  std::vector<ReplicaFlag> replicas;
  for (const std::string& f : replica_flags) {
    std::vector<std::string> p = Split(f, ':');
    if (p.size() != 4 || !Number(p[1], UINT64_MAX) || !Number(p[3], 65535)) {
      std::fprintf(stderr, "gateway-harness: --replica %s: not SERVICE:ID:HOST:PORT\n", f.c_str());
      return 2;
    }
    ReplicaFlag r{p[0], p[2], *Number(p[1], UINT64_MAX),
                  static_cast<uint16_t>(*Number(p[3], 65535))};
    if (auto s = g.AddReplica(r.service, r.id, r.host, r.port); !s.ok()) {
      std::fprintf(stderr, "gateway-harness: --replica %s: %s\n", f.c_str(), s.message);
      return 2;
    }
    if (!health_poll) (void)g.SetReady(r.id);
    replicas.push_back(r);
  }
  Say("listening on 127.0.0.1:" + std::to_string(g.port()));
  if (health_poll) std::thread(PollHealth, std::ref(g), replicas).detach();
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::string why = Command(g, line);
    Say(why.empty() ? "ok " + line : "error " + line + ": " + why);
  }
  for (;;) idlepool::platform::SleepFor(std::chrono::hours(1));
}
