// The worker tunnel (src/serve/tunnel_server.h) over real sockets on 127.0.0.1, with
// certificates of a throwaway pool CA: the splice both ways (TCP and Unix replicas, the bytes the
// gateway sends after its preface, half-closes), the error answers, who the TLS lets in, and the
// bounds (connections, preface size and deadline). Also the tunnel's texts (tunnel_wire.h).
#include "serve/tunnel_server.h"

#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "gtest/gtest.h"
#include "serve/tunnel_wire.h"
#include "tunnel_test_util.h"

namespace idlepool::serve {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using testing::ConnectLoopback;
using testing::EchoServer;
using testing::TunnelCa;
using testing::TunnelClient;

constexpr uint64_t kEcho = 7, kUnixEcho = 8, kNotListening = 9;

// Polls `done` every 10 ms for up to 30 s.
bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 3000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

uint16_t ClosedPort() {
  net::io_context io;
  net::ip::tcp::acceptor a(io, {net::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();  // closed when `a` goes
}

class TunnelServerTest : public ::testing::Test {
 protected:
  void SetUp() override { server_ = StartServer(1024, std::chrono::milliseconds(10'000)); }
  void TearDown() override {
    server_.reset();
    std::lock_guard lock(mu_);
    for (auto& t : unix_echoes_) t.join();
  }

  std::unique_ptr<TunnelServer> StartServer(size_t max_connections,
                                            std::chrono::milliseconds preface_timeout,
                                            size_t per_address = 256) {
    TunnelServerOptions o;
    o.listen = "127.0.0.1:0";
    o.tls = ca_.Worker("w1");
    o.max_connections = max_connections;
    o.max_connections_per_address = per_address;
    o.check_client = check_;
    o.preface_timeout = preface_timeout;
    o.open = [this](uint64_t attempt) { return Open(attempt); };
    absl::StatusOr<std::unique_ptr<TunnelServer>> s = TunnelServer::Start(std::move(o));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  absl::StatusOr<platform::UniqueFd> Open(uint64_t attempt) {
    ++opens_;
    if (attempt == kEcho) return ConnectLoopback(echo_.port());
    if (attempt == kNotListening) return ConnectLoopback(closed_port_);
    if (attempt != kUnixEcho) return absl::NotFoundError("no such replica");
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return absl::InternalError("socketpair");
    }
    std::lock_guard lock(mu_);
    unix_echoes_.emplace_back([fd = sv[1]] { testing::EchoThenBye(fd); });
    return platform::UniqueFd(sv[0]);
  }

  std::shared_ptr<ssl::context> GatewayContext() {
    return TunnelClientContext(ca_.Gateway("gw")).value();
  }
  // A handshaken client of server_ (expecting the worker "w1").
  std::unique_ptr<TunnelClient> Dial(uint16_t port) {
    auto c = std::make_unique<TunnelClient>(GatewayContext());
    boost::system::error_code ec = c->Dial(port, "w1");
    EXPECT_FALSE(ec) << ec.message();
    return c;
  }
  // The answer to `preface` from a client the server must refuse at the TLS level: "" expected.
  std::string AnswerTo(std::shared_ptr<ssl::context> ctx) {
    TunnelClient c(std::move(ctx));
    if (c.Dial(server_->port(), "w1")) return "";  // refused during the handshake
    if (c.Send(TunnelPreface(kEcho))) return "";
    return c.ReadHead();
  }

  net::io_context io_;
  TunnelCa ca_;
  EchoServer echo_;
  uint16_t closed_port_ = ClosedPort();
  std::atomic<int> opens_{0};
  std::mutex mu_;
  std::vector<std::thread> unix_echoes_;
  std::function<std::optional<std::string>(const std::string&)> check_;  // for StartServer
  std::unique_ptr<TunnelServer> server_;
};

// Bytes both ways (more than a 64 KiB buffer), then the gateway's half-close: the replica still
// answers ("bye") and its end reaches the gateway as a clean TLS end of stream.
void ExpectSplice(TunnelClient& c, uint64_t attempt) {
  ASSERT_FALSE(c.Send(TunnelPreface(attempt) + "hello"));  // data right after the preface
  EXPECT_EQ(c.ReadHead(), TunnelAnswer(200));
  EXPECT_EQ(c.ReadExactly(5), "hello");
  std::string big(300 * 1024, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  // In pieces, each read back before the next is sent: one asio ssl::stream must not be read and
  // written from two threads at once (that corrupted the test's own TLS session under load).
  std::string back;
  constexpr size_t kPiece = 48 * 1024;
  for (size_t at = 0; at < big.size(); at += kPiece) {
    const std::string piece = big.substr(at, kPiece);
    ASSERT_FALSE(c.Send(piece));
    back += c.ReadExactly(piece.size());
  }
  EXPECT_TRUE(back == big) << "echoed " << back.size() << " bytes, not the same";
  c.s.lowest_layer().shutdown(net::ip::tcp::socket::shutdown_send);
  boost::system::error_code end;
  EXPECT_EQ(c.ReadToEnd(&end), "bye");
  EXPECT_EQ(end, net::error::eof) << end.message();
}

TEST_F(TunnelServerTest, SplicesATcpReplicaBothWays) {
  auto c = Dial(server_->port());
  ExpectSplice(*c, kEcho);
  EXPECT_EQ(opens_.load(), 1);
}

TEST_F(TunnelServerTest, SplicesAUnixSocketReplica) {
  auto c = Dial(server_->port());
  ExpectSplice(*c, kUnixEcho);
}

TEST_F(TunnelServerTest, UnknownAttemptIs404AndNotListeningIs503) {
  for (auto [attempt, status] : {std::pair{uint64_t{42}, 404}, std::pair{kNotListening, 503}}) {
    auto c = Dial(server_->port());
    ASSERT_FALSE(c->Send(TunnelPreface(attempt)));
    EXPECT_EQ(c->ReadHead(), TunnelAnswer(status));
    boost::system::error_code end;
    EXPECT_EQ(c->ReadToEnd(&end), "");
    EXPECT_TRUE(end) << "closed after the answer";
  }
}

TEST_F(TunnelServerTest, MalformedOrOversizedPrefaceIs400) {
  for (std::string preface :
       {std::string("GET / HTTP/1.1\r\n\r\n"), std::string("CONNECT x7 HTTP/1.1\r\n\r\n"),
        std::string("CONNECT 7 HTTP/1.1\r\n") + std::string(2000, 'a')}) {
    auto c = Dial(server_->port());
    ASSERT_FALSE(c->Send(preface));
    EXPECT_EQ(c->ReadHead(), TunnelAnswer(400)) << preface.substr(0, 30);
  }
  EXPECT_EQ(opens_.load(), 0);
}

TEST_F(TunnelServerTest, OnlyAGatewayCertificateOfThePoolGetsIn) {
  // A worker's certificate (OU "worker"): refused, though the CA signed it.
  EXPECT_EQ(AnswerTo(TunnelClientContext(ca_.Worker("w2")).value()), "");
  // No client certificate at all.
  auto bare = std::make_shared<ssl::context>(ssl::context::tls_client);
  bare->add_certificate_authority(net::buffer(ca_.ca_pem()));
  bare->set_verify_mode(ssl::verify_peer);
  EXPECT_EQ(AnswerTo(bare), "");
  // A gateway certificate of another pool.
  TunnelCa other;
  TunnelTls stranger = other.Gateway("gw");
  stranger.ca_pem = ca_.ca_pem();
  EXPECT_EQ(AnswerTo(TunnelClientContext(stranger).value()), "");
  EXPECT_EQ(opens_.load(), 0);
  // The pool's gateway does get in (the checks above refuse for the certificate alone).
  EXPECT_EQ(AnswerTo(GatewayContext()), TunnelAnswer(200));
}

TEST_F(TunnelServerTest, TheGatewayRefusesAnotherWorkerName) {
  TunnelClient c(GatewayContext());
  EXPECT_TRUE(c.Dial(server_->port(), "w2")) << "w1's certificate accepted as w2";
  TunnelClient right(GatewayContext());
  EXPECT_FALSE(right.Dial(server_->port(), "w1"));
}

// Past the cap in all, or from one address (the gate of the gRPC ports, gated_acceptor.h), a
// connection is reset at once.
class TunnelServerCapTest : public TunnelServerTest,
                            public ::testing::WithParamInterface<std::pair<size_t, size_t>> {};

TEST_P(TunnelServerCapTest, ConnectionsPastTheCapAreResetAtAccept) {
  server_ = StartServer(GetParam().first, std::chrono::milliseconds(60'000), GetParam().second);
  auto raw = [&] {
    auto s = std::make_unique<net::ip::tcp::socket>(io_);
    s->connect({net::ip::make_address("127.0.0.1"), server_->port()});
    timeval tv{30, 0};
    ::setsockopt(s->native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return s;
  };
  auto a = raw(), b = raw(), c = raw();
  char byte;
  boost::system::error_code ec;
  c->read_some(net::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec == net::error::eof || ec == net::error::connection_reset)
      << "the third connection is closed at once: " << ec.message();
  a->close();
  // One slot is free again: a tunnel works once the server saw the close.
  EXPECT_TRUE(WaitUntil([&] {
    TunnelClient t(GatewayContext());
    if (t.Dial(server_->port(), "w1") || t.Send(TunnelPreface(kEcho))) return false;
    return t.ReadHead() == TunnelAnswer(200);
  }));
}

// The worker refuses a revoked gateway's certificate (check_client) after the handshake: nothing
// is opened, the connection closes before its preface is read.
TEST_F(TunnelServerTest, AGatewayTheCheckRefusesIsClosedBeforeItsPreface) {
  std::atomic<int> checked{0};
  check_ = [&](const std::string& pem) -> std::optional<std::string> {
    ++checked;
    EXPECT_NE(pem.find("BEGIN CERTIFICATE"), std::string::npos);
    return "revoked";
  };
  server_ = StartServer(1024, std::chrono::milliseconds(10'000));
  EXPECT_EQ(AnswerTo(GatewayContext()), "");
  EXPECT_GE(checked.load(), 1);
  EXPECT_EQ(opens_.load(), 0);
  check_ = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  server_ = StartServer(1024, std::chrono::milliseconds(10'000));
  EXPECT_EQ(AnswerTo(GatewayContext()), TunnelAnswer(200));
}

INSTANTIATE_TEST_SUITE_P(InAllOrPerAddress, TunnelServerCapTest,
                         ::testing::Values(std::pair<size_t, size_t>{2, 256},
                                           std::pair<size_t, size_t>{1024, 2}));

TEST_F(TunnelServerTest, APrefaceThatNeverComesIsClosedAtItsDeadline) {
  server_ = StartServer(1024, std::chrono::milliseconds(200));
  net::ip::tcp::socket silent(io_);  // not even a handshake
  silent.connect({net::ip::make_address("127.0.0.1"), server_->port()});
  char byte;
  boost::system::error_code ec;
  silent.read_some(net::buffer(&byte, 1), ec);
  EXPECT_EQ(ec, net::error::eof);
  auto c = Dial(server_->port());  // a handshake, then nothing
  EXPECT_EQ(c->ReadHead(), "");
  EXPECT_EQ(opens_.load(), 0);
}

TEST_F(TunnelServerTest, ARenewedCertificateServesNewConnections) {
  TunnelTls renewed = ca_.Worker("w1-renewed");
  server_->SetCertificate(renewed.cert_chain_pem, renewed.key_pem);
  EXPECT_TRUE(WaitUntil([&] {
    TunnelClient c(GatewayContext());
    return !c.Dial(server_->port(), "w1-renewed");
  }));
  server_->SetCertificate("not pem", renewed.key_pem);  // refused: the renewed one stays
  TunnelClient c(GatewayContext());
  EXPECT_FALSE(c.Dial(server_->port(), "w1-renewed"));
}

TEST(TunnelServerStartTest, BadOptionsAreRefusedNamingThem) {
  TunnelCa ca;
  TunnelServerOptions o;
  o.tls = ca.Worker("w1");
  EXPECT_EQ(TunnelServer::Start(o).status().code(), absl::StatusCode::kInvalidArgument);  // open
  o.open = [](uint64_t) { return absl::NotFoundError("none"); };
  o.listen = "nowhere";
  EXPECT_EQ(TunnelServer::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.listen = "127.0.0.1:0";
  o.tls.key_pem = "garbage";
  absl::Status s = TunnelServer::Start(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("private key"), std::string::npos) << s;
}

TEST(TunnelWireTest, PrefacesAndAnswers) {
  EXPECT_EQ(TunnelPreface(12), "CONNECT 12 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ParseTunnelPreface("CONNECT 12 HTTP/1.1\r\n\r\n"), 12u);
  EXPECT_EQ(ParseTunnelPreface("CONNECT 18446744073709551615 HTTP/1.1\r\nX: y\r\n\r\n"),
            UINT64_MAX);
  for (const char* bad :
       {"CONNECT 18446744073709551616 HTTP/1.1\r\n\r\n", "CONNECT  HTTP/1.1\r\n\r\n",
        "CONNECT -1 HTTP/1.1\r\n\r\n", "CONNECT 1 HTTP/1.0\r\n\r\n", "connect 1 HTTP/1.1\r\n\r\n",
        "CONNECT 1 HTTP/1.1\r\n", "CONNECT 1 2 HTTP/1.1\r\n\r\n"}) {
    EXPECT_EQ(ParseTunnelPreface(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseTunnelPreface("CONNECT 1 HTTP/1.1\r\n" + std::string(1100, 'a') + "\r\n\r\n"),
            std::nullopt);
  for (int status : {200, 400, 404, 503}) {
    EXPECT_EQ(ParseTunnelAnswer(TunnelAnswer(status)), status);
  }
  EXPECT_EQ(ParseTunnelAnswer("SSH-2.0-OpenSSH\r\n\r\n"), std::nullopt);
}

}  // namespace
}  // namespace idlepool::serve
