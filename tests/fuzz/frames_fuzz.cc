// Fuzz target: the frame grammar (spec::ParseFrames, ChunkFrames and the task count).
// Input: one byte of chunk size (0 is an error to refuse), then the frame spec.
// Properties, beyond not crashing: an error is kInvalidArgument or kResourceExhausted with a
// valid UTF-8 message naming the spec; the frames of an accepted spec are unique and within the
// limit, and their list ("1,2,3") parses back to them; chunking keeps every frame once, in
// order, in arithmetic runs of at most `chunk` frames, as many as TaskCount says.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fuzz_util.h"
#include "spec/spec.h"
#include "text/utf8.h"

namespace idlepool::fuzz {
namespace {

// Far below spec::kMaxFrames so that an input takes a millisecond, not a tenth of a second (the
// limit is a parameter; the arithmetic that refuses large specs is the same).
constexpr uint64_t kLimit = 10'000;

void CheckError(const absl::Status& s, const std::string& spec) {
  FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument ||
                 s.code() == absl::StatusCode::kResourceExhausted,
             s.ToString());
  const std::string_view m(s.message().data(), s.message().size());
  FUZZ_CHECK(text::IsValidUtf8(m), spec);
  FUZZ_CHECK(m.starts_with("frame spec '"), m);
}

void CheckChunks(const std::string& spec, uint32_t chunk, const std::vector<int64_t>& frames) {
  absl::StatusOr<std::vector<spec::FrameChunk>> chunks = spec::ChunkFrames(spec, chunk);
  FUZZ_CHECK(chunks.ok(), chunks.status().ToString());
  std::vector<int64_t> joined;
  for (const spec::FrameChunk& c : *chunks) {
    FUZZ_CHECK(!c.frames.empty() && c.frames.size() <= chunk, spec);
    FUZZ_CHECK(c.start == c.frames.front() && c.end == c.frames.back(), spec);
    for (size_t i = 1; i < c.frames.size(); ++i) {
      int64_t step = 0;
      FUZZ_CHECK(!__builtin_sub_overflow(c.frames[i], c.frames[i - 1], &step) && step == c.step,
                 spec);
    }
    joined.insert(joined.end(), c.frames.begin(), c.frames.end());
  }
  FUZZ_CHECK(joined == frames, spec);
  spec::JobSpec job;
  job.kind = spec::TaskKind::kFrames;
  job.frames = spec;
  job.chunk = chunk;
  absl::StatusOr<uint64_t> n = spec::TaskCount(job);
  FUZZ_CHECK(n.ok() && *n == chunks->size(), spec);
}

void CheckFrames(const std::string& spec, uint32_t chunk, const std::vector<int64_t>& frames) {
  FUZZ_CHECK(!frames.empty() && frames.size() <= kLimit, spec);
  FUZZ_CHECK(std::set<int64_t>(frames.begin(), frames.end()).size() == frames.size(), spec);
  absl::StatusOr<std::vector<int64_t>> again = spec::ParseFrames(spec::JoinFrames(frames), kLimit);
  FUZZ_CHECK(again.ok() && *again == frames, spec);
  if (chunk == 0) {
    absl::Status s = spec::ChunkFrames(spec, 0).status();
    FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument, spec);
    return;
  }
  CheckChunks(spec, chunk, frames);
}

}  // namespace
}  // namespace idlepool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idlepool;
  if (size == 0) return 0;
  const uint32_t chunk = data[0];
  const std::string spec(reinterpret_cast<const char*>(data + 1), size - 1);
  absl::StatusOr<std::vector<int64_t>> frames = spec::ParseFrames(spec, fuzz::kLimit);
  if (!frames.ok()) {
    fuzz::CheckError(frames.status(), spec);
    if (frames.status().code() == absl::StatusCode::kInvalidArgument) {
      // Chunking parses the same grammar: the same spec is refused the same way.
      absl::Status s = spec::ChunkFrames(spec, chunk == 0 ? 1 : chunk).status();
      FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument, spec);
    }
    return 0;
  }
  fuzz::CheckFrames(spec, chunk, *frames);
  return 0;
}
