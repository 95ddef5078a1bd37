// The peak resident set size of this process (VmHWM of /proc/self/status), in KiB; 0 if it
// cannot be read. Shared by the benchmarks that print memory figures.
#pragma once

#include <fstream>
#include <string>

namespace idlepool::bench {

inline long PeakRssKb() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      long kb = 0;
      in >> kb;
      return kb;
    }
    std::getline(in, key);
  }
  return 0;
}

}  // namespace idlepool::bench
