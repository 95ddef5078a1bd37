// idlepool-fake-engine: a streaming OpenAI-compatible HTTP server that stands in for an inference
// engine (llama.cpp's llama-server) in tests and benches. It generates no text: each answer is
// --tokens tokens ("replica=ID", " tok1", " tok2", ...; fewer when the request's max_tokens is),
// the first after --ttft-ms, the next every --token-ms, so the content says which replica
// answered. Boost.Beast/Asio, asynchronous: thousands of open streams on one thread.
//
// Routes (HTTP/1.1, keep-alive):
//   GET  /health                503 {"error":...} while loading (--load-seconds), then 200
//   GET  /v1/models             the OpenAI list with --model (503 while loading)
//   POST /v1/chat/completions   OpenAI chat; "stream": true answers server-sent events, one
//   POST /v1/completions        chunk per token (delta.content / text), a last chunk with
//                               finish_reason, a usage chunk if stream_options.include_usage,
//                               then "data: [DONE]", in chunked transfer encoding
//   POST /v1/embeddings         a deterministic unit vector (--embedding-dim) per input
//   GET  /stats                 {requests, in_flight, completed, cancelled, errors, connections,
//                               last_request_ms, loading, replica}: inference requests (POSTs)
//                               only; cancelled counts answers whose client left before their
//                               end; last_request_ms is when the last one arrived (wall-clock
//                               Unix ms, 0 before the first)
// Any model name is served (as llama-server does). Bad JSON or a missing field: 400 with an
// OpenAI error body; a body over --max-body-bytes: 413.
//
// Failures for tests (on inference requests; /health, /v1/models and /stats stay honest):
//   --status S         every request answered S (e.g. 500)
//   --error-rate R     a fraction R answered 500, drawn per request number from --seed
//   --crash-after N    SIGKILL to itself after writing N tokens of a stream; for a request that
//                      is not streamed, on arrival once N requests came before it
//   --hang-after N     the same points, but it stops writing and keeps the connection open
// --fixed answers every POST with one fixed small JSON at once (proxy benchmarks); --threads N
// runs N threads. --verbose prints one line per event on stderr. The address must be loopback;
// its port comes from --listen HOST:PORT, else --port, else $IDLEPOOL_PORT, else any free one,
// and the first line on stdout says "listening on HOST:PORT". Times are Asio timers, every
// "created" field is a fixed time; the one clock read is /stats' last_request_ms.
// Exit codes: 2 on bad options or a non-loopback address, 1 when it cannot listen.
#include <signal.h>

#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "CLI/CLI.hpp"
#include "fake_engine/engine.h"
#include "platform/fd_limit.h"

namespace {

using fake_engine::Options;

// --listen as HOST or HOST:PORT ([::1]:PORT for IPv6) into o; "" or what is wrong.
std::string ParseListen(const std::string& listen, bool port_flag, Options* o) {
  std::string host = listen;
  std::string port;
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    if (close == std::string::npos) return "--listen: no ']' after an IPv6 address";
    if (close + 1 < host.size() && host[close + 1] == ':') port = host.substr(close + 2);
    host = host.substr(1, close - 1);
  } else if (size_t colon = host.find(':');
             colon != std::string::npos && host.find(':', colon + 1) == std::string::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  if (ec) return "--listen: '" + host + "' is not an IP address";
  if (!address.is_loopback()) return "--listen: " + host + " is not a loopback address (refused)";
  o->listen = host;
  const char* env = std::getenv("IDLEPOOL_PORT");
  if (port.empty() && !port_flag && env != nullptr && *env != '\0') port = env;
  if (!port.empty()) {
    char* end = nullptr;
    long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p < 0 || p > 65535) return "port '" + port + "' is not a port number";
    o->port = static_cast<int>(p);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A streaming OpenAI-compatible test server (stands in for llama-server)"};
  Options o;
  std::string listen = "127.0.0.1";
  int64_t crash_after = -1;
  int64_t hang_after = -1;
  int ttft_ms = 0;
  int token_ms = 0;
  app.add_option("--listen", listen, "loopback HOST or HOST:PORT")->capture_default_str();
  auto* port_flag =
      app.add_option("--port", o.port, "port when --listen has none")->check(CLI::Range(0, 65535));
  app.add_option("--model", o.model, "the served model's name")->capture_default_str();
  app.add_option("--id", o.id, "the replica's name in answers (default: the port)");
  app.add_option("--load-seconds", o.load_seconds, "seconds of 503 on /health from the start")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--tokens", o.tokens, "tokens per answer (the request's max_tokens if fewer)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--ttft-ms", ttft_ms, "ms before the first token")->check(CLI::NonNegativeNumber);
  app.add_option("--token-ms", token_ms, "ms between tokens")->check(CLI::NonNegativeNumber);
  app.add_option("--crash-after", crash_after,
                 "SIGKILL itself after N tokens of a stream, or "
                 "at a non-streamed request after N requests")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--hang-after", hang_after,
                 "stop writing after N tokens (or N requests), "
                 "keeping the connection open")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--error-rate", o.error_rate, "fraction of requests answered 500")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", o.seed, "seed of --error-rate's draws")->capture_default_str();
  app.add_option("--status", o.status, "answer every inference request with this status")
      ->check(CLI::Range(100, 599));
  app.add_flag("--fixed", o.fixed, "answer every POST with a fixed small JSON at once");
  app.add_option("--threads", o.threads, "threads serving connections")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_flag("--verbose", o.verbose, "one line per event on stderr");
  app.add_option("--embedding-dim", o.embedding_dim, "floats per embedding")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option("--max-body-bytes", o.body_bytes_max, "larger request bodies get 413")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (std::string why = ParseListen(listen, port_flag->count() > 0, &o); !why.empty()) {
    std::fprintf(stderr, "idlepool-fake-engine: %s\n", why.c_str());
    return 2;
  }
  o.ttft = std::chrono::milliseconds(ttft_ms);
  o.token_gap = std::chrono::milliseconds(token_ms);
  if (crash_after >= 0) o.crash_after = crash_after;
  if (hang_after >= 0) o.hang_after = hang_after;
  idlepool::platform::RaiseFdLimit();  // thousands of open streams: past a shell's soft limit
  signal(SIGPIPE, SIG_IGN);
  fake_engine::Engine engine(std::move(o));
  try {
    engine.Listen();
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "idlepool-fake-engine: cannot listen: %s\n", e.what());
    return 1;
  }
  engine.Run();
  return 0;
}
