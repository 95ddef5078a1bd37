// What toml++ cannot take, refused before it parses a file (spec/toml_util.h, Prescan): deep
// dotted keys, table headers, arrays and inline tables, with the file, line and column (brackets
// and dots inside strings and comments do not count; the count bounds the depth of the tree
// toml++ builds); characters toml++ 3.3 cannot classify as whitespace or not, where it tries.
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
  EXPECT_TRUE(Prescan(text, "t.toml").ok()) << text;
  absl::StatusOr<toml::table> t = Parse(text, "t.toml");
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? TreeDepth(*t) : -1;
}

TEST(TomlPrescan, TheLimitIsExactForKeysArraysAndInlineTables) {
  EXPECT_EQ(ParsedDepth(DottedKey(kMaxTomlDepth)), kMaxTomlDepth);
  EXPECT_FALSE(Prescan(DottedKey(kMaxTomlDepth + 1), "t.toml").ok());
  EXPECT_EQ(ParsedDepth(NestedArrays(kMaxTomlDepth - 1)), kMaxTomlDepth);
  EXPECT_FALSE(Prescan(NestedArrays(kMaxTomlDepth), "t.toml").ok());
  EXPECT_EQ(ParsedDepth(InlineTables(kMaxTomlDepth - 1)), kMaxTomlDepth);
  EXPECT_FALSE(Prescan(InlineTables(kMaxTomlDepth), "t.toml").ok());
}

TEST(TomlPrescan, DepthsAddUpAcrossHeadersKeysAndValues) {
  // [a.a] counts 4 (each segment may be an array of tables); b.b at 6; [[ at 7.
  EXPECT_LE(ParsedDepth("[a.a]\nb.b = [[1]]\n"), 8);
  EXPECT_TRUE(Prescan("[a.a]\nb.b = [[1]]\n", "t.toml", 8).ok());
  EXPECT_FALSE(Prescan("[a.a]\nb.b = [[1]]\n", "t.toml", 7).ok());
  // Arrays of tables nest through their last table: [[a]] then [[a.a]] then [a.a.a].
  const std::string aot = "[[a]]\n[[a.a]]\n[a.a.a]\nx = 1\n";
  EXPECT_EQ(ParsedDepth(aot), 6);
  EXPECT_TRUE(Prescan(aot, "t.toml", 7).ok());
  EXPECT_FALSE(Prescan(aot, "t.toml", 6).ok());
  // Keys of an inline table inside an array inside a table: [t] 2, a 3, {} 4, b.c 6.
  EXPECT_LE(ParsedDepth("[t]\na = [{b.c = 1}]\n"), 6);
  EXPECT_FALSE(Prescan("[t]\na = [{b.c = 1}]\n", "t.toml", 5).ok());
  EXPECT_TRUE(Prescan("[t]\na = [{b.c = 1}]\n", "t.toml", 6).ok());
}

// What crashed toml++ (a stack overflow) is refused before it parses anything.
TEST(TomlPrescan, DeepInputThatOverflowedTomlppIsRefusedWithItsPlace) {
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
  EXPECT_THAT(Msg(Prescan(DottedKey(100), "deep.toml")), StartsWith("deep.toml:1:128:"));
  EXPECT_THAT(Msg(Prescan("x = 1\n" + NestedArrays(100), "deep.toml")),
              StartsWith("deep.toml:2:68:"));
}

TEST(TomlPrescan, StringsAndCommentsDoNotCount) {
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
           std::string("a = [1,2 ,-inf, true,0x1F ]\nb = {c = 1979-05-27 07:32:00, d = nan}\n"),
       }) {
    EXPECT_LE(ParsedDepth(text), 2) << text.substr(0, 60);
  }
}

// A scanner that lost track of where a string ends would miss what follows it.
TEST(TomlPrescan, StructureAfterTrickyStringsStillCounts) {
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
    EXPECT_FALSE(Prescan(text, "t.toml").ok()) << text.substr(0, 40);
  }
}

TEST(TomlPrescan, EmptyAndMalformedTextIsLeftToToml) {
  for (const char* text : {"", "]]]]}}}}", "[", "a = \"unterminated\n", "a = '''", "\\"}) {
    EXPECT_TRUE(Prescan(text, "t.toml").ok()) << text;
  }
}

// A file of one "ä" or one U+FEFD reached __builtin_unreachable inside toml++ 3.3 (found by
// tests/fuzz: undefined behaviour, harmless in Debian's build only by luck).
TEST(TomlPrescan, CharactersOutsideStringsMustBeAscii) {
  for (const auto& [text, where] : std::vector<std::pair<std::string, std::string>>{
           {"\xc3\xa4", "t.toml:1:1: "},
           {"\xef\xbb\xbd", "t.toml:1:1: "},
           {"caf\xc3\xa9 = 1\n", "t.toml:1:4: "},
           {"a = 1 \xd0\xb6\n", "t.toml:1:7: "},
           {"a = [1,\n\xe3\x81\x82]\n", "t.toml:2:1: "},
           {"a = \"x\" \xff\n", "t.toml:1:9: "},
           // A quote inside a bare token opens no string (toml++ reads on to a terminator).
           {"a = [2\"p\xc3\xa4ge\"]\n", "t.toml:1:9: "},
           {"a = 1.5'\xc3\xa4'\n", "t.toml:1:9: "},
           {"a = \"x\"\"\xc3\xa4\"\n", "t.toml:1:9: "},
           // Nor does a bracket: "2['x" is one bare token to toml++ (found by fuzzing).
           {"a = 2['\xcf\x91'\n", "t.toml:1:8: "},
           {"a = true{\"\xcf\x91\"}\n", "t.toml:1:11: "},
       }) {
    const absl::Status s = Prescan(text, "t.toml");
    EXPECT_THAT(Msg(s), StartsWith(where + "TOML syntax error: a character that is not ASCII"))
        << text;
  }
}

TEST(TomlPrescan, AnyCharacterInStringsCommentsAndQuotedKeys) {
  for (const std::string text : {
           "\"caf\xc3\xa9\" = \"\xd0\xb6\xef\xbb\xbd\"\n",
           "['\xc3\xa9']\nx = '\xe3\x81\x82'\n",
           "# \xc3\xa9 \xef\xbb\xbd\na = '''\xc3\xa9'''\n",
           "a = \"\"\"\xc3\xa9\n\xef\xbb\xbd\"\"\"\n",
           "a = \"\"\"x\\\n  y\xc3\xa9\"\"\"\n",   // trimmed up to 'y', then anything
           "a = \"\"\"\\\\\xc3\xa9\"\"\"\n",       // an escaped backslash, then anything
           "a = \"\"\"\\\n\xe3\x80\x80z\"\"\"\n",  // U+3000 is whitespace to toml++
           "a = '''\\\n\xc3\xa9'''\n",             // a literal string has no escapes
           "a = [\n  \"\xc3\xa9\",  # \xd0\xb6\n  '\xd0\xb6',\n]\nb = {c.\"\xc3\xa9\" = \"x\"}\n",
       }) {
    EXPECT_TRUE(Prescan(text, "t.toml").ok()) << text;
    EXPECT_TRUE(Parse(text, "t.toml").ok()) << text;
  }
}

TEST(TomlPrescan, CharactersTomlppCannotClassifyAfterABackslash) {
  const std::string refused = "the TOML reader (toml++ 3.3) cannot read this character";
  EXPECT_THAT(Msg(Prescan("a = \"\"\"\\\n\xc3\xa9\"\"\"\n", "t.toml")),
              StartsWith("t.toml:2:1: " + refused));
  EXPECT_THAT(Msg(Prescan("a = \"\"\"x\\ \n \t\n\xef\xbb\xbd\"\"\"\n", "t.toml")),
              StartsWith("t.toml:3:1: " + refused));
  EXPECT_THAT(Msg(Prescan("a = \"\"\"\\\xc3\xa9\"\"\"\n", "t.toml")),
              StartsWith("t.toml:1:9: " + refused));
  EXPECT_THAT(Msg(Prescan("a = \"\"\"\\\n\xe3\x80\x80\xe3\x81\x82\"\"\"\n", "t.toml")),
              StartsWith("t.toml:2:2: " + refused));
  // The edges of what toml++ cannot classify: U+00A1..U+0499, U+2C5E..U+3057 (but U+3000),
  // U+FB26..U+FEFE (checked against toml++ built with UBSan).
  auto after_backslash = [](const std::string& ch) {
    return Prescan("a = \"\"\"\\\n" + ch + "\"\"\"\n", "t.toml").ok();
  };
  EXPECT_TRUE(after_backslash("\xc2\xa0z"));         // U+00A0, trimmed
  EXPECT_FALSE(after_backslash("\xc2\xa1"));         // U+00A1
  EXPECT_FALSE(after_backslash("\xd2\x99"));         // U+0499
  EXPECT_TRUE(after_backslash("\xd2\x9a"));          // U+049A
  EXPECT_TRUE(after_backslash("\xe2\xb1\x9d"));      // U+2C5D
  EXPECT_FALSE(after_backslash("\xe2\xb1\x9e"));     // U+2C5E
  EXPECT_FALSE(after_backslash("\xe3\x81\x97"));     // U+3057
  EXPECT_TRUE(after_backslash("\xe3\x81\x98"));      // U+3058
  EXPECT_TRUE(after_backslash("\xef\xac\xa5"));      // U+FB25
  EXPECT_FALSE(after_backslash("\xef\xac\xa6"));     // U+FB26
  EXPECT_FALSE(after_backslash("\xef\xbb\xbe"));     // U+FEFE
  EXPECT_TRUE(after_backslash("\xef\xbb\xbfz"));     // U+FEFF, trimmed
  EXPECT_TRUE(after_backslash("\xf0\x9f\x98\x80"));  // U+1F600
}

}  // namespace
}  // namespace idlepool::spec::toml_util
