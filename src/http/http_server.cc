#include "http/http_server.h"

#include <openssl/crypto.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/json.h"
#include "dashboard/assets.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "report/timeline_svg.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"

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

constexpr const char* kCookie = "idlepool_token";
constexpr const char* kJson = "application/json";

std::string Dump(const nlohmann::json& j) {
  // Worker names, messages and log tails come from workers: never let bad UTF-8 throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void SendJson(httplib::Response& res, int status, const nlohmann::json& j) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(Dump(j) + "\n", kJson);
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, status, {{"error", message}, {"status", status}});
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

void SendStatus(httplib::Response& res, const absl::Status& st) {
  SendError(res, HttpStatusOf(st), std::string(st.message()));
}

// The value of cookie `name` in a Cookie header ("a=1; b=2"), or "".
std::string CookieValue(const std::string& header, const std::string& name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string part = header.substr(pos, end - pos);
    const size_t a = part.find_first_not_of(' ');
    part = a == std::string::npos ? "" : part.substr(a);
    if (part.size() > name.size() && part.compare(0, name.size(), name) == 0 &&
        part[name.size()] == '=') {
      return part.substr(name.size() + 1);
    }
    pos = end + 1;
  }
  return "";
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

const char* kLoginPage = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>idlepool: log in</title></head>
<body><h1>idlepool</h1>
%ERROR%<form method="get" action="/login">
<label>Pool token <input type="password" name="token" autocomplete="off" autofocus></label>
<button type="submit">Log in</button>
</form>
<p>The token is in the coordinator's DATA_DIR/pool.token; the coordinator prints a login link.</p>
</body></html>
)";

// The login form, status 401 (no session): `error` (plain text, never from the request) is shown
// above it when not empty.
void SendLoginPage(httplib::Response& res, const std::string& error) {
  std::string page = kLoginPage;
  page.replace(page.find("%ERROR%"), 7,
               error.empty() ? std::string() : absl::StrCat("<p id=\"login-error\">", error, "</p>\n"));
  res.status = 401;
  res.set_header("Cache-Control", "no-store");
  res.set_content(page, "text/html; charset=utf-8");
}

// Debian's cpp-httplib is built with brotli, which it runs at its highest quality: a browser
// (which always offers "br") made the coordinator spend 17 s of CPU on one 9 MB timeline of a
// 20,000-task job, against 0.2 s with gzip. Answers are compressed with gzip or not at all: the
// request's Accept-Encoding is cut down to gzip before the library reads it. (The pre-routing
// handler gets the request as const; the server owns it and it is not a const object.)
void KeepOnlyGzip(const httplib::Request& req) {
  auto& headers = const_cast<httplib::Request&>(req).headers;
  auto it = headers.find("Accept-Encoding");
  if (it == headers.end()) return;
  const bool gzip = absl::StrContains(absl::AsciiStrToLower(it->second), "gzip");
  headers.erase("Accept-Encoding");
  if (gzip) headers.emplace("Accept-Encoding", "gzip");
}

class ServerImpl final : public Server {
 public:
  ServerImpl(const ServerOptions& options, PoolReader& reader, ChangeFeed& feed)
      : options_(options), reader_(reader), feed_(feed) {}
  ~ServerImpl() override { Shutdown(); }

  absl::Status Init() {
    auto addr = ParseAddress(options_.address);
    if (!addr.ok()) return addr.status();
    host_ = addr->first;
    const int threads = options_.max_event_streams + 8;
    svr_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    // SO_REUSEADDR only: SO_REUSEPORT would let two coordinators share a port silently.
    svr_.set_socket_options([](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    svr_.set_keep_alive_timeout(5);
    svr_.set_payload_max_length(64 << 10);  // read-only API: no large bodies
    Routes();
    if (addr->second == 0) {
      port_ = svr_.bind_to_any_port(host_);
    } else {
      port_ = svr_.bind_to_port(host_, addr->second) ? addr->second : -1;
    }
    if (port_ <= 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", options_.address, " for the dashboard (port in use, "
                       "or no such address)"));
    }
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    return absl::OkStatus();
  }

  const std::string& host() const override { return host_; }
  int port() const override { return port_; }

  void Shutdown() override {
    if (shut_down_.exchange(true)) return;
    feed_.Close();
    svr_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  bool Authorized(const httplib::Request& req) const {
    std::string got;
    const std::string auth = req.get_header_value("Authorization");
    // The scheme name is case-insensitive (RFC 9110 section 11.1).
    if (auth.size() > 7 && absl::EqualsIgnoreCase(auth.substr(0, 7), "bearer ")) {
      got = auth.substr(7);
    } else {
      got = CookieValue(req.get_header_value("Cookie"), kCookie);
    }
    return Matches(got);
  }

  bool Matches(const std::string& got) const {
    const std::string& want = options_.token;
    return !want.empty() && got.size() == want.size() &&
           CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0;
  }

  void Routes() {
    svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      KeepOnlyGzip(req);
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Referrer-Policy", "no-referrer");
      if (req.path == "/login" || Authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("WWW-Authenticate", "Bearer realm=\"idlepool\"");
      if (req.path == "/") {  // a browser opening the dashboard: the login form, no data
        SendLoginPage(res, "");
        return httplib::Server::HandlerResponse::Handled;
      }
      SendError(res, 401,
                "no or wrong pool token: send \"Authorization: Bearer TOKEN\" or log in at "
                "/login?token=TOKEN");
      return httplib::Server::HandlerResponse::Handled;
    });
    svr_.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                                  std::exception_ptr) { SendError(res, 500, "internal error"); });
    svr_.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (res.body.empty()) {
        SendError(res, res.status, res.status == 404 ? "no such path: " + req.path.substr(0, 200)
                                                     : "request failed");
      }
    });

    svr_.Get("/login", [this](const httplib::Request& req, httplib::Response& res) {
      if (!req.has_param("token")) {
        SendLoginPage(res, "");
        res.status = 200;
        return;
      }
      const std::string token = req.get_param_value("token");
      if (!Matches(token)) {
        SendLoginPage(res, "wrong pool token");
        return;
      }
      res.set_header("Set-Cookie", absl::StrCat(kCookie, "=", token,
                                                "; HttpOnly; SameSite=Strict; Path=/"));
      res.set_header("Cache-Control", "no-store");
      res.set_redirect("/", 303);
    });

    svr_.Get("/", [](const httplib::Request& req, httplib::Response& res) {
      ServeAsset(req, res, "index.html");
    });
    svr_.Get(R"(/assets/(.+))", [](const httplib::Request& req, httplib::Response& res) {
      ServeAsset(req, res, req.matches[1].str());
    });

    svr_.Get("/api/v1/workers", [this](const httplib::Request&, httplib::Response& res) {
      auto r = reader_.ListWorkers();
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::WorkersJson(*r));
    });
    svr_.Get("/api/v1/jobs", [this](const httplib::Request&, httplib::Response& res) {
      auto r = reader_.ListJobs();
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::JobsJson(*r));
    });
    svr_.Get(R"(/api/v1/jobs/([^/]+))", [this](const httplib::Request& req,
                                               httplib::Response& res) {
      auto id = ParseJobId(req.matches[1].str());
      if (!id.ok()) return SendStatus(res, id.status());
      auto r = reader_.GetJob(*id);
      if (!r.ok()) return SendStatus(res, r.status());
      SendJson(res, 200, api::JobJson(*r));
    });
    svr_.Get(R"(/api/v1/jobs/([^/]+)/timeline(\.svg)?)", [this](const httplib::Request& req,
                                                                 httplib::Response& res) {
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
    });

    svr_.Get("/api/v1/events", [this](const httplib::Request&, httplib::Response& res) {
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
            if (*first) {
              // The version now, so a client knows where it starts; then changes only.
              *first = false;
              const std::string hello = absl::StrCat("retry: 2000\nevent: hello\ndata: {\"version\":",
                                                     *seen, "}\n\n");
              return sink.write(hello.data(), hello.size());
            }
            const uint64_t v = feed_.WaitChange(*seen, options_.keepalive);
            if (feed_.closed()) {
              sink.done();
              return true;
            }
            std::string out;
            const bool changed = v != *seen;
            if (changed) {
              *seen = v;
              out = absl::StrCat("event: change\ndata: {\"version\":", v, "}\n\n");
            } else {
              out = ": keepalive\n\n";
            }
            if (!sink.write(out.data(), out.size())) return false;
            // Coalesce: changes during the gap go out as one event after it.
            if (changed && feed_.WaitClosed(options_.min_event_gap)) {
              sink.done();
            }
            return true;
          },
          [this](bool) { streams_.fetch_sub(1); });
    });

    svr_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "no-store");
      res.set_content(reader_.Metrics(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }

  static void ServeAsset(const httplib::Request& req, httplib::Response& res,
                         const std::string& path) {
    auto a = dashboard::FindAsset(path);
    if (!a) return SendError(res, 404, "no such asset: " + path.substr(0, 200));
    // Behind the token, so private; revalidated each time (the ETag changes with the binary).
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
  httplib::Server svr_;
  std::string host_;
  int port_ = 0;
  std::thread thread_;
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
