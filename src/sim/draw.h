// Random draws for the simulator that give the same numbers on every standard library.
//
// std:: distributions are implementation-defined (libstdc++ and libc++ draw differently), so the
// simulator transforms the engine's raw 64-bit output itself: same seed, same run, anywhere.
// Thread safety: each function uses only the engine it is given.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace idlepool::sim {

// Uniform in (0, 1): the top 53 bits of one draw, offset by half a step so 0 and 1 never occur.
inline double DrawUnit(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-40 for n < 2^24).
inline uint64_t DrawBelow(std::mt19937_64& rng, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

// True with probability p.
inline bool DrawChance(std::mt19937_64& rng, double p) { return p > 0 && DrawUnit(rng) < p; }

// Inverse-CDF Weibull draw (shape k, scale lambda).
inline double DrawWeibull(std::mt19937_64& rng, double shape, double scale) {
  return scale * std::pow(-std::log1p(-DrawUnit(rng)), 1.0 / shape);
}

// Exponential with the given mean.
inline double DrawExponential(std::mt19937_64& rng, double mean) {
  return -mean * std::log(DrawUnit(rng));
}

// Standard normal (Box-Muller, one of the pair; two draws, in this order).
inline double DrawNormal(std::mt19937_64& rng) {
  const double u1 = DrawUnit(rng);
  const double u2 = DrawUnit(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace idlepool::sim
