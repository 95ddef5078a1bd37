// Test helpers for the worker tunnel: a throwaway pool CA with the certificates of each role, a
// blocking TLS client, and upstreams on loopback (an echo server; a connect to a port).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/unique_fd.h"
#include "serve/tunnel_tls.h"
#include "trust/ca.h"

namespace idlepool::testing {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;

// The tests' own plain-socket writers (echo replicas, test clients) write to peers that may have
// closed: an EPIPE to handle, not a SIGPIPE that kills the test binary (Asio's own sends use
// MSG_NOSIGNAL; ::write does not).
inline const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

// A pool CA in a temporary directory, issuing certificates valid now.
class TunnelCa {
 public:
  TunnelCa() {
    dir_ = std::filesystem::temp_directory_path() /
           ("idlepool-tunnel-ca." + std::to_string(::getpid()) + "." + std::to_string(++count_));
    ca_ =
        std::move(trust::CertificateAuthority::LoadOrCreate(dir_.string(), Now(), nullptr).value());
  }
  ~TunnelCa() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& ca_pem() const { return ca_->cert_pem(); }
  serve::TunnelTls Worker(const std::string& name) const {
    std::string key = trust::NewPrivateKeyPem().value();
    auto cert = ca_->IssueWorker(trust::PublicKeyPemOf(key).value(), name, Now()).value();
    return {cert.cert_pem, key, ca_->cert_pem()};
  }
  // A server certificate for 127.0.0.1 (an HTTPS listener), as a TunnelTls.
  serve::TunnelTls Server() const {
    std::string key = trust::NewPrivateKeyPem().value();
    auto cert = ca_->IssueServer(trust::PublicKeyPemOf(key).value(), {"127.0.0.1"}, Now()).value();
    return {cert.cert_pem, key, ca_->cert_pem()};
  }
  serve::TunnelTls Gateway(const std::string& name) const {
    std::string key = trust::NewPrivateKeyPem().value();
    auto cert = ca_->IssueGateway(trust::PublicKeyPemOf(key).value(), name, Now()).value();
    return {cert.cert_pem, key, ca_->cert_pem()};
  }

 private:
  static int64_t Now() { return static_cast<int64_t>(::time(nullptr)); }
  static inline int count_ = 0;
  std::filesystem::path dir_;
  std::unique_ptr<trust::CertificateAuthority> ca_;
};

// A blocking TCP connect to 127.0.0.1:port; kUnavailable when refused.
inline absl::StatusOr<platform::UniqueFd> ConnectLoopback(uint16_t port) {
  platform::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    return absl::UnavailableError("connect refused");
  }
  return fd;
}

// Echoes what it reads on `fd`; at the end of stream it writes "bye" and closes.
inline void EchoThenBye(int fd) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    if (::write(fd, buf, static_cast<size_t>(n)) != n) break;
  }
  (void)!::write(fd, "bye", 3);
  ::close(fd);
}

// An echo server on 127.0.0.1 (EchoThenBye per connection), one thread per connection.
class EchoServer {
 public:
  EchoServer() : acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] {
      for (;;) {
        boost::system::error_code ec;
        net::ip::tcp::socket s = acceptor_.accept(ec);
        if (ec || stop_) return;
        int fd = s.release();
        workers_.emplace_back([fd] { EchoThenBye(fd); });
      }
    });
  }
  ~EchoServer() {
    stop_ = true;
    (void)ConnectLoopback(port());  // wakes the accept
    thread_.join();
    for (auto& t : workers_) t.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  net::io_context io_;
  net::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> workers_;
};

// A blocking TLS client of a tunnel port. Reads fail after 30 s (a broken test ends).
struct TunnelClient {
  net::io_context io;
  std::shared_ptr<ssl::context> ctx;
  ssl::stream<net::ip::tcp::socket> s;
  explicit TunnelClient(std::shared_ptr<ssl::context> c) : ctx(std::move(c)), s(io, *ctx) {}

  // TCP connect and handshake; the handshake's error.
  boost::system::error_code Dial(uint16_t port, const std::string& expect_worker) {
    s.lowest_layer().connect({net::ip::make_address("127.0.0.1"), port});
    timeval tv{30, 0};
    ::setsockopt(s.lowest_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    s.set_verify_callback(serve::ExpectWorker{expect_worker});
    boost::system::error_code ec;
    s.handshake(ssl::stream_base::client, ec);
    return ec;
  }
  boost::system::error_code Send(const std::string& data) {
    boost::system::error_code ec;
    net::write(s, net::buffer(data), ec);
    return ec;
  }
  // Up to and including the first blank line; "" on an error or end of stream before it.
  std::string ReadHead() {
    boost::system::error_code ec;
    size_t n = net::read_until(s, net::dynamic_buffer(in), "\r\n\r\n", ec);
    if (ec) return "";
    std::string head = in.substr(0, n);
    in.erase(0, n);
    return head;
  }
  // Exactly `n` bytes (from what ReadHead left over first); fewer on an error or the end.
  std::string ReadExactly(size_t n) {
    boost::system::error_code ec;
    while (in.size() < n && !ec) {
      char buf[4096];
      size_t got = s.read_some(net::buffer(buf), ec);
      in.append(buf, got);
    }
    std::string out = in.substr(0, std::min(n, in.size()));
    in.erase(0, out.size());
    return out;
  }
  // Everything up to the end of stream; *end gets the error that ended it.
  std::string ReadToEnd(boost::system::error_code* end) {
    for (;;) {
      char buf[4096];
      size_t got = s.read_some(net::buffer(buf), *end);
      in.append(buf, got);
      if (*end) return std::exchange(in, std::string());
    }
  }
  std::string in;
};

}  // namespace idlepool::testing
