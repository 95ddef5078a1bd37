#include "platform/harden.h"

#include <sys/prctl.h>

#include <cstdlib>
#include <cstring>

namespace idlepool::platform {

bool MakeNonDumpable() { return ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0; }

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
