// The gateway's front toward clients without a credential (src/serve/gateway.h): the key is
// checked from a request's head before any body is read, a new connection has request_timeout to
// send its first head, and connections pass the gate of the gRPC ports (caps in all and per
// address). Plain HTTP on 127.0.0.1, raw sockets.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "serve/gateway.h"

namespace idlepool::serve {
namespace {

// A connected socket to 127.0.0.1:port with a 10 s receive bound (a hang fails, never blocks).
int Connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(port);
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

void Send(int fd, const std::string& s) {
  ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

// What the server sends until it closes or the receive bound passes (then "<timeout>").
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return out + "<timeout>";
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

class GatewayFrontTest : public ::testing::Test {
 protected:
  void Start(GatewayOptions o) {
    o.listen = "127.0.0.1:0";
    o.authenticate = [](std::string_view key) -> std::optional<KeyGrant> {
      if (key != "good") return std::nullopt;
      return KeyGrant{"id", "someone", {}};
    };
    gateway_ = std::make_unique<Gateway>(std::move(o));
    gateway_->Start();
  }
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(GatewayFrontTest, AWrongKeyIsAnswered401BeforeTheBody) {
  Start({});
  for (const char* auth : {"Authorization: Bearer bad\r\n", ""}) {
    int fd = Connect(gateway_->port());
    Send(fd, std::string("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n") + auth +
                 "Content-Length: 8388608\r\n\r\n");
    const std::string answer = ReadAll(fd);  // no body was sent: the answer comes from the head
    EXPECT_EQ(answer.rfind("HTTP/1.1 401 ", 0), 0u) << answer;
    EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
    ::close(fd);
  }
  // A good key's body is read: an unknown model is named from it.
  int fd = Connect(gateway_->port());
  const std::string body = R"({"model":"nope","messages":[]})";
  Send(fd,
       "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n"
       "Connection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
  const std::string answer = ReadAll(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 404 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("nope"), std::string::npos) << answer;
  ::close(fd);
}

TEST_F(GatewayFrontTest, AConnectionWithoutAHeadIsClosedAtTheRequestTimeout) {
  GatewayOptions o;
  o.request_timeout = std::chrono::milliseconds(200);
  Start(o);
  int fd = Connect(gateway_->port());
  Send(fd, "GET /v1/models HTTP/1.1\r\n");  // a head that never ends
  EXPECT_EQ(ReadAll(fd), "");               // closed, not left for the 75 s idle timeout
  ::close(fd);
}

TEST_F(GatewayFrontTest, ConnectionsPastTheAddressCapAreReset) {
  GatewayOptions o;
  o.max_connections_per_address = 2;
  Start(o);
  int a = Connect(gateway_->port()), b = Connect(gateway_->port()), c = Connect(gateway_->port());
  char byte;
  errno = 0;
  EXPECT_LE(::recv(c, &byte, 1, 0), 0);
  EXPECT_NE(errno, EAGAIN) << "the third connection from one address was kept";
  // The two admitted are served.
  Send(a,
       "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n"
       "Connection: close\r\n\r\n");
  EXPECT_EQ(ReadAll(a).rfind("HTTP/1.1 200 ", 0), 0u);
  for (int fd : {a, b, c}) ::close(fd);
}

}  // namespace
}  // namespace idlepool::serve
