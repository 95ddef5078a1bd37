// Reading small text files whose content is one value (sysfs attributes, fake sensor files).
// Internal to src/platform.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace idlepool::platform {

// At most `max_bytes` of the file at `path`, leading and trailing whitespace removed (an empty
// string for an empty or all-blank file). nullopt when it cannot be opened or read (sysfs
// attributes fail with EIO/ENODATA when the device cannot answer). `*truncated` (optional) is
// set when the file holds more than `max_bytes`. Never blocks on a FIFO (O_NONBLOCK).
std::optional<std::string> ReadTrimmedFile(const std::string& path, size_t max_bytes,
                                           bool* truncated = nullptr);

}  // namespace idlepool::platform
