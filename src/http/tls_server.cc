#include "http/tls_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gate/connection_gate.h"
#include "http/tls_stream.h"
#include "platform/clock.h"
#include "platform/fd_limit.h"
#include "platform/process.h"
#include "spdlog/spdlog.h"

namespace idlepool::http {

// At most `max` threads, started as work comes and kept until Join.
class ThreadPool {
 public:
  explicit ThreadPool(size_t max) : max_(std::max<size_t>(max, 1)) {}
  ~ThreadPool() { Join(); }

  void Run(std::function<void()> fn) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(fn));
    if (idle_ == 0 && threads_.size() < max_) {
      threads_.emplace_back([this] { Loop(); });
    } else {
      cv_.notify_one();
    }
  }

  // Runs what is queued, then ends every thread.
  void Join() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // stopping
      auto fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  const size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

namespace {

constexpr int kListenBacklog = 128;  // cpp-httplib listens with 5
constexpr size_t kLingerBytes = 64 << 10;
constexpr std::chrono::milliseconds kLingerTime{2000};

core::MonoTime Now() { return platform::SystemClock().Now(); }

// The request being read or answered on this thread.
struct RequestScope {
  const TlsStream& stream;
  const ConnectionLimits& limits;
  bool close = false;
};
thread_local RequestScope* tl_request = nullptr;

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

bool SetUpTls(SSL_CTX& ctx, const std::string& cert, const std::string& key, std::string* error) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_3_VERSION);
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(&ctx, cert.c_str()) != 1) {
    *error = absl::StrCat("cannot load the HTTPS certificate chain ", cert, ": ", OpenSslError());
  } else if (SSL_CTX_use_PrivateKey_file(&ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    *error = absl::StrCat("cannot load the HTTPS private key ", key, ": ", OpenSslError());
  } else if (SSL_CTX_check_private_key(&ctx) != 1) {
    *error = absl::StrCat("the HTTPS private key ", key, " does not match the certificate ", cert,
                          ": ", OpenSslError());
  }
  return error->empty();
}

// Closes a connection just accepted with a reset (SO_LINGER 0): nothing of it stays.
void RefuseAtOnce(int fd) {
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

const char* Reason(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Bad Request";
  }
}

// The least an answer can be, for a request refused before cpp-httplib read its request line.
void WriteBareError(TlsStream& strm, int status, const std::string& message) {
  const std::string body = absl::StrCat("{\"error\":\"", message, "\",\"status\":", status, "}\n");
  const std::string out = absl::StrCat(
      "HTTP/1.1 ", status, " ", Reason(status),
      "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ", body.size(),
      "\r\n\r\n", body);
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = strm.write(out.data() + off, out.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

void CloseAfterThisAnswer() {
  if (tl_request != nullptr) tl_request->close = true;
}

std::optional<std::pair<int, std::string>> CurrentReadFailure() {
  if (tl_request == nullptr) return std::nullopt;
  const ConnectionLimits& l = tl_request->limits;
  switch (tl_request->stream.failure()) {
    case TlsStream::Failure::kNone:
      return std::nullopt;
    case TlsStream::Failure::kHeadTooLarge:
      return std::make_pair(
          431, absl::StrCat("request head too large: at most ", l.max_header_bytes, " bytes and ",
                            l.max_header_lines, " lines"));
    case TlsStream::Failure::kBodyTooLarge:
      return std::make_pair(
          413, absl::StrCat("request body too large: at most ", l.max_body_bytes, " bytes"));
    case TlsStream::Failure::kTimedOut:
      return std::make_pair(408, absl::StrCat("request not received whole within ",
                                              l.request_timeout.count(), " ms"));
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<TlsServer>> TlsServer::Create(const std::string& cert_file,
                                                             const std::string& key_file,
                                                             const ConnectionLimits& limits) {
  std::string error;
  std::unique_ptr<TlsServer> s(new TlsServer(cert_file, key_file, limits, &error));
  if (!s->is_valid()) {
    return absl::InvalidArgumentError(error.empty() ? "cannot set up TLS" : error);
  }
  return s;
}

TlsServer::TlsServer(const std::string& cert_file, const std::string& key_file,
                     const ConnectionLimits& limits, std::string* error)
    : httplib::SSLServer([&](SSL_CTX& ctx) { return SetUpTls(ctx, cert_file, key_file, error); }),
      limits_(limits),
      table_(limits.max_connections, [](int fd) { ::shutdown(fd, SHUT_RDWR); }),
      fd_ceiling_(gate::FdCeiling(platform::FdSoftLimit(), gate::GateLimits{}.min_fd_reserve)),
      pool_(std::make_unique<ThreadPool>(limits.max_connections)) {
  // SO_REUSEADDR only: SO_REUSEPORT would let two coordinators share a port silently.
  set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  set_payload_max_length(limits.max_body_bytes);
  // What the Keep-Alive header of an answer says.
  set_keep_alive_max_count(limits.max_requests_per_connection);
  set_keep_alive_timeout(std::max<time_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(limits.idle_timeout).count()));
  set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status < 400) return;
    res.set_header("Connection", "close");
    CloseAfterThisAnswer();
  });
}

TlsServer::~TlsServer() { Stop(); }

bool TlsServer::process_and_close_socket(int sock) {
  ::close(sock);
  return false;
}

int TlsServer::Bind(const std::string& host, int port) {
  const int got = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (got > 0) ::listen(svr_sock_, kListenBacklog);
  return got;
}

void TlsServer::Start() {
  platform::IgnoreSigpipe();  // a client gone mid-answer is an EPIPE, not the end of the process
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

void TlsServer::Stop() {
  if (stopped_.exchange(true)) return;
  const int lfd = svr_sock_.exchange(INVALID_SOCKET);
  if (lfd != INVALID_SOCKET) ::shutdown(lfd, SHUT_RDWR);  // wakes accept(2)
  if (accept_thread_.joinable()) accept_thread_.join();
  if (lfd != INVALID_SOCKET) ::close(lfd);
  table_.Stop();
  pool_->Join();
}

void TlsServer::AcceptLoop() {
  bool failing = false;  // logged once per run of failures
  for (;;) {
    const int lfd = svr_sock_;
    if (lfd == INVALID_SOCKET) return;
    const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (stopped_) return;  // Stop shut the socket down
      if (err == EAGAIN || gate::IsConnectionAcceptError(err)) continue;
      // Out of descriptors or memory, or anything else: wait for a connection to end, and go on.
      if (!failing) spdlog::warn("dashboard: accept failed ({}); trying again", std::strerror(err));
      failing = true;
      platform::SleepFor(std::chrono::milliseconds(10));
      continue;
    }
    failing = false;
    if (static_cast<size_t>(fd) >= fd_ceiling_) {  // keep the process's descriptor reserve
      RefuseAtOnce(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const uint64_t id = table_.Admit(fd, Now());
    if (id == 0) {
      ::close(fd);
      continue;
    }
    pool_->Run([this, fd, id] { Serve(fd, id); });
  }
}

void TlsServer::Serve(int fd, uint64_t id) {
  // The first request's time counts from here: the handshake is part of it.
  const core::MonoTime deadline = Now() + limits_.request_timeout;
  if (SSL* ssl = AcceptTls(ssl_context(), fd, deadline)) {
    ServeRequests(ssl, fd, id, deadline);
    if ((SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN) == 0) {
      ERR_clear_error();
      SSL_shutdown(ssl);  // one close_notify, best effort (non-blocking)
    }
    SSL_free(ssl);
  }
  ERR_clear_error();
  table_.Remove(id);
  ::close(fd);
}

void TlsServer::ServeRequests(SSL* ssl, int fd, uint64_t id, core::MonoTime deadline) {
  for (size_t n = 1; n <= limits_.max_requests_per_connection; ++n) {
    TlsStream strm(ssl, fd, limits_, deadline);
    RequestScope scope{strm, limits_};
    tl_request = &scope;
    bool client_closes = false;
    const bool ok = process_request(strm, n == limits_.max_requests_per_connection, client_closes,
                                    [&](httplib::Request& req) {
                                      req.ssl = ssl;
                                      table_.SetBusy(id);
                                    });
    tl_request = nullptr;
    if (strm.failure() != TlsStream::Failure::kNone) {
      if (!strm.wrote()) {
        tl_request = &scope;
        auto why = CurrentReadFailure();
        tl_request = nullptr;
        WriteBareError(strm, why->first, why->second);
      }
      return Linger(ssl, fd, id);
    }
    if (!ok || client_closes || scope.close || !table_.SetWaiting(id, Now())) return;
    if (SSL_pending(ssl) == 0 && !WaitFd(fd, POLLIN, Now() + limits_.idle_timeout)) return;
    deadline = Now() + limits_.request_timeout;
  }
}

// After a refused request: close_notify and FIN, then read what the client still sends for a
// moment, so that closing does not reset the connection before it read the answer.
void TlsServer::Linger(SSL* ssl, int fd, uint64_t id) {
  ERR_clear_error();
  SSL_shutdown(ssl);
  ::shutdown(fd, SHUT_WR);
  if (!table_.SetWaiting(id, Now())) return;
  const core::MonoTime until = Now() + kLingerTime;
  char buf[4096];
  for (size_t drained = 0; drained < kLingerBytes && WaitFd(fd, POLLIN, until);) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    drained += static_cast<size_t>(n);
  }
}

}  // namespace idlepool::http
