#include "serve/tunnel_wire.h"

#include <charconv>

namespace idlepool::serve {

std::string TunnelPreface(uint64_t attempt) {
  return "CONNECT " + std::to_string(attempt) + " HTTP/1.1\r\n\r\n";
}

std::optional<uint64_t> ParseTunnelPreface(std::string_view preface) {
  if (preface.size() > kTunnelPrefaceMax || !preface.ends_with("\r\n\r\n")) return std::nullopt;
  std::string_view line = preface.substr(0, preface.find("\r\n"));
  constexpr std::string_view kMethod = "CONNECT ", kVersion = " HTTP/1.1";
  if (!line.starts_with(kMethod) || !line.ends_with(kVersion)) return std::nullopt;
  std::string_view id = line.substr(kMethod.size(), line.size() - kMethod.size() - kVersion.size());
  if (id.empty() || id.size() > 20) return std::nullopt;
  uint64_t attempt = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), attempt);
  if (ec != std::errc() || end != id.data() + id.size()) return std::nullopt;
  return attempt;
}

std::string_view TunnelAnswer(int status) {
  switch (status) {
    case 200:
      return "HTTP/1.1 200 OK\r\n\r\n";
    case 404:
      return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    case 503:
      return "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
    default:
      return "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
  }
}

std::optional<int> ParseTunnelAnswer(std::string_view head) {
  constexpr std::string_view kVersion = "HTTP/1.1 ";
  if (!head.starts_with(kVersion) || head.size() < kVersion.size() + 3) return std::nullopt;
  int status = 0;
  const char* at = head.data() + kVersion.size();
  auto [end, ec] = std::from_chars(at, at + 3, status);
  if (ec != std::errc() || end != at + 3 || status < 100) return std::nullopt;
  return status;
}

}  // namespace idlepool::serve
