#include "platform/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace idlepool::platform {

std::optional<std::string> ReadTrimmedFile(const std::string& path, size_t max_bytes,
                                           bool* truncated) {
  if (truncated != nullptr) *truncated = false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::string buf;
  char chunk[1024];
  bool ok = true;
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    if (n == 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    if (buf.size() > max_bytes) {
      buf.resize(max_bytes);
      if (truncated != nullptr) *truncated = true;
      break;
    }
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  size_t b = buf.find_first_not_of(kSpace);
  if (b == std::string::npos) return std::string();
  size_t e = buf.find_last_not_of(kSpace);
  return buf.substr(b, e - b + 1);
}

}  // namespace idlepool::platform
