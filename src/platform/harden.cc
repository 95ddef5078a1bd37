#include "platform/harden.h"

#include <sys/prctl.h>

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace idlepool::platform {

bool MakeNonDumpable() { return ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0; }

void HideInitialEnvironment() {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const size_t n = std::strlen(*e);
    // Never freed: the environment's strings live as long as the process.
    char* copy = static_cast<char*>(std::malloc(n + 1));
    if (copy == nullptr) return;
    std::memcpy(copy, *e, n + 1);
    std::memset(*e, 0, n);
    *e = copy;
  }
}

std::string TakeSecretFromEnv(const char* name) {
  char* value = std::getenv(name);
  if (value == nullptr) return "";
  std::string secret = value;
  // The initial environment lives on the stack the kernel set up: /proc/PID/environ reads it
  // there, so overwrite the bytes before dropping the variable.
  std::memset(value, 'x', std::strlen(value));
  ::unsetenv(name);
  return secret;
}

}  // namespace idlepool::platform
