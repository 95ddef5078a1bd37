#include "platform/fd_limit.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>

namespace idlepool::platform {

FdLimit RaiseFdLimit() {
  FdLimit out;
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return out;
  out.soft_before = out.soft = rl.rlim_cur;
  out.hard = rl.rlim_max;
  const rlim_t want = std::min<rlim_t>(rl.rlim_max, kMaxRaisedFds);
  if (want <= rl.rlim_cur) return out;
  rl.rlim_cur = want;
  if (::setrlimit(RLIMIT_NOFILE, &rl) == 0) out.soft = want;
  return out;
}

uint64_t FdSoftLimit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  return rl.rlim_cur;
}

int64_t OpenFdCount() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int64_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;  // the directory stream's own descriptor
}

bool FewFdsLeft(uint64_t margin) {
  const int64_t open = OpenFdCount();
  const uint64_t limit = FdSoftLimit();
  return open >= 0 && limit > 0 && static_cast<uint64_t>(open) + margin > limit;
}

}  // namespace idlepool::platform
