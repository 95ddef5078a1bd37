// The bounds the HTTPS server keeps whatever its clients do (docs/limits.md#http-server): how
// many connections, how long and how much of a request it reads, how long a write may stall.
// Plain values.
#pragma once

#include <chrono>
#include <cstddef>

namespace idlepool::http {

struct ConnectionLimits {
  // Live connections, from accept to close. At the cap a new connection takes the slot of the
  // one that has waited longest for its next request bytes (in its handshake, in a request's
  // head or body, or idle between requests), which is closed; when every slot is handling a
  // request (event streams included), the new connection is closed at once.
  size_t max_connections = 128;
  // A request must arrive whole within this time: for a connection's first request, from its
  // accept (the TLS handshake included); for a later one, from its first byte. Its head and its
  // body together; a slower client gets 408 (or is closed) and cannot hold a thread longer.
  std::chrono::milliseconds request_timeout{10000};
  // Between two requests on one connection.
  std::chrono::milliseconds idle_timeout{5000};
  // A write that makes no progress for this long fails and closes the connection.
  std::chrono::milliseconds write_timeout{5000};
  // The request line and headers together, in bytes and in lines: beyond either, 431 and close.
  size_t max_header_bytes = 16 << 10;
  size_t max_header_lines = 100;
  // A request body (the API reads none today; POST /login reads a form): beyond it, 413.
  size_t max_body_bytes = 64 << 10;
  // Requests on one connection before the server closes it.
  size_t max_requests_per_connection = 100;
};

}  // namespace idlepool::http
