// Names people tell apart on screen (worker names): what one may hold, and how to show text that
// breaks those rules.
//
// A name that is drawn exactly like another one lies: "wa" followed by U+200B (zero width space)
// shows as "wa", and U+202E (right-to-left override) draws the rest of a line backwards. A name
// may hold any printable character a reader can see, in any script; it may not hold what is not
// drawn, or what changes how the text around it is drawn. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace idlepool::text {

// Why `name` cannot be a name, or "" when it can. Refused (the first one found is named):
//  - the empty name, and bytes that are not well-formed UTF-8;
//  - control characters (C0 U+0000..U+001F, DEL, C1 U+0080..U+009F);
//  - invisible and direction-changing characters: every format character (Unicode category Cf:
//    U+00AD soft hyphen, U+061C, U+180E, U+200B..U+200F zero widths and direction marks,
//    U+202A..U+202E embeddings and overrides, U+2060..U+2064, U+2066..U+2069 isolates,
//    U+206A..U+206F, U+FEFF, U+FFF9..U+FFFB, tags U+E0001 and U+E0020..U+E007F, ...), the other
//    default-ignorable characters (variation selectors, Hangul fillers, U+034F, the reserved
//    U+2065, U+FFF0..U+FFF8, U+E0000..U+E0FFF), the line and paragraph separators U+2028 and
//    U+2029, spaces other than U+0020 (U+00A0, U+1680, U+2000..U+200A, U+202F, U+205F, U+3000)
//    and U+2800 braille pattern blank;
//  - a combining mark (Unicode category M) at the start: it is drawn onto whatever precedes the
//    name;
//  - a space at the start or at the end.
// The reason names the code point: "U+200B (zero width space) is not allowed".
[[nodiscard]] std::string NameProblem(std::string_view name);

// `s` as a message or a table can show it: every character NameProblem refuses wherever it is
// (and a combining mark at the start) written as an escape, "\u200b" or "\U000e0001"; a byte that
// is not well-formed UTF-8 as "\xff"; a backslash as "\\", so an escape is never ambiguous; the
// rest as it is. The result is printable (IsPrintableUtf8) and shows every character of `s`:
// `worker name "wa\u200b"`.
[[nodiscard]] std::string VisibleText(std::string_view s);

// A user name (access tokens, jobs, owner policies' accept_users): 1 to 64 ASCII letters,
// digits and . _ - @, so it is the same on every screen, in every file and every SQL row.
[[nodiscard]] bool IsUserName(std::string_view user);

}  // namespace idlepool::text
