// Frame-spec helpers shared by frames.cc and job_spec.cc; not part of the module's contract.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spec/spec.h"

namespace idlepool::spec::internal {

// Debian's Abseil is built with its own string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0), which
// does not convert from std::string_view; the implementation works in absl::string_view.
inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view ToStd(absl::string_view s) { return {s.data(), s.size()}; }

// Calls `visit` for each chunk ChunkFrames(spec, chunk) would return, in order, without keeping
// them; stops early when `visit` returns false. Same errors as ChunkFrames.
[[nodiscard]] absl::Status ForEachChunk(std::string_view spec, uint32_t chunk,
                                        absl::FunctionRef<bool(const FrameChunk&)> visit);

// ChunkFrames(spec, chunk).size(), computed arithmetically when no frame can repeat (the usual
// case: disjoint ranges), otherwise by walking the chunks (bounded by kMaxFrames). Refuses
// (kResourceExhausted) a result over `max_tasks` before walking.
[[nodiscard]] absl::StatusOr<uint64_t> CountChunks(std::string_view spec, uint32_t chunk,
                                                   uint64_t max_tasks);

}  // namespace idlepool::spec::internal
