// The HTTPS server for real: an http::Server on 127.0.0.1:0 serving a throwaway CA's certificate
// (the pool CA, trust/ca.h), and clients that are cpp-httplib's SSLClient verifying it, or raw
// OpenSSL connections for what a well-behaved client would not send. What a user sees: status
// codes, cookies, closed connections, and the server's memory under floods (the peak resident
// memory of this process, which the server runs in). Every wait is bounded by a generous socket
// timeout (a hang bound, not a speed assertion); no test sleeps.
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "http/http_server.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "platform/clock.h"
#include "platform/write_file.h"
#include "trust/ca.h"

namespace idlepool {
namespace {

namespace fs = std::filesystem;
using http::ServerOptions;

constexpr int kHangBoundSeconds = 60;  // a bound on a hang, never a speed assertion

class FakeReader final : public http::PoolReader {
 public:
  absl::StatusOr<v1::ListWorkersReply> ListWorkers() override {
    v1::ListWorkersReply r;
    r.add_workers()->set_worker("secret-worker");
    return r;
  }
  absl::StatusOr<v1::ListJobsReply> ListJobs() override { return v1::ListJobsReply(); }
  absl::StatusOr<v1::JobStatus> GetJob(uint64_t job) override {
    return absl::NotFoundError("no job");
  }
  absl::StatusOr<v1::JobTimeline> GetJobTimeline(const v1::TimelineRequest&) override {
    return absl::NotFoundError("no job");
  }
  // Echoes the cursor it was given, so a test sees how the query string was read.
  absl::StatusOr<v1::FailedTasksPage> ListFailedTasks(const v1::FailedTasksRequest& req) override {
    if (req.job() != 7) return absl::NotFoundError("no job");
    v1::FailedTasksPage p;
    p.set_job(7);
    p.set_total(req.has_after_task() ? req.after_task() : 999);
    p.add_tasks()->set_index(req.limit());
    return p;
  }
  absl::StatusOr<v1::TaskLog> GetTaskLog(const v1::TaskRef& req) override {
    v1::TaskLog l;
    l.set_job(req.job());
    l.set_task(req.task());
    l.add_attempts()->set_log_tail("secret-tail");
    return l;
  }
  std::string Metrics() override { return "idlepool_up 1\n"; }
};

class FakeClock final : public platform::Clock {
 public:
  core::MonoTime Now() const override { return core::MonoTime(core::Millis(ms.load())); }
  int64_t WallMs() const override { return ms.load(); }
  std::atomic<int64_t> ms{1000};
};

// Tokens of each role, as the coordinator's authenticator would know them.
absl::StatusOr<trust::Principal> Authenticate(std::string_view token) {
  static const std::map<std::string, trust::Principal, std::less<>> kTokens = {
      {"read-token", {trust::Role::kRead, "ann", "id-read"}},
      {"submit-token", {trust::Role::kSubmit, "bob", "id-submit"}},
      {"worker-token", {trust::Role::kWorker, "laptop", ""}},
  };
  auto it = kTokens.find(token);
  if (it == kTokens.end()) return absl::UnauthenticatedError("unknown token");
  return it->second;
}

long StatusKb(const std::string& field) {  // "VmRSS:", "VmHWM:" of /proc/self/status
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  }
  return -1;
}

// The process's memory from now on: its peak (VmHWM, reset to the present RSS through
// /proc/self/clear_refs) minus what it holds now, so that memory taken and given back in between
// counts too. Call Growth() after.
class PeakMemory {
 public:
  PeakMemory() {
    std::ofstream("/proc/self/clear_refs") << "5";
    base_kb_ = StatusKb("VmRSS:");
  }
  long GrowthKb() const { return StatusKb("VmHWM:") - base_kb_; }

 private:
  long base_kb_ = 0;
};

// A connection that sends whatever it is told: TCP only, or TLS trusting any certificate (it
// tests the server's bounds, not its identity). Blocking, each wait bounded by kHangBoundSeconds.
class RawConnection {
 public:
  RawConnection(int port, bool tls) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{kHangBoundSeconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (!ok_ || !tls) return;
    ctx_ = SSL_CTX_new(TLS_client_method());
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    ok_ = SSL_connect(ssl_) == 1;
  }
  ~RawConnection() {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  bool ok() const { return ok_; }

  // Sends all of `data` over TLS; false when the connection failed first.
  bool Send(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, data.data() + off, static_cast<int>(data.size() - off));
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Half-closes: the server sees the end of what is sent.
  void FinishSending() { ::shutdown(fd_, SHUT_WR); }
  // What the server sends until it closes.
  std::string ReadToEnd() {
    std::string out;
    char buf[4096];
    for (;;) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // Whether the server closed this connection (reads until the end or an error).
  bool ClosedByServer() {
    char buf[256];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool ok_ = false;
};

class HttpsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("https_server_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // The pool CA and a server certificate from it, as the coordinator makes them.
    const int64_t now = platform::SystemClock().WallMs() / 1000;
    bool created = false;
    auto ca = trust::CertificateAuthority::LoadOrCreate(dir_.string(), now, &created);
    ASSERT_TRUE(ca.ok()) << ca.status();
    const std::string key = trust::NewPrivateKeyPem().value();
    auto cert =
        (*ca)->IssueServer(trust::PublicKeyPemOf(key).value(), {"localhost", "127.0.0.1"}, now);
    ASSERT_TRUE(cert.ok()) << cert.status();
    pki_ = Pki{(dir_ / "ca.pem").string(), (dir_ / "server.pem").string(),
               (dir_ / "server.key").string()};
    ASSERT_TRUE(
        platform::WriteFileAtomically(pki_.chain_file, cert->cert_pem + (*ca)->cert_pem(), 0644)
            .ok());
    ASSERT_TRUE(platform::WriteFileAtomically(pki_.key_file, key, 0600).ok());
    options_.address = "127.0.0.1:0";
    options_.tls_cert_file = pki_.chain_file;
    options_.tls_key_file = pki_.key_file;
    options_.authenticate = Authenticate;
    options_.clock = &clock_;
    options_.limits.write_timeout = std::chrono::seconds(kHangBoundSeconds);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    fs::remove_all(dir_);
  }

  void Start() {
    auto s = http::Server::Start(options_, reader_, feed_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    port_ = server_->port();
  }

  std::unique_ptr<httplib::SSLClient> Client() {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    c->set_ca_cert_path(pki_.ca_file);
    c->enable_server_certificate_verification(true);
    c->set_read_timeout(kHangBoundSeconds, 0);
    c->set_write_timeout(kHangBoundSeconds, 0);
    return c;
  }

  std::string Origin() const { return "https://127.0.0.1:" + std::to_string(port_); }
  std::string Head(const std::string& first_line) const {
    return first_line + "\r\nHost: 127.0.0.1:" + std::to_string(port_) +
           "\r\nAuthorization: Bearer read-token\r\n";
  }
  int Status(const std::string& path) {
    auto res = Client()->Get(path, {{"Authorization", "Bearer read-token"}});
    return res ? res->status : -1;
  }

  // POST /login with `token` in the form body; the session cookie it set ("" if none).
  std::string Login(const std::string& token, int* status = nullptr) {
    auto res = Client()->Post("/login", {{"Origin", Origin()}}, "token=" + token,
                              "application/x-www-form-urlencoded");
    if (!res) return "";
    if (status) *status = res->status;
    const std::string cookie = res->get_header_value("Set-Cookie");
    const size_t semi = cookie.find(';');
    return cookie.substr(0, semi);
  }

  fs::path dir_;
  struct Pki {
    std::string ca_file, chain_file, key_file;
  };
  Pki pki_;
  ServerOptions options_;
  FakeReader reader_;
  http::ChangeFeed feed_;
  FakeClock clock_;
  std::unique_ptr<http::Server> server_;
  int port_ = 0;
};

TEST_F(HttpsServerTest, BearerTokensOfReadAndSubmitRead) {
  Start();
  for (const char* token : {"read-token", "submit-token"}) {
    auto res =
        Client()->Get("/api/v1/workers", {{"Authorization", std::string("Bearer ") + token}});
    ASSERT_TRUE(res) << token;
    EXPECT_EQ(res->status, 200) << token;
    EXPECT_NE(res->body.find("secret-worker"), std::string::npos);
  }
  // Keep-alive: three requests on one client's connection.
  auto c = Client();
  for (int i = 0; i < 3; ++i) {
    auto res = c->Get("/metrics", {{"Authorization", "Bearer read-token"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->body, "idlepool_up 1\n");
  }
}

TEST_F(HttpsServerTest, FailuresArePagedByTheQueryAndTaskLogsNamedByThePath) {
  Start();
  const httplib::Headers read = {{"Authorization", "Bearer read-token"}};
  auto res = Client()->Get("/api/v1/jobs/7/failures?after=3&limit=2", read);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["total"], 3);                     // the cursor as read
  EXPECT_EQ(j["failed_tasks"][0]["index"], 2);  // the limit as read
  res = Client()->Get("/api/v1/jobs/7/failures", read);
  ASSERT_TRUE(res);
  EXPECT_EQ(nlohmann::json::parse(res->body)["total"], 999);  // no cursor: from the first
  for (const char* bad : {"/api/v1/jobs/7/failures?after=x", "/api/v1/jobs/7/failures?after=-1",
                          "/api/v1/jobs/7/failures?limit=99999999999", "/api/v1/jobs/0/failures",
                          "/api/v1/jobs/7/tasks/x/log"}) {
    res = Client()->Get(bad, read);
    ASSERT_TRUE(res) << bad;
    EXPECT_EQ(res->status, 400) << bad;
  }
  res = Client()->Get("/api/v1/jobs/8/failures", read);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  res = Client()->Get("/api/v1/jobs/7/tasks/4/log", read);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["task"], 4);
  EXPECT_EQ(j["attempts"][0]["log_tail"], "secret-tail");
  for (const char* path : {"/api/v1/jobs/7/failures", "/api/v1/jobs/7/tasks/4/log"}) {
    res = Client()->Get(path, {{"Authorization", "Bearer worker-token"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403) << path;
    res = Client()->Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << path;
    EXPECT_EQ(res->body.find("secret-tail"), std::string::npos);
  }
}

TEST_F(HttpsServerTest, NoWrongOrWorkerCredentialsGetNoData) {
  Start();
  const httplib::Headers cases[] = {{},
                                    {{"Authorization", "Bearer nope"}},
                                    {{"Authorization", "Basic cmVhZC10b2tlbg=="}},
                                    {{"Cookie", "idlepool_session=read-token"}},
                                    {{"Cookie", "idlepool_token=read-token"}}};
  for (const auto& headers : cases) {
    for (const char* path : {"/api/v1/workers", "/metrics", "/api/v1/events", "/assets/app.js"}) {
      auto res = Client()->Get(path, headers);
      ASSERT_TRUE(res) << path;
      EXPECT_EQ(res->status, 401) << path;
      EXPECT_EQ(res->body.find("secret-worker"), std::string::npos);
    }
  }
  auto res = Client()->Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_NE(res->body.find(R"(<form method="post" action="/login">)"), std::string::npos);
  // A worker's credentials never reach the HTTP API, bearer or login.
  res = Client()->Get("/api/v1/workers", {{"Authorization", "Bearer worker-token"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(res->body.find("secret-worker"), std::string::npos);
  int status = 0;
  EXPECT_EQ(Login("worker-token", &status), "");
  EXPECT_EQ(status, 403);
}

TEST_F(HttpsServerTest, WrongHostIsMisdirected) {
  Start();
  const httplib::Headers auth = {{"Authorization", "Bearer read-token"}};
  for (std::string host : {"evil.example:" + std::to_string(port_), std::string("127.0.0.1:1"),
                           std::string("127.0.0.1")}) {
    httplib::Headers h = auth;
    h.emplace("Host", host);
    auto res = Client()->Get("/api/v1/workers", h);
    ASSERT_TRUE(res) << host;
    EXPECT_EQ(res->status, 421) << host;
    EXPECT_NE(res->body.find("\"error\""), std::string::npos);
    EXPECT_EQ(res->body.find("secret-worker"), std::string::npos);
  }
  httplib::Headers h = auth;
  h.emplace("Host", "localhost:" + std::to_string(port_));
  auto res = Client()->Get("/api/v1/workers", h);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpsServerTest, WrongOriginIsRefused) {
  Start();
  for (std::string origin : {std::string("https://evil.example"), std::string("null"),
                             "http://127.0.0.1:" + std::to_string(port_),
                             "https://127.0.0.1:" + std::to_string(port_ + 1)}) {
    auto res = Client()->Get("/api/v1/workers",
                             {{"Authorization", "Bearer read-token"}, {"Origin", origin}});
    ASSERT_TRUE(res) << origin;
    EXPECT_EQ(res->status, 403) << origin;
    EXPECT_EQ(res->body.find("secret-worker"), std::string::npos);
  }
  auto res = Client()->Get("/api/v1/workers",
                           {{"Authorization", "Bearer read-token"}, {"Origin", Origin()}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpsServerTest, LoginGivesASessionCookieThatIsNotTheToken) {
  Start();
  auto res = Client()->Post("/login", {{"Origin", Origin()}}, "token=read-token",
                            "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 303);
  EXPECT_EQ(res->get_header_value("Location"), "/");
  const std::string set_cookie = res->get_header_value("Set-Cookie");
  EXPECT_EQ(set_cookie.find("read-token"), std::string::npos) << set_cookie;
  ASSERT_EQ(set_cookie.rfind("idlepool_session=", 0), 0u) << set_cookie;
  const std::string id = set_cookie.substr(17, set_cookie.find(';') - 17);
  EXPECT_EQ(id.size(), 43u);
  EXPECT_NE(set_cookie.find("; HttpOnly"), std::string::npos);
  EXPECT_NE(set_cookie.find("; Secure"), std::string::npos);
  EXPECT_NE(set_cookie.find("; SameSite=Strict"), std::string::npos);
  EXPECT_NE(set_cookie.find("; Path=/"), std::string::npos);
  // Not "no-referrer": with it a browser sends "Origin: null" on the page's own POSTs.
  EXPECT_EQ(res->get_header_value("Referrer-Policy"), "same-origin");

  const std::string cookie = "idlepool_session=" + id;
  res = Client()->Get("/api/v1/workers", {{"Cookie", cookie}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = Client()->Get("/api/v1/session", {{"Cookie", cookie}});
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("\"name\":\"ann\""), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("\"role\":\"read\""), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("\"csrf\":\""), std::string::npos) << res->body;
  EXPECT_EQ(res->body.find("read-token"), std::string::npos);
  // Two logins, two sessions.
  EXPECT_NE(Login("read-token"), cookie);
}

TEST_F(HttpsServerTest, TokensInAddressesOrWithoutOriginLogNobodyIn) {
  Start();
  auto res = Client()->Get("/login?token=read-token");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_FALSE(res->has_header("Set-Cookie"));
  res = Client()->Post("/login?token=read-token", {{"Origin", Origin()}}, "token=read-token",
                       "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_FALSE(res->has_header("Set-Cookie"));
  // Without an Origin (not a browser on this server's page): no login, whatever the token.
  res = Client()->Post("/login", "token=read-token", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_FALSE(res->has_header("Set-Cookie"));
  int status = 0;
  EXPECT_EQ(Login("wrong-token", &status), "");
  EXPECT_EQ(status, 401);
  res = Client()->Get("/login");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpsServerTest, TheCookieAloneCannotChangeState) {
  Start();
  const std::string cookie = Login("submit-token");
  ASSERT_FALSE(cookie.empty());
  auto info = Client()->Get("/api/v1/session", {{"Cookie", cookie}});
  ASSERT_TRUE(info);
  const size_t at = info->body.find("\"csrf\":\"") + 8;
  const std::string csrf = info->body.substr(at, info->body.find('"', at) - at);
  ASSERT_EQ(csrf.size(), 43u);
  // The cookie, even with a matching Origin, or with a wrong CSRF token: refused.
  for (const httplib::Headers& h :
       {httplib::Headers{{"Cookie", cookie}},
        httplib::Headers{{"Cookie", cookie}, {"Origin", Origin()}},
        httplib::Headers{{"Cookie", cookie}, {"X-Idlepool-CSRF", csrf.substr(1) + "x"}}}) {
    auto res = Client()->Post("/logout", h, "", "text/plain");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403);
  }
  auto res = Client()->Get("/api/v1/workers", {{"Cookie", cookie}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << "the refused logouts ended the session";
  // With its CSRF token: done, and the cookie is worth nothing after.
  res =
      Client()->Post("/logout", {{"Cookie", cookie}, {"X-Idlepool-CSRF", csrf}}, "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Set-Cookie").find("Max-Age=0"), std::string::npos);
  res = Client()->Get("/api/v1/workers", {{"Cookie", cookie}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
}

// RFC 9112: a request without Content-Length or Transfer-Encoding has no body (cpp-httplib 0.11
// would wait for one until the connection closed: `curl -X POST`).
TEST_F(HttpsServerTest, APostWithoutALengthHasNoBody) {
  Start();
  RawConnection c(port_, true);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send(Head("POST /logout HTTP/1.1") + "\r\n"));
  const std::string answer = c.ReadToEnd();
  EXPECT_EQ(answer.rfind("HTTP/1.1 400 ", 0), 0u) << answer.substr(0, 200);  // bearer: no session
  EXPECT_NE(answer.find("no session to end"), std::string::npos) << answer;
}

TEST_F(HttpsServerTest, SessionsExpireWhenIdleAndWhenTheirTokenIsRevoked) {
  options_.session_idle_timeout = std::chrono::hours(12);
  Start();
  const std::string a = Login("read-token");
  const std::string b = Login("submit-token");
  auto status = [&](const std::string& cookie) {
    auto res = Client()->Get("/api/v1/jobs", {{"Cookie", cookie}});
    return res ? res->status : -1;
  };
  clock_.ms += 11 * 3600 * 1000;
  EXPECT_EQ(status(a), 200);  // used: a has 12 more hours
  clock_.ms += 2 * 3600 * 1000;
  EXPECT_EQ(status(b), 401);  // 13 h unused
  EXPECT_EQ(status(a), 200);
  EXPECT_EQ(server_->EndSessionsOf("id-read"), 1u);
  EXPECT_EQ(status(a), 401);
}

TEST_F(HttpsServerTest, PlainHttpAndOldTlsGetNothing) {
  Start();
  httplib::Client plain("127.0.0.1", port_);
  plain.set_read_timeout(kHangBoundSeconds, 0);
  auto res = plain.Get("/api/v1/workers", {{"Authorization", "Bearer read-token"}});
  EXPECT_FALSE(res) << "plain HTTP answered " << res->status;

  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  EXPECT_NE(SSL_connect(ssl), 1) << "a TLS 1.2 handshake succeeded";
  SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(ctx);
}

// Issue 21: cpp-httplib 0.11 kept every header line (300 MB of them raised the coordinator to
// 484 MB). Here a request's head is cut at max_header_bytes / max_header_lines: 32 MiB of header
// lines, or one endless line, is refused long before it is all sent, and the process (the
// server runs in it) does not grow with it.
TEST_F(HttpsServerTest, HeaderFloodsAreRefusedWithoutGrowth) {
  Start();
  ASSERT_EQ(Status("/api/v1/workers"), 200);  // threads and TLS state made before measuring
  constexpr size_t kFlood = 32 << 20;
  const std::string line = "X-Pad: " + std::string(55, 'a') + "\r\n";  // 64 bytes
  std::string lines, endless(64 << 10, 'a');
  while (lines.size() < (64 << 10)) lines += line;
  const PeakMemory memory;
  for (const std::string* chunk : {&lines, &endless}) {
    RawConnection c(port_, true);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.Send(Head("GET /api/v1/workers HTTP/1.1")));
    size_t sent = 0;
    while (sent < kFlood && c.Send(*chunk)) sent += chunk->size();
    EXPECT_LT(sent, kFlood) << "the server read 32 MiB of request head";
  }
  const long grown_kb = memory.GrowthKb();
  EXPECT_LT(grown_kb, 16 << 10) << "the process grew by " << grown_kb << " KiB at its peak";
  EXPECT_EQ(Status("/api/v1/workers"), 200);
  EXPECT_GE(server_->connections().admitted, 4u);
}

TEST_F(HttpsServerTest, OverlongHeadsGet431) {
  Start();
  // Too many lines (201, small), and a request line longer than the whole allowance.
  std::string many = Head("GET /api/v1/workers HTTP/1.1");
  for (int i = 0; i < 200; ++i) many += "X-Pad: 1\r\n";
  const std::string long_line = "GET /" + std::string(20 << 10, 'a') + " HTTP/1.1\r\n\r\n";
  for (const std::string& request : {many, long_line}) {
    RawConnection c(port_, true);
    ASSERT_TRUE(c.ok());
    c.Send(request + "\r\n");
    c.FinishSending();
    const std::string answer = c.ReadToEnd();
    EXPECT_EQ(answer.rfind("HTTP/1.1 431 ", 0), 0u) << answer.substr(0, 200);
    EXPECT_NE(answer.find("request head too large"), std::string::npos);
    EXPECT_EQ(answer.find("secret-worker"), std::string::npos);
  }
}

TEST_F(HttpsServerTest, OverlongBodiesGet413) {
  Start();
  const std::string post = "POST /login HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                           "\r\nOrigin: " + Origin() +
                           "\r\nContent-Type: application/x-www-form-urlencoded\r\n";
  std::string chunked = post + "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 100; ++i) chunked += "400\r\n" + std::string(1024, 'a') + "\r\n";
  const std::string sized =
      post + "Content-Length: 1048576\r\n\r\ntoken=" + std::string(100 << 10, 'a');
  for (const std::string& request : {chunked, sized}) {
    RawConnection c(port_, true);
    ASSERT_TRUE(c.ok());
    c.Send(request);
    c.FinishSending();
    const std::string answer = c.ReadToEnd();
    EXPECT_EQ(answer.rfind("HTTP/1.1 413 ", 0), 0u) << answer.substr(0, 200);
    EXPECT_EQ(answer.find("Set-Cookie"), std::string::npos);
  }
}

// cpp-httplib inflates a compressed request body without a limit: 47 KiB of gzip (under the
// 64 KiB body limit) would be 48 MiB in memory. Compressed bodies are refused unread.
std::string GzipOfZeros(size_t n) {
  const std::string zeros(n, '0');
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY) != Z_OK) return "";  // 31: gzip
  std::string gz(deflateBound(&z, zeros.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
  z.avail_in = static_cast<uInt>(zeros.size());
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = static_cast<uInt>(gz.size());
  const bool done = deflate(&z, Z_FINISH) == Z_STREAM_END;
  gz.resize(done ? z.total_out : 0);
  deflateEnd(&z);
  return gz;
}

TEST_F(HttpsServerTest, CompressedBodiesAreRefusedUnread) {
  Start();
  ASSERT_EQ(Status("/api/v1/workers"), 200);
  const std::string gz = GzipOfZeros(48 << 20);
  ASSERT_FALSE(gz.empty());
  ASSERT_LT(gz.size(), options_.limits.max_body_bytes);
  const PeakMemory memory;
  RawConnection c(port_, true);
  ASSERT_TRUE(c.ok());
  c.Send("POST /login HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
         "\r\nOrigin: " + Origin() + "\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
         "Content-Encoding: gzip\r\nContent-Length: " + std::to_string(gz.size()) + "\r\n\r\n" +
         gz);
  c.FinishSending();
  const std::string answer = c.ReadToEnd();
  EXPECT_EQ(answer.rfind("HTTP/1.1 415 ", 0), 0u) << answer.substr(0, 200);
  const long grown_kb = memory.GrowthKb();
  EXPECT_LT(grown_kb, 16 << 10) << "the process grew by " << grown_kb << " KiB at its peak";
}

TEST_F(HttpsServerTest, SlowRequestsAndSilentConnectionsAreClosed) {
  options_.limits.request_timeout = std::chrono::milliseconds(300);
  Start();
  RawConnection slow(port_, true);
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE(slow.Send(Head("GET /api/v1/workers HTTP/1.1")));  // and never the blank line
  const std::string answer = slow.ReadToEnd();
  EXPECT_EQ(answer.rfind("HTTP/1.1 408 ", 0), 0u) << answer.substr(0, 200);
  RawConnection silent(port_, false);  // not even a TLS ClientHello
  ASSERT_TRUE(silent.ok());
  EXPECT_TRUE(silent.ClosedByServer());
}

// The slowloris stall: connections that never finish a request (silent ones, and ones stuck in
// their headers), many more than the cap, do not keep a normal request from being answered; the
// longest waiting give way.
TEST_F(HttpsServerTest, IdleConnectionsBeyondTheCapDoNotStopARequest) {
  options_.limits.max_connections = 8;
  Start();
  std::vector<std::unique_ptr<RawConnection>> silent, stuck;
  for (int i = 0; i < 40; ++i) {
    silent.push_back(std::make_unique<RawConnection>(port_, false));
    ASSERT_TRUE(silent.back()->ok());
  }
  for (int i = 0; i < 24; ++i) {
    stuck.push_back(std::make_unique<RawConnection>(port_, true));
    ASSERT_TRUE(stuck.back()->ok());
    ASSERT_TRUE(stuck.back()->Send(Head("GET /api/v1/workers HTTP/1.1")));
  }
  auto res = Client()->Get("/api/v1/workers", {{"Authorization", "Bearer read-token"}});
  ASSERT_TRUE(res) << "a normal request got no answer: " << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  for (auto& c : silent) EXPECT_TRUE(c->ClosedByServer());
  const auto counts = server_->connections();
  EXPECT_EQ(counts.admitted, 65u);
  EXPECT_GE(counts.kicked, 57u);
  EXPECT_LE(counts.live, 8u);
}

TEST_F(HttpsServerTest, ShutdownEndsAnOpenEventStream) {
  Start();
  std::promise<void> hello;
  std::atomic<bool> said_hello{false};
  std::thread stream([&] {
    Client()->Get("/api/v1/events", {{"Authorization", "Bearer read-token"}},
                  [&](const char* data, size_t n) {
                    if (!said_hello.exchange(true)) hello.set_value();
                    return true;
                  });
  });
  ASSERT_EQ(hello.get_future().wait_for(std::chrono::seconds(kHangBoundSeconds)),
            std::future_status::ready);
  server_->Shutdown();
  stream.join();  // returns: the stream ended with the server
  server_.reset();
}

}  // namespace
}  // namespace idlepool
