// Durations as the store and the wire count them (integer or fractional milliseconds) to the
// seconds the planner and the API show, and back: one vocabulary, std::chrono, no hand-written
// factors. Pure; thread-safe.
#pragma once

#include <chrono>

namespace idlepool::coordinator {

// `ms` milliseconds in seconds.
inline double SecondsOfMs(double ms) {
  return std::chrono::duration<double>(std::chrono::duration<double, std::milli>(ms)).count();
}

// `s` seconds in milliseconds.
inline double MsOfSeconds(double s) {
  return std::chrono::duration<double, std::milli>(std::chrono::duration<double>(s)).count();
}

}  // namespace idlepool::coordinator
