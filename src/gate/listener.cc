#include "gate/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "platform/clock.h"
#include "platform/fd_limit.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"

namespace idlepool::gate {
namespace {

constexpr int kBackoffMs = 100;      // out of descriptors: try accept(2) again after this
constexpr int kPruneEveryMs = 1000;  // forget closed connections at least this often
constexpr int kPruneAtCapMs = 50;    // and at a cap, at most this often
constexpr int kLogEveryMs = 10000;   // one line about refusals per this long, at most
constexpr int kAcceptBurst = 256;    // accepts per wake-up before looking at the others

int64_t NowMs() {
  return std::chrono::duration_cast<core::Millis>(platform::SystemClock().Now().time_since_epoch())
      .count();
}

PeerKey KeyOf(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr;
    uint8_t b[16];
    std::memcpy(b, a6.s6_addr, 16);
    return PeerKeyOfIpv6(b);
  }
  uint8_t b[4] = {};
  if (ss.ss_family == AF_INET) {
    std::memcpy(b, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, 4);
  }
  return PeerKeyOfIpv4(b);
}

bool Alive(int fd, const SocketId& id) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_dev == id.dev && st.st_ino == id.ino;
}

// One listening socket on `ai` (port `port` when not 0); the descriptor or -errno.
int ListenOn(const addrinfo& ai, int port) {
  const int fd = ::socket(ai.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int one = 1, zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // accepted sockets inherit it
  if (ai.ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  sockaddr_storage ss{};
  std::memcpy(&ss, ai.ai_addr, ai.ai_addrlen);
  if (ai.ai_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6&>(ss).sin6_port = htons(static_cast<uint16_t>(port));
  } else {
    reinterpret_cast<sockaddr_in&>(ss).sin_port = htons(static_cast<uint16_t>(port));
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), ai.ai_addrlen) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    const int err = errno;
    ::close(fd);
    return -err;
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(ss).sin6_port
                                        : reinterpret_cast<sockaddr_in&>(ss).sin_port);
}

}  // namespace

Listener::Listener(const ListenerOptions& options, uint64_t fd_limit)
    : options_(options), gate_(options.limits, fd_limit) {}

absl::StatusOr<std::unique_ptr<Listener>> Listener::Open(const std::string& address,
                                                         const ListenerOptions& options) {
  auto hp = text::SplitHostPort(address);
  if (!hp.ok()) return hp.status();
  std::unique_ptr<Listener> l(new Listener(options, platform::FdSoftLimit()));
  // A wildcard: IPv6 and IPv4 on one socket where IPv6 exists, else IPv4 alone.
  std::vector<std::string> hosts = {hp->host};
  if (text::IsWildcardHost(hp->host)) hosts = {"::", "0.0.0.0"};
  int port = hp->port, last_err = 0;
  for (const std::string& host : hosts) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | AI_ADDRCONFIG;
    addrinfo* res = nullptr;
    if (int rc = ::getaddrinfo(host.c_str(), "0", &hints, &res); rc != 0) {
      last_err = EADDRNOTAVAIL;
      continue;
    }
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      const int fd = ListenOn(*ai, port);
      if (fd < 0) {
        last_err = -fd;
        if (last_err == EADDRINUSE) break;
        continue;
      }
      l->fds_.push_back(fd);
      if (port == 0) port = BoundPort(fd);
    }
    ::freeaddrinfo(res);
    if (last_err == EADDRINUSE || !l->fds_.empty()) break;
  }
  if (last_err == EADDRINUSE || l->fds_.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address, ": ",
                                               std::strerror(last_err ? last_err : EINVAL)));
  }
  l->port_ = port;
  l->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (l->wake_fd_ < 0) return absl::UnavailableError("eventfd: " + std::string(strerror(errno)));
  return l;
}

Listener::~Listener() {
  Stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Listener::Start(HandOff hand_off) {
  hand_off_ = std::move(hand_off);
  last_log_ms_ = last_prune_ms_ = NowMs();
  spdlog::debug("{}: at most {} connections, {} per address; descriptors from {} kept free",
                options_.name, gate_.max_connections(), gate_.max_per_peer(), gate_.fd_ceiling());
  thread_ = std::thread([this] { Loop(); });
}

void Listener::Stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

Listener::Counts Listener::counts() const {
  return Counts{admitted_.load(), refused_.load(), accept_errors_.load(), live_.load()};
}

void Listener::Loop() {
  std::vector<pollfd> pfds;
  int64_t backoff_until = 0;
  while (!stopping_.load()) {
    const int64_t now = NowMs();
    const bool backing_off = now < backoff_until;
    pfds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    if (!backing_off) {
      for (int fd : fds_) pfds.push_back(pollfd{fd, POLLIN, 0});
    }
    const int wait = backing_off ? static_cast<int>(backoff_until - now) : kPruneEveryMs;
    const int n = ::poll(pfds.data(), pfds.size(), wait);
    if (n < 0 && errno != EINTR) {
      spdlog::error("{}: poll failed ({}); trying again", options_.name, std::strerror(errno));
      backoff_until = NowMs() + kBackoffMs;
      continue;
    }
    if (pfds[0].revents != 0) break;
    for (size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents != 0 && !AcceptFrom(pfds[i].fd)) backoff_until = NowMs() + kBackoffMs;
    }
    if (NowMs() - last_prune_ms_ >= kPruneEveryMs) Prune();
    LogRefusals();
  }
}

bool Listener::AcceptFrom(int lfd) {
  for (int i = 0; i < kAcceptBurst; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd =
        ::accept4(lfd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return true;
      if (IsConnectionAcceptError(err)) continue;
      // Out of descriptors or memory, or anything else: never a reason to stop listening.
      if (accept_errors_.fetch_add(1) == 0 || NowMs() - last_log_ms_ >= kLogEveryMs) {
        spdlog::warn("{}: accept failed ({}); trying again in {} ms", options_.name,
                     std::strerror(err), kBackoffMs);
      }
      return false;
    }
    const PeerKey peer = KeyOf(ss);
    Admission a = gate_.Check(peer, fd);
    if (a != Admission::kAdmit && NowMs() - last_prune_ms_ >= kPruneAtCapMs) {
      Prune();
      a = gate_.Check(peer, fd);
    }
    struct stat st {};
    if (a == Admission::kAdmit && ::fstat(fd, &st) != 0) a = Admission::kFdReserve;
    if (a != Admission::kAdmit) {
      Refuse(fd, a, peer);
      continue;
    }
    gate_.Admitted(fd, SocketId{st.st_dev, st.st_ino}, peer);
    live_.store(gate_.live());
    admitted_.fetch_add(1);
    hand_off_(lfd, fd);
  }
  return true;
}

void Listener::Refuse(int fd, Admission why, const PeerKey& peer) {
  linger l{1, 0};  // reset at once: nothing of it stays (no TIME_WAIT)
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
  refused_.fetch_add(1);
  if (refused_since_log_[static_cast<int>(why)]++ == 0 && why == Admission::kPeerFull) {
    spdlog::debug("{}: {} reached its cap of {} connections", options_.name, PeerKeyText(peer),
                  gate_.max_per_peer());
  }
}

void Listener::Prune() {
  gate_.Prune(Alive);
  live_.store(gate_.live());
  last_prune_ms_ = NowMs();
}

void Listener::LogRefusals() {
  const int64_t now = NowMs();
  if (now - last_log_ms_ < kLogEveryMs) return;
  const uint64_t total = refused_since_log_[1] + refused_since_log_[2] + refused_since_log_[3];
  if (total > 0) {
    spdlog::warn(
        "{}: refused {} connections in the last {} s ({} at the descriptor reserve, {} with the "
        "port full at {}, {} over an address's cap of {}); {} open",
        options_.name, total, (now - last_log_ms_) / 1000, refused_since_log_[1],
        refused_since_log_[2], gate_.max_connections(), refused_since_log_[3], gate_.max_per_peer(),
        gate_.live());
  }
  for (auto& r : refused_since_log_) r = 0;
  last_log_ms_ = now;
}

}  // namespace idlepool::gate
