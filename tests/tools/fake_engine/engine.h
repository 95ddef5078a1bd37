// The state idlepool-fake-engine shares between its connections: the options it runs with, its
// counters, and whether the model is still "loading". Counters are atomics, safe from every
// thread of the io_context; the options are read-only once the engine runs.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fake_engine {

// The command line (fake_engine.cc says what each flag does).
struct Options {
  std::string listen = "127.0.0.1";
  int port = 0;  // 0: the kernel picks one
  std::string model = "fake-model";
  std::string id;  // the replica's name in every answer; default: the port it listens on
  double load_seconds = 0;
  int tokens = 16;
  std::chrono::milliseconds ttft{0};
  std::chrono::milliseconds token_gap{0};
  std::optional<int64_t> crash_after;  // tokens of a stream, or requests when not streamed
  std::optional<int64_t> hang_after;   // the same
  double error_rate = 0;               // fraction of inference requests answered 500
  uint64_t seed = 1;
  int status = 0;  // non-zero: every inference request is answered this status
  bool fixed = false;
  int threads = 1;
  bool verbose = false;
  int embedding_dim = 8;
  uint64_t body_bytes_max = 8 << 20;
};

// Inference requests (POST /v1/...; any POST under --fixed), from their arrival: in flight until
// answered in full (completed), refused (errors) or left by their client (cancelled).
struct Stats {
  std::atomic<uint64_t> requests{0};
  std::atomic<int64_t> in_flight{0};
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> cancelled{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<int64_t> connections{0};  // open now (the one asking for /stats included)
  // When the last inference request arrived: wall-clock Unix ms (platform::SystemClock), 0
  // before the first. Benches compare it with other processes' clocks on the same machine.
  std::atomic<int64_t> last_request_ms{0};
};

class Engine {
 public:
  explicit Engine(Options options);
  // Binds --listen (already checked to be loopback); throws boost::system::system_error.
  void Listen();
  // Accepts and serves until the process ends, on --threads threads.
  void Run();

  const Options& options() const { return options_; }
  Stats& stats() { return stats_; }
  bool loading() const { return loading_.load(std::memory_order_relaxed); }
  uint16_t port() const { return port_; }
  std::string StatsJson() const;
  // Counts one inference request as arrived now (requests, last_request_ms); its number.
  uint64_t Arrived();
  // The whole HTTP answer --fixed sends to every POST, built once.
  const std::string& FixedResponse(bool keep_alive) const {
    return keep_alive ? fixed_keep_alive_ : fixed_close_;
  }
  // One line on stderr under --verbose.
  void Log(const std::string& line) const;
  // Dies at once, as a crashing engine does: SIGKILL to itself.
  [[noreturn]] void Crash(const std::string& why) const;

 private:
  void Accept();

  Options options_;
  Stats stats_;
  std::atomic<bool> loading_{false};
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer load_timer_;
  uint16_t port_ = 0;
  std::string fixed_keep_alive_;
  std::string fixed_close_;
};

}  // namespace fake_engine
