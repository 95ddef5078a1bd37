// The coordinator's HTTPS server (--http): the dashboard's static files, a read-only JSON API,
// server-sent events when the pool changes, and Prometheus /metrics. See docs/guide/http-api.md.
//
// HTTPS only (TLS 1.3; tls_server.h), with the bounds of ConnectionLimits (docs/limits.md).
// Every request must name this server in Host (else 421) and, when it has an Origin, come from
// https://<an allowed host> (else 403): no DNS rebinding, no cross-site reads. Every path but
// /login needs credentials of role read, submit or admin (a worker's never: 403):
// "Authorization: Bearer TOKEN", checked by the injected Authenticator on each request, or the
// session cookie that POST /login sets (sessions.h) for a token posted in its form body (the
// token never travels in a URL and is never the cookie). POST /login needs a matching Origin; a
// state change made with the cookie (POST /logout, and any later POST/PUT/DELETE) needs the
// session's CSRF token in X-Idlepool-CSRF (GET /api/v1/session gives it). Missing or wrong
// credentials get 401 and a JSON error, never data.
//
// Reads go through a PoolReader (the coordinator's own read paths, the ones its gRPC handlers
// use), so the JSON here is the CLI's --json (api/json.h). At most max_event_streams event
// streams at once, more get 503, so streams never take every connection.
//
// Thread safety: Start and Shutdown from one thread; EndSessionsOf from any; the PoolReader and
// the Authenticator are called from the server's threads concurrently. The PoolReader and
// ChangeFeed must outlive the Server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "http/connection_table.h"
#include "http/limits.h"
#include "idlepool.pb.h"
#include "platform/clock.h"
#include "trust/role.h"

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
  virtual absl::StatusOr<v1::FailedTasksPage> ListFailedTasks(
      const v1::FailedTasksRequest& req) = 0;
  virtual absl::StatusOr<v1::TaskLog> GetTaskLog(const v1::TaskRef& req) = 0;
  virtual std::string Metrics() = 0;  // the /metrics body, text exposition format 0.0.4
  // The running services and their replicas (GET /api/v1/services; issue 17). Default: none.
  virtual absl::StatusOr<v1::ListServicesReply> ListServices() { return v1::ListServicesReply(); }
  // The users: shares, quotas, decayed usage and standing (GET /api/v1/users). Default: none.
  virtual absl::StatusOr<v1::ListUsersReply> ListUsers() { return v1::ListUsersReply(); }
  // Usage by day, summed since a day by user or worker (GET /api/v1/usage?since=7d&by=worker).
  virtual absl::StatusOr<v1::UsageReply> GetUsage(const v1::UsageRequest& /*req*/) {
    return v1::UsageReply();
  }
  // The kept output of one attempt of a job, as text (GET /api/v1/jobs/N/attempts/A/log; issue
  // 18). Default: none kept.
  virtual absl::StatusOr<std::string> GetAttemptLog(uint64_t /*job*/, uint64_t /*attempt*/) {
    return absl::UnimplementedError("this coordinator keeps no logs");
  }
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

// Who a bearer token belongs to (the coordinator's token check). An error means "not a valid
// token" (401), except kUnavailable (503: try again) and kInternal (500). Must be thread-safe;
// never log the token.
using Authenticator =
    std::function<absl::StatusOr<trust::Principal>(std::string_view bearer_token)>;

struct ServerOptions {
  std::string address = "127.0.0.1:7879";  // HOST:PORT, [V6]:PORT or PORT (host 127.0.0.1)
  // PEM files: the server's certificate followed by its issuers' (the pool CA's), and its
  // private key. Both required.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The names and addresses clients reach the server by, for the Host and Origin checks
  // (request_checks.h: an entry may carry its own port, "localhost:9000" for a tunnel). Empty:
  // DefaultAllowedHosts of the address's host.
  std::vector<std::string> allowed_hosts;
  Authenticator authenticate;  // required
  // Dashboard sessions: dropped after this long unused; at most this many (then the least
  // recently used goes).
  std::chrono::milliseconds session_idle_timeout = std::chrono::hours(12);
  size_t max_sessions = 256;
  ConnectionLimits limits;
  const platform::Clock* clock = nullptr;  // for sessions; null: the real clock
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
  // Binds and starts serving on its own threads. Errors: kInvalidArgument (bad address, no
  // authenticator, a certificate or key that cannot be loaded), kUnavailable (cannot bind: in
  // use, no such address).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                                     PoolReader& reader,
                                                                     ChangeFeed& feed);
  virtual ~Server() = default;
  virtual const std::string& host() const = 0;
  virtual int port() const = 0;
  // What the connection bounds did so far (live, busy, admitted, kicked, refused).
  virtual ConnectionTable::Counts connections() const = 0;
  // Ends the dashboard sessions opened with token `token_id` (when it is revoked); how many.
  virtual size_t EndSessionsOf(std::string_view token_id) = 0;
  // Closes the feed (ending event streams), stops accepting and waits for the server's threads.
  // Idempotent.
  virtual void Shutdown() = 0;
};

}  // namespace idlepool::http
