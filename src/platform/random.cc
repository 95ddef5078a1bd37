#include "platform/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace idlepool::platform {

std::string RandomHex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::perror("getrandom");
      std::abort();
    }
    got += static_cast<size_t>(n);
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : buf) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

}  // namespace idlepool::platform
