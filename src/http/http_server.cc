#include "http/http_server.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/json.h"
#include "dashboard/assets.h"
#include "http/request_checks.h"
#include "http/sessions.h"
#include "http/tls_server.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "report/timeline_svg.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"
#include "text/units.h"

namespace idlepool::http {

// ---- ChangeFeed ----

void ChangeFeed::Bump() {
  std::lock_guard lock(mu_);
  ++version_;
  cv_.notify_all();
}

uint64_t ChangeFeed::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

uint64_t ChangeFeed::WaitChange(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return closed_ || version_ != seen; });
  return version_;
}

bool ChangeFeed::WaitClosed(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, d, [&] { return closed_; });
}

void ChangeFeed::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool ChangeFeed::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

absl::StatusOr<std::pair<std::string, int>> ParseAddress(const std::string& address) {
  auto hp = text::SplitHostPort(address, "127.0.0.1");
  if (!hp.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--http: ", hp.status().message()));
  }
  return std::make_pair(hp->host, hp->port);
}

namespace {

using httplib::Request;
using httplib::Response;
using Outcome = httplib::Server::HandlerResponse;

constexpr const char* kSessionCookie = "idlepool_session";
constexpr const char* kCsrfHeader = "X-Idlepool-CSRF";
constexpr const char* kJson = "application/json";

std::string Dump(const nlohmann::json& j) {
  // Worker names, messages and log tails come from workers: never let bad UTF-8 throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void SendJson(Response& res, int status, const nlohmann::json& j) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(Dump(j) + "\n", kJson);
}

void SendError(Response& res, int status, const std::string& message) {
  SendJson(res, status, {{"error", message}, {"status", status}});
}

// For the pre-routing handler: answered here, with an error.
Outcome Refuse(Response& res, int status, const std::string& message) {
  SendError(res, status, message);
  return Outcome::Handled;
}

int HttpStatusOf(const absl::Status& st) {
  switch (st.code()) {
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kInvalidArgument: return 400;
    case absl::StatusCode::kUnimplemented: return 501;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted: return 503;
    default: return 500;
  }
}

void SendStatus(Response& res, const absl::Status& st) {
  SendError(res, HttpStatusOf(st), std::string(st.message()));
}

// A job id from a path segment: a positive decimal integer.
absl::StatusOr<uint64_t> ParseJobId(const std::string& s) {
  uint64_t id = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), id);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || id == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("job id '", s.substr(0, 64), "' is not a positive integer"));
  }
  return id;
}

// A query parameter that must be a non-negative integer of 32 bits, when present.
absl::StatusOr<std::optional<uint32_t>> UintParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::nullopt;
  const std::string s = req.get_param_value(name);
  uint32_t n = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be a non-negative integer below 2^32"));
  }
  return n;
}

// GET /api/v1/usage's query: since=7d (a duration back from now) or all (the default), by=user
// (the default) or worker.
absl::StatusOr<v1::UsageRequest> UsageQuery(const httplib::Request& req, int64_t wall_ms) {
  v1::UsageRequest out;
  const std::string since = req.has_param("since") ? req.get_param_value("since") : "all";
  if (since != "all") {
    auto d = text::ParseDuration(since);
    if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", d.status().message()));
    out.set_since_unix_s(std::max<int64_t>(wall_ms / 1000 - d->count() / 1000, 0));
  }
  const std::string by = req.has_param("by") ? req.get_param_value("by") : "user";
  if (by != "user" && by != "worker") {
    return absl::InvalidArgumentError("by: 'user' or 'worker'");
  }
  out.set_by(by);
  return out;
}

// The roles that may use the HTTP API; a worker's credentials never.
bool MayUseHttp(trust::Role role) {
  return role == trust::Role::kRead || role == trust::Role::kSubmit ||
         role == trust::Role::kOperator || role == trust::Role::kAdmin;
}

const char* RoleWord(trust::Role role) {
  switch (role) {
    case trust::Role::kWorker:
      return "worker";
    case trust::Role::kSubmit:
      return "submit";
    case trust::Role::kRead:
      return "read";
    case trust::Role::kAdmin:
      return "admin";
    case trust::Role::kOperator:
      return "operator";
  }
  return "unknown";
}

bool ChangesState(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

std::string SessionCookie(const std::string& id, bool clear) {
  return absl::StrCat(kSessionCookie, "=", id, clear ? "; Max-Age=0" : "",
                      "; HttpOnly; Secure; SameSite=Strict; Path=/");
}

const char* kLoginPage = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>idlepool: log in</title></head>
<body><h1>idlepool</h1>
%ERROR%<form method="post" action="/login">
<label>Access token <input type="password" name="token" autocomplete="off" autofocus></label>
<button type="submit">Log in</button>
</form>
<p>Use a token of role read, submit or operator (the pool token in the coordinator's DATA_DIR/pool.token
works too).</p>
</body></html>
)";

// The login form with `status`: `error` (plain text, never from the request) is shown above it
// when not empty.
void SendLoginPage(Response& res, int status, const std::string& error) {
  std::string page = kLoginPage;
  page.replace(page.find("%ERROR%"), 7,
               error.empty() ? std::string() : absl::StrCat("<p id=\"login-error\">", error, "</p>\n"));
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(page, "text/html; charset=utf-8");
}

// Debian's cpp-httplib is built with brotli, which it runs at its highest quality: a browser
// (which always offers "br") made the coordinator spend 17 s of CPU on one 9 MB timeline of a
// 20,000-task job, against 0.2 s with gzip. Answers are compressed with gzip or not at all: the
// request's Accept-Encoding is cut down to gzip before the library reads it. (The pre-routing
// handler gets the request as const; the server owns it and it is not a const object.)
void KeepOnlyGzip(const Request& req) {
  auto& headers = const_cast<Request&>(req).headers;
  auto it = headers.find("Accept-Encoding");
  if (it == headers.end()) return;
  const bool gzip = absl::StrContains(absl::AsciiStrToLower(it->second), "gzip");
  headers.erase("Accept-Encoding");
  if (gzip) headers.emplace("Accept-Encoding", "gzip");
}

// A request without Content-Length or Transfer-Encoding has no body (RFC 9112 6.3), but
// cpp-httplib 0.11 reads a POST's body until the connection closes (a POST from `curl -X POST`
// would wait for the request deadline): such a request is given "Content-Length: 0".
void NoLengthNoBody(const Request& req) {
  if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) return;
  const_cast<Request&>(req).headers.emplace("Content-Length", "0");
}

// cpp-httplib inflates a gzip, deflate or brotli request body without a limit (64 KiB of gzip
// inflate to 64 MB): the server takes no compressed bodies.
bool CompressedBody(const Request& req) {
  const size_t n = req.get_header_value_count("Content-Encoding");
  return n > 1 ||
         (n == 1 && !absl::EqualsIgnoreCase(req.get_header_value("Content-Encoding"), "identity"));
}

void SetSecurityHeaders(Response& res) {
  res.set_header("X-Content-Type-Options", "nosniff");
  // Not "no-referrer": with it a browser sends "Origin: null" on the page's own POSTs (Fetch
  // standard), which the Origin check must refuse.
  res.set_header("Referrer-Policy", "same-origin");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Content-Security-Policy", "frame-ancestors 'none'");
}

// Who sent a request, and how: a session (the cookie) or a bearer token (no session).
struct Caller {
  trust::Principal principal;
  std::optional<Session> session;
};

class ServerImpl final : public Server {
 public:
  ServerImpl(const ServerOptions& options, PoolReader& reader, ChangeFeed& feed)
      : options_(options),
        reader_(reader),
        feed_(feed),
        clock_(options.clock != nullptr ? *options.clock : platform::SystemClock()),
        sessions_(SessionOptions{options.session_idle_timeout, options.max_sessions}) {}
  ~ServerImpl() override { Shutdown(); }

  absl::Status Init() {
    auto addr = ParseAddress(options_.address);
    if (!addr.ok()) return addr.status();
    host_ = addr->first;
    if (!options_.authenticate) return absl::InvalidArgumentError("--http: no authenticator");
    if (options_.tls_cert_file.empty() || options_.tls_key_file.empty()) {
      return absl::InvalidArgumentError("--http: a TLS certificate and key are required");
    }
    auto tls = TlsServer::Create(options_.tls_cert_file, options_.tls_key_file, options_.limits);
    if (!tls.ok()) return tls.status();
    tls_ = std::move(*tls);
    Routes();
    port_ = tls_->Bind(host_, addr->second);
    if (port_ <= 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", options_.address, " for the dashboard (port in use, "
                       "or no such address)"));
    }
    allowed_.hosts =
        options_.allowed_hosts.empty() ? DefaultAllowedHosts(host_) : options_.allowed_hosts;
    allowed_.port = port_;
    tls_->Start();
    return absl::OkStatus();
  }

  const std::string& host() const override { return host_; }
  int port() const override { return port_; }
  ConnectionTable::Counts connections() const override { return tls_->counts(); }
  size_t EndSessionsOf(std::string_view token_id) override {
    return sessions_.RemoveToken(token_id);
  }

  void Shutdown() override {
    if (shut_down_.exchange(true)) return;
    feed_.Close();
    if (tls_) tls_->Stop();
  }

 private:
  core::MonoTime Now() const { return clock_.Now(); }

  // The credentials of a request: its bearer token when it has an Authorization header, else
  // its session cookie. Errors: the authenticator's, or kUnauthenticated.
  absl::StatusOr<Caller> Authenticate(const Request& req) {
    const std::string authorization = req.get_header_value("Authorization");
    if (!authorization.empty()) {
      const std::string token = BearerToken(authorization);
      if (token.empty()) return absl::UnauthenticatedError("not a bearer token");
      auto principal = options_.authenticate(token);
      if (!principal.ok()) return principal.status();
      return Caller{*principal, std::nullopt};
    }
    const std::string id = CookieValue(req.get_header_value("Cookie"), kSessionCookie);
    auto session = id.empty() ? std::nullopt : sessions_.Find(id, Now());
    if (!session) return absl::UnauthenticatedError("no session");
    return Caller{session->principal, session};
  }

  // Every request, before its route: Host, Origin, credentials, and the CSRF token of a state
  // change made with the session cookie. (Its body, if any, is not read yet.)
  Outcome Gate(const Request& req, Response& res) {
    KeepOnlyGzip(req);
    NoLengthNoBody(req);
    SetSecurityHeaders(res);
    if (!HostAllowed(req.get_header_value("Host"), allowed_)) {
      return Refuse(res, 421, "misdirected request: the Host header does not name this server");
    }
    if (CompressedBody(req)) {
      return Refuse(res, 415, "compressed request bodies are not accepted (Content-Encoding)");
    }
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty() && !OriginAllowed(origin, allowed_)) {
      return Refuse(res, 403, "cross-origin request refused (Origin is not this server)");
    }
    if (req.path == "/login") {
      if (req.method == "POST" && origin.empty()) {
        return Refuse(res, 403, "POST /login needs an Origin header naming this server");
      }
      return Outcome::Unhandled;
    }
    auto caller = Authenticate(req);
    if (!caller.ok()) return RefuseCredentials(req, res, caller.status());
    if (!MayUseHttp(caller->principal.role)) {
      return Refuse(res, 403, "a worker's credentials cannot use the HTTP API");
    }
    if (ChangesState(req.method) && caller->session &&
        !SameSecret(req.get_header_value(kCsrfHeader), caller->session->csrf)) {
      return Refuse(res, 403,
                    "a change made with the session cookie needs the session's CSRF token in "
                    "X-Idlepool-CSRF (see GET /api/v1/session)");
    }
    return Outcome::Unhandled;
  }

  static Outcome RefuseCredentials(const Request& req, Response& res, const absl::Status& st) {
    if (absl::IsUnavailable(st)) return Refuse(res, 503, "cannot check credentials now; retry");
    if (absl::IsInternal(st)) return Refuse(res, 500, "cannot check credentials");
    res.set_header("WWW-Authenticate", "Bearer realm=\"idlepool\"");
    if (req.path == "/") {  // a browser opening the dashboard: the login form, no data
      SendLoginPage(res, 401, "");
      return Outcome::Handled;
    }
    return Refuse(res, 401,
                  "no valid credentials: send \"Authorization: Bearer TOKEN\" (a read or submit "
                  "token) or log in at /login");
  }

  void Routes() {
    tls_->set_pre_routing_handler(
        [this](const Request& req, Response& res) { return Gate(req, res); });
    tls_->set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
      SendError(res, 500, "internal error");
    });
    tls_->set_error_handler([](const Request& req, Response& res) {
      if (auto failure = CurrentReadFailure()) {
        SendError(res, failure->first, failure->second);
      } else if (res.body.empty()) {
        SendError(res, res.status, res.status == 404 ? "no such path: " + req.path.substr(0, 200)
                                                     : "request failed");
      }
    });
    LoginRoutes();
    AssetRoutes();
    JobRoutes();
    EventRoutes();
    tls_->Get("/api/v1/workers", [this](const Request&, Response& res) {
      auto r = reader_.ListWorkers();
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::WorkersJson(*r));
    });
    tls_->Get("/api/v1/services", [this](const Request&, Response& res) {
      auto r = reader_.ListServices();
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::ServicesJson(*r));
    });
    UserRoutes();
    tls_->Get("/metrics", [this](const Request&, Response& res) {
      res.set_header("Cache-Control", "no-store");
      res.set_content(reader_.Metrics(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }

  void UserRoutes() {
    tls_->Get("/api/v1/users", [this](const Request&, Response& res) {
      auto r = reader_.ListUsers();
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::UsersJson(*r));
    });
    tls_->Get("/api/v1/usage", [this](const Request& req, Response& res) {
      auto q = UsageQuery(req, clock_.WallMs());
      if (!q.ok()) return SendStatus(res, q.status());
      auto r = reader_.GetUsage(*q);
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::UsageJson(*r, q->by()));
    });
  }

  void LoginRoutes() {
    tls_->Get("/login", [](const Request& req, Response& res) {
      if (req.has_param("token")) {
        return SendLoginPage(res, 400, "Tokens are not accepted in the address: enter it here.");
      }
      SendLoginPage(res, 200, "");
    });
    tls_->Post("/login", [this](const Request& req, Response& res) { Login(req, res); });
    tls_->Post("/logout", [this](const Request& req, Response& res) { Logout(req, res); });
    tls_->Get("/api/v1/session", [this](const Request& req, Response& res) {
      auto caller = Authenticate(req);  // the gate let it through: it has one
      if (!caller.ok()) return SendError(res, 401, "no valid credentials");
      nlohmann::json j = {{"name", caller->principal.name},
                          {"user", caller->principal.user},
                          {"role", RoleWord(caller->principal.role)},
                          {"via", caller->session ? "session" : "bearer"}};
      if (caller->session) {
        j["csrf"] = caller->session->csrf;
        j["idle_timeout_s"] = options_.session_idle_timeout.count() / 1000;
      }
      SendJson(res, 200, j);
    });
  }

  // POST /login, the token in a form body (application/x-www-form-urlencoded): a session.
  void Login(const Request& req, Response& res) {
    if (req.target.find('?') != std::string::npos) {
      return SendLoginPage(res, 400, "The token goes in the form, never in the address.");
    }
    const std::string token = req.get_param_value("token");
    if (token.empty()) return SendLoginPage(res, 401, "Enter an access token.");
    auto principal = options_.authenticate(token);
    if (!principal.ok()) {
      if (absl::IsUnavailable(principal.status())) {
        return SendLoginPage(res, 503, "The coordinator cannot check tokens now; try again.");
      }
      return SendLoginPage(res, 401, "Not a valid access token.");
    }
    if (!MayUseHttp(principal->role)) {
      return SendLoginPage(res, 403, "That is a worker's token: use a read or submit token.");
    }
    const Session session = sessions_.Create(*principal, Now());
    res.set_header("Set-Cookie", SessionCookie(session.id, false));
    res.set_header("Cache-Control", "no-store");
    res.set_redirect("/", 303);
    spdlog::info("dashboard: {} (role {}) logged in", principal->name, RoleWord(principal->role));
  }

  void Logout(const Request& req, Response& res) {
    auto caller = Authenticate(req);
    if (!caller.ok() || !caller->session) {
      return SendError(res, 400, "no session to end: bearer requests have none");
    }
    sessions_.Remove(caller->session->id);
    res.set_header("Set-Cookie", SessionCookie("", true));
    SendJson(res, 200, {{"logged_out", true}});
  }

  void AssetRoutes() {
    tls_->Get("/", [](const Request& req, Response& res) { ServeAsset(req, res, "index.html"); });
    tls_->Get(R"(/assets/(.+))", [](const Request& req, Response& res) {
      ServeAsset(req, res, req.matches[1].str());
    });
  }

  void JobRoutes() {
    tls_->Get("/api/v1/jobs", [this](const Request&, Response& res) {
      auto r = reader_.ListJobs();
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::JobsJson(*r));
    });
    tls_->Get(R"(/api/v1/jobs/([^/]+))", [this](const Request& req, Response& res) {
      auto id = ParseJobId(req.matches[1].str());
      if (!id.ok()) return SendStatus(res, id.status());
      auto r = reader_.GetJob(*id);
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::JobJson(*r));
    });
    tls_->Get(R"(/api/v1/jobs/([^/]+)/timeline(\.svg)?)",
              [this](const Request& req, Response& res) { Timeline(req, res); });
    tls_->Get(R"(/api/v1/jobs/([^/]+)/failures)",
              [this](const Request& req, Response& res) { Failures(req, res); });
    tls_->Get(R"(/api/v1/jobs/([^/]+)/tasks/([^/]+)/log)",
              [this](const Request& req, Response& res) { TaskLog(req, res); });
    tls_->Get(R"(/api/v1/jobs/([^/]+)/attempts/([0-9]{1,20})/log)",
              [this](const Request& req, Response& res) { AttemptLog(req, res); });
  }

  // An attempt's kept output as plain text (never rendered as a page: nosniff, text/plain).
  void AttemptLog(const Request& req, Response& res) {
    auto id = ParseJobId(req.matches[1].str());
    if (!id.ok()) return SendStatus(res, id.status());
    uint64_t attempt = 0;
    const std::string a = req.matches[2].str();
    if (std::from_chars(a.data(), a.data() + a.size(), attempt).ec != std::errc()) {
      return SendError(res, 400, "attempt id out of range");
    }
    auto text = reader_.GetAttemptLog(*id, attempt);
    if (!text.ok()) return SendStatus(res, text.status());
    res.set_header("Cache-Control", "no-store");
    res.set_content(*text, "text/plain; charset=utf-8");
  }

  // A page of a job's failed tasks: ?after=TASK (the cursor: tasks after it) and ?limit=N.
  void Failures(const Request& req, Response& res) {
    auto id = ParseJobId(req.matches[1].str());
    if (!id.ok()) return SendStatus(res, id.status());
    auto after = UintParam(req, "after");
    if (!after.ok()) return SendStatus(res, after.status());
    auto limit = UintParam(req, "limit");
    if (!limit.ok()) return SendStatus(res, limit.status());
    v1::FailedTasksRequest freq;
    freq.set_job(*id);
    if (*after) freq.set_after_task(**after);
    if (*limit) freq.set_limit(**limit);
    auto page = reader_.ListFailedTasks(freq);
    if (!page.ok()) return SendStatus(res, page.status());
    SendJson(res, 200, api::FailedTasksJson(*page));
  }

  void TaskLog(const Request& req, Response& res) {
    auto id = ParseJobId(req.matches[1].str());
    if (!id.ok()) return SendStatus(res, id.status());
    const std::string task = req.matches[2].str();
    uint32_t index = 0;
    auto r = std::from_chars(task.data(), task.data() + task.size(), index);
    if (task.empty() || r.ec != std::errc() || r.ptr != task.data() + task.size()) {
      return SendError(res, 400, "task index '" + task.substr(0, 64) + "' is not an integer");
    }
    v1::TaskRef ref;
    ref.set_job(*id);
    ref.set_task(index);
    auto log = reader_.GetTaskLog(ref);
    if (!log.ok()) return SendStatus(res, log.status());
    SendJson(res, 200, api::TaskLogJson(*log));
  }

  void Timeline(const Request& req, Response& res) {
    auto id = ParseJobId(req.matches[1].str());
    if (!id.ok()) return SendStatus(res, id.status());
    v1::TimelineRequest treq;
    treq.set_job(*id);
    if (req.has_param("max_attempts")) {
      const std::string s = req.get_param_value("max_attempts");
      uint32_t n = 0;
      auto r = std::from_chars(s.data(), s.data() + s.size(), n);
      if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
        return SendError(res, 400, "max_attempts must be a non-negative integer");
      }
      treq.set_max_attempts(n);
    }
    auto t = reader_.GetJobTimeline(treq);
    if (!t.ok()) return SendStatus(res, t.status());
    if (req.matches[2].matched) {
      res.set_header("Cache-Control", "no-store");
      res.set_content(report::RenderTimelineSvg(*t), "image/svg+xml");
    } else {
      SendJson(res, 200, api::TimelineJson(*t));
    }
  }

  void EventRoutes() {
    tls_->Get("/api/v1/events", [this](const Request&, Response& res) {
      if (streams_.fetch_add(1) >= options_.max_event_streams) {
        streams_.fetch_sub(1);
        return SendError(res, 503,
                         absl::StrCat("too many event streams open (at most ",
                                      options_.max_event_streams, "); try again later"));
      }
      res.set_header("Cache-Control", "no-store");
      res.set_header("X-Accel-Buffering", "no");
      auto seen = std::make_shared<uint64_t>(feed_.version());
      auto first = std::make_shared<bool>(true);
      res.set_chunked_content_provider(
          "text/event-stream",
          [this, seen, first](size_t, httplib::DataSink& sink) {
            return NextEvent(*seen, *first, sink);
          },
          [this](bool) { streams_.fetch_sub(1); });
    });
  }

  // One step of an event stream: the hello, then a change or a keepalive comment.
  bool NextEvent(uint64_t& seen, bool& first, httplib::DataSink& sink) {
    if (first) {
      // The version now, so a client knows where it starts; then changes only.
      first = false;
      const std::string hello =
          absl::StrCat("retry: 2000\nevent: hello\ndata: {\"version\":", seen, "}\n\n");
      return sink.write(hello.data(), hello.size());
    }
    const uint64_t v = feed_.WaitChange(seen, options_.keepalive);
    if (feed_.closed()) {
      sink.done();
      return true;
    }
    std::string out;
    const bool changed = v != seen;
    if (changed) {
      seen = v;
      out = absl::StrCat("event: change\ndata: {\"version\":", v, "}\n\n");
    } else {
      out = ": keepalive\n\n";
    }
    if (!sink.write(out.data(), out.size())) return false;
    // Coalesce: changes during the gap go out as one event after it.
    if (changed && feed_.WaitClosed(options_.min_event_gap)) sink.done();
    return true;
  }

  static void ServeAsset(const Request& req, Response& res, const std::string& path) {
    auto a = dashboard::FindAsset(path);
    if (!a) return SendError(res, 404, "no such asset: " + path.substr(0, 200));
    // Behind the credentials, so private; revalidated each time (the ETag changes with the
    // binary).
    res.set_header("Cache-Control", "private, no-cache");
    res.set_header("ETag", std::string(a->etag));
    if (req.get_header_value("If-None-Match") == a->etag) {
      res.status = 304;
      return;
    }
    res.set_content(a->bytes.data(), a->bytes.size(), std::string(a->mime));
  }

  ServerOptions options_;
  PoolReader& reader_;
  ChangeFeed& feed_;
  const platform::Clock& clock_;
  SessionTable sessions_;
  std::unique_ptr<TlsServer> tls_;
  HostAllowList allowed_;
  std::string host_;
  int port_ = 0;
  std::atomic<int> streams_{0};
  std::atomic<bool> shut_down_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      PoolReader& reader, ChangeFeed& feed) {
  auto impl = std::make_unique<ServerImpl>(options, reader, feed);
  if (auto st = impl->Init(); !st.ok()) return st;
  return std::unique_ptr<Server>(std::move(impl));
}

}  // namespace idlepool::http
