// Which connections a listener admits: a pure bookkeeper of the connections it handed on, by
// peer, against three bounds (docs/limits.md#descriptors):
//   - the descriptor reserve: the process keeps `reserve` descriptors below its limit for
//     everything but incoming connections (tasks' pipes, files, outgoing channels); accept(2)
//     returns the lowest free descriptor, so a connection whose descriptor is at or above
//     limit - reserve leaves fewer than that free and is refused;
//   - the listener's cap (max_connections, and never more than limit - reserve);
//   - the cap per peer address (max_per_peer, and never more than a quarter of limit - reserve,
//     so that one address cannot take the whole budget): IPv4 addresses one by one, IPv6 ones
//     by /64 (what one site gets).
// A refused connection is closed at once by the caller.
//
// The gate cannot see a connection end (gRPC closes it): it remembers each one's descriptor and
// socket identity (SocketId: device and inode, never reused while the socket lives) and forgets
// the ones `Prune` finds gone. A descriptor admitted again replaces the entry it had: it was
// closed in between.
//
// Pure: no I/O, no clock (liveness is asked of the caller's probe). Not thread-safe: owned by
// one accept thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace idlepool::gate {

struct GateLimits {
  size_t max_connections = 1024;  // at once, on this listener
  size_t max_per_peer = 64;       // at once, from one address (IPv6: one /64)
  // Descriptors kept free for the rest of the process: at least this many, and at least a
  // quarter of the limit.
  size_t min_fd_reserve = 64;
};

// A peer's address as the caps see it: 16 bytes (IPv4 mapped into IPv6, IPv6 cut to its /64).
using PeerKey = std::array<uint8_t, 16>;
PeerKey PeerKeyOfIpv4(const uint8_t (&addr)[4]);
PeerKey PeerKeyOfIpv6(const uint8_t (&addr)[16]);  // v4-mapped addresses count as IPv4
std::string PeerKeyText(const PeerKey& key);       // "192.0.2.7", "2001:db8:0:1::/64"

struct SocketId {
  uint64_t dev = 0, ino = 0;
  bool operator==(const SocketId&) const = default;
};

// The first descriptor number a connection may not have under `fd_limit`: the limit less the
// reserve (min_fd_reserve, or a quarter of the limit when more). Other servers of the process
// (the HTTPS dashboard) refuse at the same line.
size_t FdCeiling(uint64_t fd_limit, size_t min_fd_reserve);

// Whether an accept(2) error belongs to the one connection being accepted (Linux passes pending
// network errors on; EPERM: a firewall rule refused it): accept the next one at once. Anything
// else (out of descriptors or memory) is the process's: wait a little, never stop listening.
bool IsConnectionAcceptError(int err);

enum class Admission { kAdmit, kFdReserve, kListenerFull, kPeerFull };
const char* AdmissionName(Admission a);

class ConnectionGate {
 public:
  // `fd_limit`: the process's soft RLIMIT_NOFILE.
  ConnectionGate(const GateLimits& limits, uint64_t fd_limit);

  // Whether the connection accepted as descriptor `fd` from `peer` may be handed on.
  Admission Check(const PeerKey& peer, int fd) const;
  // It was handed on.
  void Admitted(int fd, const SocketId& id, const PeerKey& peer);
  // Forgets every connection for which `alive(fd, id)` is false; how many were forgotten.
  size_t Prune(const std::function<bool(int fd, const SocketId& id)>& alive);

  size_t live() const { return by_fd_.size(); }
  size_t live_from(const PeerKey& peer) const;
  // The bounds in effect for this limit.
  size_t fd_ceiling() const { return fd_ceiling_; }  // descriptors >= this are refused
  size_t max_connections() const { return max_connections_; }
  size_t max_per_peer() const { return max_per_peer_; }

 private:
  struct Entry {
    SocketId id;
    PeerKey peer;
  };
  void Drop(std::map<int, Entry>::iterator it);

  size_t fd_ceiling_ = 0;
  size_t max_connections_ = 0;
  size_t max_per_peer_ = 0;
  std::map<int, Entry> by_fd_;
  std::map<PeerKey, size_t> per_peer_;
};

}  // namespace idlepool::gate
