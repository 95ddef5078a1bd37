// Shared pieces for reading TOML files with messages that name the place: the job spec
// (spec/job_spec.cc) and the worker's owner policy config (owner/owner_policy_config.cc).
//
// Pure functions over toml++ nodes, except ReadSmallFile, which reads a file. Thread-safe.
// Messages are valid UTF-8 (quoted text goes through TruncateUtf8).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace idlepool::spec::toml_util {

// The deepest nesting a TOML text may have: a key or value at depth d lies under d - 1 tables or
// arrays (a.b.c = 1 is at depth 3). Idlepool's files need 4 at most.
inline constexpr int kMaxTomlDepth = 64;

// What toml++ cannot take, refused on the text before it sees it (toml_prescan.cc): OK, or
// kInvalidArgument "FILE:L:C: ..." at the first of
//  - a place the text nests deeper than `max_depth` ("nested more than N levels deep"): toml++
//    recurses once per level and bounds neither dotted keys nor table headers, so deep input
//    would overflow its stack. The count is an upper bound of the parsed tree's depth;
//  - a byte that is not ASCII outside strings and comments ("TOML syntax error: ..."): invalid
//    TOML, on which toml++ 3.3 reaches undefined behaviour for many characters (é, ж, あ);
//  - such a character after a backslash in a multi-line basic string (escaped, or where a
//    line-ending backslash trims), where toml++ stumbles the same way.
[[nodiscard]] absl::Status Prescan(std::string_view text, const std::string& file,
                                   int max_depth = kMaxTomlDepth);

// "FILE:LINE:COL".
std::string Where(const std::string& file, const toml::source_region& r);

// Parses TOML text; a syntax error becomes kInvalidArgument "FILE:L:C: TOML syntax error: ...".
// What toml++ cannot take is refused first (Prescan), unparsed.
[[nodiscard]] absl::StatusOr<toml::table> Parse(std::string_view text, const std::string& file);

// Text quoted in a message: at most 80 bytes, cut on a character boundary, "..." when cut.
std::string Shorten(std::string_view s);

// What a node holds, for "must be X, got Y": "5", "the float 1.5", "the string \"x\"", "true",
// "an array", "a table", "a date/time".
std::string Describe(const toml::node& n);

// The key of `t` not in `allowed` that comes first in the file, or nullptr if there is none.
const toml::key* FirstUnknownKey(const toml::table& t, std::span<const std::string_view> allowed);

// The allowed key closest to `name` within 2 edits (Levenshtein), for "did you mean".
std::optional<std::string_view> ClosestKey(std::string_view name,
                                           std::span<const std::string_view> allowed);

// OK, or kInvalidArgument for the first key of `t` (in file order) not in `allowed`:
// "FILE:L:C: unknown key 'PREFIXname' (did you mean 'x'?); allowed here: a, b". When no allowed
// key is close, `misplaced_hint(name)` (if set) may supply the parenthesized hint instead, e.g.
// " (it belongs under [owner])"; it returns "" for none. `prefix` is "" or "table.".
[[nodiscard]] absl::Status CheckKeys(
    const std::string& file, const toml::table& t, std::string_view prefix,
    std::span<const std::string_view> allowed,
    const std::function<std::string(std::string_view name)>& misplaced_hint = {});

// Reads a whole regular file of at most `limit` bytes; the size is checked with stat() first,
// so a huge file is refused without reading it. `what` names it in messages ("a job file").
// Errors: kNotFound, kInvalidArgument (not a regular file), kResourceExhausted (too large),
// kPermissionDenied, kDataLoss (read error); messages name the path.
[[nodiscard]] absl::StatusOr<std::string> ReadSmallFile(const std::string& path, uint64_t limit,
                                                        std::string_view what);

}  // namespace idlepool::spec::toml_util
