#include "spec/toml_util.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spec/spec.h"
#include "text/names.h"
#include "text/utf8.h"

namespace idlepool::spec::toml_util {
namespace {
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string Where(const std::string& file, const toml::source_region& r) {
  return absl::StrCat(file, ":", r.begin.line, ":", r.begin.column);
}

absl::StatusOr<toml::table> Parse(std::string_view text, const std::string& file) {
  if (absl::Status s = Prescan(text, file); !s.ok()) return s;
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(file, e.source()), ": TOML syntax error: ", A(e.description())));
  }
#else
  toml::parse_result parsed = toml::parse(text, file);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return absl::InvalidArgumentError(
        absl::StrCat(Where(file, e.source()), ": TOML syntax error: ", A(e.description())));
  }
  return std::move(parsed).table();
#endif
}

absl::Status CheckKeys(const std::string& file, const toml::table& t, std::string_view prefix,
                       std::span<const std::string_view> allowed,
                       const std::function<std::string(std::string_view name)>& misplaced_hint) {
  const toml::key* first = FirstUnknownKey(t, allowed);
  if (first == nullptr) return absl::OkStatus();
  const std::string_view name = first->str();
  std::string hint;
  if (auto close = ClosestKey(name, allowed)) {
    hint = absl::StrCat(" (did you mean '", std::string(*close), "'?)");
  } else if (misplaced_hint) {
    hint = misplaced_hint(name);
  }
  std::vector<std::string> list(allowed.begin(), allowed.end());
  return absl::InvalidArgumentError(absl::StrCat(Where(file, first->source()), ": unknown key '",
                                                 std::string(prefix), Shorten(name), "'", hint,
                                                 "; allowed here: ", absl::StrJoin(list, ", ")));
}

std::string Shorten(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string cut = text::TruncateUtf8(s, kMax);
  // A message quoting the user's text never carries what a terminal would act on (an escape).
  if (!text::IsPrintableUtf8(cut)) cut = text::VisibleText(cut);
  return s.size() <= kMax ? cut : absl::StrCat(cut, "...");
}

std::string Describe(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::integer:
      return absl::StrCat(*n.value<int64_t>());
    case toml::node_type::floating_point:
      return absl::StrCat("the float ", *n.value<double>());
    case toml::node_type::string:
      return absl::StrCat("the string \"", Shorten(*n.value<std::string_view>()), "\"");
    case toml::node_type::boolean:
      return *n.value<bool>() ? "true" : "false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date/time";
  }
}

const toml::key* FirstUnknownKey(const toml::table& t, std::span<const std::string_view> allowed) {
  const toml::key* first = nullptr;
  for (auto&& [k, v] : t) {
    if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
    const auto& a = k.source().begin;
    if (first == nullptr) {
      first = &k;
      continue;
    }
    const auto& b = first->source().begin;
    if (a.line != b.line ? a.line < b.line : a.column < b.column) first = &k;
  }
  return first;
}

std::optional<std::string_view> ClosestKey(std::string_view name,
                                           std::span<const std::string_view> allowed) {
  std::optional<std::string_view> best;
  size_t best_distance = 3;
  for (std::string_view a : allowed) {
    const size_t d = EditDistance(name, a);
    if (d < best_distance) {
      best_distance = d;
      best = a;
    }
  }
  return best;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, uint64_t limit,
                                          std::string_view what) {
  const std::string& name = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat("no such file '", name, "'"));
    }
    return absl::Status(
        absl::ErrnoToStatusCode(err),
        absl::StrCat("cannot read '", name, "': ", std::generic_category().message(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat("'", name, "' is ", st.st_size, " bytes, over the limit of ", limit,
                     " bytes (", limit >> 20, " MiB) for ", A(what)));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::PermissionDeniedError(absl::StrCat("cannot open '", name, "'"));
  }
  std::string data;
  data.reserve(static_cast<size_t>(st.st_size));
  std::vector<char> buf(64 * 1024);
  while (true) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    data.append(buf.data(), static_cast<size_t>(in.gcount()));
    if (data.size() > limit) {
      return absl::ResourceExhaustedError(absl::StrCat("'", name, "' grew past the limit of ",
                                                       limit, " bytes for ", A(what),
                                                       " while it was read"));
    }
    if (!in) break;
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading '", name, "'"));
  return data;
}

}  // namespace idlepool::spec::toml_util
