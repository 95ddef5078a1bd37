// One worker tunnel connection: handshake and preface under one deadline, the replica opened on
// the opener thread, the answer, then the splice (one read and one write per direction at most).
#include "serve/tunnel_session.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

#include "serve/tunnel_wire.h"
#include "spdlog/spdlog.h"

namespace idlepool::serve {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using generic_stream = net::generic::stream_protocol;

TunnelSession::TunnelSession(TunnelServer::Impl& server, net::ip::tcp::socket socket)
    : s_(server),
      ctx_(server.ctx),
      tls_(std::move(socket), *ctx_),
      replica_(tls_.get_executor()),
      deadline_(tls_.get_executor()) {}

void TunnelSession::Start() {
  deadline_.expires_after(s_.options.preface_timeout);
  deadline_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec && !self->spliced_) self->Close();
  });
  tls_.async_handshake(ssl::stream_base::server, [self = shared_from_this()](error_code ec) {
    if (self->closed_) return;
    if (ec) {
      spdlog::debug("tunnel: handshake: {}", ec.message());
      return self->Close();
    }
    if (self->s_.options.check_client) {
      std::optional<std::string> why =
          self->s_.options.check_client(PeerCertificatePem(self->tls_.native_handle()));
      if (why) {
        spdlog::debug("tunnel: gateway refused: {}", *why);
        return self->Close();
      }
    }
    net::async_read_until(self->tls_, net::dynamic_buffer(self->head_, kTunnelPrefaceMax),
                          "\r\n\r\n", [self](error_code ec, size_t n) { self->OnPreface(ec, n); });
  });
}

void TunnelSession::OnPreface(error_code ec, size_t length) {
  if (closed_) return;
  if (ec == net::error::not_found) return Refuse(400);  // no blank line within the bound
  if (ec) return Close();
  preface_length_ = length;
  std::optional<uint64_t> attempt = ParseTunnelPreface(std::string_view(head_).substr(0, length));
  if (!attempt) return Refuse(400);
  // The session goes back to the io thread with the result, so it always ends there.
  net::post(s_.opener, [self = shared_from_this(), a = *attempt]() mutable {
    absl::StatusOr<platform::UniqueFd> fd = self->s_.options.open(a);
    auto executor = self->tls_.get_executor();
    net::post(executor, [self = std::move(self), fd = std::move(fd)]() mutable {
      self->Opened(std::move(fd));
    });
  });
}

void TunnelSession::Opened(absl::StatusOr<platform::UniqueFd> fd) {
  if (closed_) return;
  if (!fd.ok() || !fd->valid()) {
    spdlog::debug("tunnel: open: {}", fd.ok() ? "no descriptor" : fd.status().ToString());
    return Refuse(!fd.ok() && fd.status().code() == absl::StatusCode::kNotFound ? 404 : 503);
  }
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  int own = ::getsockname(fd->get(), reinterpret_cast<sockaddr*>(&local), &len) == 0
                ? ::fcntl(fd->get(), F_DUPFD_CLOEXEC, 0)
                : -1;
  error_code ec;
  if (own >= 0) replica_.assign(generic_stream(local.ss_family, 0), own, ec);
  if (own < 0 || ec) {
    if (own >= 0 && ec) ::close(own);
    spdlog::warn("tunnel: the replica's stream cannot be used: {}",
                 own < 0 ? std::strerror(errno) : ec.message());
    return Refuse(503);
  }
  net::async_write(tls_, net::buffer(TunnelAnswer(200)),
                   [self = shared_from_this()](error_code ec, size_t) {
                     if (self->closed_) return;
                     if (ec) return self->Close();
                     self->Splice();
                   });
}

void TunnelSession::Refuse(int status) {
  net::async_write(tls_, net::buffer(TunnelAnswer(status)),
                   [self = shared_from_this()](error_code, size_t) { self->Close(); });
}

void TunnelSession::Splice() {
  spliced_ = true;
  deadline_.cancel();
  up_ = std::make_unique<char[]>(kBuffer);
  down_ = std::make_unique<char[]>(kBuffer);
  ReadReplica();
  if (head_.size() == preface_length_) return ReadGateway();
  // Bytes the gateway sent right after its preface go first.
  head_.erase(0, preface_length_);
  net::async_write(replica_, net::buffer(head_),
                   [self = shared_from_this()](error_code ec, size_t) {
                     if (self->closed_) return;
                     if (ec) return self->Close();
                     self->head_ = std::string();
                     self->ReadGateway();
                   });
}

void TunnelSession::ReadGateway() {
  if (ending_) return;
  tls_.async_read_some(net::buffer(up_.get(), kBuffer),
                       [self = shared_from_this()](error_code ec, size_t n) {
                         if (self->closed_ || self->ending_) return;
                         if (ec == net::error::eof || ec == ssl::error::stream_truncated) {
                           // The gateway's half-close: the replica may still answer.
                           self->gateway_done_ = true;
                           error_code ignored;
                           self->replica_.shutdown(generic_stream::socket::shutdown_send, ignored);
                           return;
                         }
                         if (ec) return self->Close();
                         net::async_write(self->replica_, net::buffer(self->up_.get(), n),
                                          [self](error_code ec, size_t) {
                                            if (self->closed_) return;
                                            if (ec) return self->Close();
                                            self->ReadGateway();
                                          });
                       });
}

void TunnelSession::ReadReplica() {
  replica_.async_read_some(net::buffer(down_.get(), kBuffer), [self = shared_from_this()](
                                                                  error_code ec, size_t n) {
    if (self->closed_) return;
    if (ec == net::error::eof) return self->EndReplica();
    if (ec) return self->Close();
    net::async_write(self->tls_, net::buffer(self->down_.get(), n), [self](error_code ec, size_t) {
      if (self->closed_) return;
      if (ec) return self->Close();
      self->ReadReplica();
    });
  });
}

// The replica ended its stream: the gateway gets close_notify after the last byte, then both
// close. OpenSSL is told the peer's close_notify came already, so the shutdown only writes and
// does not race the gateway read that may be pending.
void TunnelSession::EndReplica() {
  ending_ = true;
  SSL_set_shutdown(tls_.native_handle(),
                   SSL_get_shutdown(tls_.native_handle()) | SSL_RECEIVED_SHUTDOWN);
  deadline_.expires_after(s_.options.preface_timeout);
  deadline_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->Close();
  });
  tls_.async_shutdown([self = shared_from_this()](error_code) { self->Close(); });
}

void TunnelSession::Close() {
  if (closed_) return;
  closed_ = true;
  deadline_.cancel();
  error_code ignored;
  tls_.lowest_layer().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  tls_.lowest_layer().close(ignored);
  replica_.close(ignored);
}

}  // namespace idlepool::serve
