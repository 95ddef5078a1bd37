#include "gate/connection_gate.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace idlepool::gate {

PeerKey PeerKeyOfIpv4(const uint8_t (&addr)[4]) {
  PeerKey k{};
  k[10] = k[11] = 0xff;
  std::copy(addr, addr + 4, k.begin() + 12);
  return k;
}

PeerKey PeerKeyOfIpv6(const uint8_t (&addr)[16]) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(kMapped, kMapped + 12, addr)) {
    const uint8_t v4[4] = {addr[12], addr[13], addr[14], addr[15]};
    return PeerKeyOfIpv4(v4);
  }
  PeerKey k{};
  std::copy(addr, addr + 8, k.begin());
  return k;
}

std::string PeerKeyText(const PeerKey& k) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(kMapped, kMapped + 12, k.begin())) {
    return absl::StrCat(k[12], ".", k[13], ".", k[14], ".", k[15]);
  }
  return absl::StrFormat("%x:%x:%x:%x::/64", k[0] << 8 | k[1], k[2] << 8 | k[3], k[4] << 8 | k[5],
                         k[6] << 8 | k[7]);
}

const char* AdmissionName(Admission a) {
  switch (a) {
    case Admission::kAdmit:
      return "admitted";
    case Admission::kFdReserve:
      return "descriptor reserve";
    case Admission::kListenerFull:
      return "listener full";
    case Admission::kPeerFull:
      return "peer's cap";
  }
  return "?";
}

size_t FdCeiling(uint64_t fd_limit, size_t min_fd_reserve) {
  const uint64_t reserve = std::max<uint64_t>(min_fd_reserve, fd_limit / 4);
  return fd_limit > reserve ? static_cast<size_t>(fd_limit - reserve) : 0;
}

ConnectionGate::ConnectionGate(const GateLimits& limits, uint64_t fd_limit) {
  fd_ceiling_ = FdCeiling(fd_limit, limits.min_fd_reserve);
  max_connections_ = std::min(limits.max_connections, fd_ceiling_);
  max_per_peer_ = std::min(limits.max_per_peer, std::max<size_t>(1, fd_ceiling_ / 4));
}

Admission ConnectionGate::Check(const PeerKey& peer, int fd) const {
  if (fd < 0 || static_cast<size_t>(fd) >= fd_ceiling_) return Admission::kFdReserve;
  // A descriptor handed on before and now accepted again was closed in between: not counted.
  auto same = by_fd_.find(fd);
  const bool reused = same != by_fd_.end();
  if (by_fd_.size() - (reused ? 1 : 0) >= max_connections_) return Admission::kListenerFull;
  const size_t from_peer = live_from(peer) - (reused && same->second.peer == peer ? 1 : 0);
  if (from_peer >= max_per_peer_) return Admission::kPeerFull;
  return Admission::kAdmit;
}

void ConnectionGate::Admitted(int fd, const SocketId& id, const PeerKey& peer) {
  if (auto it = by_fd_.find(fd); it != by_fd_.end()) Drop(it);
  by_fd_.emplace(fd, Entry{id, peer});
  ++per_peer_[peer];
}

size_t ConnectionGate::Prune(const std::function<bool(int fd, const SocketId& id)>& alive) {
  size_t n = 0;
  for (auto it = by_fd_.begin(); it != by_fd_.end();) {
    auto next = std::next(it);
    if (!alive(it->first, it->second.id)) {
      Drop(it);
      ++n;
    }
    it = next;
  }
  return n;
}

size_t ConnectionGate::live_from(const PeerKey& peer) const {
  auto it = per_peer_.find(peer);
  return it == per_peer_.end() ? 0 : it->second;
}

void ConnectionGate::Drop(std::map<int, Entry>::iterator it) {
  auto p = per_peer_.find(it->second.peer);
  if (p != per_peer_.end() && --p->second == 0) per_peer_.erase(p);
  by_fd_.erase(it);
}

bool IsConnectionAcceptError(int err) {
  switch (err) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
    case EPERM:  // a firewall rule refused it
      return true;
    default:
      return false;
  }
}

}  // namespace idlepool::gate
