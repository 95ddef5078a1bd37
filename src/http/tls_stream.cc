#include "http/tls_stream.h"

#include <netdb.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "platform/clock.h"

namespace idlepool::http {
namespace {

core::MonoTime Now() { return platform::SystemClock().Now(); }

// Chunk sizes and trailers around a chunked body of max_body_bytes.
constexpr size_t kBodyFramingBytes = 4096;

void AddressOf(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  const int r = peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len);
  char host[NI_MAXHOST] = {};
  char serv[NI_MAXSERV] = {};
  if (r != 0 || ::getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                              NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return;
  }
  ip = host;
  port = std::atoi(serv);
}

// Waits for what SSL_get_error asks of the socket; false when the error is another, or at the
// deadline.
bool WaitTls(SSL* ssl, int fd, int ret, core::MonoTime deadline) {
  switch (SSL_get_error(ssl, ret)) {
    case SSL_ERROR_WANT_READ:
      return WaitFd(fd, POLLIN, deadline);
    case SSL_ERROR_WANT_WRITE:
      return WaitFd(fd, POLLOUT, deadline);
    default:
      return false;
  }
}

}  // namespace

bool WaitFd(int fd, short events, core::MonoTime deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

SSL* AcceptTls(SSL_CTX* ctx, int fd, core::MonoTime deadline) {
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr) return nullptr;
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_set_fd(ssl, fd) == 1) {
    for (;;) {
      ERR_clear_error();
      const int r = SSL_accept(ssl);
      if (r == 1) return ssl;
      if (!WaitTls(ssl, fd, r, deadline)) break;
    }
  }
  SSL_free(ssl);
  return nullptr;
}

bool TlsStream::is_readable() const {
  return SSL_pending(ssl_) > 0 || WaitFd(fd_, POLLIN, deadline_);
}

bool TlsStream::is_writable() const { return WaitFd(fd_, POLLOUT, Now() + limits_.write_timeout); }

ssize_t TlsStream::read(char* ptr, size_t size) {
  if (failure_ != Failure::kNone) return -1;
  size_t allowed;
  if (head_done_) {
    allowed = limits_.max_body_bytes + kBodyFramingBytes -
              std::min(body_bytes_, limits_.max_body_bytes + kBodyFramingBytes);
    if (allowed == 0) return Fail(Failure::kBodyTooLarge);
  } else {
    allowed = limits_.max_header_bytes - std::min(head_bytes_, limits_.max_header_bytes);
    if (allowed == 0) return Fail(Failure::kHeadTooLarge);
  }
  const ssize_t n = ReadTls(ptr, std::min(size, allowed));
  if (n > 0) Count(ptr, static_cast<size_t>(n));
  if (!head_done_ && head_lines_ > limits_.max_header_lines) return Fail(Failure::kHeadTooLarge);
  return n;
}

ssize_t TlsStream::ReadTls(char* ptr, size_t size) {
  const int want = static_cast<int>(std::min<size_t>(size, INT_MAX));
  for (;;) {
    ERR_clear_error();  // SSL_get_error reads this thread's error queue
    const int r = SSL_read(ssl_, ptr, want);
    if (r > 0) return r;
    const int err = SSL_get_error(ssl_, r);
    // (A client closing without close_notify reads as the end too: SSL_OP_IGNORE_UNEXPECTED_EOF.)
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return -1;
    if (!WaitTls(ssl_, fd_, r, deadline_))
      return Now() >= deadline_ ? Fail(Failure::kTimedOut) : -1;
  }
}

void TlsStream::Count(const char* ptr, size_t n) {
  size_t i = 0;
  for (; i < n && !head_done_; ++i) {
    const auto c = static_cast<unsigned char>(ptr[i]);
    last4_ = (last4_ << 8) | c;
    ++head_bytes_;
    if (c == '\n') ++head_lines_;
    head_done_ = last4_ == 0x0d0a0d0a;
  }
  body_bytes_ += n - i;
}

ssize_t TlsStream::write(const char* ptr, size_t size) {
  const int want = static_cast<int>(std::min<size_t>(size, INT_MAX));
  for (;;) {
    ERR_clear_error();
    const int r = SSL_write(ssl_, ptr, want);
    if (r > 0) {
      wrote_ = true;
      return r;
    }
    // Partial writes are on: each wait is for progress, bounded by write_timeout.
    if (!WaitTls(ssl_, fd_, r, Now() + limits_.write_timeout)) return -1;
  }
}

void TlsStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  AddressOf(fd_, true, ip, port);
}

void TlsStream::get_local_ip_and_port(std::string& ip, int& port) const {
  AddressOf(fd_, false, ip, port);
}

}  // namespace idlepool::http
