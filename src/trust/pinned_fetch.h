// Trust on first use, done right: before a joining worker or a new `login` sends any secret, it
// opens a TLS connection to the coordinator (ALPN h2, as gRPC does), takes the certificate chain
// the server presents, finds the CA certificate whose key matches the token's pin, and checks
// that the server's own certificate was signed by it. Only then is the CA trusted (written next
// to the worker's key or into ~/.config/idlepool) and the secret sent, over a gRPC channel that
// verifies the server against that CA.
//
// Blocking; thread-safe. Errors: kUnavailable (cannot connect or no TLS handshake, with the
// address), kDeadlineExceeded (timeout), kPermissionDenied: "HOST:PORT is not the pool this token
// was made for: its CA is sha256:ab12… and the token pins sha256:cd34…" (nothing was sent).
#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"

namespace idlepool::trust {

// The pinned CA's certificate PEM.
absl::StatusOr<std::string> FetchPinnedCa(const std::string& host_port, const std::string& pin,
                                          std::chrono::milliseconds timeout);

}  // namespace idlepool::trust
