#include "coordinator/log_gate.h"

#include <chrono>

namespace idlepool::coordinator {

LogGateOptions LogGateFor(uint32_t cpus) {
  const double slots = std::max<uint32_t>(cpus, 1);
  const double rate = std::clamp(2 * slots, 16.0, 128.0);
  return LogGateOptions{rate, std::clamp(17 * slots, rate, 2048.0)};
}

bool LogGate::Admit(core::MonoTime now) {
  if (now > last_) {
    const double seconds = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(options_.burst, tokens_ + seconds * options_.per_second);
    last_ = now;
  }
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  ++refused_;
  return false;
}

}  // namespace idlepool::coordinator
