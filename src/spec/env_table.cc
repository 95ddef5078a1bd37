// A job's own environment variables: `env` of a job file, its checks and its rendering per task
// (spec/env_internal.h, spec.h).
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "spec/command_internal.h"
#include "spec/env_internal.h"
#include "spec/toml_util.h"
#include "text/utf8.h"

namespace idlepool::spec {
namespace {

constexpr uint64_t kPointerBytes = sizeof(char*);  // execve counts one per string

// "4.5 KiB", or bytes below 1 KiB.
std::string Size(uint64_t n) {
  if (n < 1024) return absl::StrCat(n, " bytes");
  const uint64_t tenth = n % 1024 * 10 / 1024;
  return absl::StrCat(n / 1024, tenth == 0 ? "" : absl::StrCat(".", tenth), " KiB");
}

// The longest value placeholder `name` can have in a task of `spec`, bytes.
uint64_t LongestValue(const JobSpec& spec, std::string_view name) {
  constexpr uint64_t kNumberBytes = 20;  // INT64_MIN
  if (name == "frames") return std::min<uint64_t>(spec.chunk, kMaxFrames) * (kNumberBytes + 1);
  if (name == "item") {
    uint64_t longest = 0;
    for (const std::string& i : spec.items) longest = std::max<uint64_t>(longest, i.size());
    return longest;
  }
  if (name == "task_dir" || name == "checkpoint_dir") return kAssumedDirBytes;
  if (name == "port") return 5;
  if (name == "index" || name == "replica") return std::to_string(kMaxTasks).size();
  return kNumberBytes;  // the frame numbers
}

}  // namespace

absl::StatusOr<std::vector<std::string>> RenderEnv(const std::vector<EnvVar>& env,
                                                   const TaskParams& task,
                                                   std::string_view task_dir,
                                                   std::string_view checkpoint_dir,
                                                   const std::optional<ReplicaParams>& replica) {
  std::vector<std::string> out;
  out.reserve(env.size());
  std::vector<internal::Piece> pieces;
  uint64_t total = 0;
  for (const EnvVar& v : env) {
    auto bad = [&v](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("env '", v.name, "': ", why));
    };
    if (absl::Status s = internal::ScanTemplate(v.value, pieces); !s.ok()) return bad(s.message());
    std::string var = v.name + "=";
    for (const internal::Piece& p : pieces) {
      if (!p.placeholder) {
        var.append(p.text);
      } else if (absl::Status s =
                     internal::AppendValue(p.text, task, task_dir, checkpoint_dir, replica, var);
                 !s.ok()) {
        return bad(s.message());
      }
      if (var.size() > kMaxEnvRenderedBytes) break;  // never renders more than the limit
    }
    total += var.size() + 1 + kPointerBytes;
    if (total > kMaxEnvRenderedBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("env: the job's variables take more than ", Size(kMaxEnvRenderedBytes),
                       " for task ", task.index, " (at '", v.name, "'), over the limit"));
    }
    out.push_back(std::move(var));
  }
  return out;
}

namespace internal {

absl::Status ReadEnvTable(const std::string& file, const toml::table& root, JobSpec& spec) {
  const toml::node* node = root.get("env");
  if (node == nullptr) return absl::OkStatus();
  const toml::table* t = node->as_table();
  if (t == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(toml_util::Where(file, node->source()),
                     ": key 'env': must be a table of variables (env = { NAME = \"value\" }), got ",
                     toml_util::Describe(*node)));
  }
  for (auto&& [key, value] : *t) {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          toml_util::Where(file, value.source()), ": key 'env.", toml_util::Shorten(key.str()),
          "': must be a string (a value may hold the command's placeholders), got ",
          toml_util::Describe(value)));
    }
    spec.env.push_back(EnvVar{std::string(key.str()), value.as_string()->get()});
  }
  std::sort(spec.env.begin(), spec.env.end(),
            [](const EnvVar& a, const EnvVar& b) { return a.name < b.name; });
  return absl::OkStatus();
}

std::optional<EnvProblem> CheckEnv(const JobSpec& spec) {
  if (spec.env.size() > kMaxEnvVars) {
    return EnvProblem{"env",
                      absl::StrCat(spec.env.size(), " variables, over the limit of ", kMaxEnvVars)};
  }
  uint64_t written = 0;
  uint64_t rendered = 0;
  std::string longest;  // the name of the variable that can render longest
  uint64_t longest_bytes = 0;
  std::vector<Piece> pieces;
  std::set<std::string_view> seen;  // a wire spec's names come in any order
  for (size_t i = 0; i < spec.env.size(); ++i) {
    const EnvVar& v = spec.env[i];
    const std::string name = toml_util::Shorten(v.name);
    if (std::optional<std::string> why = EnvNameError(v.name)) {
      return EnvProblem{"env", absl::StrCat("'", name, "' ", *why)};
    }
    if (!seen.insert(v.name).second) {
      return EnvProblem{"env", absl::StrCat("'", name, "' is given twice")};
    }
    const std::string field = "env." + v.name;
    if (v.value.find('\0') != std::string::npos) return EnvProblem{field, "contains a NUL byte"};
    if (!text::IsValidUtf8(v.value)) {
      return EnvProblem{field, "is not valid UTF-8 (invalid bytes are shown as '?')"};
    }
    if (v.value.size() > kMaxEnvValueBytes) {
      return EnvProblem{
          field, absl::StrCat("the value is ", v.value.size(), " bytes, over the limit of ",
                              kMaxEnvValueBytes, ": pass a long value in a file (an input)")};
    }
    if (absl::Status s = ScanTemplate(v.value, pieces); !s.ok()) {
      return EnvProblem{field, std::string(s.message())};
    }
    uint64_t bytes = v.name.size() + 2 + kPointerBytes;  // '=', NUL
    for (const Piece& p : pieces) {
      if (!p.placeholder) {
        bytes += p.text.size();
      } else if (std::optional<std::string> why = PlaceholderMisfit(spec, p.text)) {
        return EnvProblem{field, *why};
      } else {
        bytes += LongestValue(spec, p.text);
      }
    }
    written += v.name.size() + v.value.size();
    rendered += bytes;
    if (bytes > longest_bytes) {
      longest_bytes = bytes;
      longest = v.name;
    }
  }
  if (written > kMaxEnvBytes) {
    return EnvProblem{"env", absl::StrCat("names and values take ", Size(written),
                                          ", over the limit of ", Size(kMaxEnvBytes))};
  }
  if (rendered > kMaxEnvRenderedBytes) {
    return EnvProblem{
        "env." + longest,
        absl::StrCat("the job's variables could take up to ", Size(rendered),
                     " of a task's environment (this one up to ", Size(longest_bytes),
                     ", with its placeholders at their longest); at most ",
                     Size(kMaxEnvRenderedBytes), " is allowed: pass long values in a file")};
  }
  return std::nullopt;
}

}  // namespace internal
}  // namespace idlepool::spec
