// A ratchet on the size of the rooms: no file under src/ over kMaxFileLines lines, no function
// over kMaxFunctionLines, except the ones listed here by name, each capped at its size when it
// was listed. An exception that grows fails; one that falls under the limit fails too, until it
// is taken off the list: the list can only shrink. src/worker/ and src/coordinator/ have none.
// The scanner itself (tests/tools/size_lint.h) is tested first on small sources.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "size_lint.h"

namespace idlepool::lint {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxFileLines = 1000;
constexpr int kMaxFunctionLines = 150;

// Files over kMaxFileLines on 2026-12-01, with their size then (or since, when one shrank).
const std::map<std::string, int> kFileExceptions = {
    {"src/core/scheduler.cc", 1059},
    {"src/sim/simulator.cc", 1234},
};

// Functions over kMaxFunctionLines on 2026-12-01 ("path:name"), with their size then.
const std::map<std::string, int> kFunctionExceptions = {
    {"src/cli/sim_command.cc:RunSimCommand", 237},
    {"src/report/report_html.cc:RenderReportHtml", 197},
    {"src/report/timeline_svg.cc:RenderTimelineSvg", 390},
    {"src/store/sqlite_store.cc:SqliteStore::ApplyOne", 203},
};

std::vector<std::string> Names(const std::vector<FunctionSpan>& spans) {
  std::vector<std::string> out;
  for (const auto& f : spans)
    out.push_back(f.name + "@" + std::to_string(f.first_line) + "+" + std::to_string(f.lines));
  return out;
}

TEST(SizeLint, FindsFunctionsMembersAndTestMacros) {
  const char* src =
      "namespace a {\n"                        // 1
      "int Free(int x) {\n"                    // 2
      "  if (x) { return 1; }\n"               // 3
      "  return 0;\n"                          // 4
      "}\n"                                    // 5
      "class Box final : public Base {\n"      // 6
      " public:\n"                             // 7
      "  int Get() const { return v_; }\n"     // 8
      "  int v_{3};\n"                         // 9
      "};\n"                                   // 10
      "TEST(Suite, Case) {\n"                  // 11
      "  auto f = [](int y) { return y; };\n"  // 12
      "}\n"                                    // 13
      "}  // namespace a\n";
  EXPECT_EQ(Names(FunctionsIn(src)),
            (std::vector<std::string>{"Free@2+4", "Box::Get@8+1", "TEST(Suite, Case)@11+3"}));
}

TEST(SizeLint, IgnoresBracesInCommentsLiteralsAndDirectives) {
  const char* src =
      "#define OPEN {\n"
      "// void Fake() {\n"
      "/* } { */\n"
      "const char* s = \"{ not a block\";\n"
      "char c = '{';\n"
      "auto r = R\"x({ raw })x\";\n"
      "int n = 1'000'000;\n"
      "template <typename T>\n"
      "T Real(T t) {\n"
      "  return t;\n"
      "}\n";
  // A template function counts from its template line.
  EXPECT_EQ(Names(FunctionsIn(src)), (std::vector<std::string>{"Real@8+4"}));
}

TEST(SizeLint, SkipsEnumsAndInitializersAndQualifiesOutOfClassDefinitions) {
  const char* src =
      "enum class Kind { kA, kB };\n"
      "const int kTable[] = {1, 2, 3};\n"
      "Foo::Foo(int x)\n"
      "    : x_(x) {\n"
      "}\n"
      "absl::StatusOr<std::pair<int, int>> Foo::Parse(const std::string& s) {\n"
      "  return {};\n"
      "}\n";
  EXPECT_EQ(Names(FunctionsIn(src)), (std::vector<std::string>{"Foo::Foo@3+3", "Foo::Parse@6+3"}));
  EXPECT_EQ(LineCount("a\nb\n"), 2);
  EXPECT_EQ(LineCount("a\nb"), 2);
  EXPECT_EQ(LineCount(""), 0);
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checks `size` against the limit and the exceptions; returns "" or what is wrong.
std::string Judge(const std::map<std::string, int>& exceptions, const std::string& key, int size,
                  int limit, std::map<std::string, int>* seen) {
  auto it = exceptions.find(key);
  if (it == exceptions.end()) {
    if (size <= limit) return "";
    return key + " has " + std::to_string(size) + " lines, over the limit of " +
           std::to_string(limit) + ": split it";
  }
  (*seen)[key] = std::max((*seen)[key], size);
  return "";
}

TEST(SizeRatchet, NoRoomOverItsLimitExceptTheListedOnes) {
  const fs::path root = IDLEPOOL_SOURCE_DIR;
  std::map<std::string, int> files_seen, functions_seen;
  std::vector<std::string> problems;
  for (const auto& entry : fs::recursive_directory_iterator(root / "src")) {
    const fs::path& p = entry.path();
    if (p.extension() != ".cc" && p.extension() != ".h") continue;
    const std::string rel = fs::relative(p, root).generic_string();
    const std::string text = Read(p);
    std::string why = Judge(kFileExceptions, rel, LineCount(text), kMaxFileLines, &files_seen);
    if (!why.empty()) problems.push_back(why);
    for (const FunctionSpan& f : FunctionsIn(text)) {
      why = Judge(kFunctionExceptions, rel + ":" + f.name, f.lines, kMaxFunctionLines,
                  &functions_seen);
      if (!why.empty()) problems.push_back(why + " (line " + std::to_string(f.first_line) + ")");
    }
  }
  for (const auto* list : {&kFileExceptions, &kFunctionExceptions}) {
    const auto& seen = list == &kFileExceptions ? files_seen : functions_seen;
    const int limit = list == &kFileExceptions ? kMaxFileLines : kMaxFunctionLines;
    for (const auto& [key, cap] : *list) {
      auto it = seen.find(key);
      if (it == seen.end() || it->second <= limit) {
        problems.push_back(key + " is within the limit now (or gone): take it off the list");
      } else if (it->second > cap) {
        problems.push_back(key + " grew from " + std::to_string(cap) + " to " +
                           std::to_string(it->second) + " lines: an exception may only shrink");
      }
    }
  }
  for (const auto& p : problems) ADD_FAILURE() << p;
}

}  // namespace
}  // namespace idlepool::lint
