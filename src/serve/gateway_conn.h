// One client connection of the gateway: HTTP/1.1 requests read one after another (keep-alive),
// each checked (the bearer key from its head, before its body is read; then the body limit, the
// route, the model) and answered at once (an error, the model list) or handed to an Exchange that
// proxies it. While an exchange runs the connection is read too, so a client that leaves is seen
// at once and its upstream request cancelled. Until a key checked out the connection has
// GatewayOptions::request_timeout from its accept to its first request's head, and a request
// without a valid key ends it (401, its body never read); after that an idle connection (between
// requests, or a request that never completes) is closed after GatewayOptions::idle_timeout.
//
// Deadlines: one timer per connection serves its idle deadline and its exchange's upstream
// deadlines (WakeAt). It is checked lazily: a later deadline only moves a number, the timer is
// re-armed when it fires early or an earlier deadline comes, so a request costs no timer
// operation (rather than one wait and one cancel per read).
//
// TLS: with GatewayOptions' certificate the stream is TLS and Start does the handshake first
// (within idle_timeout); every read and write goes through the stream.
//
// Lifetime: shared, owned by its pending operations and its exchange; io thread only.
#pragma once

#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "serve/gateway_impl.h"
#include "serve/gateway_stream.h"

namespace idlepool::serve {

class ClientConn : public std::enable_shared_from_this<ClientConn> {
 public:
  static constexpr int kLingerMs = 2000;
  using Stream = GatewayStream;
  ClientConn(boost::asio::ip::tcp::socket socket, Gateway::Impl& gateway);

  void Start();
  Stream& stream() { return stream_; }
  // The exchange wrote its whole answer: read the next request (keep_alive) or close.
  void Finish(bool keep_alive);
  // A whole JSON answer (an error or the model list), then Finish. `extra_headers`: lines
  // "Name: value\r\n". Counted in the metrics under `service`.
  void Answer(int status, const std::string& body, const std::string& extra_headers,
              const std::string& service);
  void Close();
  bool closed() const { return closed_; }
  // Where the exchange of the moment reads pieces of its answer: one buffer per connection
  // rather than one per request.
  std::array<char, 16384>& piece() { return piece_; }
  // The timer fires at `at` or earlier (then its handler asks the exchange, Exchange::OnDeadline).
  void WakeAt(Time at);

 private:
  using error_code = boost::system::error_code;

  void ReadRequest();
  void OnHeader(error_code ec);
  void ReadBody();
  void OnRequest(error_code ec);
  void Handle();
  void HandleOpenAI(const std::string& target);
  void HandlePassThrough(const std::string& service, const std::string& target);
  void Proxy(const std::string& service, const std::string& target);
  void RefuseOverLimit(const Admission& admission, const std::string& service);
  // The head's bearer key is valid; else a 401 is on its way and the connection lingers.
  bool KeyChecksOut();
  // After the 401: the write side shut, what the client still sends read and dropped (into
  // piece_, no memory) for kLingerMs, then closed, so that it reads the answer, not a reset.
  void Linger();
  void Discard();
  void Watch();
  void OnWatch(error_code ec, size_t bytes);
  void ArmIdle();
  void OnTimer();
  void AnswerError(int status, const std::string& message, const std::string& service,
                   const std::string& param = "");

  Stream stream_;
  Gateway::Impl& g_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer timer_;
  bool timer_pending_ = false;  // a wait of the current generation runs, until timer_at_
  uint64_t timer_generation_ = 0;
  Time timer_at_{};
  std::optional<Time> idle_at_;  // between requests: closed at this time
  std::shared_ptr<Exchange> exchange_;
  std::optional<KeyGrant> grant_;  // the key of the connection's last request that checked out
  Time received_{};
  bool keep_alive_ = true;
  bool http10_ = false;
  bool watching_ = false;  // a read of the client is pending while an exchange runs
  bool closed_ = false;
  bool authenticated_ = false;  // a request's key checked out on this connection
  bool lingering_ = false;      // a 401 is sent: then Linger
  std::string out_;  // what Answer's pending write sends
  std::array<char, 16384> piece_;
};

}  // namespace idlepool::serve
