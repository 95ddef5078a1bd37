// The render-farm frame grammar: parsing, counting, expansion and chunking.
//
// A spec is parsed into terms first, and every term's frame count is computed arithmetically
// (in uint64, saturating) so that an absurd spec is refused before a single frame is generated.
// Frames are then generated term by term. Each term's own frames are unique except for the
// interleave form, which removes its repeats itself; repeats *across* terms are removed with a
// hash set, which is skipped when the terms' [min, max] intervals are pairwise disjoint (the
// usual case) because no frame can then repeat.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "spec/frames_internal.h"
#include "spec/spec.h"
#include "text/utf8.h"

namespace idlepool::spec {
namespace {

using internal::ToAbsl;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

enum class TermKind : uint8_t {
  kRange,       // N, A-B, A-BxS
  kInverse,     // A-ByS
  kInterleave,  // A-B:S
};

struct Term {
  absl::string_view text;  // trimmed, points into the spec
  TermKind kind = TermKind::kRange;
  int64_t a = 0;
  int64_t b = 0;
  int64_t step = 1;    // nonzero; its sign points from a toward b (either sign when a == b)
  uint64_t span = 0;   // |b - a|
  uint64_t mag = 1;    // |step|
  uint64_t count = 0;  // frames the term lists, before repeats across terms are removed
};

struct ParsedSpec {
  std::vector<Term> terms;
  uint64_t total = 0;     // sum of the terms' counts; > 0 and <= the limit
  bool disjoint = false;  // no frame can appear in two terms
};

uint64_t SatAdd(uint64_t x, uint64_t y) { return x > kU64Max - y ? kU64Max : x + y; }

uint64_t Magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : v; }

// a + offset toward `dir`. The true result lies between a and b, so it fits in int64; the
// arithmetic is done modulo 2^64 so that no intermediate can overflow.
int64_t At(int64_t a, uint64_t offset, int64_t dir) {
  const uint64_t ua = static_cast<uint64_t>(a);
  return static_cast<int64_t>(dir > 0 ? ua + offset : ua - offset);
}

// Specs can be long; keep messages readable. Quoted text is cut at a character boundary and
// shows invalid UTF-8 bytes as '?', so messages are valid UTF-8.
std::string Shorten(absl::string_view s) {
  constexpr size_t kMax = 80;
  if (s.size() <= kMax) return text::TruncateUtf8(internal::ToStd(s), kMax);
  return absl::StrCat(text::TruncateUtf8(internal::ToStd(s), kMax), "...");
}

std::string Rest(absl::string_view s) {
  return s.empty() ? "nothing"
                   : absl::StrCat("'", text::TruncateUtf8(internal::ToStd(s), s.size()), "'");
}

absl::Status TermError(absl::string_view spec, absl::string_view term, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("frame spec '", Shorten(spec), "': term '", Shorten(term), "': ", why));
}

enum class IntResult : uint8_t { kOk, kNotInteger, kOutOfRange };

// Reads an optionally negative decimal integer at `pos` (no '+', no spaces) and advances `pos`.
IntResult ReadInt(absl::string_view s, size_t& pos, int64_t& out) {
  const char* begin = s.data() + pos;
  const char* end = s.data() + s.size();
  if (begin == end) return IntResult::kNotInteger;
  const char* digits = *begin == '-' ? begin + 1 : begin;
  if (digits == end || *digits < '0' || *digits > '9') return IntResult::kNotInteger;
  const auto [ptr, ec] = std::from_chars(begin, end, out);
  if (ec == std::errc::result_out_of_range) return IntResult::kOutOfRange;
  if (ec != std::errc()) return IntResult::kNotInteger;
  pos = static_cast<size_t>(ptr - s.data());
  return IntResult::kOk;
}

absl::StatusOr<Term> ParseTerm(absl::string_view spec, absl::string_view text) {
  Term t;
  t.text = text;
  size_t pos = 0;
  auto read = [&](int64_t& out, absl::string_view what) -> absl::Status {
    const size_t at = pos;
    switch (ReadInt(text, pos, out)) {
      case IntResult::kOk:
        return absl::OkStatus();
      case IntResult::kOutOfRange:
        return TermError(spec, text, absl::StrCat(what, " is out of the 64-bit range"));
      case IntResult::kNotInteger:
        break;
    }
    return TermError(spec, text,
                     absl::StrCat("expected ", what, " (an integer), got ", Rest(text.substr(at))));
  };

  if (absl::Status s = read(t.a, "a frame number"); !s.ok()) return s;
  if (pos == text.size()) {  // N
    t.b = t.a;
    t.count = 1;
    return t;
  }
  if (text[pos] != '-') {
    return TermError(spec, text,
                     absl::StrCat("expected '-' after ", t.a, ", got ", Rest(text.substr(pos))));
  }
  ++pos;
  if (absl::Status s = read(t.b, "the last frame of the range"); !s.ok()) return s;
  t.span = t.b >= t.a ? static_cast<uint64_t>(t.b) - static_cast<uint64_t>(t.a)
                      : static_cast<uint64_t>(t.a) - static_cast<uint64_t>(t.b);
  t.step = t.b >= t.a ? 1 : -1;
  if (pos < text.size()) {
    const char op = text[pos];
    if (op == 'x') {
      t.kind = TermKind::kRange;
    } else if (op == 'y') {
      t.kind = TermKind::kInverse;
    } else if (op == ':') {
      t.kind = TermKind::kInterleave;
    } else {
      return TermError(spec, text,
                       absl::StrCat("unexpected ", Rest(text.substr(pos)), " after the range ", t.a,
                                    "-", t.b, " (expected 'x', 'y' or ':' and a step)"));
    }
    ++pos;
    if (absl::Status s = read(t.step, absl::StrCat("a step after '", std::string(1, op), "'"));
        !s.ok()) {
      return s;
    }
    if (pos != text.size()) {
      return TermError(spec, text,
                       absl::StrCat("unexpected ", Rest(text.substr(pos)), " after the step"));
    }
    if (t.step == 0) return TermError(spec, text, "step must not be 0");
    if (t.a != t.b && (t.step > 0) != (t.b > t.a)) {
      return TermError(
          spec, text,
          absl::StrCat("step ", t.step, " points away from ", t.b, " (a range from ", t.a, " to ",
                       t.b, " needs a ", t.b > t.a ? "positive" : "negative", " step)"));
    }
  }
  t.mag = Magnitude(t.step);
  switch (t.kind) {
    case TermKind::kRange:
      t.count = SatAdd(t.span / t.mag, 1);
      break;
    case TermKind::kInverse:  // all span+1 frames less the span/mag+1 that xS keeps
      t.count = t.span - t.span / t.mag;
      break;
    case TermKind::kInterleave:  // the last pass is x1: every frame of the range
      t.count = SatAdd(t.span, 1);
      break;
  }
  return t;
}

bool Disjoint(const std::vector<Term>& terms) {
  std::vector<std::pair<int64_t, int64_t>> intervals;
  intervals.reserve(terms.size());
  for (const Term& t : terms) {
    if (t.count == 0) continue;
    intervals.emplace_back(std::min(t.a, t.b), std::max(t.a, t.b));
  }
  std::sort(intervals.begin(), intervals.end());
  for (size_t i = 1; i < intervals.size(); ++i) {
    if (intervals[i].first <= intervals[i - 1].second) return false;
  }
  return true;
}

absl::StatusOr<ParsedSpec> Parse(absl::string_view spec, uint64_t max_frames) {
  if (absl::StripAsciiWhitespace(spec).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame spec '", Shorten(spec), "': empty (expected e.g. \"1-100\")"));
  }
  ParsedSpec out;
  size_t index = 0;
  for (absl::string_view raw : absl::StrSplit(spec, ',')) {
    ++index;
    const absl::string_view text = absl::StripAsciiWhitespace(raw);
    if (text.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("frame spec '", Shorten(spec), "': term ", index, " is empty"));
    }
    absl::StatusOr<Term> term = ParseTerm(spec, text);
    if (!term.ok()) return term.status();
    out.total = SatAdd(out.total, term->count);
    // Terms that list no frames ("1-5y1") still cost memory, so their number is limited too.
    if (index > max_frames) {
      return absl::ResourceExhaustedError(
          absl::StrCat("frame spec '", Shorten(spec), "': more than ", max_frames, " terms"));
    }
    if (out.total > max_frames) {
      if (term->count > max_frames) {
        return absl::ResourceExhaustedError(
            absl::StrCat("frame spec '", Shorten(spec), "': term '", Shorten(text), "' has ",
                         term->count == kU64Max ? "more than 2^64" : absl::StrCat(term->count),
                         " frames, over the limit of ", max_frames));
      }
      return absl::ResourceExhaustedError(
          absl::StrCat("frame spec '", Shorten(spec), "': its terms up to '", Shorten(text),
                       "' add up to ", out.total, " frames, over the limit of ", max_frames));
    }
    out.terms.push_back(*term);
  }
  if (out.total == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame spec '", Shorten(spec), "': lists no frames"));
  }
  out.disjoint = Disjoint(out.terms);
  return out;
}

// Appends the frames of one term, in order, each once.
void TermFrames(const Term& t, std::vector<int64_t>& out) {
  const int64_t dir = t.step > 0 ? 1 : -1;
  switch (t.kind) {
    case TermKind::kRange:
      for (uint64_t k = 0; k < t.count; ++k) out.push_back(At(t.a, k * t.mag, dir));
      return;
    case TermKind::kInverse:
      if (t.mag == 1) return;  // x1 keeps every frame; nothing is left out
      // span < 2 * count + 2 here (mag >= 2), so this loop is bounded by the frame limit.
      for (uint64_t off = 0; off <= t.span; ++off) {
        if (off % t.mag != 0) out.push_back(At(t.a, off, dir));
      }
      return;
    case TermKind::kInterleave: {
      // span + 1 == count, which the limit bounds.
      std::vector<bool> seen(t.span + 1, false);
      for (uint64_t m = t.mag;; m /= 2) {
        for (uint64_t off = 0; off <= t.span; off += m) {
          if (!seen[off]) {
            seen[off] = true;
            out.push_back(At(t.a, off, dir));
          }
          if (t.span - off < m) break;  // the next step would pass b (and might wrap)
        }
        if (m == 1) break;
      }
      return;
    }
  }
}

// Calls visit(frames) for each term with the term's frames that no earlier term listed, in
// order. Stops when visit returns false.
template <typename Visit>
void ForEachTermFrames(const ParsedSpec& parsed, Visit&& visit) {
  std::unordered_set<int64_t> seen;
  if (!parsed.disjoint) seen.reserve(parsed.total);
  std::vector<int64_t> frames;
  std::vector<int64_t> fresh;
  for (const Term& t : parsed.terms) {
    frames.clear();
    TermFrames(t, frames);
    if (parsed.disjoint) {
      if (!visit(frames)) return;
      continue;
    }
    fresh.clear();
    for (int64_t f : frames) {
      if (seen.insert(f).second) fresh.push_back(f);
    }
    if (!visit(fresh)) return;
  }
}

// Splits one term's frames into maximal arithmetic runs of at most `chunk` frames.
template <typename Visit>
bool ChunkTerm(const std::vector<int64_t>& f, uint32_t chunk, Visit&& visit) {
  size_t i = 0;
  while (i < f.size()) {
    FrameChunk c;
    c.start = f[i];
    c.step = 1;
    c.frames.push_back(f[i]);
    size_t j = i + 1;
    int64_t step = 0;
    // A difference that does not fit in int64 (frames near both ends of the range) can only be
    // a chunk of its own.
    if (j < f.size() && chunk > 1 && !__builtin_sub_overflow(f[j], f[i], &step)) {
      c.step = step;
      c.frames.push_back(f[j++]);
      int64_t d = 0;
      while (j < f.size() && c.frames.size() < chunk &&
             !__builtin_sub_overflow(f[j], f[j - 1], &d) && d == step) {
        c.frames.push_back(f[j++]);
      }
    }
    c.end = c.frames.back();
    if (!visit(c)) return false;
    i = j;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ParseFrames(std::string_view spec_in, uint64_t max_frames) {
  const absl::string_view spec = ToAbsl(spec_in);
  absl::StatusOr<ParsedSpec> parsed = Parse(spec, max_frames);
  if (!parsed.ok()) return parsed.status();
  std::vector<int64_t> out;
  out.reserve(parsed->total);
  ForEachTermFrames(*parsed, [&](const std::vector<int64_t>& frames) {
    out.insert(out.end(), frames.begin(), frames.end());
    return true;
  });
  return out;
}

absl::StatusOr<std::vector<FrameChunk>> ChunkFrames(std::string_view spec_in, uint32_t chunk) {
  std::vector<FrameChunk> out;
  absl::Status s = internal::ForEachChunk(spec_in, chunk, [&](const FrameChunk& c) {
    out.push_back(c);
    return true;
  });
  if (!s.ok()) return s;
  return out;
}

std::string JoinFrames(const std::vector<int64_t>& frames) { return absl::StrJoin(frames, ","); }

namespace internal {

absl::Status ForEachChunk(std::string_view spec_in, uint32_t chunk,
                          absl::FunctionRef<bool(const FrameChunk&)> visit) {
  const absl::string_view spec = ToAbsl(spec_in);
  if (chunk == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame spec '", Shorten(spec), "': chunk size must be at least 1"));
  }
  absl::StatusOr<ParsedSpec> parsed = Parse(spec, kMaxFrames);
  if (!parsed.ok()) return parsed.status();
  ForEachTermFrames(
      *parsed, [&](const std::vector<int64_t>& frames) { return ChunkTerm(frames, chunk, visit); });
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> CountChunks(std::string_view spec_in, uint32_t chunk, uint64_t max_tasks) {
  const absl::string_view spec = ToAbsl(spec_in);
  if (chunk == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame spec '", Shorten(spec), "': chunk size must be at least 1"));
  }
  absl::StatusOr<ParsedSpec> parsed = Parse(spec, kMaxFrames);
  if (!parsed.ok()) return parsed.status();
  auto too_many = [&](uint64_t n) {
    return absl::ResourceExhaustedError(
        absl::StrCat("frame spec '", Shorten(spec), "' with chunk ", chunk, " makes ", n,
                     " tasks or more, over the limit of ", max_tasks));
  };
  const bool arithmetic =
      parsed->disjoint && std::all_of(parsed->terms.begin(), parsed->terms.end(),
                                      [](const Term& t) { return t.kind == TermKind::kRange; });
  if (arithmetic) {
    // Disjoint plain ranges: each term is one run, cut every `chunk` frames.
    uint64_t n = 0;
    for (const Term& t : parsed->terms) n = SatAdd(n, t.count / chunk + (t.count % chunk != 0));
    if (n > max_tasks) return too_many(n);
    return n;
  }
  uint64_t n = 0;
  ForEachTermFrames(*parsed, [&](const std::vector<int64_t>& frames) {
    return ChunkTerm(frames, chunk, [&](const FrameChunk&) { return ++n <= max_tasks; });
  });
  if (n > max_tasks) return too_many(n);
  return n;
}

}  // namespace internal
}  // namespace idlepool::spec
