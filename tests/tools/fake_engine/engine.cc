#include "fake_engine/engine.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/strand.hpp>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "fake_engine/openai.h"
#include "fake_engine/session.h"
#include "nlohmann/json.hpp"
#include "platform/clock.h"

namespace fake_engine {

namespace net = boost::asio;
using net::ip::tcp;

namespace {

// After a failed accept (out of descriptors), the listener waits this long before the next one.
constexpr std::chrono::milliseconds kAcceptPause{50};

std::string FixedHttp(const std::string& id, bool keep_alive) {
  std::string body = R"({"id":"fixed","object":"chat.completion","created":1700000000,)"
                     R"("model":"fixed","choices":[{"index":0,"message":{"role":"assistant",)"
                     R"("content":"replica=)" +
                     id +
                     R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,)"
                     R"("completion_tokens":1,"total_tokens":2}})";
  return "HTTP/1.1 200 OK\r\nServer: idlepool-fake-engine\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n" +
         (keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n") + "\r\n" + body;
}

}  // namespace

Engine::Engine(Options options) : options_(std::move(options)), acceptor_(io_), load_timer_(io_) {}

void Engine::Listen() {
  tcp::endpoint at(net::ip::make_address(options_.listen), static_cast<uint16_t>(options_.port));
  acceptor_.open(at.protocol());
  acceptor_.set_option(net::socket_base::reuse_address(true));
  acceptor_.bind(at);
  acceptor_.listen(net::socket_base::max_listen_connections);
  port_ = acceptor_.local_endpoint().port();
  if (options_.id.empty()) options_.id = std::to_string(port_);
  fixed_keep_alive_ = FixedHttp(options_.id, true);
  fixed_close_ = FixedHttp(options_.id, false);
  std::string host = at.address().is_v6() ? "[" + options_.listen + "]" : options_.listen;
  std::printf("idlepool-fake-engine: listening on %s:%u (replica %s, model %s)\n", host.c_str(),
              port_, options_.id.c_str(), options_.model.c_str());
  std::fflush(stdout);
}

void Engine::Run() {
  if (options_.load_seconds > 0) {
    loading_ = true;
    load_timer_.expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::duration<double>(options_.load_seconds)));
    load_timer_.async_wait([this](boost::system::error_code) {
      loading_ = false;
      if (options_.verbose) Log("loaded");
    });
  }
  Accept();
  std::vector<std::thread> more;
  for (int i = 1; i < options_.threads; ++i) more.emplace_back([this] { io_.run(); });
  io_.run();
  for (auto& t : more) t.join();
}

void Engine::Accept() {
  acceptor_.async_accept(
      net::make_strand(io_), [this](boost::system::error_code ec, tcp::socket socket) {
        if (ec) {
          Log("accept failed: " + ec.message());
          auto pause = std::make_shared<net::steady_timer>(io_, kAcceptPause);
          pause->async_wait([this, pause](boost::system::error_code) { Accept(); });
          return;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // each token leaves as it is written
        std::make_shared<Session>(std::move(socket), *this)->Start();
        Accept();
      });
}

std::string Engine::StatsJson() const {
  auto get = [](const auto& counter) { return counter.load(std::memory_order_relaxed); };
  return nlohmann::json{{"requests", get(stats_.requests)},
                        {"in_flight", get(stats_.in_flight)},
                        {"completed", get(stats_.completed)},
                        {"cancelled", get(stats_.cancelled)},
                        {"errors", get(stats_.errors)},
                        {"connections", get(stats_.connections)},
                        {"last_request_ms", get(stats_.last_request_ms)},
                        {"loading", loading()},
                        {"replica", options_.id}}
      .dump();
}

uint64_t Engine::Arrived() {
  stats_.last_request_ms.store(idlepool::platform::SystemClock().WallMs(),
                               std::memory_order_relaxed);
  return stats_.requests.fetch_add(1, std::memory_order_relaxed) + 1;
}

void Engine::Log(const std::string& line) const {
  if (options_.verbose)
    std::fprintf(stderr, "fake-engine %s: %s\n", options_.id.c_str(), line.c_str());
}

void Engine::Crash(const std::string& why) const {
  Log("crashing: " + why);
  std::fflush(stderr);
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);
}

}  // namespace fake_engine
