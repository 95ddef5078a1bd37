// Network addresses as users and peers write them: "HOST:PORT", "[IPV6]:PORT", and, where a
// default host applies, "PORT" alone. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace idlepool::text {

struct HostPort {
  std::string host;  // without brackets: "127.0.0.1", "::1", "laptop.local"
  int port = 0;      // 0..65535; 0 asks the system for a free port when listening
};

// Splits `address`. An IPv6 host must be bracketed; a host may not be empty nor hold a space, a
// '/' or a '@' (so a gRPC scheme such as "unix:/path" is refused). With `default_host`
// non-empty, a bare "PORT" means default_host:PORT. Errors: kInvalidArgument naming the address
// (cut to 100 bytes) and what is accepted; the caller adds which flag or peer it came from.
[[nodiscard]] absl::StatusOr<HostPort> SplitHostPort(std::string_view address,
                                                     std::string_view default_host = "");

// "host:port", with an IPv6 host bracketed ("[::1]:7878").
[[nodiscard]] std::string JoinHostPort(std::string_view host, int port);

// Whether `host` (unbracketed) listens on every address: "", "0.0.0.0" or "::".
[[nodiscard]] bool IsWildcardHost(std::string_view host);

}  // namespace idlepool::text
