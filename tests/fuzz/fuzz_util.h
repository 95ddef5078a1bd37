// Shared by the libFuzzer targets of tests/fuzz: property checks that abort (libFuzzer then
// keeps the input as a crash), scratch directories.
//
// A target checks more than "no crash": what the project promises of the function it feeds
// (messages naming the file, valid UTF-8, outputs within their bounds, an accepted spec that
// renders). Single-threaded, like libFuzzer's runs.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace idlepool::fuzz {

[[noreturn]] inline void Fail(const char* what, const char* file, int line,
                              std::string_view detail) {
  std::fprintf(stderr, "%s:%d: property broken: %s\n  %.*s\n", file, line, what,
               static_cast<int>(std::min<size_t>(detail.size(), 2000)), detail.data());
  std::abort();
}

// FUZZ_CHECK(condition, detail): `detail` (a string) says what was being checked.
#define FUZZ_CHECK(cond, detail) \
  ((cond) ? (void)0 : ::idlepool::fuzz::Fail(#cond, __FILE__, __LINE__, (detail)))

// A new directory under $TMPDIR (tests/fuzz/run.sh points it into its own work dir).
inline std::filesystem::path MakeScratchDir(const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + name + ".XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  return tmpl;
}

}  // namespace idlepool::fuzz
