// UTF-8 text made safe to keep, cut and print: validity (RFC 3629, what protobuf requires of a
// proto3 `string`), cuts that never split a character, and text that cannot steer a terminal.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace idlepool::text {

// True if `s` is well-formed UTF-8 (RFC 3629): no stray or missing continuation bytes, no
// overlong encodings ("\xC0\xAF"), no surrogates ("\xED\xA0\x80"), nothing past U+10FFFF.
// This is what protobuf requires of a proto3 `string` field (spec::Validate checks every
// string of a JobSpec). U+0000 is valid UTF-8 (other rules may refuse it).
[[nodiscard]] bool IsValidUtf8(std::string_view s);

// `s` cut to at most `max_bytes` bytes without splitting a character. Bytes that are not part
// of a well-formed UTF-8 sequence are first replaced by '?', one '?' per byte, so the result is
// always valid UTF-8 (and equals `s` when `s` is valid and short enough).
[[nodiscard]] std::string TruncateUtf8(std::string_view s, size_t max_bytes);

// True if `s` is well-formed UTF-8 with no control character (C0 U+0000..U+001F, DEL U+007F,
// C1 U+0080..U+009F) and no bidi control that reorders the rest of a line (embeddings and
// overrides U+202A..U+202E, isolates U+2066..U+2069): it can go to a terminal or a log line as it
// is, without moving the cursor, setting the window title or hiding what follows. Names are held
// to more (text/names.h: nothing invisible either).
[[nodiscard]] bool IsPrintableUtf8(std::string_view s);

// `s` made safe for a terminal: every byte that is not part of well-formed UTF-8, every control
// character and every bidi control (as above) becomes '?', except '\n' when `keep_newlines` (a log
// tail keeps its lines; '\t' then becomes a space). Equals `s` when IsPrintableUtf8(s).
[[nodiscard]] std::string PrintableText(std::string_view s, bool keep_newlines = false);

// The last at most `max_bytes` bytes of `s`, starting on a character boundary (a log's tail:
// the newest lines matter). Invalid bytes are replaced as by TruncateUtf8.
[[nodiscard]] std::string TailUtf8(std::string_view s, size_t max_bytes);

}  // namespace idlepool::text
