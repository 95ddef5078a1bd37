// CheckNesting (toml_util.h): how deep a TOML text nests, read before toml++ parses it.
//
// toml++ builds, walks and frees tables recursively, once per level, and bounds only nested
// values (arrays, inline tables: 256); dotted keys ("a.a.a...= 1") and table headers
// ("[a.a.a...]") nest without a bound, so a few hundred kilobytes of them overflow the stack.
// This scanner follows TOML's lexical rules for what can hide structure (basic, literal and
// multi-line strings; comments) and counts the depth every key and value would get:
//   depth(key a.b.c under table T) = depth(T) + 3; an array's elements are one level below it;
//   [a.b] is a table at depth 2 and the tables of [[a.b]] are at depth 3, or deeper when a is an
//   array of tables: a header counts 2 per segment.
// The result bounds the depth of the tree toml++ would build. Text toml++ would refuse anyway
// may be scanned loosely: toml++ stops at the first error, before any structure that follows.

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spec/toml_util.h"

namespace idlepool::spec::toml_util {
namespace {

class NestingScanner {
 public:
  NestingScanner(std::string_view text, int max_depth) : s_(text), max_(max_depth) {}

  // The offset at which the depth first exceeds the limit, or npos.
  size_t Run() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '#') {
        SkipComment();
      } else if (c == '"' || c == '\'') {
        SkipString(c);
        line_start_ = false;
      } else {
        if (!Structure(c)) return i_;
        ++i_;
      }
    }
    return std::string_view::npos;
  }

 private:
  struct Open {
    char bracket;  // '[' an array, '{' an inline table
    int depth;     // the container's own depth
  };

  // Handles one character outside strings and comments; false when it nests too deep.
  bool Structure(char c) {
    if (c == '\n') {
      if (open_.empty()) StartStatement();
      return true;
    }
    if (c == ' ' || c == '\t' || c == '\r') return true;
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

  // A header's segments count twice: each may name an array of tables, whose last table the
  // next segment goes into ([[a]] then [a.b]: b lies at depth 3).
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

  bool ValueChar(char c) {
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

  // Skips a string starting at i_ ('"', '\'', '"""' or '''). A one-line string ends at the end
  // of its line, where toml++ would stop with an error.
  void SkipString(char quote) {
    const bool multi = Triple(quote);
    i_ += multi ? 3 : 1;
    while (i_ < s_.size()) {
      const char c = s_[i_];
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

absl::Status CheckNesting(std::string_view text, const std::string& file, int max_depth) {
  const size_t at = NestingScanner(text, max_depth).Run();
  if (at == std::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(file, ":", Position(text, at), ": nested more than ", max_depth,
                   " levels deep (tables, dotted keys, arrays and inline tables all count); "
                   "refused before parsing"));
}

}  // namespace idlepool::spec::toml_util
