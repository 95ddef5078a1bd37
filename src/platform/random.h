// Randomness from the operating system (getrandom), for identifiers and secrets only. Decision
// code never draws random numbers; where it will (the simulator), it takes a seeded generator.
#pragma once

#include <cstddef>
#include <string>

namespace idlepool::platform {

// `bytes` random bytes from the kernel CSPRNG, hex encoded (2*bytes chars). Aborts if the
// kernel refuses, which it does not on any supported Linux.
std::string RandomHex(size_t bytes);

}  // namespace idlepool::platform
