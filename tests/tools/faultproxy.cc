// idlepool-faultproxy: a TCP proxy for tests and benchmarks that adds one-way delay, caps
// bandwidth and cuts connections on demand, forwarding every byte unchanged (gRPC/HTTP2 safe).
// Usage and examples: tests/net/README.md, or `idlepool-faultproxy --help`.
//
// One thread runs a poll() loop over non-blocking sockets; signals reach it through a self-pipe.
// Each connection has two pipes, up (client -> target) and down (target -> client), each a queue
// of chunks stamped with the time they may be sent (read time + delay). A pipe stops reading its
// source while it holds more than --buffer bytes, so a slow side pushes back on a fast one.
// Exit codes: 0 after SIGTERM/SIGINT, 1 on a runtime failure (cannot listen), 2 on bad options.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using std::chrono::milliseconds;

constexpr size_t kReadChunkBytes = 64 * 1024;
constexpr milliseconds kStatsInterval{100};

enum class Dir { kUp, kDown };
enum class CutDir { kUp, kDown, kBoth };

struct Options {
  std::string listen;
  std::string target;
  bool echo = false;  // Test-only: answer every byte back instead of connecting to a target.
  milliseconds delay{0};
  double rate_bytes_per_s = 0;  // 0: unlimited.
  double burst_bytes = 0;       // 0: the default for the rate.
  uint64_t cut_after_bytes = 0;  // 0: never.
  CutDir cut_dir = CutDir::kBoth;
  bool cut_every = false;
  bool reset = false;
  std::string stats_path;
  size_t buffer_bytes_max = 1 << 20;
};

// ---- Option parsing -----------------------------------------------------------------------

// "12.5M" -> 12.5e6. K/M/G (any case) are powers of 1000, Ki/Mi/Gi powers of 1024; an optional
// trailing "B" means bytes. With allow_bits, a trailing "bit" counts bits: "100Mbit" -> 12.5e6.
std::optional<double> ParseAmount(std::string_view s, bool allow_bits) {
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data() || !std::isfinite(value) || value < 0) {
    return std::nullopt;
  }
  std::string suffix(end, s.data() + s.size());
  double scale = 1;
  if (!suffix.empty()) {
    char p = static_cast<char>(std::tolower(static_cast<unsigned char>(suffix[0])));
    double base = 1000;
    size_t used = 0;
    if (p == 'k' || p == 'm' || p == 'g') {
      used = 1;
      if (suffix.size() > 1 && suffix[1] == 'i') {
        base = 1024;
        used = 2;
      }
      int power = p == 'k' ? 1 : p == 'm' ? 2 : 3;
      scale = std::pow(base, power);
    }
    suffix.erase(0, used);
  }
  if (suffix == "bit" || suffix == "Bit") {
    if (!allow_bits) return std::nullopt;
    scale /= 8;
  } else if (!suffix.empty() && suffix != "B") {
    return std::nullopt;
  }
  return value * scale;
}

struct Endpoint {
  std::string host;
  std::string port;
};

// "HOST:PORT", "[v6]:PORT".
std::optional<Endpoint> SplitHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return std::nullopt;
  std::string host = s.substr(0, colon);
  std::string port = s.substr(colon + 1);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
      std::stoul(port) > 65535) {
    return std::nullopt;
  }
  return Endpoint{host, port};
}

std::optional<sockaddr_storage> Resolve(const Endpoint& ep, bool passive, socklen_t* len,
                                        std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* res = nullptr;
  int rc = getaddrinfo(ep.host.c_str(), ep.port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    *error = gai_strerror(rc);
    return std::nullopt;
  }
  sockaddr_storage out{};
  std::memcpy(&out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return out;
}

std::string FormatAddr(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    port = ntohs(v4->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
  inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
  port = ntohs(v6->sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

// ---- Signals ------------------------------------------------------------------------------

int g_signal_pipe_write = -1;

void OnSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe_write, &b, 1);
  errno = saved;
}

// ---- Shaping ------------------------------------------------------------------------------

// Bytes per second shared by every connection in one direction. Holds at most burst_bytes.
class TokenBucket {
 public:
  TokenBucket(double rate_bytes_per_s, double burst_bytes, TimePoint now)
      : rate_(rate_bytes_per_s), burst_(burst_bytes), tokens_(burst_bytes), last_(now) {}

  bool unlimited() const { return rate_ <= 0; }

  // Bytes that may be sent now.
  size_t Allowance(TimePoint now) {
    if (unlimited()) return SIZE_MAX;
    Refill(now);
    return static_cast<size_t>(tokens_);
  }
  void Take(size_t bytes) {
    if (!unlimited()) tokens_ -= static_cast<double>(bytes);
  }
  // When min(want, burst/4) bytes will be available: waiting for a quarter of the bucket keeps
  // writes few and large without letting a sender idle long.
  TimePoint WhenAvailable(size_t want, TimePoint now) const {
    double need = std::min(static_cast<double>(want), std::max(1.0, burst_ / 4)) - tokens_;
    if (need <= 0) return now;
    return now + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(need / rate_));
  }

 private:
  void Refill(TimePoint now) {
    double dt = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    tokens_ = std::min(burst_, tokens_ + dt * rate_);
  }
  double rate_;
  double burst_;
  double tokens_;
  TimePoint last_;
};

// ---- Connections --------------------------------------------------------------------------

struct Chunk {
  TimePoint ready_at;
  std::vector<char> bytes;
  size_t offset = 0;
};

struct Pipe {
  explicit Pipe(Dir d) : dir(d) {}
  Dir dir;
  std::deque<Chunk> queue;
  size_t queued_bytes = 0;
  bool src_eof = false;  // The source sent FIN; forwarded as shutdown(SHUT_WR) once drained.
  TimePoint eof_at{};    // When the FIN may be forwarded (read time + delay).
  bool dst_shut = false;
  bool dst_blocked = false;  // The last write hit EAGAIN: wait for POLLOUT.
  bool done() const { return src_eof && dst_shut; }
};

struct Conn {
  int client_fd = -1;
  int target_fd = -1;  // -1 in echo mode.
  bool connecting = false;
  bool client_hup = false;  // POLLHUP seen: leave the fd out of poll() unless we want events.
  bool target_hup = false;
  Pipe up{Dir::kUp};
  Pipe down{Dir::kDown};
  bool dead = false;
};

struct Stats {
  uint64_t up_bytes = 0;
  uint64_t down_bytes = 0;
  uint64_t connections = 0;
  uint64_t refused = 0;
  uint64_t cuts = 0;
};

class Proxy {
 public:
  Proxy(Options opt, int listen_fd, int signal_fd, sockaddr_storage target, socklen_t target_len,
        TimePoint now)
      : opt_(std::move(opt)),
        listen_fd_(listen_fd),
        signal_fd_(signal_fd),
        target_(target),
        target_len_(target_len),
        up_bucket_(opt_.rate_bytes_per_s, opt_.burst_bytes, now),
        down_bucket_(opt_.rate_bytes_per_s, opt_.burst_bytes, now),
        cut_after_(opt_.cut_after_bytes) {}

  int Run() {
    std::vector<pollfd> fds;
    std::vector<std::pair<Conn*, bool>> owners;  // For each pollfd past the first two: its conn,
                                                 // and whether it is the client fd.
    while (!stop_) {
      TimePoint now = Clock::now();
      next_wake_ = TimePoint::max();
      FlushAll(now);
      if (cut_pending_) CutAll();
      if (now >= next_stats_ || stats_dirty_) WriteStats(now);
      Wake(next_stats_);
      std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) { return c->dead; });

      fds.clear();
      owners.clear();
      fds.push_back({listen_fd_, POLLIN, 0});
      fds.push_back({signal_fd_, POLLIN, 0});
      for (auto& c : conns_) {
        short ce = 0, te = 0;
        Interest(*c, &ce, &te);
        if (ce != 0 || !c->client_hup) {
          fds.push_back({c->client_fd, ce, 0});
          owners.emplace_back(c.get(), true);
        }
        if (c->target_fd >= 0 && (te != 0 || !c->target_hup)) {
          fds.push_back({c->target_fd, te, 0});
          owners.emplace_back(c.get(), false);
        }
      }
      auto wait = next_wake_ - Clock::now();
      int timeout_ms =
          wait <= Clock::duration::zero()
              ? 0
              : static_cast<int>(
                    std::chrono::ceil<milliseconds>(wait).count());
      int n = poll(fds.data(), fds.size(), timeout_ms);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::perror("faultproxy: poll");
        return 1;
      }
      now = Clock::now();
      if (fds[1].revents & POLLIN) HandleSignals();
      if (fds[0].revents & POLLIN) Accept();
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto [conn, is_client] = owners[i - 2];
        if (!conn->dead) HandleEvents(*conn, is_client, fds[i].revents, now);
      }
    }
    for (auto& c : conns_) Close(*c, /*rst=*/false);
    WriteStats(Clock::now());
    return 0;
  }

 private:
  int SrcFd(const Conn& c, const Pipe& p) const {
    if (opt_.echo) return c.client_fd;
    return p.dir == Dir::kUp ? c.client_fd : c.target_fd;
  }
  int DstFd(const Conn& c, const Pipe& p) const {
    if (opt_.echo) return c.client_fd;
    return p.dir == Dir::kUp ? c.target_fd : c.client_fd;
  }
  // In echo mode only the down pipe runs: it reads the client and writes back to it.
  std::vector<Pipe*> Pipes(Conn& c) const {
    if (opt_.echo) return {&c.down};
    return {&c.up, &c.down};
  }
  bool CanRead(const Conn& c, const Pipe& p) const {
    if (p.src_eof || p.queued_bytes > opt_.buffer_bytes_max) return false;
    return !(c.connecting && SrcFd(c, p) == c.target_fd);
  }

  void Interest(Conn& c, short* client_events, short* target_events) {
    if (c.connecting) *target_events |= POLLOUT;
    for (Pipe* p : Pipes(c)) {
      if (CanRead(c, *p)) *(SrcFd(c, *p) == c.client_fd ? client_events : target_events) |= POLLIN;
      if (p->dst_blocked) {
        *(DstFd(c, *p) == c.client_fd ? client_events : target_events) |= POLLOUT;
      }
    }
  }

  TokenBucket& Bucket(Dir d) { return d == Dir::kUp ? up_bucket_ : down_bucket_; }
  bool Counted(Dir d) const {
    if (cut_after_ == 0) return false;
    return opt_.cut_dir == CutDir::kBoth || (opt_.cut_dir == CutDir::kUp) == (d == Dir::kUp);
  }
  void Wake(TimePoint t) { next_wake_ = std::min(next_wake_, t); }

  void HandleSignals() {
    unsigned char buf[64];
    ssize_t n;
    while ((n = read(signal_fd_, buf, sizeof buf)) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        switch (buf[i]) {
          case SIGTERM:
          case SIGINT:
            stop_ = true;
            break;
          case SIGUSR1:
            cut_pending_ = true;
            break;
          case SIGUSR2:
            partitioned_ = !partitioned_;
            if (partitioned_) cut_pending_ = true;
            stats_dirty_ = true;
            break;
        }
      }
    }
  }

  void Accept() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) std::perror("faultproxy: accept");
        return;
      }
      if (partitioned_) {
        ++stats_.refused;
        CloseFd(fd, opt_.reset);
        continue;
      }
      SetNoDelay(fd);
      auto c = std::make_unique<Conn>();
      c->client_fd = fd;
      if (opt_.echo) {
        c->up.src_eof = c->up.dst_shut = true;
      } else {
        int t = socket(target_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (t < 0) {
          std::perror("faultproxy: socket");
          CloseFd(fd, true);
          continue;
        }
        SetNoDelay(t);
        c->target_fd = t;
        if (connect(t, reinterpret_cast<const sockaddr*>(&target_), target_len_) < 0) {
          if (errno != EINPROGRESS) {
            std::fprintf(stderr, "faultproxy: connect to target: %s\n", std::strerror(errno));
            Close(*c, /*rst=*/true);
            continue;
          }
          c->connecting = true;
        }
      }
      ++stats_.connections;
      conns_.push_back(std::move(c));
    }
  }

  void HandleEvents(Conn& c, bool is_client, short revents, TimePoint now) {
    int fd = is_client ? c.client_fd : c.target_fd;
    if (!is_client && c.connecting) {
      if (!(revents & (POLLOUT | POLLERR | POLLHUP))) return;
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        std::fprintf(stderr, "faultproxy: connect to target: %s\n", std::strerror(err));
        Close(c, /*rst=*/true);
        return;
      }
      c.connecting = false;
      return;  // Reads and writes come on the next turn of the loop.
    }
    if (revents & POLLERR) {
      // A reset from one side is passed on as a reset to the other.
      Close(c, /*rst=*/true);
      return;
    }
    if (revents & POLLHUP) (is_client ? c.client_hup : c.target_hup) = true;
    if (revents & POLLOUT) {
      for (Pipe* p : Pipes(c)) {
        if (DstFd(c, *p) == fd) p->dst_blocked = false;
      }
    }
    if (revents & (POLLIN | POLLHUP)) {
      for (Pipe* p : Pipes(c)) {
        if (SrcFd(c, *p) == fd && CanRead(c, *p) && !ReadInto(c, *p, now)) return;
      }
    }
  }

  // Reads until EAGAIN, EOF or a full buffer. False when the connection was closed.
  bool ReadInto(Conn& c, Pipe& p, TimePoint now) {
    int fd = SrcFd(c, p);
    while (CanRead(c, p)) {
      std::vector<char> buf(kReadChunkBytes);
      ssize_t n = recv(fd, buf.data(), buf.size(), 0);
      if (n > 0) {
        buf.resize(static_cast<size_t>(n));
        p.queued_bytes += static_cast<size_t>(n);
        p.queue.push_back(Chunk{now + opt_.delay, std::move(buf)});
        continue;
      }
      if (n == 0) {
        p.src_eof = true;
        p.eof_at = now + opt_.delay;
        return true;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      Close(c, /*rst=*/true);
      return false;
    }
    return true;
  }

  void FlushAll(TimePoint now) {
    if (conns_.empty()) return;
    // Start from a different connection each turn so a shared bucket is shared fairly.
    size_t start = rotate_++ % conns_.size();
    for (size_t k = 0; k < conns_.size(); ++k) {
      Conn& c = *conns_[(start + k) % conns_.size()];
      if (c.dead || c.connecting) continue;
      for (Pipe* p : Pipes(c)) {
        if (!Flush(c, *p, now)) break;
      }
      if (!c.dead && c.up.done() && c.down.done()) Close(c, /*rst=*/false);
    }
  }

  // Sends what is due. False when the connection was closed.
  bool Flush(Conn& c, Pipe& p, TimePoint now) {
    int fd = DstFd(c, p);
    TokenBucket& bucket = Bucket(p.dir);
    while (!p.queue.empty() && !p.dst_blocked) {
      Chunk& ch = p.queue.front();
      if (ch.ready_at > now) {
        Wake(ch.ready_at);
        return true;
      }
      size_t want = ch.bytes.size() - ch.offset;
      size_t allowed = std::min(want, bucket.Allowance(now));
      if (allowed == 0) {
        Wake(bucket.WhenAvailable(want, now));
        return true;
      }
      if (Counted(p.dir)) {
        allowed = std::min<uint64_t>(allowed, cut_after_ - cut_counter_);
        if (allowed == 0) return true;  // A cut is pending.
      }
      ssize_t n = send(fd, ch.bytes.data() + ch.offset, allowed, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          p.dst_blocked = true;
          return true;
        }
        Close(c, /*rst=*/true);
        return false;
      }
      size_t sent = static_cast<size_t>(n);
      bucket.Take(sent);
      (p.dir == Dir::kUp ? stats_.up_bytes : stats_.down_bytes) += sent;
      ch.offset += sent;
      p.queued_bytes -= sent;
      if (ch.offset == ch.bytes.size()) p.queue.pop_front();
      if (Counted(p.dir)) {
        cut_counter_ += sent;
        if (cut_counter_ >= cut_after_) cut_pending_ = true;
      }
    }
    if (p.queue.empty() && p.src_eof && !p.dst_shut) {
      if (p.eof_at > now) {
        Wake(p.eof_at);
      } else {
        shutdown(fd, SHUT_WR);
        p.dst_shut = true;
      }
    }
    return true;
  }

  void CutAll() {
    cut_pending_ = false;
    for (auto& c : conns_) {
      if (!c->dead) Close(*c, opt_.reset);
    }
    ++stats_.cuts;
    stats_dirty_ = true;
    if (cut_after_ != 0 && cut_counter_ >= cut_after_) {
      cut_counter_ = 0;
      if (!opt_.cut_every) cut_after_ = 0;
    }
  }

  static void SetNoDelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  // rst: SO_LINGER 0, the peer gets RST. Otherwise unread input is drained first, because
  // close() with unread data sends RST instead of FIN.
  static void CloseFd(int fd, bool rst) {
    if (fd < 0) return;
    if (rst) {
      linger l{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    } else {
      char buf[16384];
      while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
      }
    }
    close(fd);
  }

  void Close(Conn& c, bool rst) {
    CloseFd(c.client_fd, rst);
    CloseFd(c.target_fd, rst);
    c.client_fd = c.target_fd = -1;
    c.dead = true;
  }

  void WriteStats(TimePoint now) {
    next_stats_ = now + kStatsInterval;
    stats_dirty_ = false;
    if (opt_.stats_path.empty()) return;
    size_t open = 0;
    for (auto& c : conns_) open += c->dead ? 0 : 1;
    char json[512];
    int len = std::snprintf(
        json, sizeof json,
        "{\"up_bytes\":%llu,\"down_bytes\":%llu,\"connections\":%llu,\"open\":%zu,"
        "\"refused\":%llu,\"cuts\":%llu,\"partitioned\":%s}\n",
        static_cast<unsigned long long>(stats_.up_bytes),
        static_cast<unsigned long long>(stats_.down_bytes),
        static_cast<unsigned long long>(stats_.connections), open,
        static_cast<unsigned long long>(stats_.refused),
        static_cast<unsigned long long>(stats_.cuts), partitioned_ ? "true" : "false");
    std::string tmp = opt_.stats_path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    bool ok = f != nullptr && std::fwrite(json, 1, static_cast<size_t>(len), f) ==
                                  static_cast<size_t>(len);
    if (f != nullptr && std::fclose(f) != 0) ok = false;
    if (ok && std::rename(tmp.c_str(), opt_.stats_path.c_str()) != 0) ok = false;
    if (!ok && !stats_warned_) {
      std::fprintf(stderr, "faultproxy: cannot write %s: %s\n", opt_.stats_path.c_str(),
                   std::strerror(errno));
      stats_warned_ = true;
    }
  }

  Options opt_;
  int listen_fd_;
  int signal_fd_;
  sockaddr_storage target_;
  socklen_t target_len_;
  TokenBucket up_bucket_;
  TokenBucket down_bucket_;
  uint64_t cut_after_;  // 0 once a --cut-once cut has happened.
  uint64_t cut_counter_ = 0;
  bool cut_pending_ = false;
  bool partitioned_ = false;
  bool stop_ = false;
  std::vector<std::unique_ptr<Conn>> conns_;
  size_t rotate_ = 0;
  Stats stats_;
  TimePoint next_stats_{};
  TimePoint next_wake_{};
  bool stats_dirty_ = true;
  bool stats_warned_ = false;
};

int BadOption(const std::string& msg) {
  std::fprintf(stderr, "idlepool-faultproxy: %s\n", msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "idlepool-faultproxy: a TCP proxy for tests and benchmarks that adds delay, caps "
      "bandwidth and cuts connections (see tests/net/README.md).\n"
      "Amounts: K/M/G are powers of 1000, Ki/Mi/Gi of 1024, an optional B means bytes; rates "
      "also take bits: 12.5M = 100Mbit = 12500000 bytes/s.\n"
      "Signals: SIGUSR1 cuts every open connection; SIGUSR2 toggles a partition; SIGTERM/SIGINT "
      "exit."};
  Options opt;
  std::string rate, burst, cut_after, buffer, cut_dir = "both";
  int64_t delay_ms = 0;
  app.add_option("--listen", opt.listen, "HOST:PORT to listen on (port 0: any free port); "
                                         "prints `listening on HOST:PORT` when ready")
      ->required();
  auto* target = app.add_option("--target", opt.target, "HOST:PORT to forward to");
  auto* echo = app.add_flag("--echo", opt.echo,
                            "test only: send every byte back to the client, no target "
                            "(delay, rate and cuts apply to the echoed bytes, as down)");
  target->excludes(echo);
  app.add_option("--delay-ms", delay_ms, "one-way delay added in each direction")
      ->check(CLI::Range(int64_t{0}, int64_t{3'600'000}));
  app.add_option("--rate", rate,
                 "bandwidth cap per direction, shared by all connections (e.g. 12.5M, 100Mbit)");
  app.add_option("--burst", burst,
                 "token bucket size in bytes (default: 20 ms at --rate, at least 4KiB)");
  app.add_option("--cut-after", cut_after,
                 "cut every open connection once this many bytes have passed in --cut-dir");
  app.add_option("--cut-dir", cut_dir, "which bytes count toward --cut-after: up (client to "
                                       "target), down or both")
      ->capture_default_str();
  bool cut_once = false;
  auto* once = app.add_flag("--cut-once", cut_once, "cut once, then forward normally (the default)");
  auto* every = app.add_flag("--cut-every", opt.cut_every,
                             "cut again each time another --cut-after bytes have passed");
  once->excludes(every);
  app.add_flag("--reset", opt.reset, "cuts send RST (SO_LINGER 0) instead of FIN");
  app.add_option("--stats", opt.stats_path,
                 "JSON counters, rewritten atomically every 100 ms and at exit");
  app.add_option("--buffer", buffer,
                 "per connection and direction, stop reading past this many buffered bytes "
                 "(default 1Mi)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (!opt.echo && opt.target.empty()) return BadOption("--target HOST:PORT is required (or --echo)");
  opt.delay = milliseconds(delay_ms);
  if (!rate.empty()) {
    auto r = ParseAmount(rate, /*allow_bits=*/true);
    if (!r || *r < 1) return BadOption("--rate: cannot read '" + rate + "' (e.g. 12.5M, 100Mbit)");
    opt.rate_bytes_per_s = *r;
  }
  if (!burst.empty()) {
    auto b = ParseAmount(burst, false);
    if (!b || *b < 1) return BadOption("--burst: cannot read '" + burst + "' (e.g. 64Ki)");
    opt.burst_bytes = *b;
  } else {
    opt.burst_bytes = std::max(4096.0, opt.rate_bytes_per_s * 0.020);
  }
  if (!cut_after.empty()) {
    auto c = ParseAmount(cut_after, false);
    if (!c || *c < 1) return BadOption("--cut-after: cannot read '" + cut_after + "' (e.g. 1Mi)");
    opt.cut_after_bytes = static_cast<uint64_t>(*c);
  }
  if (cut_dir == "up") {
    opt.cut_dir = CutDir::kUp;
  } else if (cut_dir == "down") {
    opt.cut_dir = CutDir::kDown;
  } else if (cut_dir != "both") {
    return BadOption("--cut-dir: want up, down or both, not '" + cut_dir + "'");
  }
  if (!buffer.empty()) {
    auto b = ParseAmount(buffer, false);
    if (!b || *b < 1) return BadOption("--buffer: cannot read '" + buffer + "' (e.g. 1Mi)");
    opt.buffer_bytes_max = static_cast<size_t>(*b);
  }

  auto listen_ep = SplitHostPort(opt.listen);
  if (!listen_ep) return BadOption("--listen: want HOST:PORT, not '" + opt.listen + "'");
  std::string error;
  socklen_t listen_len = 0;
  auto listen_addr = Resolve(*listen_ep, /*passive=*/true, &listen_len, &error);
  if (!listen_addr) return BadOption("--listen " + opt.listen + ": " + error);
  sockaddr_storage target_addr{};
  socklen_t target_len = 0;
  if (!opt.echo) {
    auto target_ep = SplitHostPort(opt.target);
    if (!target_ep) return BadOption("--target: want HOST:PORT, not '" + opt.target + "'");
    auto t = Resolve(*target_ep, /*passive=*/false, &target_len, &error);
    if (!t) return BadOption("--target " + opt.target + ": " + error);
    target_addr = *t;
  }

  int sig_pipe[2];
  if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
    std::perror("idlepool-faultproxy: pipe");
    return 1;
  }
  g_signal_pipe_write = sig_pipe[1];
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) sigaction(s, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  int lfd = socket(listen_addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(lfd, reinterpret_cast<const sockaddr*>(&*listen_addr), listen_len) != 0 ||
      listen(lfd, 128) != 0) {
    std::fprintf(stderr, "idlepool-faultproxy: cannot listen on %s: %s\n", opt.listen.c_str(),
                 std::strerror(errno));
    return 1;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  std::printf("listening on %s\n", FormatAddr(bound).c_str());
  std::fflush(stdout);

  Proxy proxy(std::move(opt), lfd, sig_pipe[0], target_addr, target_len, Clock::now());
  return proxy.Run();
}
