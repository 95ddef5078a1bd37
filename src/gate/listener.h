// A TCP listener whose accept loop is ours, so that what gRPC 1.51 does not bound holds
// (docs/limits.md#descriptors): every connection passes a ConnectionGate before it is handed
// on (the descriptor reserve, the listener's cap, the cap per peer address), a refused one is
// reset at once (SO_LINGER 0: no TIME_WAIT either), and no accept(2) error stops the loop: out
// of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM) it waits 100 ms and tries again, the
// connection waiting in the backlog meanwhile. (gRPC 1.51's own listener logs "Failed accept4:
// Too many open files" and never accepts again.)
//
// Liveness: the gate forgets the connections the server closed when it prunes, once a second
// and whenever a cap is reached (at most every 50 ms).
//
// Thread safety: Open, Start and Stop from one thread; counts() from any. The hand-off runs on
// the listener's own thread and owns the descriptor it is given.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "gate/connection_gate.h"

namespace idlepool::gate {

struct ListenerOptions {
  GateLimits limits;
  std::string name = "port";  // in log lines: "gRPC port", "peer port"
};

class Listener {
 public:
  // Takes connection `fd` (non-blocking, close-on-exec), accepted on `listen_fd`.
  using HandOff = std::function<void(int listen_fd, int fd)>;

  // Binds and listens on HOST:PORT (port 0: a free port). A wildcard host (0.0.0.0, ::) listens
  // on IPv6 and IPv4 where the machine has IPv6, as gRPC's own listener does; a name listens on
  // each of its addresses, on one port. SO_REUSEADDR, never SO_REUSEPORT (a port in use is an
  // error). Errors: kInvalidArgument for a bad address, kUnavailable when it cannot listen.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Listener>> Open(
      const std::string& address, const ListenerOptions& options);
  ~Listener();  // Stop

  int port() const { return port_; }
  // Accepts on its own thread until Stop, handing each admitted connection to `hand_off`.
  void Start(HandOff hand_off);
  // Stops accepting and closes the listening sockets (connections in the backlog are reset).
  // Connections already handed on are not touched. Idempotent.
  void Stop();

  struct Counts {
    uint64_t admitted = 0;
    uint64_t refused = 0;        // by any bound
    uint64_t accept_errors = 0;  // accept(2) failed for the process (out of descriptors...)
    uint64_t live = 0;           // handed on and not yet seen closed (as of the last prune)
  };
  Counts counts() const;

 private:
  Listener(const ListenerOptions& options, uint64_t fd_limit);
  void Loop();
  // Accepts what `lfd` has waiting; false when the process is out of descriptors.
  bool AcceptFrom(int lfd);
  void Refuse(int fd, Admission why, const PeerKey& peer);
  void Prune();
  void LogRefusals();  // at most one line per 10 s

  const ListenerOptions options_;
  ConnectionGate gate_;  // the accept thread's
  std::vector<int> fds_;
  int wake_fd_ = -1;
  int port_ = 0;
  HandOff hand_off_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> admitted_{0}, refused_{0}, accept_errors_{0}, live_{0};
  // The accept thread's: refusals since the last log line, by Admission, and when it was.
  uint64_t refused_since_log_[4] = {};
  int64_t last_log_ms_ = 0, last_prune_ms_ = 0;
};

}  // namespace idlepool::gate
