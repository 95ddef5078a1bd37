#include "text/host_port.h"

#include <charconv>

#include "absl/strings/str_cat.h"

namespace idlepool::text {
namespace {

absl::Status NotAnAddress(std::string_view address, bool port_alone) {
  return absl::InvalidArgumentError(
      absl::StrCat("'", std::string(address.substr(0, 100)), "' is not HOST:PORT, [IPV6]:PORT",
                   port_alone ? " or PORT" : "", " with a port of 0 to 65535"));
}

bool ParsePort(std::string_view text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  auto r = std::from_chars(text.data(), text.data() + text.size(), *port);
  return r.ec == std::errc() && r.ptr == text.data() + text.size() && *port >= 0 && *port <= 65535;
}

}  // namespace

absl::StatusOr<HostPort> SplitHostPort(std::string_view address, std::string_view default_host) {
  const bool port_alone = !default_host.empty();
  HostPort out;
  std::string_view host = default_host, port = address;
  const size_t colon = address.rfind(':');
  if (colon != std::string_view::npos) {
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
      return NotAnAddress(address, port_alone);  // an IPv6 address must be bracketed
    }
  }
  if (host.empty() || host.find_first_of(" \t/@") != std::string_view::npos ||
      !ParsePort(port, &out.port)) {
    return NotAnAddress(address, port_alone);
  }
  out.host = std::string(host);
  return out;
}

std::string JoinHostPort(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos)
    return absl::StrCat("[", std::string(host), "]:", port);
  return absl::StrCat(std::string(host), ":", port);
}

bool IsWildcardHost(std::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::";
}

}  // namespace idlepool::text
