#include "size_lint.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace idlepool::lint {
namespace {

bool IsWord(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Blanks [from, to) except newlines.
void Blank(std::string& s, size_t from, size_t to) {
  for (size_t i = from; i < to && i < s.size(); ++i) {
    if (s[i] != '\n') s[i] = ' ';
  }
}

// Whether the quote at `i` is a digit separator (1'000'000), not a character literal.
bool DigitSeparator(const std::string& s, size_t i) {
  size_t start = i;
  while (start > 0 && (IsWord(s[start - 1]) || s[start - 1] == '\'' || s[start - 1] == '.')) {
    --start;
  }
  return start < i && std::isdigit(static_cast<unsigned char>(s[start]));
}

// The end (one past the closing quote) of the literal opening at `i` with `quote`.
size_t EndOfQuoted(const std::string& s, size_t i, char quote) {
  for (size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] == '\\') {
      ++j;
    } else if (s[j] == quote || s[j] == '\n') {
      return j + 1;
    }
  }
  return s.size();
}

// The end of the raw string R"delim( ... )delim" whose quote is at `i`.
size_t EndOfRaw(const std::string& s, size_t i) {
  const size_t open = s.find('(', i);
  if (open == std::string::npos) return s.size();
  const std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
  const size_t end = s.find(close, open);
  return end == std::string::npos ? s.size() : end + close.size();
}

// The end of the preprocessor line starting at `i`, with its backslash continuations.
size_t EndOfDirective(const std::string& s, size_t i) {
  size_t j = i;
  while (j < s.size()) {
    const size_t nl = s.find('\n', j);
    if (nl == std::string::npos) return s.size();
    if (nl > 0 && s[nl - 1] == '\\') {
      j = nl + 1;
    } else {
      return nl;
    }
  }
  return s.size();
}

bool StartsLine(const std::string& s, size_t i) {
  while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) --i;
  return i == 0 || s[i - 1] == '\n';
}

}  // namespace

std::string BlankNonCode(std::string_view source) {
  std::string s(source);
  for (size_t i = 0; i < s.size();) {
    size_t end = i;
    if (s.compare(i, 2, "//") == 0) {
      end = s.find('\n', i);
      if (end == std::string::npos) end = s.size();
    } else if (s.compare(i, 2, "/*") == 0) {
      end = s.find("*/", i + 2);
      end = end == std::string::npos ? s.size() : end + 2;
    } else if (s[i] == '"') {
      end = i > 0 && s[i - 1] == 'R' ? EndOfRaw(s, i) : EndOfQuoted(s, i, '"');
    } else if (s[i] == '\'' && !DigitSeparator(s, i)) {
      end = EndOfQuoted(s, i, '\'');
    } else if (s[i] == '#' && StartsLine(s, i)) {
      end = EndOfDirective(s, i);
    }
    if (end == i) {
      ++i;
    } else {
      Blank(s, i, end);
      i = end;
    }
  }
  return s;
}

int LineCount(std::string_view source) {
  const auto n = std::count(source.begin(), source.end(), '\n');
  return static_cast<int>(n) + (!source.empty() && source.back() != '\n' ? 1 : 0);
}

namespace {

enum class Kind { kNamespace, kClass, kFunction, kOther };

struct Scope {
  Kind kind = Kind::kOther;
  std::string name;
  int first_line = 0;
  bool skipped = false;  // inside a function or an other block: not classified
};

// `decl` without leading `template <...>` clauses.
std::string_view DropTemplates(std::string_view decl) {
  static const std::regex kTemplate(R"(^\s*template\s*<)");
  std::match_results<std::string_view::const_iterator> m;
  while (std::regex_search(decl.begin(), decl.end(), m, kTemplate)) {
    size_t i = m.length(0);
    for (int depth = 1; i < decl.size() && depth > 0; ++i) {
      if (decl[i] == '<') ++depth;
      if (decl[i] == '>') --depth;
    }
    decl.remove_prefix(i);
  }
  return decl;
}

// The word that follows position `at` (a class name after its keyword).
std::string WordAfter(std::string_view decl, size_t at) {
  size_t b = at;
  while (b < decl.size() && std::isspace(static_cast<unsigned char>(decl[b]))) ++b;
  size_t e = b;
  while (e < decl.size() && (IsWord(decl[e]) || decl[e] == ':')) {
    if (decl[e] == ':' && (e + 1 >= decl.size() || decl[e + 1] != ':')) break;
    e += decl[e] == ':' ? 2 : 1;
  }
  return std::string(decl.substr(b, e - b));
}

// A function's name: the token before its first parenthesis; a macro (TEST) keeps its arguments.
std::string FunctionName(std::string_view decl, size_t paren) {
  size_t e = paren;
  while (e > 0 && std::isspace(static_cast<unsigned char>(decl[e - 1]))) --e;
  size_t b = e;
  while (b > 0 && !std::isspace(static_cast<unsigned char>(decl[b - 1])) && decl[b - 1] != '*' &&
         decl[b - 1] != '&' && decl[b - 1] != '>' && decl[b - 1] != '(') {
    --b;
  }
  std::string name(decl.substr(b, e - b));
  const bool macro = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isupper(static_cast<unsigned char>(c)) || c == '_' || std::isdigit(c);
  });
  if (macro) {
    const size_t close = decl.find(')', paren);
    std::string args(decl.substr(paren, close == std::string_view::npos ? 0 : close - paren + 1));
    args.erase(std::remove(args.begin(), args.end(), '\n'), args.end());
    name += args;
  }
  return name;
}

Scope Classify(std::string_view text, int first_line) {
  std::string_view decl = DropTemplates(text);
  static const std::regex kNamespace(R"(\b(namespace|extern)\b)");
  static const std::regex kClass(R"(\b(class|struct|union)\b)");
  static const std::regex kEnum(R"(\benum\b)");
  std::match_results<std::string_view::const_iterator> m;
  const size_t paren = decl.find('(');
  auto before_paren = [&](const std::regex& re) {
    return std::regex_search(decl.begin(), decl.end(), m, re) &&
           static_cast<size_t>(m.position(0)) < paren;
  };
  if (before_paren(kNamespace)) return {Kind::kNamespace, "", first_line};
  if (before_paren(kEnum)) return {Kind::kOther, "", first_line};
  if (before_paren(kClass)) {
    return {Kind::kClass, WordAfter(decl, m.position(0) + m.length(0)), first_line};
  }
  if (paren != std::string_view::npos) {
    return {Kind::kFunction, FunctionName(decl, paren), first_line};
  }
  return {Kind::kOther, "", first_line};
}

std::string Qualified(const std::vector<Scope>& stack, const std::string& name) {
  std::string out;
  for (const Scope& s : stack) {
    if (s.kind == Kind::kClass && !s.name.empty()) out += s.name + "::";
  }
  return out + name;
}

}  // namespace

std::vector<FunctionSpan> FunctionsIn(std::string_view source) {
  const std::string code = BlankNonCode(source);
  std::vector<FunctionSpan> out;
  std::vector<Scope> stack;
  size_t segment = 0;    // where the current declaration starts (its first non-space)
  bool started = false;  // whether it has started since the last ; { or }
  int line = 1, segment_line = 1;
  auto skipping = [&] {
    return !stack.empty() && (stack.back().skipped || stack.back().kind == Kind::kFunction ||
                              stack.back().kind == Kind::kOther);
  };
  for (size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '\n') {
      ++line;
      continue;
    }
    const bool skip = skipping();
    if (!skip && !started && !std::isspace(static_cast<unsigned char>(c))) {
      segment = i;
      segment_line = line;
      started = true;
    }
    if (c == '{') {
      if (skip) {
        stack.push_back({Kind::kOther, "", line, true});
        continue;
      }
      Scope s = Classify(std::string_view(code).substr(segment, i - segment), segment_line);
      if (s.kind == Kind::kFunction) s.name = Qualified(stack, s.name);
      stack.push_back(std::move(s));
      started = false;
    } else if (c == '}' && !stack.empty()) {
      const Scope s = stack.back();
      stack.pop_back();
      if (s.kind == Kind::kFunction) out.push_back({s.name, s.first_line, line - s.first_line + 1});
      started = false;
    } else if (c == ';' && !skip) {
      started = false;
    } else if (c == ':' && !skip && started) {
      static const std::regex kAccess(R"(^(public|protected|private)\s*$)");
      const std::string label = code.substr(segment, i - segment);
      if (std::regex_match(label, kAccess)) started = false;  // an access specifier
    }
  }
  return out;
}

}  // namespace idlepool::lint
