// TunnelServer: the listener, the io and opener threads, certificate renewal, stop.
#include "serve/tunnel_server.h"

#include <fcntl.h>

#include <boost/asio/post.hpp>

#include "serve/listen_address.h"
#include "serve/tunnel_session.h"
#include "spdlog/spdlog.h"

namespace idlepool::serve {

namespace net = boost::asio;
using tcp = net::ip::tcp;

void TunnelServer::Impl::Accept() {
  acceptor->async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (!acceptor->is_open()) return;
    if (!ec) ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);  // Asio's are not: see Start
    if (!ec && connections >= options.max_connections) {
      spdlog::debug("tunnel: {} connections open: one more closed at accept", connections);
      socket.close(ec);
    } else if (!ec) {
      ++connections;
      socket.set_option(tcp::no_delay(true), ec);
      std::make_shared<TunnelSession>(*this, std::move(socket))->Start();
    } else if (ec == net::error::no_descriptors) {
      spdlog::warn("tunnel: accept: {} (keeps accepting)", ec.message());
    }
    Accept();
  });
}

TunnelServer::TunnelServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TunnelServer::~TunnelServer() { Stop(); }

absl::StatusOr<std::unique_ptr<TunnelServer>> TunnelServer::Start(TunnelServerOptions options) {
  if (!options.open) return absl::InvalidArgumentError("tunnel: no open callback");
  std::optional<tcp::endpoint> at = ParseListenAddress(options.listen);
  if (!at) {
    return absl::InvalidArgumentError("tunnel: listen address '" + options.listen +
                                      "' is not HOST:PORT");
  }
  absl::StatusOr<std::shared_ptr<net::ssl::context>> ctx = TunnelServerContext(options.tls);
  if (!ctx.ok()) return ctx.status();
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->ctx = *std::move(ctx);
  impl->acceptor.emplace(*impl->io);
  boost::system::error_code ec;
  impl->acceptor->open(at->protocol(), ec);
  // Asio opens and accepts without O_CLOEXEC: no process this one starts may inherit the port
  // (a task's own launch closes everything too, platform/task_child.h).
  if (!ec) ::fcntl(impl->acceptor->native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) impl->acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor->bind(*at, ec);
  if (!ec) impl->acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError("tunnel: listen on " + impl->options.listen + ": " +
                                  ec.message());
  }
  impl->port = impl->acceptor->local_endpoint().port();
  spdlog::info("tunnel: accepting on {}:{}", at->address().to_string(), impl->port);
  impl->Accept();
  Impl& s = *impl;
  s.thread = std::thread([&s] {
    for (;;) {
      try {
        s.io->run();
        return;
      } catch (const std::exception& e) {  // a handler's bug must not end the tunnel
        spdlog::error("tunnel: io thread: {} (continues)", e.what());
      }
    }
  });
  return std::unique_ptr<TunnelServer>(new TunnelServer(std::move(impl)));
}

uint16_t TunnelServer::port() const { return impl_->port; }

void TunnelServer::SetCertificate(std::string cert_chain_pem, std::string key_pem) {
  absl::StatusOr<std::shared_ptr<net::ssl::context>> ctx = TunnelServerContext(
      TunnelTls{std::move(cert_chain_pem), std::move(key_pem), impl_->options.tls.ca_pem});
  if (!ctx.ok()) {
    spdlog::warn("tunnel: renewed certificate refused, the old one kept: {}",
                 ctx.status().ToString());
    return;
  }
  Impl& s = *impl_;
  net::post(*s.io, [&s, c = *std::move(ctx)] { s.ctx = c; });
}

void TunnelServer::Stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.io->stop();
  if (s.thread.joinable()) s.thread.join();
  s.opener.stop();  // open calls not begun are dropped; one in progress ends first
  s.opener.join();
  s.acceptor.reset();
  s.io.reset();  // its queued handlers go, and with them every session and socket
}

}  // namespace idlepool::serve
