// Prescan (toml_util.h): what toml++ cannot take, found on the text before toml++ sees it.
//
// 1. Depth. toml++ builds, walks and frees tables recursively, once per level, and bounds only
//    nested values (arrays, inline tables: 256); dotted keys ("a.a.a...= 1") and table headers
//    ("[a.a.a...]") nest without a bound, so a few hundred kilobytes of them overflow the stack.
//    The depth every key and value would get is counted: depth(key a.b.c under table T) =
//    depth(T) + 3; an array's elements are one level below it; a header counts 2 per segment
//    ([[a]] then [a.b]: b lies at depth 3, inside a's last table).
// 2. Characters. toml++ 3.3 asks of the characters it reads outside strings, and of those after
//    a backslash in a multi-line basic string (the escaped one, then each one a line-ending
//    backslash trims), whether they are whitespace; for U+00A1..U+0499, U+2C5E..U+3057 (but
//    U+3000) and U+FB26..U+FEFE (é, ж, あ, ...) that question reaches
//    __builtin_unreachable: undefined behaviour. Outside strings and comments TOML allows ASCII
//    only, so any other byte is refused there; after such a backslash those characters are.
// The scanner follows TOML's lexical rules, as toml++ reads them, for what can hide structure:
// basic, literal and multi-line strings where a key or value may start; comments; bare values
// (numbers, dates, booleans), which run to a blank, ']', '}', ',' or '#' whatever they hold.
// Text toml++ would refuse anyway may be scanned loosely: toml++ stops at the first error,
// before anything that follows.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spec/toml_util.h"

namespace idlepool::spec::toml_util {
namespace {

enum class Refusal : uint8_t { kNone, kTooDeep, kNotAscii, kUnreadable };

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

constexpr char32_t kInvalid = 0xFFFFFFFF;

// The code point at `at` and its length in bytes; kInvalid (length 1) for a byte that starts no
// complete sequence (toml++ refuses those itself).
char32_t Decode(std::string_view s, size_t at, size_t* len) {
  const unsigned char b = s[at];
  *len = 1;
  if (b < 0x80) return b;
  const size_t n = b >= 0xF8 ? 0 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
  if (n == 0 || s.size() - at < n) return kInvalid;
  char32_t cp = b & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const unsigned char c = s[at + k];
    if ((c & 0xC0) != 0x80) return kInvalid;
    cp = (cp << 6) | (c & 0x3F);
  }
  *len = n;
  return cp;
}

// Whether toml++ 3.3's is_non_ascii_horizontal_whitespace() reaches __builtin_unreachable for
// `c`: it splits U+00A0..U+FEFF into blocks of 0x3FA code points and has no case for blocks 0,
// 11 and 63 but for U+00A0, U+3000 and U+FEFF.
bool TomlppCannotClassify(char32_t c) {
  if (c < 0xA0 || c > 0xFEFF) return false;
  const uint64_t block = (c - 0xA0) / 0x3FA;
  if (((uint64_t{1} << block) & 0x7FFFFFFFFFFFF75Eull) != 0) return false;
  if (c == 0xA0 || c == 0x3000 || c == 0xFEFF) return false;
  return block != 5 && block != 7;
}

// Whitespace a line-ending backslash trims, as toml++ reads it.
bool TrimmedAfterBackslash(char32_t c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0xA0 || c == 0x1680 ||
         c == 0x180E || (c >= 0x2000 && c <= 0x200B) || c == 0x202F || c == 0x205F || c == 0x2060 ||
         c == 0x3000 || c == 0xFEFF;
}

class Scanner {
 public:
  Scanner(std::string_view text, int max_depth) : s_(text), max_(max_depth) {}

  Refusal Run() {
    while (i_ < s_.size() && why_ == Refusal::kNone) {
      const char c = s_[i_];
      if (token_ && !EndsToken(c)) {  // nothing is structure inside a bare value
        if (static_cast<unsigned char>(c) >= 0x80) why_ = Refusal::kNotAscii;
        if (why_ == Refusal::kNone) ++i_;
        continue;
      }
      token_ = false;
      if (c == '#') {
        SkipComment();
      } else if ((c == '"' || c == '\'') && StringMayStart()) {
        SkipString(c);
        prev_ = c;
      } else if (static_cast<unsigned char>(c) >= 0x80) {
        why_ = Refusal::kNotAscii;
      } else if (!Structure(c)) {
        why_ = Refusal::kTooDeep;
      } else {
        if (!IsBlank(c) || c == '\n') prev_ = c;
        ++i_;
      }
    }
    return why_;
  }

  size_t offset() const { return i_; }

 private:
  struct Open {
    char bracket;  // '[' an array, '{' an inline table
    int depth;     // the container's own depth
  };

  // Whether a quote here opens a string for toml++: at the start of a key (segment) or a value.
  // Elsewhere ("2\"x\"", "1.5'x'") toml++ reads it as part of a bare token, up to a terminator.
  bool StringMayStart() const {
    const std::string_view after = key_ || header_ ? "\n{,.[" : "\n=[,";
    return after.find(prev_) != std::string_view::npos;
  }

  // Handles one ASCII character outside strings and comments; false when it nests too deep.
  bool Structure(char c) {
    if (c == '\n') {
      if (open_.empty()) StartStatement();
      return true;
    }
    if (IsBlank(c)) return true;
    if (line_start_ && c == '[') return StartHeader();
    line_start_ = false;
    if (header_) return HeaderChar(c);
    if (c == ']' || c == '}') return Close();
    if (key_) return KeyChar(c);
    return ValueChar(c);
  }

  void StartStatement() {
    line_start_ = true;
    header_ = false;
    key_ = true;
    segments_ = 1;
  }

  bool StartHeader() {
    line_start_ = false;
    header_ = true;
    array_header_ = i_ + 1 < s_.size() && s_[i_ + 1] == '[';
    if (array_header_) ++i_;
    segments_ = 1;
    return true;
  }

  bool HeaderChar(char c) {
    if (c == '.') return 2 * ++segments_ <= max_;
    if (c != ']') return true;
    header_ = false;
    if (array_header_ && i_ + 1 < s_.size() && s_[i_ + 1] == ']') ++i_;
    table_depth_ = 2 * segments_;
    return table_depth_ <= max_;
  }

  // The depth of the table the current key belongs to.
  int KeyBase() const { return open_.empty() ? table_depth_ : open_.back().depth; }

  bool KeyChar(char c) {
    if (c == '.') return KeyBase() + ++segments_ <= max_;
    if (c != '=') return true;
    key_ = false;
    value_depth_ = KeyBase() + segments_;
    return value_depth_ <= max_;
  }

  // toml++ reads a bare value (number, date, boolean) up to one of these, whatever comes between:
  // "2['x" is one token, not a number, an array and a string.
  static bool EndsToken(char c) {
    return IsBlank(c) || c == ']' || c == '}' || c == ',' || c == '#';
  }

  bool ValueChar(char c) {
    if (c != '[' && c != '{' && c != ',') {
      token_ = true;
      return true;
    }
    if (c == '[' || c == '{') {
      open_.push_back({c, value_depth_});
      key_ = c == '{';
      segments_ = 1;
      value_depth_ += 1;  // an array's elements; an inline table's keys are checked at '='
      return value_depth_ <= max_;
    }
    if (c == ',' && !open_.empty()) {
      key_ = open_.back().bracket == '{';
      segments_ = 1;
      value_depth_ = open_.back().depth + 1;
    }
    return true;
  }

  bool Close() {
    if (open_.empty()) return true;  // unbalanced: toml++ refuses it
    open_.pop_back();
    key_ = false;
    if (!open_.empty()) value_depth_ = open_.back().depth + 1;
    return true;
  }

  void SkipComment() {
    while (i_ < s_.size() && s_[i_] != '\n') ++i_;
  }

  bool Triple(char quote) const {
    return s_.size() - i_ >= 3 && s_[i_] == quote && s_[i_ + 1] == quote && s_[i_ + 2] == quote;
  }

  // After a backslash at i_ in a multi-line basic string: the offset of the first character
  // toml++ asks "whitespace?" of and cannot answer (the escaped one, or one a line-ending
  // backslash trims, or the first after those), or npos.
  size_t UnclassifiableAfterBackslash() const {
    size_t j = i_ + 1;
    while (j < s_.size()) {
      size_t len = 1;
      const char32_t c = Decode(s_, j, &len);
      if (TomlppCannotClassify(c)) return j;
      if (!TrimmedAfterBackslash(c)) break;
      j += len;
    }
    return std::string_view::npos;
  }

  // Skips a string starting at i_ ('"', '\'', '"""' or '\'\'\''). A one-line string ends at the
  // end of its line, where toml++ would stop with an error. Sets why_ and stops at a character
  // toml++ cannot read.
  void SkipString(char quote) {
    line_start_ = false;
    const bool multi = Triple(quote);
    i_ += multi ? 3 : 1;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (multi && c == '\\' && quote == '"') {
        if (const size_t bad = UnclassifiableAfterBackslash(); bad != std::string_view::npos) {
          why_ = Refusal::kUnreadable;
          i_ = bad;
          return;
        }
      }
      if (c == '\\' && quote == '"') {
        i_ += 2;  // an escape: the next character is the string's
      } else if (c == '\n' && !multi) {
        return;
      } else if (c == quote && (!multi || Triple(quote))) {
        i_ += multi ? 3 : 1;
        // Up to two more quotes end a multi-line string's content: """a"""" is 'a"'.
        for (int k = 0; multi && k < 2 && i_ < s_.size() && s_[i_] == quote; ++k) ++i_;
        return;
      } else {
        ++i_;
      }
    }
  }

  const std::string_view s_;
  const int max_;
  size_t i_ = 0;
  Refusal why_ = Refusal::kNone;
  // The last character outside strings and comments but blanks (a quote: a string ended).
  char prev_ = '\n';
  bool token_ = false;  // inside a bare value
  std::vector<Open> open_;
  bool line_start_ = true;  // at the start of a top-level statement
  bool header_ = false;     // inside [a.b] or [[a.b]]
  bool array_header_ = false;
  bool key_ = true;      // reading a key (dots nest), not a value
  int segments_ = 1;     // segments of the key read so far
  int table_depth_ = 0;  // depth of the table the last header opened
  int value_depth_ = 0;  // depth a value starting here would have
};

// 1-based line and column (in characters) of byte `offset`.
std::string Position(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return absl::StrCat(line, ":", column);
}

}  // namespace

absl::Status Prescan(std::string_view text, const std::string& file, int max_depth) {
  Scanner scanner(text, max_depth);
  const Refusal why = scanner.Run();
  const std::string where = absl::StrCat(file, ":", Position(text, scanner.offset()), ": ");
  switch (why) {
    case Refusal::kNone:
      return absl::OkStatus();
    case Refusal::kTooDeep:
      return absl::InvalidArgumentError(
          absl::StrCat(where, "nested more than ", max_depth,
                       " levels deep (tables, dotted keys, arrays and inline tables all count); "
                       "refused before parsing"));
    case Refusal::kNotAscii:
      return absl::InvalidArgumentError(
          absl::StrCat(where,
                       "TOML syntax error: a character that is not ASCII outside a string or "
                       "comment (quote a key that has one: \"café\" = 1)"));
    case Refusal::kUnreadable:
      return absl::InvalidArgumentError(absl::StrCat(
          where,
          "the TOML reader (toml++ 3.3) cannot read this character right after a backslash "
          "or a line-ending backslash's blanks in a multi-line string; refused before parsing "
          "(put an ASCII character before it)"));
  }
  return absl::OkStatus();
}

}  // namespace idlepool::spec::toml_util
