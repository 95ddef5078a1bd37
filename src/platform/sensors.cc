#include "platform/sensors.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "platform/read_file.h"

namespace idlepool::platform {
namespace {

constexpr size_t kMaxFileBytes = 4096;
constexpr uint32_t kDirEvents = IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_CREATE | IN_MODIFY |
                                IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// The trimmed content of dir/name, or nullopt when missing, unreadable, empty or too large.
std::optional<std::string> ReadValue(const std::string& dir, const char* name) {
  bool truncated = false;
  std::optional<std::string> v =
      ReadTrimmedFile(absl::StrCat(dir, "/", name), kMaxFileBytes, &truncated);
  if (!v || truncated || v->empty()) return std::nullopt;
  return v;
}

std::optional<double> ReadNumber(const std::string& dir, const char* name, double lo, double hi) {
  std::optional<std::string> s = ReadValue(dir, name);
  if (!s) return std::nullopt;
  double v = 0;
  const char* first = s->data();
  const char* last = s->data() + s->size();
  if (first != last && *first == '+') ++first;  // from_chars rejects a leading '+'
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last) return std::nullopt;
  if (!std::isfinite(v) || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<bool> ReadBool(const std::string& dir, const char* name) {
  std::optional<std::string> s = ReadValue(dir, name);
  if (!s) return std::nullopt;
  if (*s == "0") return false;
  if (*s == "1") return true;
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeSensorDir>> FakeSensorDir::Open(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat("sensor directory not found: ", dir));
  }
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("inotify_init1 failed: ", std::strerror(errno)));
  }
  if (::inotify_add_watch(fd, dir.c_str(), kDirEvents) < 0) {
    std::string why = absl::StrCat("cannot watch ", dir, ": ", std::strerror(errno));
    ::close(fd);
    return absl::InternalError(why);
  }
  // The parent too: a sensors dir deleted and made again (a script that rm -rf's it) is found
  // and watched again at once.
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::absolute(dir, ec).parent_path();
  if (!ec) ::inotify_add_watch(fd, parent.c_str(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
  return std::unique_ptr<FakeSensorDir>(new FakeSensorDir(dir, fd));
}

FakeSensorDir::~FakeSensorDir() { ::close(fd_); }

owner::Readings FakeSensorDir::Read() {
  owner::Readings r;
  r.idle_seconds = ReadNumber(dir_, "idle_seconds", 0, HUGE_VAL);
  r.on_ac_power = ReadBool(dir_, "on_ac_power");
  r.battery_percent = ReadNumber(dir_, "battery_percent", 0, 100);
  r.temperature_c = ReadNumber(dir_, "temperature_c", -100, 200);
  r.lid_closed = ReadBool(dir_, "lid_closed");
  r.owner_cpu_load = ReadNumber(dir_, "owner_cpu_load", 0, 1);
  r.sleep_imminent = ReadBool(dir_, "sleep_imminent");
  return r;
}

std::string FakeSensorDir::OwnerInputMissing() const {
  return absl::StrCat("no readable idle_seconds file in the sensors dir ", dir_);
}

bool FakeSensorDir::WaitForChange(std::chrono::milliseconds timeout) {
  long long ms = timeout.count();
  if (ms < 0) ms = 0;
  if (ms > 0x7fffffff) ms = 0x7fffffff;
  pollfd pfd{fd_, POLLIN, 0};
  int n = ::poll(&pfd, 1, static_cast<int>(ms));
  // (Re-)watch the dir: after it was deleted and made again, this is a new inode (for the same
  // inode inotify returns the existing watch). Fails harmlessly while the dir does not exist.
  ::inotify_add_watch(fd_, dir_.c_str(), kDirEvents);
  if (n == 0) return false;
  // Drain every queued event: one call reports all changes made so far. An error (EINTR,
  // queue overflow) also answers "may have changed", which is always safe.
  alignas(inotify_event) char buf[4096];
  while (::read(fd_, buf, sizeof(buf)) > 0) {
  }
  return true;
}

}  // namespace idlepool::platform
