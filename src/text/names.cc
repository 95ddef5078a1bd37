// Name rules: the characters a name may not hold, as sorted ranges with what each one is.

#include "text/names.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>

#include "text/unicode_internal.h"

namespace idlepool::text {
namespace {

using internal::CodePoint;
using internal::SequenceAt;

struct Refused {
  uint32_t lo, hi;
  const char* what;
};

// Invisible, blank or direction-changing characters (controls are checked apart). The format
// characters (Cf) and default-ignorable code points are those of Unicode 15.
constexpr Refused kRefused[] = {
    {0x00A0, 0x00A0, "no-break space"},
    {0x00AD, 0x00AD, "soft hyphen"},
    {0x034F, 0x034F, "combining grapheme joiner"},
    {0x0600, 0x0605, "Arabic number sign format character"},
    {0x061C, 0x061C, "Arabic letter mark"},
    {0x06DD, 0x06DD, "Arabic end of ayah"},
    {0x070F, 0x070F, "Syriac abbreviation mark"},
    {0x0890, 0x0891, "Arabic currency format character"},
    {0x08E2, 0x08E2, "Arabic disputed end of ayah"},
    {0x115F, 0x1160, "Hangul filler"},
    {0x1680, 0x1680, "Ogham space mark"},
    {0x17B4, 0x17B5, "Khmer inherent vowel"},
    {0x180B, 0x180D, "Mongolian free variation selector"},
    {0x180E, 0x180E, "Mongolian vowel separator"},
    {0x180F, 0x180F, "Mongolian free variation selector"},
    {0x2000, 0x200A, "typographic space"},
    {0x200B, 0x200B, "zero width space"},
    {0x200C, 0x200C, "zero width non-joiner"},
    {0x200D, 0x200D, "zero width joiner"},
    {0x200E, 0x200E, "left-to-right mark"},
    {0x200F, 0x200F, "right-to-left mark"},
    {0x2028, 0x2028, "line separator"},
    {0x2029, 0x2029, "paragraph separator"},
    {0x202A, 0x202A, "left-to-right embedding"},
    {0x202B, 0x202B, "right-to-left embedding"},
    {0x202C, 0x202C, "pop directional formatting"},
    {0x202D, 0x202D, "left-to-right override"},
    {0x202E, 0x202E, "right-to-left override"},
    {0x202F, 0x202F, "narrow no-break space"},
    {0x205F, 0x205F, "medium mathematical space"},
    {0x2060, 0x2060, "word joiner"},
    {0x2061, 0x2064, "invisible mathematical operator"},
    {0x2065, 0x2065, "reserved invisible code point"},
    {0x2066, 0x2066, "left-to-right isolate"},
    {0x2067, 0x2067, "right-to-left isolate"},
    {0x2068, 0x2068, "first strong isolate"},
    {0x2069, 0x2069, "pop directional isolate"},
    {0x206A, 0x206F, "deprecated format character"},
    {0x2800, 0x2800, "braille pattern blank"},
    {0x3000, 0x3000, "ideographic space"},
    {0x3164, 0x3164, "Hangul filler"},
    {0xFE00, 0xFE0F, "variation selector"},
    {0xFEFF, 0xFEFF, "zero width no-break space"},
    {0xFFA0, 0xFFA0, "halfwidth Hangul filler"},
    {0xFFF0, 0xFFF8, "reserved invisible code point"},
    {0xFFF9, 0xFFFB, "interlinear annotation character"},
    {0x110BD, 0x110BD, "Kaithi number sign"},
    {0x110CD, 0x110CD, "Kaithi number sign above"},
    {0x13430, 0x1343F, "Egyptian hieroglyph format control"},
    {0x1BCA0, 0x1BCA3, "shorthand format control"},
    {0x1D173, 0x1D17A, "musical symbol format control"},
    {0xE0000, 0xE00FF, "tag character"},
    {0xE0100, 0xE01EF, "variation selector"},
    {0xE01F0, 0xE0FFF, "reserved invisible code point"},
};

constexpr bool Sorted() {
  for (size_t i = 0; i < std::size(kRefused); ++i) {
    if (kRefused[i].lo > kRefused[i].hi) return false;
    if (i > 0 && kRefused[i - 1].hi >= kRefused[i].lo) return false;
  }
  return true;
}
static_assert(Sorted(), "kRefused must be sorted, disjoint ranges (the lookup is a binary search)");

// What `c` is when a name may not hold it anywhere, else nullptr.
const char* RefusedWhat(uint32_t c) {
  if (internal::IsControl(c)) return "control character";
  const Refused* it = std::upper_bound(std::begin(kRefused), std::end(kRefused), c,
                                       [](uint32_t v, const Refused& r) { return v < r.lo; });
  if (it == std::begin(kRefused) || c > std::prev(it)->hi) return nullptr;
  return std::prev(it)->what;
}

std::string CodePointName(uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

std::string Escape(uint32_t c) {
  char buf[16];
  if (c <= 0xFFFF) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
  }
  return buf;
}

}  // namespace

std::string NameProblem(std::string_view name) {
  if (name.empty()) return "must not be empty";
  for (size_t i = 0; i < name.size();) {
    const size_t n = SequenceAt(name, i);
    if (n == 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "byte 0x%02X at offset %zu is not valid UTF-8",
                    static_cast<unsigned>(static_cast<unsigned char>(name[i])), i);
      return buf;
    }
    const uint32_t c = CodePoint(name, i, n);
    if (const char* what = RefusedWhat(c)) {
      return CodePointName(c) + " (" + what + ") is not allowed";
    }
    if (i == 0 && internal::IsCombiningMark(c)) {
      return CodePointName(c) + " (a combining mark) is not allowed at the start";
    }
    i += n;
  }
  if (name.front() == ' ' || name.back() == ' ') {
    return "a space at the start or at the end is not allowed";
  }
  return "";
}

std::string VisibleText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = SequenceAt(s, i);
    if (n == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x",
                    static_cast<unsigned>(static_cast<unsigned char>(s[i])));
      out += buf;
      ++i;
      continue;
    }
    const uint32_t c = CodePoint(s, i, n);
    if (c == '\\') {
      out += "\\\\";
    } else if (RefusedWhat(c) != nullptr || (i == 0 && internal::IsCombiningMark(c))) {
      out += Escape(c);
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

bool IsUserName(std::string_view user) {
  return !user.empty() && user.size() <= 64 && std::all_of(user.begin(), user.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '@';
  });
}

}  // namespace idlepool::text
