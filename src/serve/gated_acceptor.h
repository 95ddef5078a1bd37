// The TCP front of the gateway and of the worker tunnel: a gate::Listener (gate/listener.h) that
// admits each connection against the same bounds as the gRPC ports (the descriptor reserve, the
// listener's cap, the cap per peer address; refusals reset at once and summed up in one log line
// per 10 s; accept(2) out of descriptors retried, never a loop of log lines), then hands it to an
// Asio io_context as a tcp::socket.
//
// Threads: the listener accepts on its own thread; `on_connection` runs on the io thread (posted),
// which owns the socket from then on. A connection posted but never run (the io_context stopped)
// is closed when its handler is destroyed. Open, Start and Stop from one thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gate/listener.h"

namespace idlepool::serve {

class GatedAcceptor {
 public:
  // Listens on `listen` (host:port, port 0 any free one). kUnavailable when it cannot listen,
  // kInvalidArgument for a malformed address (see gate::Listener::Open).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GatedAcceptor>> Open(
      const std::string& listen, const gate::ListenerOptions& options);
  ~GatedAcceptor();  // Stop()

  int port() const { return listener_->port(); }
  // Starts accepting; each admitted connection reaches `on_connection` on `io`'s thread. `io`
  // must outlive Stop.
  void Start(boost::asio::io_context& io,
             std::function<void(boost::asio::ip::tcp::socket)> on_connection);
  // Stops accepting (connections handed on are not touched). Idempotent.
  void Stop();
  gate::Listener::Counts counts() const { return listener_->counts(); }

 private:
  explicit GatedAcceptor(std::unique_ptr<gate::Listener> listener)
      : listener_(std::move(listener)) {}
  std::unique_ptr<gate::Listener> listener_;
};

}  // namespace idlepool::serve
