// Channel: framed messages, with file descriptors attached, over a Unix stream socket between the
// worker and a slot's sandbox agent (sandbox/agent.h).
//
// A frame is a 4-byte little-endian length, then that many bytes; the descriptors of a frame
// (SCM_RIGHTS, at most kMaxFds) ride on its first byte. Message bodies are built with Writer and
// read with Reader: unsigned integers (little-endian u64) and length-prefixed strings.
//
// Thread safety: Send and Receive may run at the same time from two threads (one each); two
// senders need a lock of their own. Ownership: a Channel owns its socket; descriptors passed to
// Send stay the caller's, those returned by Receive are the caller's to close. Errors:
// kUnavailable when the peer closed the socket, kInvalidArgument for a frame over kMaxFrame bytes
// or a body that does not parse (Reader), kInternal for other socket errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace idlepool::sandbox {

inline constexpr size_t kMaxFrame = 16u << 20;  // a command's argv and environment fit
inline constexpr size_t kMaxFds = 4;

struct Frame {
  std::string body;
  std::vector<int> fds;  // owned by the receiver
};

class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  [[nodiscard]] absl::Status Send(std::string_view body, const std::vector<int>& fds = {});
  [[nodiscard]] absl::StatusOr<Frame> Receive();
  int fd() const { return fd_; }
  // Shuts the socket down both ways (the peer sees end of file); the descriptor stays open.
  void Shutdown();

 private:
  int fd_;
};

class Writer {
 public:
  Writer& U64(uint64_t v);
  Writer& Str(std::string_view s);
  Writer& Strs(const std::vector<std::string>& v);
  const std::string& body() const { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  [[nodiscard]] absl::StatusOr<uint64_t> U64();
  [[nodiscard]] absl::StatusOr<std::string> Str();
  [[nodiscard]] absl::StatusOr<std::vector<std::string>> Strs();

 private:
  std::string_view in_;
};

}  // namespace idlepool::sandbox
