// One request's view of a TLS connection, as cpp-httplib reads and writes it (httplib::Stream),
// with the bounds of ConnectionLimits: cpp-httplib keeps every header line it reads and reads a
// line to its end before it checks its length, so the stream itself stops it. It counts the
// request's head (request line and headers, up to the blank line) in bytes and lines and its
// body in bytes, and fails a read past either limit or past the request's deadline; it never
// reads ahead of what cpp-httplib asks for (cpp-httplib reads a head one byte at a time), so
// the next request on the connection starts exactly where this one ended.
//
// Also the TLS handshake and the waits it shares. The socket is non-blocking; every wait is a
// poll(2) bounded by a deadline. One thread at a time (the connection's).
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <string>

#include "core/types.h"
#include "http/limits.h"
#include "httplib.h"

namespace idlepool::http {

// Waits until `fd` has `events` (POLLIN, POLLOUT), an error or a hang-up; false at `deadline`.
bool WaitFd(int fd, short events, core::MonoTime deadline);

// A TLS server session on `fd` (non-blocking), handshake done by `deadline`; nullptr when the
// client is not speaking TLS 1.3 to us in time (the caller closes fd). SSL_free it.
SSL* AcceptTls(SSL_CTX* ctx, int fd, core::MonoTime deadline);

class TlsStream final : public httplib::Stream {
 public:
  TlsStream(SSL* ssl, int fd, const ConnectionLimits& limits, core::MonoTime deadline)
      : ssl_(ssl), fd_(fd), limits_(limits), deadline_(deadline) {}

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }

  enum class Failure { kNone, kHeadTooLarge, kBodyTooLarge, kTimedOut };
  // Why a read failed, if a limit did it.
  Failure failure() const { return failure_; }
  bool head_done() const { return head_done_; }
  // Whether anything of an answer was written.
  bool wrote() const { return wrote_; }

 private:
  ssize_t ReadTls(char* ptr, size_t size);
  void Count(const char* ptr, size_t n);
  ssize_t Fail(Failure f) {
    failure_ = f;
    return -1;
  }

  SSL* const ssl_;
  const int fd_;
  const ConnectionLimits& limits_;
  const core::MonoTime deadline_;
  size_t head_bytes_ = 0;
  size_t head_lines_ = 0;
  size_t body_bytes_ = 0;
  uint32_t last4_ = 0;  // the head's last four bytes, to find its end (CR LF CR LF)
  bool head_done_ = false;
  bool wrote_ = false;
  Failure failure_ = Failure::kNone;
};

}  // namespace idlepool::http
