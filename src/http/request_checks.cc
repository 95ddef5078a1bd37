#include "http/request_checks.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "text/host_port.h"

namespace idlepool::http {
namespace {

// Debian's abseil has its own string_view type.
absl::string_view A(std::string_view s) { return absl::string_view(s.data(), s.size()); }

struct NamePort {
  std::string name;  // lower case, unbracketed, without a trailing dot
  std::optional<int> port;
};

bool NameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
         c == ':';
}

std::optional<int> ParsePort(std::string_view s) {
  int port = 0;
  if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(A(s), &port) || port > 65535) {
    return std::nullopt;
  }
  return port;
}

// "name", "name:port", "[v6]", "[v6]:port"; with `bare_v6`, an unbracketed IPv6 address too.
std::optional<NamePort> ParseNamePort(std::string_view s, bool bare_v6) {
  std::string_view name, rest;
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    name = s.substr(1, close - 1);
    rest = s.substr(close + 1);
  } else if (bare_v6 && std::count(s.begin(), s.end(), ':') > 1) {
    name = s;
  } else {
    const size_t colon = s.find(':');
    if (colon != std::string_view::npos && s.find(':', colon + 1) != std::string_view::npos) {
      return std::nullopt;  // an IPv6 address in a Host header is bracketed
    }
    name = s.substr(0, colon);
    rest = colon == std::string_view::npos ? "" : s.substr(colon);
  }
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty() || !std::all_of(name.begin(), name.end(), NameChar)) return std::nullopt;
  NamePort out{absl::AsciiStrToLower(A(name)), std::nullopt};
  if (!rest.empty()) {
    if (rest[0] != ':' || !(out.port = ParsePort(rest.substr(1)))) return std::nullopt;
  }
  return out;
}

bool IsLoopback(std::string_view host) {
  return host == "localhost" || host == "::1" || absl::StartsWith(A(host), "127.");
}

// Every address of this machine's interfaces but IPv6 link-local ones (a Host header cannot
// carry their zone).
void AddInterfaceAddresses(std::vector<std::string>& out) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      if (::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf)) out.emplace_back(buf);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr)) continue;
      if (::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf)) out.emplace_back(buf);
    }
  }
  ::freeifaddrs(list);
}

}  // namespace

bool HostAllowed(std::string_view host_header, const HostAllowList& allowed) {
  auto got = ParseNamePort(host_header, /*bare_v6=*/false);
  if (!got) return false;
  const int port = got->port.value_or(443);
  for (const std::string& entry : allowed.hosts) {
    auto want = ParseNamePort(entry, /*bare_v6=*/true);
    if (want && want->name == got->name && want->port.value_or(allowed.port) == port) return true;
  }
  return false;
}

bool OriginAllowed(std::string_view origin, const HostAllowList& allowed) {
  constexpr std::string_view kScheme = "https://";
  if (!absl::StartsWithIgnoreCase(A(origin), A(kScheme))) return false;
  const std::string_view rest = origin.substr(kScheme.size());
  return rest.find('/') == std::string_view::npos && HostAllowed(rest, allowed);
}

std::vector<std::string> DefaultAllowedHosts(std::string_view host) {
  std::vector<std::string> out;
  const bool wildcard = text::IsWildcardHost(host);
  if (!wildcard) out.emplace_back(absl::AsciiStrToLower(A(host)));
  if (wildcard || IsLoopback(host)) {
    for (const char* h : {"localhost", "127.0.0.1", "::1"}) out.emplace_back(h);
  }
  if (wildcard) {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') out.emplace_back(name);
    AddInterfaceAddresses(out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string CookieValue(std::string_view header, std::string_view name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string_view::npos) end = header.size();
    absl::string_view part = absl::StripLeadingAsciiWhitespace(A(header.substr(pos, end - pos)));
    if (part.size() > name.size() && absl::StartsWith(part, A(name)) && part[name.size()] == '=') {
      return std::string(absl::StripTrailingAsciiWhitespace(part.substr(name.size() + 1)));
    }
    pos = end + 1;
  }
  return "";
}

std::string BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";  // RFC 9110 11.1: case-insensitive
  if (authorization.size() <= kScheme.size() ||
      !absl::StartsWithIgnoreCase(A(authorization), A(kScheme))) {
    return "";
  }
  return std::string(absl::StripAsciiWhitespace(A(authorization.substr(kScheme.size()))));
}

bool SameSecret(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace idlepool::http
