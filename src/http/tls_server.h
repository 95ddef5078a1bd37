// The HTTPS server under http::Server: cpp-httplib's SSLServer routes, parses and answers, but
// the accepting, the TLS I/O and the loop over a connection's requests are ours, so that the
// bounds of ConnectionLimits hold. cpp-httplib 0.11 has none of them: it keeps every header
// line it reads (no count or total), reads a line whole before checking its length, reads
// chunked and length-less bodies without limit, gives a request no overall deadline (its read
// timeout restarts with every byte) and queues connections behind a fixed pool of threads, so a
// few hundred slow clients stall it. Here a connection is admitted by a ConnectionTable, its
// requests are read through a TlsStream, and it runs on a pool of at most max_connections
// threads, so an admitted connection never waits for a thread held by another client.
//
// A connection accepted with a descriptor at or past the process's reserve (gate::FdCeiling) is
// reset at once; out of descriptors, the accept loop waits and tries again.
//
// TLS 1.3 only; no plain-text listener. An error answer (status >= 400) closes its connection
// after it is written, so a request refused before its body was read cannot be mistaken for the
// next one. A request refused for its size or slowness gets 431, 413 or 408 (a JSON error from
// the error handler, or a minimal one when not even its request line was read), then the
// connection is drained for a moment (up to 64 KiB, 2 s) so the client reads the answer.
//
// Thread safety: configure routes, then Bind and Start from one thread; Stop from any one
// thread, once or more. Handlers run on the pool's threads.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "http/connection_table.h"
#include "http/limits.h"
#include "httplib.h"

namespace idlepool::http {

class ThreadPool;

class TlsServer final : public httplib::SSLServer {
 public:
  // Loads the certificate chain (the server's certificate first, then its issuers) and the
  // private key, PEM files. Errors: kInvalidArgument naming the file and OpenSSL's reason.
  static absl::StatusOr<std::unique_ptr<TlsServer>> Create(const std::string& cert_file,
                                                           const std::string& key_file,
                                                           const ConnectionLimits& limits);
  ~TlsServer() override;

  // Binds HOST:PORT (port 0: a free port); the port, or -1.
  int Bind(const std::string& host, int port);
  // Accepts and serves on its own threads until Stop.
  void Start();
  // Stops accepting, closes connections waiting for their clients, lets the busy ones finish
  // their answer and joins every thread. Idempotent.
  void Stop();
  ConnectionTable::Counts counts() const { return table_.counts(); }

 private:
  TlsServer(const std::string& cert_file, const std::string& key_file,
            const ConnectionLimits& limits, std::string* error);
  // cpp-httplib's own connection loop, reached only through listen(), which is never called.
  bool process_and_close_socket(int sock) override;
  void AcceptLoop();
  void Serve(int fd, uint64_t id);
  // Requests until the client or a bound ends the connection; the first one by `deadline`.
  void ServeRequests(SSL* ssl, int fd, uint64_t id, core::MonoTime deadline);
  void Linger(SSL* ssl, int fd, uint64_t id);

  const ConnectionLimits limits_;
  ConnectionTable table_;
  // Connections whose descriptor is this or more are refused at accept: the process keeps the
  // reserve of gate::FdCeiling for everything else (its gRPC port refuses at the same line).
  const size_t fd_ceiling_;
  std::unique_ptr<ThreadPool> pool_;
  std::thread accept_thread_;
  std::atomic<bool> stopped_{false};
};

// For handlers, on the thread answering a request. Closes the connection once this answer is
// written.
void CloseAfterThisAnswer();
// When a limit stopped this request from being read: the status to answer (431, 413, 408) and
// why; nullopt otherwise.
std::optional<std::pair<int, std::string>> CurrentReadFailure();

}  // namespace idlepool::http
