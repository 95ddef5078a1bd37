#include "sandbox/channel.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace idlepool::sandbox {
namespace {

absl::Status SocketError(const char* what) {
  const int err = errno;
  if (err == EPIPE || err == ECONNRESET) return absl::UnavailableError("sandbox channel closed");
  return absl::InternalError(absl::StrCat("sandbox channel: ", what, ": ", std::strerror(err)));
}

absl::Status ReadFull(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r == 0) return absl::UnavailableError("sandbox channel closed");
    if (r < 0) {
      if (errno == EINTR) continue;
      return SocketError("read");
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

}  // namespace

Channel::~Channel() {
  if (fd_ >= 0) ::close(fd_);
}

void Channel::Shutdown() { ::shutdown(fd_, SHUT_RDWR); }

absl::Status Channel::Send(std::string_view body, const std::vector<int>& fds) {
  if (body.size() > kMaxFrame || fds.size() > kMaxFds) {
    return absl::InvalidArgumentError("sandbox message too large");
  }
  std::string frame(4, '\0');
  const auto len = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  frame.append(body);
  size_t sent = 0;
  bool fds_sent = fds.empty();
  while (sent < frame.size()) {
    iovec iov{frame.data() + sent, frame.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
    if (!fds_sent) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SocketError("sendmsg");
    }
    fds_sent = true;
    sent += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<Frame> Channel::Receive() {
  Frame f;
  char head[4];
  iovec iov{head, 1};  // the first byte alone: the descriptors ride on it
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n == 0) return absl::UnavailableError("sandbox channel closed");
  if (n < 0) return SocketError("recvmsg");
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      f.fds.push_back(fd);
    }
  }
  auto close_fds = [&f] {
    for (int fd : f.fds) ::close(fd);
  };
  if (absl::Status st = ReadFull(fd_, head + 1, 3); !st.ok()) {
    close_fds();
    return st;
  }
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i)
    len |= static_cast<uint32_t>(static_cast<uint8_t>(head[i])) << (8 * i);
  if (len > kMaxFrame) {
    close_fds();
    return absl::InvalidArgumentError("sandbox message too large");
  }
  f.body.resize(len);
  if (absl::Status st = ReadFull(fd_, f.body.data(), len); !st.ok()) {
    close_fds();
    return st;
  }
  return f;
}

Writer& Writer::U64(uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return *this;
}

Writer& Writer::Str(std::string_view s) {
  U64(s.size());
  out_.append(s);
  return *this;
}

Writer& Writer::Strs(const std::vector<std::string>& v) {
  U64(v.size());
  for (const auto& s : v) Str(s);
  return *this;
}

absl::StatusOr<uint64_t> Reader::U64() {
  if (in_.size() < 8) return absl::InvalidArgumentError("sandbox message truncated");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
  in_.remove_prefix(8);
  return v;
}

absl::StatusOr<std::string> Reader::Str() {
  auto n = U64();
  if (!n.ok()) return n.status();
  if (*n > in_.size()) return absl::InvalidArgumentError("sandbox message truncated");
  std::string s(in_.substr(0, *n));
  in_.remove_prefix(*n);
  return s;
}

absl::StatusOr<std::vector<std::string>> Reader::Strs() {
  auto n = U64();
  if (!n.ok()) return n.status();
  if (*n > in_.size()) return absl::InvalidArgumentError("sandbox message truncated");
  std::vector<std::string> out;
  out.reserve(*n);
  for (uint64_t i = 0; i < *n; ++i) {
    auto s = Str();
    if (!s.ok()) return s.status();
    out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace idlepool::sandbox
