#include "sandbox/landlock.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace idlepool::sandbox {
namespace {

// The uapi's values (linux/landlock.h), stable across versions; the installed header may be
// older than the running kernel.
constexpr long kCreateRuleset = 444;
constexpr long kAddRule = 445;
constexpr long kRestrictSelf = 446;
constexpr uint32_t kCreateRulesetVersion = 1;
constexpr int kRulePathBeneath = 1;
constexpr uint64_t kExecute = 1ull << 0, kWriteFile = 1ull << 1, kReadFile = 1ull << 2,
                   kReadDir = 1ull << 3;
constexpr uint64_t kAbi1All = (1ull << 13) - 1;  // bits 0..12
constexpr uint64_t kRefer = 1ull << 13;          // ABI 2
constexpr uint64_t kTruncate = 1ull << 14;       // ABI 3
constexpr uint64_t kIoctlDev = 1ull << 15;       // ABI 5

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4; none handled
  uint64_t scoped;              // ABI 6
};
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0, kScopeSignal = 1ull << 1;
struct __attribute__((packed)) PathBeneath {
  uint64_t allowed_access;
  int32_t parent_fd;
};

uint64_t HandledFor(int abi) {
  uint64_t all = kAbi1All;
  if (abi >= 2) all |= kRefer;
  if (abi >= 3) all |= kTruncate;
  if (abi >= 5) all |= kIoctlDev;
  return all;
}

absl::Status AddRule(int ruleset, const std::string& path, uint64_t access) {
  const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return absl::OkStatus();  // nothing there to allow
  PathBeneath rule{access, fd};
  const long rc = ::syscall(kAddRule, ruleset, kRulePathBeneath, &rule, 0);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("landlock rule for ", path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace

int LandlockAbi() {
  const long v = ::syscall(kCreateRuleset, nullptr, 0, kCreateRulesetVersion);
  return v > 0 ? static_cast<int>(v) : 0;
}

absl::StatusOr<int> RestrictWithLandlock(const std::vector<std::string>& writable) {
  const int abi = LandlockAbi();
  if (abi <= 0) return 0;
  const uint64_t all = HandledFor(abi);
  // ABI 6: no connecting to abstract Unix sockets (X11, D-Bus) or signalling outside the sandbox,
  // also where it shares the host's network namespace.
  RulesetAttr attr{all, 0, abi >= 6 ? kScopeAbstractUnixSocket | kScopeSignal : 0};
  const size_t size = abi >= 6 ? sizeof attr : sizeof attr.handled_access_fs;
  const int ruleset = static_cast<int>(::syscall(kCreateRuleset, &attr, size, 0));
  if (ruleset < 0) {
    return absl::InternalError(absl::StrCat("landlock ruleset: ", std::strerror(errno)));
  }
  const uint64_t read = kExecute | kReadFile | kReadDir;
  absl::Status st = AddRule(ruleset, "/", read);
  const uint64_t dev = read | kWriteFile | (all & (kTruncate | kIoctlDev));
  if (st.ok()) st = AddRule(ruleset, "/dev", dev);
  if (st.ok()) st = AddRule(ruleset, "/proc", read | kWriteFile);
  for (const auto& w : writable) {
    if (st.ok()) st = AddRule(ruleset, w, all);
  }
  if (st.ok() && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    st = absl::InternalError(absl::StrCat("no_new_privs: ", std::strerror(errno)));
  }
  if (st.ok() && ::syscall(kRestrictSelf, ruleset, 0) != 0) {
    st = absl::InternalError(absl::StrCat("landlock restrict: ", std::strerror(errno)));
  }
  ::close(ruleset);
  if (!st.ok()) return st;
  return abi;
}

}  // namespace idlepool::sandbox
