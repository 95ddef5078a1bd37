// gate: the admission rules (ConnectionGate, pure) and the accept loop over real sockets on
// 127.0.0.1 (Listener): caps per address and per listener, closed connections forgotten, and an
// accept loop that outlives running out of descriptors.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "gate/connection_gate.h"
#include "gate/listener.h"
#include "gtest/gtest.h"

namespace idlepool::gate {
namespace {

PeerKey V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  const uint8_t addr[4] = {a, b, c, d};
  return PeerKeyOfIpv4(addr);
}

TEST(ConnectionGate, BoundsFollowTheDescriptorLimit) {
  // 256 descriptors: a quarter (64) kept free; one address gets a quarter of the other 192.
  ConnectionGate small({.max_connections = 1024, .max_per_peer = 64, .min_fd_reserve = 64}, 256);
  EXPECT_EQ(small.fd_ceiling(), 192u);
  EXPECT_EQ(small.max_connections(), 192u);
  EXPECT_EQ(small.max_per_peer(), 48u);
  // A large limit: the configured caps.
  ConnectionGate large({.max_connections = 1024, .max_per_peer = 64, .min_fd_reserve = 64},
                       1 << 20);
  EXPECT_EQ(large.fd_ceiling(), 786432u);
  EXPECT_EQ(large.max_connections(), 1024u);
  EXPECT_EQ(large.max_per_peer(), 64u);
  // Below the reserve nothing is admitted.
  ConnectionGate none({.min_fd_reserve = 64}, 60);
  EXPECT_EQ(none.Check(V4(10, 0, 0, 1), 3), Admission::kFdReserve);
}

TEST(ConnectionGate, AcceptErrorsOfOneConnectionAreTheConnections) {
  // One connection's trouble: accept the next at once (both accept loops, gRPC's and HTTPS).
  for (int err : {ECONNABORTED, EPROTO, EHOSTUNREACH, ENETUNREACH, EPERM, EINTR}) {
    EXPECT_TRUE(IsConnectionAcceptError(err)) << err;
  }
  // The process's: wait and try again, but never read as one connection's.
  for (int err : {EMFILE, ENFILE, ENOBUFS, ENOMEM, EBADF, EINVAL}) {
    EXPECT_FALSE(IsConnectionAcceptError(err)) << err;
  }
}

TEST(ConnectionGate, CapsPerAddressThenPerListener) {
  ConnectionGate g({.max_connections = 5, .max_per_peer = 3, .min_fd_reserve = 4}, 1000);
  const PeerKey a = V4(10, 0, 0, 1), b = V4(10, 0, 0, 2), c = V4(10, 0, 0, 3);
  int fd = 10;
  for (int i = 0; i < 3; ++i, ++fd) {
    ASSERT_EQ(g.Check(a, fd), Admission::kAdmit);
    g.Admitted(fd, SocketId{1, static_cast<uint64_t>(fd)}, a);
  }
  EXPECT_EQ(g.Check(a, fd), Admission::kPeerFull);
  for (int i = 0; i < 2; ++i, ++fd) {
    ASSERT_EQ(g.Check(b, fd), Admission::kAdmit);
    g.Admitted(fd, SocketId{1, static_cast<uint64_t>(fd)}, b);
  }
  EXPECT_EQ(g.Check(c, fd), Admission::kListenerFull);
  EXPECT_EQ(g.live(), 5u);
  EXPECT_EQ(g.live_from(a), 3u);
  // A descriptor at or above the ceiling (1000 - 250) is refused whatever the counts.
  EXPECT_EQ(g.Check(c, 750), Admission::kFdReserve);
}

TEST(ConnectionGate, PruneForgetsClosedConnectionsAndReusedDescriptorsReplace) {
  ConnectionGate g({.max_connections = 3, .max_per_peer = 2, .min_fd_reserve = 4}, 1000);
  const PeerKey a = V4(10, 0, 0, 1), b = V4(10, 0, 0, 2);
  g.Admitted(10, SocketId{1, 100}, a);
  g.Admitted(11, SocketId{1, 101}, a);
  EXPECT_EQ(g.Check(a, 12), Admission::kPeerFull);
  // Descriptor 10 was closed and accept(2) returned it again: the old entry does not count.
  EXPECT_EQ(g.Check(a, 10), Admission::kAdmit);
  g.Admitted(10, SocketId{1, 102}, b);
  EXPECT_EQ(g.live(), 2u);
  EXPECT_EQ(g.live_from(a), 1u);
  EXPECT_EQ(g.live_from(b), 1u);
  // Socket 101 is gone (its descriptor now names something else).
  EXPECT_EQ(g.Prune([](int, const SocketId& id) { return id.ino != 101; }), 1u);
  EXPECT_EQ(g.live_from(a), 0u);
  EXPECT_EQ(g.Check(a, 11), Admission::kAdmit);
}

TEST(ConnectionGate, Ipv6AddressesCountBySlash64AndMappedOnesAsIpv4) {
  uint8_t one[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1};
  uint8_t two[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0xff, 0, 0, 0, 0, 0, 0, 2};
  uint8_t other[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1};
  uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
  EXPECT_EQ(PeerKeyOfIpv6(one), PeerKeyOfIpv6(two));
  EXPECT_NE(PeerKeyOfIpv6(one), PeerKeyOfIpv6(other));
  EXPECT_EQ(PeerKeyOfIpv6(mapped), V4(192, 0, 2, 7));
  EXPECT_EQ(PeerKeyText(PeerKeyOfIpv6(two)), "2001:db8:0:1::/64");
  EXPECT_EQ(PeerKeyText(V4(192, 0, 2, 7)), "192.0.2.7");
}

// A client socket connected to 127.0.0.1:port from `source`; -1 on failure.
int Dial(int port, const char* source = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in src{}, dst{};
  src.sin_family = dst.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &src.sin_addr);
  ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  dst.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Polls `cond` for up to 10 s (a bound on a hang, not a measure of speed).
template <typename F>
bool Eventually(F cond) {
  for (int i = 0; i < 1000; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

// The server side: the descriptors handed on, kept open until the test closes them.
struct Handed {
  std::mutex mu;
  std::vector<int> fds;
  size_t size() {
    std::lock_guard lock(mu);
    return fds.size();
  }
  void CloseAll() {
    std::lock_guard lock(mu);
    for (int fd : fds) ::close(fd);
    fds.clear();
  }
};

// Whether the server reset or closed client socket `fd`.
bool ClosedByServer(int fd) {
  char c;
  return Eventually([&] {
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  });
}

TEST(Listener, CapsAnAddressAndAdmitsAgainOnceItsConnectionsClose) {
  ListenerOptions o;
  o.limits = {.max_connections = 100, .max_per_peer = 3, .min_fd_reserve = 16};
  auto l = Listener::Open("127.0.0.1:0", o);
  ASSERT_TRUE(l.ok()) << l.status();
  Handed handed;
  (*l)->Start([&](int, int fd) {
    std::lock_guard lock(handed.mu);
    handed.fds.push_back(fd);
  });
  std::vector<int> clients;
  for (int i = 0; i < 5; ++i) clients.push_back(Dial((*l)->port()));
  ASSERT_TRUE(Eventually([&] { return (*l)->counts().refused == 2; }));
  EXPECT_EQ(handed.size(), 3u);
  EXPECT_TRUE(ClosedByServer(clients[3]));
  EXPECT_TRUE(ClosedByServer(clients[4]));
  // Another address is not held back by the first one's cap.
  const int other = Dial((*l)->port(), "127.0.0.2");
  if (other >= 0) {
    EXPECT_TRUE(Eventually([&] { return handed.size() == 4; }));
    clients.push_back(other);
  }
  // The server closes what it was handed: within a prune, the address is admitted again.
  handed.CloseAll();
  const int again = Dial((*l)->port());
  EXPECT_TRUE(Eventually([&] { return handed.size() == 1; }));
  EXPECT_EQ((*l)->counts().admitted, other >= 0 ? 5u : 4u);
  clients.push_back(again);
  for (int fd : clients) ::close(fd);
  (*l)->Stop();
  handed.CloseAll();
}

TEST(Listener, KeepsAcceptingAfterRunningOutOfDescriptors) {
  auto l = Listener::Open("127.0.0.1:0", ListenerOptions{});
  ASSERT_TRUE(l.ok()) << l.status();
  Handed handed;
  (*l)->Start([&](int, int fd) {
    std::lock_guard lock(handed.mu);
    handed.fds.push_back(fd);
  });
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  // Fill the descriptor table up to a lowered limit, so that accept(2) fails with EMFILE.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(client) + 16;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> filler;
  for (int fd; (fd = ::dup(client)) >= 0;) filler.push_back(fd);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  dst.sin_port = htons(static_cast<uint16_t>((*l)->port()));
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&dst), sizeof dst), 0);
  const bool failed = Eventually([&] { return (*l)->counts().accept_errors > 0; });
  for (int fd : filler) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(failed) << "accept(2) never ran out of descriptors";
  // Descriptors are back: the connection that waited in the backlog is accepted.
  EXPECT_TRUE(Eventually([&] { return handed.size() == 1; }));
  ::close(client);
  (*l)->Stop();
  handed.CloseAll();
}

TEST(Listener, APortInUseIsAnError) {
  auto a = Listener::Open("127.0.0.1:0", ListenerOptions{});
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Listener::Open("127.0.0.1:" + std::to_string((*a)->port()), ListenerOptions{});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(Listener::Open("no port", ListenerOptions{}).ok());
}

}  // namespace
}  // namespace idlepool::gate
