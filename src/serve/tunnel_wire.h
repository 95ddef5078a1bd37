// The worker tunnel's texts (docs/guide/serving.md, "The worker tunnel"): the gateway's preface
// `CONNECT <attempt-id> HTTP/1.1\r\n\r\n` and the worker's one-line answers. Pure functions,
// shared by both ends (tunnel_server.cc reads prefaces, gateway_tunnel.cc writes them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idlepool::serve {

// A preface (its header lines and the blank line included) is at most this long; longer: 400.
inline constexpr size_t kTunnelPrefaceMax = 1024;
// An answer from the worker is at most this long (the gateway reads no more before it gives up).
inline constexpr size_t kTunnelAnswerMax = 256;

std::string TunnelPreface(uint64_t attempt);
// The attempt of a whole preface (up to and including its blank line); nullopt when malformed:
// not "CONNECT ", an id that is not 1 to 20 decimal digits or over 2^64-1, another version than
// HTTP/1.1. Header lines after the first are ignored.
std::optional<uint64_t> ParseTunnelPreface(std::string_view preface);

// The answer for status 200, 400, 404 or 503 (errors with Content-Length: 0).
std::string_view TunnelAnswer(int status);
// The status of an answer's head (up to its blank line): "HTTP/1.1 NNN ..."; nullopt otherwise.
std::optional<int> ParseTunnelAnswer(std::string_view head);

}  // namespace idlepool::serve
