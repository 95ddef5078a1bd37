// Tests of idlepool-faultproxy (FAULTPROXY names the binary): real sockets on 127.0.0.1, the
// proxy as a child process, echo/source/sink servers as threads of this test. Times are only
// ever asserted as lower bounds; every wait polls for a condition with a deadline against hangs.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Byte i of a stream: a function of the offset alone, so any prefix can be checked.
uint8_t PatternByte(uint64_t i, uint64_t seed) {
  uint64_t x = (i + seed * 0x100000001B3ull) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x >> 17);
}

void FillPattern(std::vector<char>& buf, uint64_t offset, uint64_t seed) {
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>(PatternByte(offset + i, seed));
}

// Polls cond every 10 ms; fails the test after 30 s (a bound on a hang, not on speed).
bool WaitFor(const std::function<bool()>& cond) {
  auto end = Clock::now() + std::chrono::seconds(30);
  while (!cond()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

int Listen(uint16_t* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 64) != 0) {
    ADD_FAILURE() << "listen: " << std::strerror(errno);
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ADD_FAILURE() << "connect: " << std::strerror(errno);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A proxy that never answers fails the test (EAGAIN) instead of hanging it.
  timeval limit{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  return fd;
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Sends `total` pattern bytes in 64 KiB pieces; returns the bytes the kernel accepted and the
// errno that stopped it (0 when all were sent).
std::pair<uint64_t, int> SendPattern(int fd, uint64_t total, uint64_t seed) {
  std::vector<char> buf(64 * 1024);
  uint64_t sent = 0;
  while (sent < total) {
    buf.resize(std::min<uint64_t>(64 * 1024, total - sent));
    FillPattern(buf, sent, seed);
    size_t off = 0;
    while (off < buf.size()) {
      ssize_t w = send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return {sent + off, errno};
      off += static_cast<size_t>(w);
    }
    sent += buf.size();
  }
  return {sent, 0};
}

struct ReadResult {
  uint64_t bytes = 0;
  bool pattern_ok = true;  // Every byte read matched the pattern.
  int error = 0;           // errno of the read that ended it; 0 for EOF or `limit` reached.
  bool eof = false;
};

// Reads until EOF, an error, or `limit` bytes, checking each byte against the pattern.
ReadResult ReadPattern(int fd, uint64_t limit, uint64_t seed) {
  ReadResult r;
  std::vector<char> buf(64 * 1024);
  while (r.bytes < limit) {
    ssize_t n = recv(fd, buf.data(), std::min<uint64_t>(buf.size(), limit - r.bytes), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.error = errno;
      break;
    }
    if (n == 0) {
      r.eof = true;
      break;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (static_cast<uint8_t>(buf[i]) != PatternByte(r.bytes + i, seed)) r.pattern_ok = false;
    }
    r.bytes += static_cast<uint64_t>(n);
  }
  return r;
}

// A server on 127.0.0.1 running `handler` on each accepted connection in its own thread.
class Server {
 public:
  explicit Server(std::function<void(int)> handler) : handler_(std::move(handler)) {
    fd_ = Listen(&port_);
    acceptor_ = std::thread([this] {
      for (;;) {
        int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          if (errno == EINTR) continue;
          return;  // shutdown() in the destructor.
        }
        std::lock_guard<std::mutex> lock(mu_);
        handlers_.emplace_back([this, c] {
          handler_(c);
          close(c);
        });
      }
    });
  }
  ~Server() {
    shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    close(fd_);
    for (auto& t : handlers_) t.join();
  }
  uint16_t port() const { return port_; }

 private:
  std::function<void(int)> handler_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> handlers_;
};

void Echo(int fd) {
  std::vector<char> buf(64 * 1024);
  for (;;) {
    ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || !SendAll(fd, buf.data(), static_cast<size_t>(n))) return;
  }
}

// The proxy under test as a child process, with its stats file; SIGTERM on destruction.
class Proxy {
 public:
  explicit Proxy(std::vector<std::string> args) {
    char tmpl[] = "/tmp/faultproxy-test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    stats_path_ = dir_ + "/stats.json";
    const char* bin = std::getenv("FAULTPROXY");
    if (bin == nullptr) {
      ADD_FAILURE() << "set FAULTPROXY to the idlepool-faultproxy binary";
      return;
    }
    std::vector<std::string> argv = {bin, "--listen", "127.0.0.1:0", "--stats", stats_path_};
    argv.insert(argv.end(), args.begin(), args.end());
    int out[2];
    if (pipe(out) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    char ch;
    while (read(out[0], &ch, 1) == 1 && ch != '\n') line += ch;
    close(out[0]);
    const std::string prefix = "listening on 127.0.0.1:";
    if (line.rfind(prefix, 0) != 0) {
      ADD_FAILURE() << "proxy said '" << line << "'";
      return;
    }
    port_ = static_cast<uint16_t>(std::stoi(line.substr(prefix.size())));
  }
  ~Proxy() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "proxy status " << status;
    }
    std::string cmd = "rm -rf " + dir_;
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  uint16_t port() const { return port_; }
  void Signal(int sig) { kill(pid_, sig); }

  // A field of the stats file (-1 while absent); "partitioned" reads as 0 or 1.
  int64_t Stat(const std::string& field) const {
    std::ifstream in(stats_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    size_t at = s.find("\"" + field + "\":");
    if (at == std::string::npos) return -1;
    std::string v = s.substr(at + field.size() + 3);
    if (v.rfind("true", 0) == 0) return 1;
    if (v.rfind("false", 0) == 0) return 0;
    return std::stoll(v);
  }
  bool StatIs(const std::string& field, int64_t want) const {
    return WaitFor([&] { return Stat(field) == want; });
  }

 private:
  std::string dir_;
  std::string stats_path_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// One echo round trip of n pattern bytes; true when they came back unchanged.
bool RoundTrip(int fd, size_t n, uint64_t seed) {
  std::vector<char> buf(n);
  FillPattern(buf, 0, seed);
  if (!SendAll(fd, buf.data(), n)) return false;
  ReadResult r = ReadPattern(fd, n, seed);
  return r.bytes == n && r.pattern_ok;
}

// Sends total bytes on fd from one thread while reading the echo on this one.
ReadResult EchoStream(int fd, uint64_t total, uint64_t seed) {
  auto writer = std::async(std::launch::async, [&] { return SendPattern(fd, total, seed); });
  ReadResult r = ReadPattern(fd, total, seed);
  writer.get();
  return r;
}

constexpr uint64_t kMiB = 1 << 20;

TEST(FaultProxy, PassesBytesUnchangedBothWays) {
  Server echo(Echo);
  Proxy proxy({"--target", "127.0.0.1:" + std::to_string(echo.port())});
  // Three connections at once, 4 MiB each way, each stream distinct.
  std::vector<std::future<ReadResult>> clients;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    clients.push_back(std::async(std::launch::async, [&, seed] {
      int fd = Connect(proxy.port());
      ReadResult r = EchoStream(fd, 4 * kMiB, seed);
      // A half-close travels through: the echo server ends and the client reads EOF.
      shutdown(fd, SHUT_WR);
      char c;
      r.eof = recv(fd, &c, 1, 0) == 0;
      close(fd);
      return r;
    }));
  }
  for (auto& f : clients) {
    ReadResult r = f.get();
    EXPECT_EQ(r.bytes, 4 * kMiB);
    EXPECT_TRUE(r.pattern_ok);
    EXPECT_TRUE(r.eof);
  }
  EXPECT_TRUE(proxy.StatIs("up_bytes", 12 * kMiB));
  EXPECT_TRUE(proxy.StatIs("down_bytes", 12 * kMiB));
  EXPECT_TRUE(proxy.StatIs("connections", 3));
  EXPECT_TRUE(proxy.StatIs("open", 0));
  EXPECT_EQ(proxy.Stat("cuts"), 0);
}

TEST(FaultProxy, EchoModeAnswersEveryByte) {
  Proxy proxy({"--echo"});
  int fd = Connect(proxy.port());
  ReadResult r = EchoStream(fd, 2 * kMiB, 7);
  EXPECT_EQ(r.bytes, 2 * kMiB);
  EXPECT_TRUE(r.pattern_ok);
  shutdown(fd, SHUT_WR);
  char c;
  EXPECT_EQ(recv(fd, &c, 1, 0), 0);
  close(fd);
}

// Downloads `total` pattern bytes from a source server through the proxy.
ReadResult Download(const Proxy& proxy, uint64_t total) {
  int fd = Connect(proxy.port());
  ReadResult r = ReadPattern(fd, total + 1, 5);
  close(fd);
  return r;
}

void Source16MiB(int fd) { SendPattern(fd, 16 * kMiB, 5); }

TEST(FaultProxy, CutAfterDownEndsTheConnectionAtExactlyNBytesOnce) {
  Server source(Source16MiB);
  Proxy proxy({"--target", "127.0.0.1:" + std::to_string(source.port()), "--cut-after", "1M",
               "--cut-dir", "down"});
  ReadResult r = Download(proxy, 16 * kMiB);
  // The proxy forwards exactly N bytes, then FIN: everything sent arrives, then EOF.
  EXPECT_TRUE(r.eof) << "errno " << r.error;
  EXPECT_EQ(r.bytes, 1'000'000u);
  EXPECT_TRUE(r.pattern_ok);
  EXPECT_TRUE(proxy.StatIs("cuts", 1));
  // --cut-once: the next connection gets the whole stream.
  ReadResult again = Download(proxy, 16 * kMiB);
  EXPECT_TRUE(again.eof);
  EXPECT_EQ(again.bytes, 16 * kMiB);
  EXPECT_TRUE(again.pattern_ok);
  EXPECT_TRUE(proxy.StatIs("down_bytes", 1'000'000 + 16 * kMiB));
  EXPECT_EQ(proxy.Stat("cuts"), 1);
}

TEST(FaultProxy, CutAfterUpDeliversExactlyNBytesToTheTarget) {
  std::promise<uint64_t> received;
  Server sink([&](int fd) {
    ReadResult r = ReadPattern(fd, UINT64_MAX, 9);
    EXPECT_TRUE(r.pattern_ok);
    EXPECT_TRUE(r.eof) << "errno " << r.error;
    received.set_value(r.bytes);
  });
  Proxy proxy({"--target", "127.0.0.1:" + std::to_string(sink.port()), "--cut-after", "1Mi",
               "--cut-dir", "up"});
  int fd = Connect(proxy.port());
  const uint64_t total = 128 * kMiB;
  auto [sent, err] = SendPattern(fd, total, 9);
  close(fd);
  EXPECT_TRUE(err == EPIPE || err == ECONNRESET) << "send stopped with errno " << err;
  EXPECT_LT(sent, total);  // Kernel buffers hold some MiB at most.
  EXPECT_EQ(received.get_future().get(), kMiB);
  EXPECT_TRUE(proxy.StatIs("cuts", 1));
  EXPECT_EQ(proxy.Stat("up_bytes"), static_cast<int64_t>(kMiB));
}

TEST(FaultProxy, ResetCutsEveryNBytesWithRst) {
  Server source(Source16MiB);
  Proxy proxy({"--target", "127.0.0.1:" + std::to_string(source.port()), "--cut-after", "256Ki",
               "--cut-dir", "both", "--cut-every", "--reset"});
  for (int i = 1; i <= 2; ++i) {
    ReadResult r = Download(proxy, 16 * kMiB);
    EXPECT_EQ(r.error, ECONNRESET) << "connection " << i << " eof " << r.eof;
    EXPECT_LE(r.bytes, 256 * 1024u);
    EXPECT_TRUE(r.pattern_ok);
    EXPECT_TRUE(proxy.StatIs("cuts", i));
  }
}

TEST(FaultProxy, Sigusr1CutsOpenConnections) {
  Server echo(Echo);
  Proxy proxy({"--target", "127.0.0.1:" + std::to_string(echo.port())});
  int a = Connect(proxy.port());
  int b = Connect(proxy.port());
  ASSERT_TRUE(RoundTrip(a, 1000, 1));
  ASSERT_TRUE(RoundTrip(b, 1000, 2));
  proxy.Signal(SIGUSR1);
  char c;
  EXPECT_EQ(recv(a, &c, 1, 0), 0);
  EXPECT_EQ(recv(b, &c, 1, 0), 0);
  EXPECT_TRUE(proxy.StatIs("cuts", 1));
  close(a);
  close(b);
  int d = Connect(proxy.port());
  EXPECT_TRUE(RoundTrip(d, 1000, 3));
  close(d);
}

TEST(FaultProxy, PartitionRefusesAndCutsUntilToggledBack) {
  Server echo(Echo);
  Proxy proxy({"--target", "127.0.0.1:" + std::to_string(echo.port())});
  int open_before = Connect(proxy.port());
  ASSERT_TRUE(RoundTrip(open_before, 1000, 1));
  proxy.Signal(SIGUSR2);
  ASSERT_TRUE(proxy.StatIs("partitioned", 1));
  char c;
  EXPECT_EQ(recv(open_before, &c, 1, 0), 0);
  close(open_before);

  // Accepted, then closed at once: nothing comes back.
  int during = Connect(proxy.port());
  SendAll(during, "x", 1);
  ssize_t n = recv(during, &c, 1, 0);
  EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << "recv " << n;
  close(during);
  EXPECT_TRUE(proxy.StatIs("refused", 1));

  proxy.Signal(SIGUSR2);
  ASSERT_TRUE(proxy.StatIs("partitioned", 0));
  int after = Connect(proxy.port());
  EXPECT_TRUE(RoundTrip(after, 1000, 2));
  close(after);
}

TEST(FaultProxy, DelayAddsOneWayLatencyEachWay) {
  Server echo(Echo);
  Proxy proxy({"--target", "127.0.0.1:" + std::to_string(echo.port()), "--delay-ms", "100"});
  int fd = Connect(proxy.port());
  for (int i = 0; i < 3; ++i) {
    auto start = Clock::now();
    ASSERT_TRUE(RoundTrip(fd, 1, i));
    EXPECT_GE(Clock::now() - start, milliseconds(200));
  }
  // Order is kept under delay.
  ReadResult r = EchoStream(fd, 2 * kMiB, 11);
  EXPECT_EQ(r.bytes, 2 * kMiB);
  EXPECT_TRUE(r.pattern_ok);
  close(fd);
}

TEST(FaultProxy, RateIsSharedByAllConnections) {
  Server echo(Echo);
  // 16Mbit = 2,000,000 bytes/s per direction for all connections together.
  const double rate = 2e6, burst = 64 * 1024;
  Proxy proxy({"--target", "127.0.0.1:" + std::to_string(echo.port()), "--rate", "16Mbit",
               "--burst", "64Ki"});
  auto start = Clock::now();
  std::vector<std::future<ReadResult>> clients;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    clients.push_back(std::async(std::launch::async, [&, seed] {
      int fd = Connect(proxy.port());
      ReadResult r = EchoStream(fd, kMiB, seed);
      close(fd);
      return r;
    }));
  }
  for (auto& f : clients) {
    ReadResult r = f.get();
    EXPECT_EQ(r.bytes, kMiB);
    EXPECT_TRUE(r.pattern_ok);
  }
  // 2 MiB through one 2 MB/s bucket: a lower bound only.
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(seconds, (2.0 * kMiB - burst) / rate);
}

int RunProxyStatus(std::vector<std::string> args) {
  const char* bin = std::getenv("FAULTPROXY");
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char*> argv = {const_cast<char*>(bin)};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin, argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(FaultProxy, BadOptionsExitWithStatus2) {
  const std::string l = "127.0.0.1:0", t = "127.0.0.1:1";
  EXPECT_EQ(RunProxyStatus({"--listen", l}), 2);  // No --target.
  EXPECT_EQ(RunProxyStatus({"--listen", l, "--target", t, "--rate", "fast"}), 2);
  EXPECT_EQ(RunProxyStatus({"--listen", l, "--target", t, "--rate", "10Mbitz"}), 2);
  EXPECT_EQ(RunProxyStatus({"--listen", l, "--target", t, "--cut-after", "1Mbit"}), 2);
  EXPECT_EQ(RunProxyStatus({"--listen", l, "--target", t, "--cut-dir", "sideways"}), 2);
  EXPECT_EQ(RunProxyStatus({"--listen", l, "--target", t, "--cut-once", "--cut-every"}), 2);
  EXPECT_EQ(RunProxyStatus({"--listen", "nowhere", "--target", t}), 2);
  EXPECT_EQ(RunProxyStatus({"--listen", l, "--target", t, "--delay-ms", "-5"}), 2);
  EXPECT_EQ(RunProxyStatus({"--listen", l, "--target", t, "--echo"}), 2);
  EXPECT_EQ(RunProxyStatus({"--listen", l, "--target", t, "--bogus"}), 2);
  EXPECT_EQ(RunProxyStatus({"--help"}), 0);
}

}  // namespace
