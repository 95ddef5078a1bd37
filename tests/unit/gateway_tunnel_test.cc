// The gateway (src/serve/gateway.h) reaching replicas through a worker tunnel (TunnelServer in
// this process, certificates of a throwaway pool CA), its health probes, and its HTTPS listener.
// The replica is a small HTTP/1.1 server on 127.0.0.1 driven by the test: its health answer, and
// when each piece of a streamed answer leaves.
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "serve/gateway.h"
#include "serve/tunnel_server.h"
#include "tunnel_test_util.h"

namespace idlepool::serve {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using testing::TunnelCa;

constexpr uint64_t kAttempt = 5;

bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 3000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The replica: GET /health (200 when healthy, else 503), GET /hello (a sized answer), GET
// /stream (chunked; each of "one", "two", "three" leaves when the test releases it). Keep-alive.
class Replica {
 public:
  Replica() : acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] {
      for (;;) {
        boost::system::error_code ec;
        net::ip::tcp::socket s = acceptor_.accept(ec);
        if (ec || stop_) return;
        int fd = s.release();
        std::lock_guard lock(mu_);
        fds_.push_back(fd);
        conns_.emplace_back([this, fd] { Serve(fd); });
      }
    });
  }
  ~Replica() {
    stop_ = true;
    {
      std::lock_guard lock(mu_);
      released_ = 1000;
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    cv_.notify_all();
    (void)testing::ConnectLoopback(port());
    thread_.join();
    for (auto& t : conns_) t.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  void SetHealthy() { healthy_ = true; }
  void Release() {
    std::lock_guard lock(mu_);
    ++released_;
    cv_.notify_all();
  }
  std::atomic<int> health_probes{0}, requests{0};

 private:
  void Serve(int fd) {
    std::string in;
    for (;;) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        char buf[4096];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return (void)::close(fd);
        in.append(buf, static_cast<size_t>(n));
      }
      std::string head = in.substr(0, end);
      in.erase(0, end + 4);
      size_t body = 0;  // POST /size: its body is read, its length answered
      if (size_t at = head.find("Content-Length: "); at != std::string::npos) {
        body = std::stoul(head.substr(at + 16));
      }
      while (in.size() < body) {
        char buf[65536];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return (void)::close(fd);
        in.append(buf, static_cast<size_t>(n));
      }
      const std::string got = std::to_string(body);
      in.erase(0, body);
      if (head.starts_with("POST /size ")) {
        ++requests;
        Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(got.size()) + "\r\n\r\n" +
                      got);
      } else if (head.starts_with("GET /health ")) {
        ++health_probes;
        Write(fd, healthy_
                      ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                      : "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\n\r\nloading");
      } else if (head.starts_with("GET /stream ")) {
        ++requests;
        Write(fd,
              "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
              "Transfer-Encoding: chunked\r\n\r\n");
        int i = 0;
        for (const char* piece : {"one", "two", "three"}) {
          std::unique_lock lock(mu_);
          cv_.wait(lock, [&] { return released_ > i; });
          lock.unlock();
          std::string p(piece);
          Write(fd, std::to_string(p.size()) + "\r\n" + p + "\r\n");
          ++i;
        }
        Write(fd, "0\r\n\r\n");
      } else {
        ++requests;
        Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\nhello from replica");
      }
    }
  }
  static void Write(int fd, const std::string& s) { (void)!::write(fd, s.data(), s.size()); }

  net::io_context io_;
  net::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false}, healthy_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int released_ = 0;
  std::vector<int> fds_;
  std::thread thread_;
  std::vector<std::thread> conns_;
};

// A blocking HTTP client (plain or TLS) that keeps its connection.
template <class Stream>
std::string Get(Stream& s, const std::string& target, std::string* in) {
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n\r\n";
  boost::system::error_code ec;
  net::write(s, net::buffer(req), ec);
  if (ec) return "write: " + ec.message();
  size_t n = net::read_until(s, net::dynamic_buffer(*in), "\r\n\r\n", ec);
  if (ec) return "read: " + ec.message();
  std::string head = in->substr(0, n);
  in->erase(0, n);
  size_t at = head.find("Content-Length: ");
  size_t length = at == std::string::npos ? 0 : std::stoul(head.substr(at + 16));
  while (in->size() < length && !ec) {
    char buf[4096];
    size_t got = s.read_some(net::buffer(buf), ec);
    in->append(buf, got);
  }
  std::string body = in->substr(0, length);
  in->erase(0, length);
  return head.substr(0, head.find("\r\n")) + " " + body;
}

class GatewayTunnelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TunnelServerOptions t;
    t.listen = "127.0.0.1:0";
    t.tls = ca_.Worker("w1");
    t.open = [this](uint64_t attempt) -> absl::StatusOr<platform::UniqueFd> {
      ++opens_;
      if (attempt != kAttempt) return absl::NotFoundError("no such replica");
      return testing::ConnectLoopback(replica_.port());
    };
    tunnel_ = TunnelServer::Start(std::move(t)).value();
  }

  void StartGateway(bool https) {
    GatewayOptions o;
    o.listen = "127.0.0.1:0";
    o.authenticate = [](std::string_view key) -> std::optional<KeyGrant> {
      if (key != "k") return std::nullopt;
      return KeyGrant{"id", "someone", {}};
    };
    o.tunnel_tls = ca_.Gateway("gw");
    o.health_interval = std::chrono::milliseconds(20);
    if (https) {
      TunnelTls server = ca_.Server();
      o.tls_cert_chain_pem = server.cert_chain_pem;
      o.tls_key_pem = server.key_pem;
    }
    gateway_ = std::make_unique<Gateway>(std::move(o));
    gateway_->Start();
  }
  // The service "svc" (pass-through) with one replica behind w1's tunnel.
  void AddReplica(const std::string& health, TunnelRoute route = {"w1", kAttempt},
                  std::chrono::milliseconds queue_deadline = std::chrono::seconds(30)) {
    ServiceSpec spec;
    spec.name = "svc";
    spec.protocol = Protocol::kHttp;
    spec.health = health;
    spec.routing.eject_after_errors = 1000;
    spec.routing.queue_deadline = queue_deadline;
    ASSERT_TRUE(gateway_->AddService(spec).ok());
    ASSERT_TRUE(gateway_->AddReplica("svc", 1, "127.0.0.1", tunnel_->port(), 0, route).ok());
    if (health.empty()) ASSERT_TRUE(gateway_->SetReady(1).ok());
  }
  net::ip::tcp::socket Connect() {
    net::ip::tcp::socket s(io_);
    s.connect({net::ip::make_address("127.0.0.1"), gateway_->port()});
    timeval tv{30, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return s;
  }

  net::io_context io_;
  TunnelCa ca_;
  Replica replica_;
  std::atomic<int> opens_{0};
  std::unique_ptr<TunnelServer> tunnel_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(GatewayTunnelTest, RequestsGoThroughTheTunnelOnOneKeptConnection) {
  StartGateway(false);
  AddReplica("");
  net::ip::tcp::socket s = Connect();
  std::string in;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Get(s, "/services/svc/hello", &in), "HTTP/1.1 200 OK hello from replica");
  }
  EXPECT_EQ(replica_.requests.load(), 3);
  EXPECT_EQ(opens_.load(), 1) << "the tunnel connection is kept and reused";
}

// A request body larger than the tunnel's buffers and many TLS records (an image for OCR, a long
// prompt) reaches the replica whole, over a plain and over an HTTPS client connection.
TEST_F(GatewayTunnelTest, ALargeRequestBodyGoesThroughTheTunnel) {
  for (bool https : {false, true}) {
    StartGateway(https);
    AddReplica("");
    const std::string body(300 * 1024, 'x');
    const std::string req =
        "POST /services/svc/size HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        "k\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    std::string answer;
    if (https) {
      net::ssl::context ctx(net::ssl::context::tls_client);
      ctx.add_certificate_authority(net::buffer(ca_.Server().ca_pem));
      ctx.set_verify_mode(net::ssl::verify_peer);
      net::ssl::stream<net::ip::tcp::socket> s(Connect(), ctx);
      s.handshake(net::ssl::stream_base::client);
      net::write(s, net::buffer(req));
      boost::system::error_code ec;
      net::read_until(s, net::dynamic_buffer(answer), "\r\n\r\n" + std::to_string(body.size()), ec);
    } else {
      net::ip::tcp::socket s = Connect();
      net::write(s, net::buffer(req));
      boost::system::error_code ec;
      net::read_until(s, net::dynamic_buffer(answer), "\r\n\r\n" + std::to_string(body.size()), ec);
    }
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK")) << (https ? "https: " : "http: ") << answer;
    EXPECT_TRUE(answer.ends_with(std::to_string(body.size()))) << answer;
    gateway_->Stop();
  }
}

TEST_F(GatewayTunnelTest, AStreamPassesPieceByPiece) {
  StartGateway(false);
  AddReplica("");
  net::ip::tcp::socket s = Connect();
  std::string req =
      "GET /services/svc/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n\r\n";
  net::write(s, net::buffer(req));
  std::string got;
  replica_.Release();
  for (const char* piece : {"one", "two", "three"}) {
    // Each piece reaches the client while the replica holds the next one back.
    while (got.find(piece) == std::string::npos) {
      char buf[4096];
      boost::system::error_code ec;
      size_t n = s.read_some(net::buffer(buf), ec);
      ASSERT_FALSE(ec) << ec.message() << " before '" << piece << "'; got: " << got;
      got.append(buf, n);
    }
    if (std::string(piece) != "three") replica_.Release();
  }
  EXPECT_NE(got.find("text/event-stream"), std::string::npos);
}

TEST_F(GatewayTunnelTest, AReplicaGetsNothingUntilItsHealthAnswers200) {
  StartGateway(false);
  AddReplica("/health");
  std::atomic<bool> answered{false};
  std::string answer;
  std::thread client([&] {
    net::ip::tcp::socket s = Connect();
    std::string in;
    answer = Get(s, "/services/svc/hello", &in);
    answered = true;
  });
  // Several probes through the tunnel answered 503: the request waits in the queue.
  EXPECT_TRUE(WaitUntil([&] { return replica_.health_probes.load() >= 3; }));
  EXPECT_EQ(replica_.requests.load(), 0);
  EXPECT_FALSE(answered.load());
  replica_.SetHealthy();
  client.join();
  EXPECT_EQ(answer, "HTTP/1.1 200 OK hello from replica");
  EXPECT_EQ(replica_.requests.load(), 1);
  // Ready: the probes stop.
  int probes = replica_.health_probes.load();
  std::string in;
  net::ip::tcp::socket s = Connect();
  EXPECT_EQ(Get(s, "/services/svc/hello", &in), "HTTP/1.1 200 OK hello from replica");
  EXPECT_EQ(replica_.health_probes.load(), probes);
}

TEST_F(GatewayTunnelTest, RemovingAStartingReplicaEndsItsProbe) {
  StartGateway(false);
  AddReplica("/health");
  EXPECT_TRUE(WaitUntil([&] { return replica_.health_probes.load() >= 1; }));
  ASSERT_TRUE(gateway_->Remove(1).ok());
  int probes = replica_.health_probes.load();
  // Another replica's probes show time passing; the removed one's count stays.
  ASSERT_TRUE(
      gateway_->AddReplica("svc", 2, "127.0.0.1", tunnel_->port(), 0, TunnelRoute{"w1", 99}).ok());
  int opens = opens_.load();
  EXPECT_TRUE(WaitUntil([&] { return opens_.load() >= opens + 5; }));
  EXPECT_LE(replica_.health_probes.load(), probes + 1);  // one may have been on the wire
}

TEST_F(GatewayTunnelTest, AnotherWorkerOrAnUnknownAttemptIsAnUpstreamError) {
  StartGateway(false);
  // Replica 1 claims the worker w2 (w1 answers on that port); replica 2 an attempt w1 lacks.
  AddReplica("", TunnelRoute{"w2", kAttempt}, std::chrono::milliseconds(300));
  ASSERT_TRUE(
      gateway_->AddReplica("svc", 2, "127.0.0.1", tunnel_->port(), 0, TunnelRoute{"w1", 77}).ok());
  ASSERT_TRUE(gateway_->SetReady(2).ok());
  net::ip::tcp::socket s = Connect();
  std::string in;
  EXPECT_EQ(Get(s, "/services/svc/hello", &in).substr(0, 10), "HTTP/1.1 5");
  // The request failed on each (an upstream error charged to both), then found none left.
  nlohmann::json snapshot = nlohmann::json::parse(gateway_->SnapshotJson());
  for (const auto& r : snapshot["services"][0]["replicas"]) {
    EXPECT_GE(r["errors"].get<int>(), 1) << r.dump();
  }
  EXPECT_EQ(opens_.load(), 1) << "w1's certificate refused before any CONNECT; 77 answered 404";
  EXPECT_EQ(replica_.requests.load(), 0);
  // A right route next to them: requests are retried onto it.
  ASSERT_TRUE(
      gateway_->AddReplica("svc", 3, "127.0.0.1", tunnel_->port(), 0, TunnelRoute{"w1", kAttempt})
          .ok());
  ASSERT_TRUE(gateway_->SetReady(3).ok());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Get(s, "/services/svc/hello", &in), "HTTP/1.1 200 OK hello from replica");
  }
}

TEST_F(GatewayTunnelTest, HttpsClientsAreServedAndPlainHttpIsNot) {
  StartGateway(true);
  AddReplica("");
  ssl::context ctx(ssl::context::tls_client);
  ctx.add_certificate_authority(net::buffer(ca_.ca_pem()));
  ctx.set_verify_mode(ssl::verify_peer);
  ssl::stream<net::ip::tcp::socket> tls(Connect(), ctx);
  tls.handshake(ssl::stream_base::client);
  std::string in;
  EXPECT_EQ(Get(tls, "/services/svc/hello", &in), "HTTP/1.1 200 OK hello from replica");
  EXPECT_EQ(Get(tls, "/services/svc/hello", &in), "HTTP/1.1 200 OK hello from replica");

  net::ip::tcp::socket plain = Connect();
  in.clear();
  EXPECT_NE(Get(plain, "/services/svc/hello", &in).substr(0, 8), "HTTP/1.1");
  EXPECT_EQ(replica_.requests.load(), 2);
}

TEST(GatewayTlsOptionsTest, BadCertificatesFailStartAndATunnelNeedsOne) {
  GatewayOptions o;
  o.listen = "127.0.0.1:0";
  o.tls_cert_chain_pem = "not pem";
  o.tls_key_pem = "not pem";
  Gateway bad(o);
  EXPECT_THROW(bad.Start(), boost::system::system_error);

  Gateway plain(GatewayOptions{.listen = "127.0.0.1:0"});
  plain.Start();
  ASSERT_TRUE(plain.AddService(ServiceSpec{.name = "s", .protocol = Protocol::kHttp}).ok());
  EXPECT_EQ(plain.AddReplica("s", 1, "127.0.0.1", 9, 0, TunnelRoute{"w1", 1}).code,
            Code::kFailedPrecondition);
  EXPECT_EQ(
      plain.AddService(ServiceSpec{.name = "t", .protocol = Protocol::kHttp, .health = "health"})
          .code,
      Code::kInvalidArgument);
}

}  // namespace
}  // namespace idlepool::serve
