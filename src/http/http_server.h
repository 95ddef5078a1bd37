// The coordinator's HTTP server (--http): the dashboard's static files, a read-only JSON API,
// server-sent events when the pool changes, and Prometheus /metrics. See docs/guide/http-api.md.
//
// Every path except /login needs the pool token: "Authorization: Bearer TOKEN", or the cookie
// that GET /login?token=TOKEN sets (HttpOnly, SameSite=Strict, Path=/; then a redirect to /, so
// the token leaves the address bar). A missing or wrong token gets 401 and a JSON error, never
// data. Tokens are compared in constant time.
//
// Reads go through a PoolReader (the coordinator's own read paths, the ones its gRPC handlers
// use), so the JSON here is the CLI's --json (api/json.h). Threads: a fixed pool of
// max_event_streams + 8 (cpp-httplib's ThreadPool; further connections queue); at most
// max_event_streams event streams at once, more get 503, so streams never starve other requests.
//
// Thread safety: Start and Shutdown from one thread; the PoolReader is called from the server's
// threads concurrently. The PoolReader and ChangeFeed must outlive the Server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "idlepool.pb.h"

namespace idlepool::http {

// What the server reads. Errors map to HTTP statuses: kNotFound 404, kInvalidArgument 400,
// kUnimplemented 501, kUnavailable/kResourceExhausted 503, others 500; the message is shown.
class PoolReader {
 public:
  virtual ~PoolReader() = default;
  virtual absl::StatusOr<v1::ListWorkersReply> ListWorkers() = 0;
  virtual absl::StatusOr<v1::ListJobsReply> ListJobs() = 0;
  virtual absl::StatusOr<v1::JobStatus> GetJob(uint64_t job) = 0;
  virtual absl::StatusOr<v1::JobTimeline> GetJobTimeline(const v1::TimelineRequest& req) = 0;
  virtual std::string Metrics() = 0;  // the /metrics body, text exposition format 0.0.4
};

// A version number of the pool's visible state, bumped by the coordinator when something a
// dashboard shows changed; event streams wait on it. Thread-safe.
class ChangeFeed {
 public:
  void Bump();
  uint64_t version() const;
  // Blocks until version() != seen, Close(), or `timeout` passed; returns version().
  uint64_t WaitChange(uint64_t seen, std::chrono::milliseconds timeout);
  // Blocks for `d` unless Close() is called; true when closed.
  bool WaitClosed(std::chrono::milliseconds d);
  // Wakes every waiter for good (shutdown).
  void Close();
  bool closed() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t version_ = 0;
  bool closed_ = false;
};

struct ServerOptions {
  std::string address = "127.0.0.1:7879";  // HOST:PORT, [V6]:PORT or PORT (host 127.0.0.1)
  std::string token;                        // the pool token
  int max_event_streams = 32;
  // Comment line on an idle event stream; also how soon a stream whose client went away frees
  // its slot (a closed connection is only noticed by the next write).
  std::chrono::milliseconds keepalive{5000};
  std::chrono::milliseconds min_event_gap{250};    // events coalesced: at most ~4/s
};

// HOST and PORT of an --http address; kInvalidArgument when malformed.
absl::StatusOr<std::pair<std::string, int>> ParseAddress(const std::string& address);

class Server {
 public:
  // Binds and starts serving on its own thread. Errors: kInvalidArgument (bad address),
  // kUnavailable (cannot bind: in use, no such address).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                                     PoolReader& reader,
                                                                     ChangeFeed& feed);
  virtual ~Server() = default;
  virtual const std::string& host() const = 0;
  virtual int port() const = 0;
  // Closes the feed (ending event streams), stops accepting and waits for the server's threads.
  // Idempotent.
  virtual void Shutdown() = 0;
};

}  // namespace idlepool::http
