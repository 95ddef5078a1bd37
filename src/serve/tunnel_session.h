// Internal to tunnel_server*.cc: the server's state on its io thread, and one tunnel connection
// (TLS handshake, preface, the replica opened off the io thread, the answer, the splice).
// Everything here runs on the io thread except the open calls (the opener thread).
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "serve/gated_acceptor.h"
#include "serve/tunnel_server.h"

namespace idlepool::serve {

struct TunnelServer::Impl {
  explicit Impl(TunnelServerOptions o) : options(std::move(o)) {}
  void Accept();

  TunnelServerOptions options;
  std::unique_ptr<boost::asio::io_context> io = std::make_unique<boost::asio::io_context>(1);
  std::unique_ptr<GatedAcceptor> front;  // admits connections (gated_acceptor.h)
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::shared_ptr<boost::asio::ssl::context> ctx;  // swapped on the io thread by SetCertificate
  boost::asio::thread_pool opener{1};
  std::thread thread;
  uint16_t port = 0;
  bool stopped = false;
};

class TunnelSession : public std::enable_shared_from_this<TunnelSession> {
 public:
  TunnelSession(TunnelServer::Impl& server, boost::asio::ip::tcp::socket socket);
  TunnelSession(const TunnelSession&) = delete;
  TunnelSession& operator=(const TunnelSession&) = delete;
  void Start();

 private:
  using error_code = boost::system::error_code;
  static constexpr size_t kBuffer = 64 * 1024;  // per direction

  void OnPreface(error_code ec, size_t length);
  void Opened(absl::StatusOr<platform::UniqueFd> fd);
  void Refuse(int status);
  void Splice();
  void ReadGateway();
  void ReadReplica();
  void EndReplica();
  void Close();

  TunnelServer::Impl& s_;
  std::shared_ptr<boost::asio::ssl::context> ctx_;  // outlives tls_
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> tls_;
  boost::asio::generic::stream_protocol::socket replica_;
  boost::asio::steady_timer deadline_;
  std::string head_;  // the preface as read, and what came after it
  size_t preface_length_ = 0;
  std::unique_ptr<char[]> up_, down_;  // gateway -> replica, replica -> gateway
  bool spliced_ = false;
  bool gateway_done_ = false;  // the gateway's end of stream was passed on
  bool ending_ = false;        // the replica's end: close_notify, then close
  bool closed_ = false;
};

}  // namespace idlepool::serve
