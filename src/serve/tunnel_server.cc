// TunnelServer: the listener, the io and opener threads, certificate renewal, stop.
#include "serve/tunnel_server.h"

#include <boost/asio/post.hpp>

#include "serve/listen_address.h"
#include "serve/tunnel_session.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"

namespace idlepool::serve {

namespace net = boost::asio;
using tcp = net::ip::tcp;

void TunnelServer::Impl::Accept() {
  front->Start(*io, [this](tcp::socket socket) {
    boost::system::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    std::make_shared<TunnelSession>(*this, std::move(socket))->Start();
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
  gate::ListenerOptions gate_options;
  gate_options.name = "tunnel port";
  gate_options.limits.max_connections = impl->options.max_connections;
  gate_options.limits.max_per_peer = impl->options.max_connections_per_address;
  auto front =
      GatedAcceptor::Open(text::JoinHostPort(at->address().to_string(), at->port()), gate_options);
  if (!front.ok())
    return absl::UnavailableError("tunnel: " + std::string(front.status().message()));
  impl->front = *std::move(front);
  impl->port = static_cast<uint16_t>(impl->front->port());
  spdlog::info("tunnel: accepting on {}:{}", at->address().to_string(), impl->port);
  impl->work.emplace(impl->io->get_executor());  // io runs until Stop, connections or not
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
  if (s.front) s.front->Stop();  // nothing more is posted to io
  s.io->stop();
  if (s.thread.joinable()) s.thread.join();
  s.opener.stop();  // open calls not begun are dropped; one in progress ends first
  s.opener.join();
  s.work.reset();
  s.io.reset();  // its queued handlers go, and with them every session and socket
}

}  // namespace idlepool::serve
