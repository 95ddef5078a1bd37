// Quantities as users write them on the command line: sizes ("10G") and durations ("10m").
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace idlepool::text {

// Parses a size (a cache size, a disk reserve, an output estimate): plain bytes ("1048576"),
// or a number (decimals allowed) with a suffix K, M, G, T (powers of 1024; "KB", "KiB",
// "MiB"... alike, case-insensitive): "512M", "10G", "1.5GiB". kInvalidArgument for anything else,
// zero, or more than 2^60 bytes.
[[nodiscard]] absl::StatusOr<uint64_t> ParseByteSize(const std::string& text);

// "0", "90" (seconds), "500ms", "30s", "10m", "2h", "1d"; kInvalidArgument otherwise.
[[nodiscard]] absl::StatusOr<std::chrono::milliseconds> ParseDuration(const std::string& text);

// A rate of requests: "10" or "10/s" (per second), "30/m" or "30/min", "100/h"; decimals
// allowed ("0.5/s"). Returns requests per second; kInvalidArgument for anything else or a
// negative or non-finite number.
[[nodiscard]] absl::StatusOr<double> ParseRate(const std::string& text);

}  // namespace idlepool::text
