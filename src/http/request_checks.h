// What the HTTP server checks in a request's headers before anything else: that it was sent to
// a name this server answers to (Host, against DNS rebinding), from a page of this server
// (Origin, against cross-site requests), and the credentials it carries (a bearer token or the
// session cookie). See docs/guide/http-api.md. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace idlepool::http {

// The names a server answers to. Each entry is a host name or an address ("localhost",
// "coord.lan", "192.168.1.5", "::1"; IPv6 unbracketed), optionally with its own port
// ("localhost:9000", "[::1]:9000", for a tunnel or a port forward): an entry without a port
// stands for the server's own port. Names compare case-insensitively.
struct HostAllowList {
  std::vector<std::string> hosts;
  int port = 0;  // the port the server listens on
};

// Whether a Host header value ("name", "name:port", "[v6]:port") names this server. A value
// without a port means port 443.
[[nodiscard]] bool HostAllowed(std::string_view host_header, const HostAllowList& allowed);

// Whether an Origin header value is "https://" + an allowed host ("null" and every other
// scheme are not).
[[nodiscard]] bool OriginAllowed(std::string_view origin, const HostAllowList& allowed);

// The names a server bound to `host` answers to when none are configured: a loopback address
// answers to itself, "localhost", 127.0.0.1 and ::1; a wildcard address ("0.0.0.0", "::") to
// those, this machine's host name and every address of its interfaces; anything else to itself.
[[nodiscard]] std::vector<std::string> DefaultAllowedHosts(std::string_view host);

// The value of cookie `name` in a Cookie header ("a=1; b=2"), or "".
[[nodiscard]] std::string CookieValue(std::string_view header, std::string_view name);

// The token of an "Authorization: Bearer TOKEN" header (the scheme is case-insensitive), or ""
// when the header is empty or names another scheme.
[[nodiscard]] std::string BearerToken(std::string_view authorization);

// Constant-time equality of two secrets (false when their lengths differ).
[[nodiscard]] bool SameSecret(std::string_view a, std::string_view b);

}  // namespace idlepool::http
