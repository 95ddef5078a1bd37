// Job specs: TOML reading, validation, expansion into tasks, command templates.
//
// Reading is split in two. ParseJobToml turns the TOML into a JobSpec, checking types, integer
// ranges, unknown keys and everything that touches files (items_file, inputs). The semantic
// rules (kinds, sizes, placeholders, paths) live in CheckSpec, which both Validate (for specs
// that come over the wire) and ParseJobToml run; it reports a Problem naming a field, which
// ParseJobToml maps back to a line and column in the file.

#include <glob.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "spec/command_internal.h"
#include "spec/env_internal.h"
#include "spec/frames_internal.h"
#include "spec/pipeline_internal.h"
#include "spec/sandbox_internal.h"
#include "spec/service_internal.h"
#include "spec/spec.h"
#include "spec/toml_util.h"
#include "text/utf8.h"

namespace idlepool::spec {
namespace {

using toml_util::Describe;
using toml_util::Shorten;

namespace fs = std::filesystem;
using internal::Element;
using internal::Piece;
using internal::ScanTemplate;
using internal::ToAbsl;
using internal::ToStd;

constexpr uint64_t kMaxJobFileBytes = kMaxItemsFileBytes;  // inline items make big files
constexpr size_t kMaxNameBytes = 128;
constexpr int64_t kU32Max = std::numeric_limits<uint32_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr std::string_view kAttemptsWhy =
    " (failures per task: a task that fails at once would be run that many times)";

constexpr std::string_view kTopKeys[] = {
    "name",    "command", "frames",      "chunk",     "items", "items_file",
    "count",   "inputs",  "outputs",     "resources", "retry", "allow_empty_outputs",
    "sandbox", "service", "task_inputs", "after",     "env",   "priority"};
constexpr std::string_view kResourceKeys[] = {"cpus", "gpus", "memory_mb", "gpu_memory_mb",
                                              "gpu_api"};
// The GPU APIs a task may ask for (proto Resources.gpu_api, GpuDevice.apis).
constexpr std::string_view kGpuApis[] = {"cuda", "opencl", "rocm", "metal"};
constexpr std::string_view kRetryKeys[] = {"max_attempts", "timeout_s", "backoff_s",
                                           "max_backoff_s", "hold_off_after"};
constexpr std::string_view kKindKeys[] = {"frames", "items", "items_file", "count"};


// Every string of a JobSpec travels in a proto3 `string` field, which must be valid UTF-8.
constexpr std::string_view kNotUtf8 = "is not valid UTF-8 (invalid bytes are shown as '?')";

// ------------------------------------------------------------------------------------------
// Semantic checks shared by Validate and ParseJobToml.

struct Problem {
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
  std::string field;     // "chunk", "resources.cpus"
  int64_t element = -1;  // index into an array field, to point at it in a TOML file
  std::string message;
  int64_t input = -1;  // index into JobSpec::inputs, mapped back to the TOML entry it came from
};
using MaybeProblem = std::optional<Problem>;

Problem Bad(std::string field, std::string message, int64_t element = -1,
            absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  return Problem{code, std::move(field), element, std::move(message)};
}

bool ValidNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

MaybeProblem CheckName(const std::string& name) {
  if (!text::IsValidUtf8(name)) {
    return Bad("name", absl::StrCat("'", Shorten(name), "' ", ToAbsl(kNotUtf8)));
  }
  if (name.empty() || name.size() > kMaxNameBytes ||
      !std::all_of(name.begin(), name.end(), ValidNameChar)) {
    return Bad("name",
               absl::StrCat("'", Shorten(name),
                            "' is not a valid job name: use 1 to 128 of A-Z a-z 0-9 . _ -"));
  }
  // The name may become a directory name; these two would escape it.
  if (name == "." || name == "..") {
    return Bad("name", absl::StrCat("'", name, "' is not a valid job name"));
  }
  return std::nullopt;
}

}  // namespace

// A '..' inside a component ("frame..png") is an ordinary name.
std::optional<std::string> RelativePathError(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.size() > 4096) return "is longer than 4096 bytes";
  if (!text::IsValidUtf8(path)) return std::string(kNotUtf8);
  if (path.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (path.find_first_of("\n\r") != std::string_view::npos) {
    return "contains a line break (\\n or \\r)";
  }
  // Every control character (C0, DEL, C1) and bidi control: a terminal acts on them.
  if (!text::IsPrintableUtf8(path)) return "contains a control character (a terminal acts on it)";
  if (path.front() == '/') return "must be relative to the task dir, not absolute";
  if (path.back() == '/') return "must be a normalized path (no trailing '/')";
  for (absl::string_view part : absl::StrSplit(ToAbsl(path), '/')) {
    if (part == "..") return "must not contain '..' as a path component";
    if (part.empty()) return "must be a normalized path (no empty component, as in 'a//b')";
    if (part == ".") return "must be a normalized path (no '.' component)";
  }
  return std::nullopt;
}

namespace {

MaybeProblem CheckTasks(const JobSpec& spec) {
  const char* kind_name = spec.kind == TaskKind::kFrames  ? "frames"
                          : spec.kind == TaskKind::kItems ? "items"
                                                          : "count";
  auto not_for_kind = [&](const char* field) {
    return Bad(field, absl::StrCat("must not be set in a '", kind_name, "' job"));
  };
  if (spec.kind != TaskKind::kFrames) {
    if (!spec.frames.empty()) return not_for_kind("frames");
    if (spec.chunk != 1) return Bad("chunk", "only applies to 'frames' jobs");
  }
  if (spec.kind != TaskKind::kItems && !spec.items.empty()) return not_for_kind("items");
  if (spec.kind != TaskKind::kCount && spec.count != 0) return not_for_kind("count");

  switch (spec.kind) {
    case TaskKind::kFrames: {
      if (spec.chunk == 0) return Bad("chunk", "must be a positive integer, got 0");
      if (!text::IsValidUtf8(spec.frames)) {
        return Bad("frames", absl::StrCat("'", Shorten(spec.frames), "' ", ToAbsl(kNotUtf8)));
      }
      absl::StatusOr<uint64_t> n = internal::CountChunks(spec.frames, spec.chunk, kMaxTasks);
      if (!n.ok()) return Bad("frames", std::string(n.status().message()), -1, n.status().code());
      return std::nullopt;
    }
    case TaskKind::kItems:
      if (spec.items.empty()) return Bad("items", "must list at least one item");
      if (spec.items.size() > kMaxTasks) {
        return Bad("items",
                   absl::StrCat(spec.items.size(), " items, over the limit of ", kMaxTasks), -1,
                   absl::StatusCode::kResourceExhausted);
      }
      for (size_t i = 0; i < spec.items.size(); ++i) {
        const std::string& item = spec.items[i];
        if (item.empty()) return Bad("items", absl::StrCat("item [", i, "] is empty"), i);
        if (item.size() > kMaxItemBytes) {
          return Bad("items",
                     absl::StrCat("item [", i, "] is ", item.size(), " bytes, over the limit of ",
                                  kMaxItemBytes),
                     i, absl::StatusCode::kResourceExhausted);
        }
        if (item.find('\0') != std::string::npos) {
          return Bad("items", absl::StrCat("item [", i, "] contains a NUL byte"), i);
        }
        if (!text::IsValidUtf8(item)) {
          return Bad("items",
                     absl::StrCat("item [", i, "] '", Shorten(item), "' ", ToAbsl(kNotUtf8)), i);
        }
      }
      return std::nullopt;
    case TaskKind::kCount:
      if (spec.count == 0) return Bad("count", "must be a positive integer, got 0");
      if (spec.count > kMaxTasks) {
        return Bad("count", absl::StrCat(spec.count, " tasks, over the limit of ", kMaxTasks), -1,
                   absl::StatusCode::kResourceExhausted);
      }
      return std::nullopt;
  }
  return Bad("kind", "unknown task kind");
}

bool Uses(const std::vector<std::vector<Piece>>& pieces, std::string_view name,
          size_t* first = nullptr) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    for (const Piece& p : pieces[i]) {
      if (p.placeholder && p.text == name) {
        if (first != nullptr) *first = i;
        return true;
      }
    }
  }
  return false;
}

// Placeholders must exist and fit the job's kind. Assumes CheckTasks passed.
MaybeProblem CheckCommand(const JobSpec& spec) {
  if (spec.command.empty()) return Bad("command", "must not be empty");
  if (spec.command[0].empty()) return Bad("command", "the program (element [0]) is empty", 0);
  std::vector<std::vector<Piece>> pieces(spec.command.size());
  for (size_t i = 0; i < spec.command.size(); ++i) {
    const std::string& arg = spec.command[i];
    if (arg.find('\0') != std::string::npos) {
      return Bad("command", absl::StrCat(Element(i, arg), ": contains a NUL byte"), i);
    }
    if (!text::IsValidUtf8(arg)) {
      return Bad("command", absl::StrCat(Element(i, arg), ": ", ToAbsl(kNotUtf8)), i);
    }
    if (absl::Status s = ScanTemplate(arg, pieces[i]); !s.ok()) {
      return Bad("command", absl::StrCat(Element(i, arg), ": ", s.message()), i);
    }
    for (const Piece& p : pieces[i]) {
      if (!p.placeholder) continue;
      if (std::optional<std::string> why = internal::PlaceholderMisfit(spec, p.text)) {
        return Bad("command", absl::StrCat(Element(i, arg), ": ", *why), i);
      }
    }
  }

  // A command given only the first and last frame renders every frame in between. That is
  // right only when each chunk has step 1; otherwise it would render frames outside the spec
  // ("1-100x10" chunk 4 would render 1..31 in its first task).
  size_t bounds_element = 0;
  const bool bounds =
      Uses(pieces, "frame_start", &bounds_element) || Uses(pieces, "frame_end", &bounds_element);
  if (spec.kind == TaskKind::kFrames && spec.chunk > 1 && bounds && !Uses(pieces, "frame_step")) {
    std::optional<FrameChunk> stepped;
    absl::Status s = internal::ForEachChunk(spec.frames, spec.chunk, [&](const FrameChunk& c) {
      if (c.step == 1) return true;
      stepped = c;
      return false;
    });
    if (!s.ok()) return Bad("frames", std::string(s.message()), -1, s.code());
    if (stepped.has_value()) {
      return Bad("command",
                 absl::StrCat(Element(bounds_element, spec.command[bounds_element]),
                              ": the chunks of frame spec '", Shorten(spec.frames),
                              "' are stepped (the chunk ", stepped->start, "..", stepped->end,
                              " has step ", stepped->step,
                              "), but the command passes {frame_start}/{frame_end} without "
                              "{frame_step}, so it would run frames that are not in the spec; "
                              "pass {frame_step} too, or set chunk = 1"),
                 bounds_element);
    }
  }
  if (std::optional<internal::SizeProblem> p = internal::CommandSizeProblem(spec)) {
    return Bad(p->field, p->message, p->element, absl::StatusCode::kResourceExhausted);
  }
  return std::nullopt;
}

MaybeProblem CheckSpec(const JobSpec& spec) {
  if (MaybeProblem p = CheckName(spec.name)) return p;
  if (!spec.service.has_value()) {
    if (MaybeProblem p = CheckTasks(spec)) return p;
  } else if (std::optional<internal::ServiceProblem> p = internal::CheckService(spec)) {
    return Bad(p->field, p->message);
  }
  if (spec.resources.cpus == 0) return Bad("resources.cpus", "must be a positive integer, got 0");
  if (const std::string& api = spec.resources.gpu_api;
      !api.empty() && std::find(std::begin(kGpuApis), std::end(kGpuApis), api) ==
                          std::end(kGpuApis)) {
    return Bad("resources.gpu_api",
               absl::StrCat("must be one of \"cuda\", \"opencl\", \"rocm\", \"metal\", got \"",
                            text::TruncateUtf8(api, 64), "\""));
  }
  if (spec.resources.gpus == 0 && spec.resources.gpu_memory_mb != 0) {
    return Bad("resources.gpu_memory_mb", "needs gpus = 1 or more (it is per GPU)");
  }
  if (spec.resources.gpus == 0 && !spec.resources.gpu_api.empty()) {
    return Bad("resources.gpu_api", "needs gpus = 1 or more");
  }
  if (spec.max_attempts == 0) {
    return Bad("retry.max_attempts", "must be a positive integer, got 0");
  }
  if (spec.priority < -kMaxPriority || spec.priority > kMaxPriority) {
    return Bad("priority", absl::StrCat("must be an integer from ", -kMaxPriority, " to ",
                                        kMaxPriority, ", got ", spec.priority));
  }
  if (spec.max_attempts > kMaxAttempts) {
    return Bad("retry.max_attempts", absl::StrCat("must be at most ", kMaxAttempts, ", got ",
                                                  spec.max_attempts, ToAbsl(kAttemptsWhy)));
  }
  if (auto p = internal::CheckPipeline(spec)) return Bad(p->field, p->message, p->index);
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    if (auto why = RelativePathError(spec.outputs[i])) {
      return Bad("outputs", absl::StrCat(Element(i, spec.outputs[i]), ": ", *why), i);
    }
  }
  if (spec.inputs.size() > kMaxInputFiles) {
    return Bad("inputs",
               absl::StrCat(spec.inputs.size(), " files, over the limit of ", kMaxInputFiles), -1,
               absl::StatusCode::kResourceExhausted);
  }
  // Inputs are expanded from the TOML entries, so an input's index is not an element index;
  // Problem::input lets ParseJobToml point at the entry the input came from.
  auto bad_input = [](size_t i, std::string message) {
    Problem p = Bad("inputs", std::move(message));
    p.input = static_cast<int64_t>(i);
    return p;
  };
  std::unordered_map<std::string_view, size_t> staged;
  staged.reserve(spec.inputs.size());
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const std::string& path = spec.inputs[i].path;
    if (std::optional<std::string> why = RelativePathError(path)) {
      return bad_input(i, absl::StrCat("staged path [", i, "] '", Shorten(path), "' ", *why));
    }
    if (auto [it, inserted] = staged.emplace(path, i); !inserted) {
      return bad_input(i, absl::StrCat("staged paths [", it->second, "] and [", i, "] are both '",
                                       Shorten(path), "'"));
    }
  }
  // A staged path under another one ('a' and 'a/b'): the task dir cannot hold both. Paths are
  // normalized, so checking each one's parent directories as text finds every such pair.
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const std::string_view path = spec.inputs[i].path;
    for (size_t slash = path.find('/'); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
      const std::string_view dir = path.substr(0, slash);
      if (auto it = staged.find(dir); it != staged.end()) {
        return bad_input(std::max(i, it->second),
                         absl::StrCat("inputs '", Shorten(dir), "' and '", Shorten(path),
                                      "' cannot both be staged: '", Shorten(dir),
                                      "' would have to be a file and a directory"));
      }
    }
  }
  if (std::optional<internal::SizeProblem> p = internal::TaskInputsProblem(spec)) {
    return Bad(p->field, p->message, p->element);
  }
  if (MaybeProblem p = CheckCommand(spec)) return p;
  if (std::optional<internal::EnvProblem> p = internal::CheckEnv(spec)) {
    return Bad(p->field, p->message);
  }
  return std::nullopt;
}

// ------------------------------------------------------------------------------------------
// TOML reading.

struct Ctx {
  std::string file;  // for messages
  fs::path base;     // absolute, normalized: relative paths resolve against it
};

std::string Where(const Ctx& ctx, const toml::source_region& r) {
  return toml_util::Where(ctx.file, r);
}

absl::Status KeyError(const Ctx& ctx, const toml::source_region& where, std::string_view key,
                      std::string_view message,
                      absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  return absl::Status(
      code, absl::StrCat(Where(ctx, where), ": key '", ToAbsl(key), "': ", ToAbsl(message)));
}


const toml::key* KeyOf(const toml::table& t, std::string_view name) {
  auto it = t.find(name);
  return it == t.end() ? nullptr : &it->first;
}


template <size_t N>
bool Contains(const std::string_view (&list)[N], std::string_view s) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

// Where an unknown key `name` found under `prefix` ("" or "table.") belongs, as a parenthesized
// hint, or "".
std::string MisplacedHint(std::string_view prefix, std::string_view name) {
  if (prefix.empty()) {
    if (Contains(kResourceKeys, name)) return " (it belongs under [resources])";
    if (Contains(kRetryKeys, name)) return " (it belongs under [retry])";
    if (Contains(internal::kSandboxKeys, name)) return " (it belongs under [sandbox])";
    if (Contains(internal::kServiceKeys, name)) return " (it belongs under [service])";
  } else if (Contains(kTopKeys, name)) {
    // Every key after a [table] header belongs to that table.
    return absl::StrCat(" (keys after the [", ToAbsl(prefix.substr(0, prefix.size() - 1)),
                        "] header belong to that table; move '", ToAbsl(name), "' above it)");
  }
  return std::string();
}

// Refuses keys not in `allowed`, reporting the first one in file order; a key of another table
// is told where it belongs.
template <size_t N>
absl::Status CheckKeys(const Ctx& ctx, const toml::table& t, std::string_view prefix,
                       const std::string_view (&allowed)[N]) {
  return toml_util::CheckKeys(ctx.file, t, prefix, allowed, [prefix](std::string_view name) {
    return MisplacedHint(prefix, name);
  });
}

// Reads an optional integer in [min, max] into `out`; leaves `out` alone when absent.
// `why_max` is appended to the message for a value over `max`.
template <typename T>
absl::Status ReadInt(const Ctx& ctx, const toml::table& t, std::string_view key,
                     std::string_view full_key, int64_t min, int64_t max, T& out,
                     std::string_view why_max = "") {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  const std::string what = min == 1   ? std::string("a positive integer")
                           : min == 0 ? std::string("a non-negative integer")
                                      : absl::StrCat("an integer from ", min, " to ", max);
  if (!n->is_integer()) {
    return KeyError(ctx, n->source(), full_key,
                    absl::StrCat("must be ", what, ", got ", Describe(*n)));
  }
  const int64_t v = n->as_integer()->get();
  if (v < min) {
    return KeyError(ctx, n->source(), full_key, absl::StrCat("must be ", what, ", got ", v));
  }
  if (v > max) {
    return KeyError(ctx, n->source(), full_key,
                    absl::StrCat("must be at most ", max, ", got ", v, ToAbsl(why_max)));
  }
  out = static_cast<T>(v);
  return absl::OkStatus();
}

absl::Status ReadString(const Ctx& ctx, const toml::table& t, std::string_view key,
                        std::string& out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  if (!n->is_string()) {
    return KeyError(ctx, n->source(), key, absl::StrCat("must be a string, got ", Describe(*n)));
  }
  out = n->as_string()->get();
  return absl::OkStatus();
}

absl::Status ReadStringArray(const Ctx& ctx, const toml::table& t, std::string_view key,
                             std::vector<std::string>& out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  const toml::array* arr = n->as_array();
  if (arr == nullptr) {
    return KeyError(ctx, n->source(), key,
                    absl::StrCat("must be an array of strings, got ", Describe(*n)));
  }
  out.clear();
  out.reserve(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& el = *arr->get(i);
    if (!el.is_string()) {
      return KeyError(ctx, el.source(), key,
                      absl::StrCat("element [", i, "] must be a string, got ", Describe(el)));
    }
    out.push_back(el.as_string()->get());
  }
  return absl::OkStatus();
}

const toml::table* SubTable(const toml::table& root, std::string_view key) {
  const toml::node* n = root.get(key);
  return n == nullptr ? nullptr : n->as_table();
}

fs::path Resolve(const Ctx& ctx, const std::string& entry) {
  const fs::path p(entry);
  return (p.is_absolute() ? p : ctx.base / p).lexically_normal();
}


// Items: one per line; blank lines skipped; "\r\n" endings accepted.
absl::Status ReadItemsFile(const Ctx& ctx, const toml::node& n, std::vector<std::string>& out) {
  const std::string& entry = n.as_string()->get();
  auto fail = [&](absl::StatusCode code, std::string_view msg) {
    return KeyError(ctx, n.source(), "items_file", msg, code);
  };
  if (entry.empty()) return fail(absl::StatusCode::kInvalidArgument, "must not be empty");
  const fs::path path = Resolve(ctx, entry);
  absl::StatusOr<std::string> data = toml_util::ReadSmallFile(path.string(), kMaxItemsFileBytes, "an items file");
  if (!data.ok()) return fail(data.status().code(), std::string(data.status().message()));

  out.clear();
  size_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(*data, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    auto at = [&] { return absl::StrCat("'", entry, "' line ", line_no); };
    if (line.size() > kMaxItemBytes) {
      return fail(absl::StatusCode::kResourceExhausted,
                  absl::StrCat(at(), ": the item is ", line.size(), " bytes, over the limit of ",
                               kMaxItemBytes));
    }
    if (line.find('\0') != absl::string_view::npos) {
      return fail(absl::StatusCode::kInvalidArgument,
                  absl::StrCat(at(), ": contains a NUL byte (is it a text file?)"));
    }
    if (!text::IsValidUtf8(ToStd(line))) {
      return fail(absl::StatusCode::kInvalidArgument,
                  absl::StrCat(at(), ": is not valid UTF-8 (is the file in another encoding?)"));
    }
    if (out.size() == kMaxTasks) {
      return fail(
          absl::StatusCode::kResourceExhausted,
          absl::StrCat("'", entry, "' lists more than ", kMaxTasks, " items, over the task limit"));
    }
    out.emplace_back(line);
  }
  if (out.empty()) {
    return fail(absl::StatusCode::kInvalidArgument,
                absl::StrCat("'", path.string(), "' lists no items (it has no non-blank line)"));
  }
  return absl::OkStatus();
}

bool HasGlobMeta(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

std::string EscapeGlob(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// Lexically normal, without a trailing '/': "a/b/" would otherwise have parent "a/b".
fs::path Normal(const fs::path& p) {
  fs::path n = p.lexically_normal();
  if (!n.has_filename() && n != n.root_path()) n = n.parent_path();
  return n;
}

// Expands `inputs` entries into files and their staged paths.
class InputExpander {
 public:
  explicit InputExpander(const Ctx& ctx) : ctx_(ctx) {}

  // The `inputs` entry each expanded input came from, in order; valid while the TOML lives.
  const std::vector<const toml::node*>& origins() const { return origins_; }

  absl::Status Expand(const toml::node& n, std::vector<Input>& out) {
    const toml::array* arr = n.as_array();
    if (arr == nullptr) {
      return KeyError(ctx_, n.source(), "inputs",
                      absl::StrCat("must be an array of strings, got ", Describe(n)));
    }
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::node& el = *arr->get(i);
      if (!el.is_string()) {
        return KeyError(ctx_, el.source(), "inputs",
                        absl::StrCat("element [", i, "] must be a string, got ", Describe(el)));
      }
      if (absl::Status s = ExpandEntry(el, out); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Fail(const toml::node& el, absl::StatusCode code, std::string_view msg) {
    return KeyError(ctx_, el.source(), "inputs", msg, code);
  }

  absl::Status ExpandEntry(const toml::node& el, std::vector<Input>& out) {
    const std::string& entry = el.as_string()->get();
    if (entry.empty()) return Fail(el, absl::StatusCode::kInvalidArgument, "an entry is empty");
    const fs::path abs = Resolve(ctx_, entry);
    std::vector<fs::path> matches;
    if (HasGlobMeta(entry)) {
      // The job dir's own name may hold glob characters; only the entry is a pattern.
      const std::string pattern = fs::path(entry).is_absolute()
                                      ? entry
                                      : absl::StrCat(EscapeGlob(ctx_.base.string()), "/", entry);
      glob_t g{};
      const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
      if (rc == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) matches.push_back(Normal(g.gl_pathv[i]));
      }
      globfree(&g);
      if (rc == GLOB_NOMATCH) {
        return Fail(el, absl::StatusCode::kNotFound,
                    absl::StrCat("'", entry, "' matches no file (pattern '", abs.string(), "')"));
      }
      if (rc != 0) {
        return Fail(el, absl::StatusCode::kUnknown,
                    absl::StrCat("cannot expand '", entry, "' (glob error ", rc, ")"));
      }
    } else {
      matches.push_back(Normal(abs));
    }

    for (const fs::path& m : matches) {
      std::error_code ec;
      const fs::file_status st = fs::status(m, ec);  // follows symlinks
      if (st.type() == fs::file_type::not_found) {
        return Fail(
            el, absl::StatusCode::kNotFound,
            absl::StrCat("no such file or directory '", m.string(), "' (entry '", entry, "')"));
      }
      if (ec) {
        return Fail(el, absl::ErrnoToStatusCode(ec.value()),
                    absl::StrCat("cannot read '", m.string(), "': ", ec.message()));
      }
      // Outside the job dir, a file is staged relative to the matched path's parent: a file
      // by its base name, a directory with its own name and tree.
      const fs::path root = m.parent_path();
      if (fs::is_regular_file(st)) {
        if (absl::Status s = Add(el, m, root, out); !s.ok()) return s;
      } else if (fs::is_directory(st)) {
        if (absl::Status s = AddDirectory(el, m, root, out); !s.ok()) return s;
      } else {
        return Fail(el, absl::StatusCode::kInvalidArgument,
                    absl::StrCat("'", m.string(), "' is not a regular file or directory"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddDirectory(const toml::node& el, const fs::path& dir, const fs::path& root,
                            std::vector<Input>& out) {
    std::vector<fs::path> files;
    std::error_code ec;
    // Symlinks to directories are not followed (no cycles); symlinks to files are.
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code fe;
      if (it->is_regular_file(fe)) files.push_back(it->path());
      if (out.size() + files.size() > kMaxInputFiles) return TooMany(el);
    }
    if (ec) {
      return Fail(el, absl::ErrnoToStatusCode(ec.value()),
                  absl::StrCat("cannot list '", dir.string(), "': ", ec.message()));
    }
    std::sort(files.begin(), files.end());  // directory order is not deterministic
    for (const fs::path& f : files) {
      if (absl::Status s = Add(el, f, root, out); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status TooMany(const toml::node& el) {
    return Fail(el, absl::StatusCode::kResourceExhausted,
                absl::StrCat("more than ", kMaxInputFiles, " input files"));
  }

  absl::Status Add(const toml::node& el, const fs::path& file, const fs::path& root,
                   std::vector<Input>& out) {
    fs::path rel = file.lexically_relative(ctx_.base);
    const bool inside = !rel.empty() && rel != "." && *rel.begin() != "..";
    if (!inside) rel = file.lexically_relative(root);
    std::string path = rel.generic_string();
    std::string source = file.string();
    auto [it, inserted] = staged_.emplace(path, source);
    if (!inserted) {
      if (it->second == source) return absl::OkStatus();  // the same file listed twice
      return Fail(el, absl::StatusCode::kInvalidArgument,
                  absl::StrCat("'", it->second, "' and '", source, "' would both be staged as '",
                               path, "'"));
    }
    if (out.size() >= kMaxInputFiles) return TooMany(el);
    out.push_back(Input{std::move(source), std::move(path)});
    origins_.push_back(&el);
    return absl::OkStatus();
  }

  const Ctx& ctx_;
  std::unordered_map<std::string, std::string> staged_;  // staged path -> source
  std::vector<const toml::node*> origins_;               // per input: the entry it came from
};

// The default job name: the file's stem, with characters a name may not hold replaced.
std::string DefaultName(const std::string& file_name) {
  std::string name = fs::path(file_name).stem().string();
  for (char& c : name) {
    if (!ValidNameChar(c)) c = '_';
  }
  if (name.size() > kMaxNameBytes) name.resize(kMaxNameBytes);
  if (name.empty() || name == "." || name == "..") name = "job";
  return name;
}

absl::Status Locate(const Ctx& ctx, const toml::table& root, const Problem& p,
                    const std::vector<const toml::node*>& input_origins) {
  std::string key = p.field;
  const toml::node* n = toml::at_path(root, p.field).node();
  if (p.input >= 0 && static_cast<size_t>(p.input) < input_origins.size()) {
    n = input_origins[static_cast<size_t>(p.input)];
  }
  if (n == nullptr && p.field == "items" && root.get("items_file") != nullptr) {
    key = "items_file";
    n = root.get("items_file");
  }
  if (n != nullptr && p.element >= 0 && n->is_array() &&
      static_cast<size_t>(p.element) < n->as_array()->size()) {
    n = n->as_array()->get(static_cast<size_t>(p.element));
  }
  const std::string where = n != nullptr ? Where(ctx, n->source()) : ctx.file;
  return absl::Status(p.code, absl::StrCat(where, ": key '", key, "': ", p.message));
}

// Exactly one way to split a batch job into tasks: frames (and chunk), items, items_file or count.
absl::Status ReadTasks(const Ctx& ctx, const toml::table& root, JobSpec& spec) {
  std::vector<const toml::key*> kinds;
  for (std::string_view k : kKindKeys) {
    if (const toml::key* key = KeyOf(root, k)) kinds.push_back(key);
  }
  if (kinds.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.file,
                     ": missing one of the keys 'frames', 'items', 'items_file', 'count' "
                     "(how the job is split into tasks), or a [service] table"));
  }
  if (kinds.size() > 1) {
    std::sort(kinds.begin(), kinds.end(), [](const toml::key* a, const toml::key* b) {
      const auto& pa = a->source().begin;
      const auto& pb = b->source().begin;
      return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
    });
    return KeyError(ctx, kinds[1]->source(), kinds[1]->str(),
                    absl::StrCat("only one of 'frames', 'items', 'items_file', 'count' may be "
                                 "given, and '",
                                 ToAbsl(kinds[0]->str()), "' is already given at line ",
                                 kinds[0]->source().begin.line));
  }
  const std::string_view kind = kinds[0]->str();
  if (const toml::key* chunk = KeyOf(root, "chunk"); chunk != nullptr && kind != "frames") {
    return KeyError(
        ctx, chunk->source(), "chunk",
        absl::StrCat("only applies to 'frames' jobs, and this job uses '", ToAbsl(kind), "'"));
  }
  if (kind == "frames") {
    spec.kind = TaskKind::kFrames;
    if (absl::Status s = ReadString(ctx, root, "frames", spec.frames); !s.ok()) return s;
    if (absl::Status s = ReadInt(ctx, root, "chunk", "chunk", 1, kU32Max, spec.chunk); !s.ok()) {
      return s;
    }
  } else if (kind == "items") {
    spec.kind = TaskKind::kItems;
    if (absl::Status s = ReadStringArray(ctx, root, "items", spec.items); !s.ok()) return s;
  } else if (kind == "items_file") {
    spec.kind = TaskKind::kItems;
    const toml::node& n = *root.get("items_file");
    if (!n.is_string()) {
      return KeyError(ctx, n.source(), "items_file",
                      absl::StrCat("must be a string (a file path), got ", Describe(n)));
    }
    if (absl::Status s = ReadItemsFile(ctx, n, spec.items); !s.ok()) return s;
  } else {
    spec.kind = TaskKind::kCount;
    if (absl::Status s = ReadInt(ctx, root, "count", "count", 1, kI64Max, spec.count); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobSpec> ReadJob(const Ctx& ctx, const toml::table& root) {
  if (absl::Status s = CheckKeys(ctx, root, "", kTopKeys); !s.ok()) return s;
  const toml::table* resources = SubTable(root, "resources");
  const toml::table* retry = SubTable(root, "retry");
  for (std::string_view key : {"resources", "retry"}) {
    const toml::node* n = root.get(key);
    if (n != nullptr && !n->is_table()) {
      return KeyError(ctx, n->source(), key,
                      absl::StrCat("must be a table ([", ToAbsl(key), "]), got ", Describe(*n)));
    }
  }
  if (resources != nullptr) {
    if (absl::Status s = CheckKeys(ctx, *resources, "resources.", kResourceKeys); !s.ok()) return s;
  }
  if (retry != nullptr) {
    if (absl::Status s = CheckKeys(ctx, *retry, "retry.", kRetryKeys); !s.ok()) return s;
  }

  JobSpec spec;
  spec.name = DefaultName(ctx.file);
  if (absl::Status s = ReadString(ctx, root, "name", spec.name); !s.ok()) return s;

  if (root.get("command") == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.file,
                     ": missing required key 'command' (the program and its arguments, "
                     "e.g. command = [\"povray\", \"+SF{frame_start}\"])"));
  }
  if (absl::Status s = ReadStringArray(ctx, root, "command", spec.command); !s.ok()) return s;

  if (absl::Status s = internal::ReadServiceTable(
          ctx.file, root, [](std::string_view name) { return MisplacedHint("service.", name); },
          spec);
      !s.ok()) {
    return s;
  }
  if (!spec.service.has_value()) {  // a service's tasks are its replicas
    if (absl::Status s = ReadTasks(ctx, root, spec); !s.ok()) return s;
  }

  InputExpander expander(ctx);
  if (const toml::node* n = root.get("inputs")) {
    if (absl::Status s = expander.Expand(*n, spec.inputs); !s.ok()) return s;
  }
  if (absl::Status s = ReadStringArray(ctx, root, "outputs", spec.outputs); !s.ok()) return s;
  if (absl::Status s = ReadStringArray(ctx, root, "task_inputs", spec.task_inputs); !s.ok()) {
    return s;
  }
  spec.base_dir = ctx.base.string();
  if (const toml::node* n = root.get("allow_empty_outputs")) {
    if (!n->is_boolean()) {
      return KeyError(ctx, n->source(), "allow_empty_outputs",
                      absl::StrCat("must be true or false, got ", Describe(*n)));
    }
    spec.allow_empty_outputs = n->as_boolean()->get();
  }
  if (absl::Status s = internal::ReadSandboxTable(
          ctx.file, root, [](std::string_view name) { return MisplacedHint("sandbox.", name); },
          spec);
      !s.ok()) {
    return s;
  }

  if (resources != nullptr) {
    core::Resources& r = spec.resources;
    if (absl::Status s = ReadInt(ctx, *resources, "cpus", "resources.cpus", 1, kU32Max, r.cpus);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ReadInt(ctx, *resources, "gpus", "resources.gpus", 0, kU32Max, r.gpus);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            ReadInt(ctx, *resources, "memory_mb", "resources.memory_mb", 0, kI64Max, r.memory_mb);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ReadInt(ctx, *resources, "gpu_memory_mb", "resources.gpu_memory_mb", 0,
                                 kI64Max, r.gpu_memory_mb);
        !s.ok()) {
      return s;
    }
    if (const toml::node* n = resources->get("gpu_api")) {
      if (!n->is_string()) {
        return KeyError(ctx, n->source(), "resources.gpu_api",
                        absl::StrCat("must be a string, got ", Describe(*n)));
      }
      r.gpu_api = n->as_string()->get();
    }
  }
  if (retry != nullptr) {
    if (absl::Status s = ReadInt(ctx, *retry, "max_attempts", "retry.max_attempts", 1, kMaxAttempts,
                                 spec.max_attempts, kAttemptsWhy);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            ReadInt(ctx, *retry, "timeout_s", "retry.timeout_s", 0, kU32Max, spec.timeout_s);
        !s.ok()) {
      return s;
    }
  }

  if (absl::Status s =
          ReadInt(ctx, root, "priority", "priority", -kMaxPriority, kMaxPriority, spec.priority);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = internal::ReadAfterAndBackoff(ctx.file, root, retry, spec); !s.ok()) {
    return s;
  }
  if (absl::Status s = internal::ReadEnvTable(ctx.file, root, spec); !s.ok()) return s;
  if (MaybeProblem p = CheckSpec(spec)) return Locate(ctx, root, *p, expander.origins());
  return spec;
}

}  // namespace

absl::StatusOr<JobSpec> ParseJobToml(std::string_view toml_text, const std::string& file_name,
                                     const std::string& base_dir) {
  Ctx ctx;
  ctx.file = file_name;
  std::error_code ec;
  fs::path base = fs::absolute(base_dir.empty() ? fs::path(".") : fs::path(base_dir), ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_name, ": cannot resolve the directory '", base_dir, "': ", ec.message()));
  }
  base = base.lexically_normal();
  if (!base.has_filename() && base != base.root_path()) base = base.parent_path();  // "a/b/"
  ctx.base = base;

  absl::StatusOr<toml::table> root = toml_util::Parse(toml_text, file_name);
  if (!root.ok()) return root.status();
  return ReadJob(ctx, *root);
}

absl::StatusOr<JobSpec> ParseJobFile(const std::string& path) {
  absl::StatusOr<std::string> text = toml_util::ReadSmallFile(path, kMaxJobFileBytes, "a job file");
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat(path, ": ", text.status().message()));
  }
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(path), ec).parent_path();
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot resolve: ", ec.message()));
  }
  return ParseJobToml(*text, path, dir.string());
}

absl::Status Validate(const JobSpec& spec) {
  if (MaybeProblem p = CheckSpec(spec)) {
    return absl::Status(p->code, absl::StrCat("job spec: field '", p->field, "': ", p->message));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> TaskCount(const JobSpec& spec) {
  auto too_many = [](uint64_t n, std::string_view what) {
    return absl::ResourceExhaustedError(absl::StrCat("job spec: field '", ToAbsl(what), "': ", n,
                                                     " tasks, over the limit of ", kMaxTasks));
  };
  if (spec.service.has_value()) return spec.service->max_replicas;  // replica i is task i
  switch (spec.kind) {
    case TaskKind::kFrames: {
      absl::StatusOr<uint64_t> n = internal::CountChunks(spec.frames, spec.chunk, kMaxTasks);
      if (!n.ok()) {
        return absl::Status(n.status().code(),
                            absl::StrCat("job spec: field 'frames': ", n.status().message()));
      }
      return n;
    }
    case TaskKind::kItems:
      if (spec.items.size() > kMaxTasks) return too_many(spec.items.size(), "items");
      return spec.items.size();
    case TaskKind::kCount:
      if (spec.count > kMaxTasks) return too_many(spec.count, "count");
      return spec.count;
  }
  return absl::InvalidArgumentError("job spec: unknown task kind");
}

absl::StatusOr<std::vector<TaskParams>> ExpandTasks(const JobSpec& spec) {
  absl::StatusOr<uint64_t> n = TaskCount(spec);  // refuses oversized jobs before allocating
  if (!n.ok()) return n.status();
  std::vector<TaskParams> tasks;
  tasks.reserve(*n);
  switch (spec.kind) {
    case TaskKind::kFrames: {
      absl::Status s = internal::ForEachChunk(spec.frames, spec.chunk, [&](const FrameChunk& c) {
        TaskParams& t = tasks.emplace_back();
        t.index = static_cast<uint32_t>(tasks.size() - 1);
        t.chunk = c;
        return true;
      });
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("job spec: field 'frames': ", s.message()));
      }
      break;
    }
    case TaskKind::kItems:
      for (size_t i = 0; i < spec.items.size(); ++i) {
        TaskParams& t = tasks.emplace_back();
        t.index = static_cast<uint32_t>(i);
        t.item = spec.items[i];
      }
      break;
    case TaskKind::kCount:  // a service's tasks too: its replicas, by index
      for (uint64_t i = 0; i < *n; ++i) tasks.emplace_back().index = static_cast<uint32_t>(i);
      break;
  }
  return tasks;
}

}  // namespace idlepool::spec
