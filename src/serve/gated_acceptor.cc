#include "serve/gated_acceptor.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

namespace idlepool::serve {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// A descriptor on its way to the io thread: closed unless a socket took it.
struct PendingFd {
  explicit PendingFd(int fd) : fd(fd) {}
  ~PendingFd() {
    if (fd >= 0) ::close(fd);
  }
  PendingFd(const PendingFd&) = delete;
  PendingFd& operator=(const PendingFd&) = delete;
  int fd;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GatedAcceptor>> GatedAcceptor::Open(
    const std::string& listen, const gate::ListenerOptions& options) {
  auto listener = gate::Listener::Open(listen, options);
  if (!listener.ok()) return listener.status();
  return std::unique_ptr<GatedAcceptor>(new GatedAcceptor(*std::move(listener)));
}

GatedAcceptor::~GatedAcceptor() { Stop(); }

void GatedAcceptor::Start(net::io_context& io, std::function<void(tcp::socket)> on_connection) {
  auto on = std::make_shared<std::function<void(tcp::socket)>>(std::move(on_connection));
  listener_->Start([&io, on](int, int fd) {
    net::post(io, [&io, on, pending = std::make_shared<PendingFd>(fd)] {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      if (::getsockname(pending->fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
      tcp::socket socket(io);
      boost::system::error_code ec;
      socket.assign(ss.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), pending->fd, ec);
      if (ec) return;
      pending->fd = -1;  // the socket's now
      (*on)(std::move(socket));
    });
  });
}

void GatedAcceptor::Stop() {
  if (listener_) listener_->Stop();
}

}  // namespace idlepool::serve
