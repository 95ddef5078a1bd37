// The TLS client runs over memory BIOs and moves the bytes itself (send with MSG_NOSIGNAL, so a
// peer that resets cannot raise SIGPIPE), waiting in poll() on the socket and on a timerfd armed
// once with the whole timeout: connect and handshake share one deadline without reading a
// clock. Name resolution (getaddrinfo) is not bounded by it.
#include "trust/pinned_fetch.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "text/host_port.h"
#include "trust/ossl.h"

namespace idlepool::trust {
namespace {

constexpr unsigned char kAlpnH2[] = {2, 'h', '2'};
constexpr std::chrono::milliseconds kCloseWait{1000};

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// One fetch: where to (for messages), the socket, and the deadline as a timerfd.
struct Conn {
  std::string where;
  std::chrono::milliseconds timeout{0};
  UniqueFd timer;
  UniqueFd sock;
};

absl::Status StartTimer(Conn& c) {
  c.timer = UniqueFd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  itimerspec spec{};
  spec.it_value.tv_sec = c.timeout.count() / 1000;
  spec.it_value.tv_nsec = (c.timeout.count() % 1000) * 1000000;
  if (c.timer.get() < 0 || ::timerfd_settime(c.timer.get(), 0, &spec, nullptr) != 0) {
    return absl::InternalError(absl::StrCat("timerfd: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Waits until `fd` is ready for `events` (or in error), or the deadline passes.
absl::Status WaitFor(const Conn& c, int fd, short events) {
  pollfd fds[2] = {{fd, events, 0}, {c.timer.get(), POLLIN, 0}};
  for (;;) {
    const int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    if (fds[1].revents != 0) {
      return absl::DeadlineExceededError(
          absl::StrCat(c.where, ": no answer within ", c.timeout.count(), " ms"));
    }
    if (fds[0].revents != 0) return absl::OkStatus();
  }
}

// kUnavailable with errno's text when this address refuses; kDeadlineExceeded ends the search.
absl::StatusOr<UniqueFd> ConnectOne(const Conn& c, const addrinfo* ai) {
  UniqueFd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::UnavailableError(std::strerror(errno));
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return absl::UnavailableError(std::strerror(errno));
    if (absl::Status s = WaitFor(c, fd.get(), POLLOUT); !s.ok()) return s;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return absl::UnavailableError(std::strerror(err));
  }
  return fd;
}

absl::Status Connect(Conn& c, const text::HostPort& hp) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(hp.port);
  if (int rc = ::getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", hp.host, ": ", ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, ossl::Deleter<&::freeaddrinfo>> owned(found);
  absl::Status last = absl::UnavailableError("no address");
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    absl::StatusOr<UniqueFd> fd = ConnectOne(c, ai);
    if (fd.ok()) {
      c.sock = *std::move(fd);
      return absl::OkStatus();
    }
    if (absl::IsDeadlineExceeded(fd.status())) return fd.status();
    last = fd.status();
  }
  return absl::UnavailableError(absl::StrCat("cannot connect to ", c.where, ": ", last.message()));
}

absl::Status SendAll(const Conn& c, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t sent = ::send(c.sock.get(), data, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (absl::Status s = WaitFor(c, c.sock.get(), POLLOUT); !s.ok()) return s;
      continue;
    }
    if (sent < 0) {
      return absl::UnavailableError(absl::StrCat(c.where, ": send: ", std::strerror(errno)));
    }
    data += sent;
    n -= static_cast<size_t>(sent);
  }
  return absl::OkStatus();
}

// Sends what TLS has written to `out`.
absl::Status Flush(const Conn& c, BIO* out) {
  char buf[16384];
  int n;
  while ((n = BIO_read(out, buf, sizeof buf)) > 0) {
    if (absl::Status s = SendAll(c, buf, static_cast<size_t>(n)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Feeds TLS the next bytes from the socket.
absl::Status Receive(const Conn& c, BIO* in) {
  char buf[16384];
  for (;;) {
    if (absl::Status s = WaitFor(c, c.sock.get(), POLLIN); !s.ok()) return s;
    const ssize_t n = ::recv(c.sock.get(), buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0) {
      return absl::UnavailableError(absl::StrCat(c.where, ": receive: ", std::strerror(errno)));
    }
    if (n == 0) {
      return absl::UnavailableError(absl::StrCat(
          c.where,
          " closed the connection during the TLS handshake (is it an idlepool coordinator?)"));
    }
    BIO_write(in, buf, static_cast<int>(n));
    return absl::OkStatus();
  }
}

// A TLS client that checks nothing itself (the chain is checked against the pin afterwards),
// offers h2 as gRPC servers require, and names the host (SNI) unless it is an IP literal.
struct Tls {
  ossl::SslCtxPtr ctx;
  ossl::SslPtr ssl;
  BIO* in = nullptr;   // owned by ssl
  BIO* out = nullptr;  // owned by ssl
};

bool IsIpLiteral(const std::string& host) {
  unsigned char addr[16];
  return ::inet_pton(AF_INET, host.c_str(), addr) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

absl::StatusOr<Tls> StartTls(const std::string& host) {
  Tls t;
  t.ctx.reset(SSL_CTX_new(TLS_client_method()));
  if (t.ctx == nullptr || SSL_CTX_set_min_proto_version(t.ctx.get(), TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_alpn_protos(t.ctx.get(), kAlpnH2, sizeof kAlpnH2) != 0) {
    return ossl::Internal("TLS client context");
  }
  SSL_CTX_set_verify(t.ctx.get(), SSL_VERIFY_NONE, nullptr);
  t.ssl.reset(SSL_new(t.ctx.get()));
  t.in = BIO_new(BIO_s_mem());
  t.out = BIO_new(BIO_s_mem());
  if (t.ssl == nullptr || t.in == nullptr || t.out == nullptr) {
    BIO_free(t.in);
    BIO_free(t.out);
    return ossl::Internal("TLS client");
  }
  BIO_set_mem_eof_return(t.in, -1);  // empty means "more to come", not end of stream
  SSL_set_bio(t.ssl.get(), t.in, t.out);
  if (!IsIpLiteral(host) && SSL_set_tlsext_host_name(t.ssl.get(), host.c_str()) != 1) {
    return ossl::Internal("TLS server name");
  }
  SSL_set_connect_state(t.ssl.get());
  return t;
}

absl::Status Handshake(const Conn& c, const Tls& t) {
  for (;;) {
    const int rc = SSL_do_handshake(t.ssl.get());
    if (absl::Status s = Flush(c, t.out); !s.ok()) return s;
    if (rc == 1) return absl::OkStatus();
    const int err = SSL_get_error(t.ssl.get(), rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      return ossl::Error(absl::StatusCode::kUnavailable,
                         absl::StrCat(c.where, ": no TLS handshake"));
    }
    if (err == SSL_ERROR_WANT_READ) {
      if (absl::Status s = Receive(c, t.in); !s.ok()) return s;
    }
  }
}

// Ends the connection in order: close_notify, then a half-close, then whatever the server still
// sends (session tickets) read until it closes too, so it sees an orderly end rather than a
// reset. That last wait is capped at kCloseWait within the deadline; errors no longer matter.
void Close(Conn& c, const Tls& t) {
  SSL_shutdown(t.ssl.get());
  Flush(c, t.out).IgnoreError();
  ERR_clear_error();
  ::shutdown(c.sock.get(), SHUT_WR);
  itimerspec left{};
  if (::timerfd_gettime(c.timer.get(), &left) != 0) return;
  const auto cap = std::chrono::duration_cast<std::chrono::nanoseconds>(kCloseWait);
  if (left.it_value.tv_sec == 0 && left.it_value.tv_nsec == 0) return;  // already expired
  if (left.it_value.tv_sec * 1000000000LL + left.it_value.tv_nsec > cap.count()) {
    itimerspec capped{};
    capped.it_value.tv_sec = cap.count() / 1000000000;
    capped.it_value.tv_nsec = cap.count() % 1000000000;
    ::timerfd_settime(c.timer.get(), 0, &capped, nullptr);
  }
  char buf[4096];
  while (WaitFor(c, c.sock.get(), POLLIN).ok()) {
    const ssize_t n = ::recv(c.sock.get(), buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
  }
}

bool IsCa(X509* cert) { return (X509_get_extension_flags(cert) & EXFLAG_CA) != 0; }

// The CA certificate in `chain` whose key has pin `pin`, or kPermissionDenied naming the CA the
// server does present.
absl::StatusOr<X509*> FindPinnedCa(const std::string& where, STACK_OF(X509) * chain,
                                   const std::string& pin) {
  std::string other;  // the pin of the first CA in the chain, for the message
  for (int i = 0; chain != nullptr && i < sk_X509_num(chain); ++i) {
    X509* cert = sk_X509_value(chain, i);
    absl::StatusOr<std::string> p = ossl::PinOf(X509_get0_pubkey(cert));
    if (!p.ok()) return p.status();
    if (*p == pin && IsCa(cert)) return cert;
    if (*p == pin) {
      return absl::PermissionDeniedError(absl::StrCat(
          where, " presents the pinned key sha256:", pin, " in a certificate that is not a CA"));
    }
    if (other.empty() && IsCa(cert)) other = *p;
  }
  return absl::PermissionDeniedError(
      absl::StrCat(where, " is not the pool this token was made for: its CA is ",
                   other.empty() ? "missing from its chain" : absl::StrCat("sha256:", other),
                   " and the token pins sha256:", pin));
}

absl::StatusOr<std::string> CheckChain(const std::string& where, SSL* ssl, const std::string& pin) {
  absl::StatusOr<X509*> ca = FindPinnedCa(where, SSL_get_peer_cert_chain(ssl), pin);
  if (!ca.ok()) return ca.status();
  ossl::X509Ptr leaf(SSL_get1_peer_certificate(ssl));
  if (leaf == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(where, " presented no certificate"));
  }
  absl::Status s = ossl::VerifyAgainst(leaf.get(), *ca, std::nullopt);
  if (!s.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        where,
        " sent the pinned CA, but its own certificate does not check against it: ", s.message()));
  }
  return ossl::CertPem(*ca);
}

absl::Status CheckArguments(const std::string& pin, std::chrono::milliseconds timeout) {
  bool hex = pin.size() == 64;
  for (char c : pin) hex = hex && absl::ascii_isxdigit(c);
  if (!hex) return absl::InvalidArgumentError("the CA pin should be 64 hex digits");
  if (timeout.count() <= 0) return absl::InvalidArgumentError("the timeout must be > 0");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> FetchPinnedCa(const std::string& host_port, const std::string& pin,
                                          std::chrono::milliseconds timeout) {
  absl::StatusOr<text::HostPort> hp = text::SplitHostPort(host_port);
  if (!hp.ok()) return hp.status();
  if (hp->port == 0) return absl::InvalidArgumentError(absl::StrCat(host_port, ": port 0"));
  if (absl::Status s = CheckArguments(pin, timeout); !s.ok()) return s;
  Conn c;
  c.where = text::JoinHostPort(hp->host, hp->port);
  c.timeout = timeout;
  if (absl::Status s = StartTimer(c); !s.ok()) return s;
  if (absl::Status s = Connect(c, *hp); !s.ok()) return s;
  absl::StatusOr<Tls> tls = StartTls(hp->host);
  if (!tls.ok()) return tls.status();
  if (absl::Status s = Handshake(c, *tls); !s.ok()) return s;
  absl::StatusOr<std::string> ca = CheckChain(c.where, tls->ssl.get(), absl::AsciiStrToLower(pin));
  Close(c, *tls);
  return ca;
}

}  // namespace idlepool::trust
