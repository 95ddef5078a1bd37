// The nesting bound read before toml++ parses a file (spec/toml_util.h, CheckNesting): deep
// dotted keys, table headers, arrays and inline tables are refused with the file, line and
// column; brackets and dots inside strings and comments do not count; the count bounds the depth
// of the tree toml++ builds.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/toml_util.h"

namespace idlepool::spec::toml_util {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out.append(s);
  return out;
}

// "a.a. ... .a = 1": a key of `segments` segments, its value at that depth.
std::string DottedKey(int segments) { return "a" + Repeat(".a", segments - 1) + " = 1\n"; }
// "a = [[...[1]...]]": `arrays` nested arrays, the innermost element at depth arrays + 1.
std::string NestedArrays(int arrays) {
  return "a = " + Repeat("[", arrays) + "1" + Repeat("]", arrays) + "\n";
}
// "a = {b = {b = ... = 1}}": the innermost value at depth tables + 1.
std::string InlineTables(int tables) {
  return "a = " + Repeat("{b = ", tables) + "1" + Repeat("}", tables) + "\n";
}

// The depth of the deepest node under `n` (children of the root are at depth 1), walked with an
// explicit stack.
int TreeDepth(const toml::node& root) {
  int deepest = 0;
  std::vector<std::pair<const toml::node*, int>> todo{{&root, 0}};
  while (!todo.empty()) {
    auto [n, depth] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, depth);
    if (const toml::table* t = n->as_table()) {
      for (auto&& [k, v] : *t) todo.push_back({&v, depth + 1});
    } else if (const toml::array* a = n->as_array()) {
      for (const toml::node& v : *a) todo.push_back({&v, depth + 1});
    }
  }
  return deepest;
}

// Parses text the check allows; returns the depth of what toml++ built (-1 on a syntax error).
int ParsedDepth(const std::string& text) {
  EXPECT_TRUE(CheckNesting(text, "t.toml").ok()) << text;
  absl::StatusOr<toml::table> t = Parse(text, "t.toml");
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? TreeDepth(*t) : -1;
}

TEST(TomlNesting, TheLimitIsExactForKeysArraysAndInlineTables) {
  EXPECT_EQ(ParsedDepth(DottedKey(kMaxTomlDepth)), kMaxTomlDepth);
  EXPECT_FALSE(CheckNesting(DottedKey(kMaxTomlDepth + 1), "t.toml").ok());
  EXPECT_EQ(ParsedDepth(NestedArrays(kMaxTomlDepth - 1)), kMaxTomlDepth);
  EXPECT_FALSE(CheckNesting(NestedArrays(kMaxTomlDepth), "t.toml").ok());
  EXPECT_EQ(ParsedDepth(InlineTables(kMaxTomlDepth - 1)), kMaxTomlDepth);
  EXPECT_FALSE(CheckNesting(InlineTables(kMaxTomlDepth), "t.toml").ok());
}

TEST(TomlNesting, DepthsAddUpAcrossHeadersKeysAndValues) {
  // [a.a] counts 4 (each segment may be an array of tables); b.b at 6; [[ at 7.
  EXPECT_LE(ParsedDepth("[a.a]\nb.b = [[1]]\n"), 8);
  EXPECT_TRUE(CheckNesting("[a.a]\nb.b = [[1]]\n", "t.toml", 8).ok());
  EXPECT_FALSE(CheckNesting("[a.a]\nb.b = [[1]]\n", "t.toml", 7).ok());
  // Arrays of tables nest through their last table: [[a]] then [[a.a]] then [a.a.a].
  const std::string aot = "[[a]]\n[[a.a]]\n[a.a.a]\nx = 1\n";
  EXPECT_EQ(ParsedDepth(aot), 6);
  EXPECT_TRUE(CheckNesting(aot, "t.toml", 7).ok());
  EXPECT_FALSE(CheckNesting(aot, "t.toml", 6).ok());
  // Keys of an inline table inside an array inside a table: [t] 2, a 3, {} 4, b.c 6.
  EXPECT_LE(ParsedDepth("[t]\na = [{b.c = 1}]\n"), 6);
  EXPECT_FALSE(CheckNesting("[t]\na = [{b.c = 1}]\n", "t.toml", 5).ok());
  EXPECT_TRUE(CheckNesting("[t]\na = [{b.c = 1}]\n", "t.toml", 6).ok());
}

// What crashed toml++ (a stack overflow) is refused before it parses anything.
TEST(TomlNesting, DeepInputThatOverflowedTomlppIsRefusedWithItsPlace) {
  const std::vector<std::string> deep = {
      DottedKey(200000),
      "[a" + Repeat(".a", 200000) + "]\n",
      "[[a" + Repeat(".a", 200000) + "]]\n",
      "x = 1\n" + NestedArrays(200000),
      "x = 1\n" + InlineTables(200000),
      "x = {a" + Repeat(".a", 200000) + " = 1}\n",
  };
  for (const std::string& text : deep) {
    absl::StatusOr<toml::table> t = Parse(text, "deep.toml");
    ASSERT_FALSE(t.ok()) << text.substr(0, 40);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Msg(t.status()), StartsWith("deep.toml:"));
    EXPECT_THAT(Msg(t.status()), HasSubstr("nested more than 64 levels deep"));
  }
  EXPECT_THAT(Msg(CheckNesting(DottedKey(100), "deep.toml")), StartsWith("deep.toml:1:128:"));
  EXPECT_THAT(Msg(CheckNesting("x = 1\n" + NestedArrays(100), "deep.toml")),
              StartsWith("deep.toml:2:68:"));
}

TEST(TomlNesting, StringsAndCommentsDoNotCount) {
  const std::string brackets = Repeat("[{.", 1000);
  for (const std::string& text : {
           "a = \"" + brackets + "\"\n",
           "a = '" + brackets + "'\n",
           "a = \"\"\"\n" + brackets + "\n\"\"\"\n",
           "a = '''\n" + brackets + "\n'''\n",
           "# " + brackets + "\na = 1\n",
           "a = 1 # " + brackets + "\n",
           "\"" + brackets + "\" = 1\n",
           "['" + brackets + "']\nx = 1\n",
           "a = [" + Repeat("1.5, ", 1000) + "2.5]\n",
           "a = [" + Repeat("1979-05-27T07:32:00.999Z, ", 100) + "1979-05-27]\n",
       }) {
    EXPECT_LE(ParsedDepth(text), 2) << text.substr(0, 60);
  }
}

// A scanner that lost track of where a string ends would miss what follows it.
TEST(TomlNesting, StructureAfterTrickyStringsStillCounts) {
  const std::string deep = DottedKey(100);
  for (const std::string& text : {
           "a = \"x\\\"[\"\n" + deep,         // an escaped quote
           "a = \"x\\\\\"\n" + deep,          // an escaped backslash before the closing quote
           "a = 'x\\'\n" + deep,              // a literal string has no escapes
           "a = \"\"\"x\"\"\"\"\n" + deep,    // """x"""" is 'x"'
           "a = \"\"\"x\"\"\"\"\"\n" + deep,  // """x""""" is 'x""'
           "a = '''x''''\n" + deep,
           "a = \"\"\"x\n\"\" [ \"\"\"\n" + deep,  // two quotes inside a multi-line string
           "a = [\n  # ]\n  1,\n]\n" + deep,
       }) {
    EXPECT_FALSE(CheckNesting(text, "t.toml").ok()) << text.substr(0, 40);
  }
}

TEST(TomlNesting, EmptyAndMalformedTextIsLeftToToml) {
  for (const char* text : {"", "]]]]}}}}", "[", "a = \"unterminated\n", "a = '''", "\\"}) {
    EXPECT_TRUE(CheckNesting(text, "t.toml").ok()) << text;
  }
}

}  // namespace
}  // namespace idlepool::spec::toml_util
