// The sizes the ratchet test holds the tree to (tests/unit/size_ratchet_test.cc): lines per file
// and per function body of C++ source. A lexical scanner, not a compiler: it blanks comments,
// string and character literals (raw strings included) and preprocessor lines, then follows the
// braces. A brace block is a function body when it opens at namespace or class scope after a
// declaration with a parenthesis (a function, a constructor with its initializer list, a TEST
// macro, a namespace-scope lambda); a class, struct, union or namespace block is a scope; any
// other block (an enum, an initializer) is skipped whole. Lambdas and local classes count as
// part of the function around them.
//
// Known approximations: a constructor whose member initializers use braces (`a_{1} {`) is
// measured from its last initializer; a function defined by a macro is named after the macro.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace idlepool::lint {

struct FunctionSpan {
  std::string name;    // as written, qualified by the enclosing classes: "Worker::Impl::Execute"
  int first_line = 0;  // 1-based line where the declaration starts
  int lines = 0;       // from the declaration's first line to the closing brace, inclusive
};

// `source` with comments, literals and preprocessor lines replaced by spaces (newlines kept, so
// offsets and line numbers are unchanged).
[[nodiscard]] std::string BlankNonCode(std::string_view source);

// Every function body in `source`, in order of their closing braces.
[[nodiscard]] std::vector<FunctionSpan> FunctionsIn(std::string_view source);

// Lines in `source` (a last line without a newline counts).
[[nodiscard]] int LineCount(std::string_view source);

}  // namespace idlepool::lint
