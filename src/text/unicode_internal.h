// UTF-8 decoding and Unicode character classes shared by utf8.cc and names.cc; not part of the
// module's contract. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace idlepool::text::internal {

// The length of the well-formed UTF-8 sequence at s[i] (i < s.size()), or 0 if none starts there
// (a stray continuation byte, an overlong form, a surrogate, a code point past U+10FFFF, a
// truncated sequence, or one of the bytes C0, C1, F5..FF).
[[nodiscard]] size_t SequenceAt(std::string_view s, size_t i);

// The code point of the well-formed sequence of `n` bytes at s[i] (n = SequenceAt(s, i) > 0).
[[nodiscard]] uint32_t CodePoint(std::string_view s, size_t i, size_t n);

// C0 (U+0000..U+001F), DEL (U+007F) and C1 (U+0080..U+009F).
[[nodiscard]] inline bool IsControl(uint32_t c) { return c < 0x20 || (c >= 0x7F && c <= 0x9F); }

// The explicit bidirectional formatting characters that change the direction of the text after
// them until they are closed: embeddings and overrides (U+202A..U+202E) and isolates
// (U+2066..U+2069). The marks U+200E, U+200F and U+061C only affect their neighbours.
[[nodiscard]] inline bool IsBidiControl(uint32_t c) {
  return (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

// Unicode general category M (Mn, Mc, Me): a character drawn onto the one before it.
[[nodiscard]] bool IsCombiningMark(uint32_t c);

}  // namespace idlepool::text::internal
