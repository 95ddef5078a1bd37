// Per-task inputs (`task_inputs`): checking the patterns and expanding them for each task on the
// submitting machine. The patterns are rendered with the command's code (RenderCommand), then
// their globs expanded, relative to the spec's directory.

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "spec/command_internal.h"
#include "spec/spec.h"
#include "spec/toml_util.h"
#include "text/utf8.h"

namespace idlepool::spec {
namespace fs = std::filesystem;
namespace {

using toml_util::Shorten;

// Placeholders whose value is the worker's, or a service's: unknown when the client expands.
bool UnknownAtSubmit(std::string_view name) {
  return name == "task_dir" || name == "checkpoint_dir" || name == "port" || name == "replica";
}

// Why placeholder `name` cannot be rendered for the tasks of `spec`, or "".
std::string PlaceholderProblem(const JobSpec& spec, std::string_view name) {
  if (UnknownAtSubmit(name)) {
    return absl::StrCat("{", std::string(name), "} is not known when the job is submitted");
  }
  const bool frame = name == "frame" || name == "frames" || name.starts_with("frame_");
  if (frame && spec.kind != TaskKind::kFrames) {
    return absl::StrCat("{", std::string(name), "} is only for 'frames' jobs");
  }
  if (name == "frame" && spec.chunk != 1) return "{frame} needs chunk = 1";
  if (name == "item" && spec.kind != TaskKind::kItems) {
    return "{item} is only for 'items' or 'items_file' jobs";
  }
  return "";
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

// "task 3 (item 'seg3')", "task 0 (frames 1-4)", "task 7".
std::string DescribeTask(const JobSpec& spec, const TaskParams& t) {
  if (spec.kind == TaskKind::kItems) {
    return absl::StrCat("task ", t.index, " (item '", Shorten(t.item), "')");
  }
  if (spec.kind == TaskKind::kFrames && !t.chunk.frames.empty()) {
    if (t.chunk.frames.size() == 1)
      return absl::StrCat("task ", t.index, " (frame ", t.chunk.start, ")");
    return absl::StrCat("task ", t.index, " (frames ", t.chunk.start, "-", t.chunk.end, ")");
  }
  return absl::StrCat("task ", t.index);
}

// The staged and source paths of every task's files add up to at most this (a submission is at
// most 128 MiB); past it ExpandTaskInputs is kResourceExhausted, naming the pattern.
constexpr uint64_t kMaxTaskInputBytes = 64ull << 20;

// What the expansion has produced so far across every task: bounded (kMaxTaskInputFiles,
// kMaxTaskInputBytes) so that a pattern matching more than a submission can carry is refused by
// name instead of exhausting the client's memory.
struct Budget {
  uint64_t files = 0;
  uint64_t bytes = 0;  // staged paths and source paths
};

// Expands the patterns for one task; `job_paths` are the job's own staged input paths.
class TaskExpander {
 public:
  TaskExpander(const JobSpec& spec, const std::set<std::string>& job_paths, Budget& total)
      : spec_(spec),
        base_(spec.base_dir.empty() ? fs::current_path() : fs::path(spec.base_dir)),
        job_paths_(job_paths),
        total_(total) {}

  absl::Status Expand(const TaskParams& task, TaskInputFiles& out) {
    out.task = task.index;
    absl::StatusOr<std::vector<std::string>> rendered =
        RenderCommand(spec_.task_inputs, task, "", "");
    if (!rendered.ok()) {
      return absl::Status(rendered.status().code(),
                          absl::StrCat("task_inputs: ", DescribeTask(spec_, task), ": ",
                                       rendered.status().message()));
    }
    std::map<std::string, std::string> staged;  // path -> source
    for (size_t i = 0; i < rendered->size(); ++i) {
      auto fail = [&](absl::StatusCode code, const std::string& why) {
        return absl::Status(code,
                            absl::StrCat("task_inputs: ", DescribeTask(spec_, task), ": pattern '",
                                         Shorten(spec_.task_inputs[i]), "' ", why));
      };
      const std::string& r = (*rendered)[i];
      std::vector<fs::path> matches;
      if (absl::Status s = Match(r, kMaxTaskInputFiles - total_.files, matches); !s.ok())
        return fail(s.code(), std::string(s.message()));
      for (const fs::path& m : matches) {
        std::error_code ec;
        if (!fs::is_regular_file(m, ec)) {
          return fail(absl::StatusCode::kInvalidArgument,
                      absl::StrCat("matches '", m.string(), "', which is not a regular file"));
        }
        fs::path rel = m.lexically_relative(base_);
        if (rel.empty() || *rel.begin() == "..") rel = m.filename();
        std::string path = rel.generic_string();
        if (auto why = RelativePathError(path)) {
          return fail(absl::StatusCode::kInvalidArgument,
                      absl::StrCat("stages '", Shorten(path), "', which ", *why));
        }
        if (job_paths_.count(path) != 0) {
          return fail(
              absl::StatusCode::kInvalidArgument,
              absl::StrCat("stages '", Shorten(path), "', which the job's inputs stage too"));
        }
        auto [it, inserted] = staged.emplace(path, m.string());
        if (!inserted) {
          if (it->second == m.string()) continue;
          return fail(absl::StatusCode::kInvalidArgument,
                      absl::StrCat("stages '", it->second, "' and '", m.string(), "' both as '",
                                   Shorten(path), "'"));
        }
        if (++total_.files > kMaxTaskInputFiles) {
          return fail(absl::StatusCode::kResourceExhausted,
                      absl::StrCat("brings the job past ", kMaxTaskInputFiles, " per-task files"));
        }
        total_.bytes += path.size() + m.native().size();
        if (total_.bytes > kMaxTaskInputBytes) {
          return fail(
              absl::StatusCode::kResourceExhausted,
              absl::StrCat("brings the job's per-task file names past ", kMaxTaskInputBytes >> 20,
                           " MiB (more than a submission carries); match fewer files, "
                           "or stage a directory or an archive as a job input"));
        }
      }
    }
    for (auto& [path, source] : staged) out.inputs.push_back(Input{source, path});
    return absl::OkStatus();
  }

 private:
  // At most `room` matches: a glob matching more is refused before its paths are copied.
  absl::Status Match(const std::string& rendered, uint64_t room, std::vector<fs::path>& out) const {
    if (rendered.empty()) return absl::InvalidArgumentError("renders to an empty path");
    const fs::path p(rendered);
    const fs::path abs = p.is_absolute() ? p : base_ / p;
    if (!HasGlobMeta(rendered)) {
      std::error_code ec;
      if (!fs::exists(abs, ec)) {
        return absl::NotFoundError(absl::StrCat("matches no file ('", abs.string(), "')"));
      }
      out.push_back(abs.lexically_normal());
      return absl::OkStatus();
    }
    const std::string pattern =
        p.is_absolute() ? rendered : absl::StrCat(EscapeGlob(base_.string()), "/", rendered);
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    if (rc == 0 && g.gl_pathc > room) {
      const size_t n = g.gl_pathc;
      globfree(&g);
      return absl::ResourceExhaustedError(absl::StrCat("matches ", n,
                                                       " files, which brings the job past ",
                                                       kMaxTaskInputFiles, " per-task files"));
    }
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i)
        out.push_back(fs::path(g.gl_pathv[i]).lexically_normal());
    }
    globfree(&g);
    if (rc == GLOB_NOMATCH) {
      return absl::NotFoundError(absl::StrCat("matches no file ('", abs.string(), "')"));
    }
    if (rc != 0)
      return absl::UnknownError(absl::StrCat("cannot be expanded (glob error ", rc, ")"));
    return absl::OkStatus();
  }

  const JobSpec& spec_;
  const fs::path base_;
  const std::set<std::string>& job_paths_;
  Budget& total_;
};

}  // namespace

namespace internal {

std::optional<SizeProblem> TaskInputsProblem(const JobSpec& spec) {
  auto bad = [](size_t i, const std::string& pattern, const std::string& why) {
    return SizeProblem{"task_inputs", static_cast<int64_t>(i),
                       absl::StrCat(Element(i, pattern), ": ", why)};
  };
  if (!spec.task_inputs.empty() && spec.service.has_value()) {
    return SizeProblem{"task_inputs", -1, "a service has no per-task inputs"};
  }
  if (spec.task_inputs.size() > kMaxInputFiles) {
    return SizeProblem{
        "task_inputs", -1,
        absl::StrCat(spec.task_inputs.size(), " patterns, over the limit of ", kMaxInputFiles)};
  }
  std::vector<Piece> pieces;
  for (size_t i = 0; i < spec.task_inputs.size(); ++i) {
    const std::string& pattern = spec.task_inputs[i];
    if (pattern.empty()) return bad(i, pattern, "is empty");
    if (pattern.size() > 4096) return bad(i, pattern, "is longer than 4096 bytes");
    if (!text::IsValidUtf8(pattern)) return bad(i, pattern, "is not valid UTF-8");
    if (pattern.find_first_of(std::string_view("\0\n\r", 3)) != std::string::npos) {
      return bad(i, pattern, "contains a NUL byte or a line break");
    }
    if (absl::Status s = ScanTemplate(pattern, pieces); !s.ok()) {
      return bad(i, pattern, std::string(s.message()));
    }
    for (const Piece& p : pieces) {
      if (!p.placeholder) continue;
      if (std::string why = PlaceholderProblem(spec, p.text); !why.empty()) {
        return bad(i, pattern, why);
      }
    }
  }
  return std::nullopt;
}

}  // namespace internal

absl::StatusOr<std::vector<TaskInputFiles>> ExpandTaskInputs(const JobSpec& spec,
                                                             const std::vector<TaskParams>& tasks) {
  std::vector<TaskInputFiles> out;
  if (spec.task_inputs.empty()) return out;
  if (auto p = internal::TaskInputsProblem(spec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("job spec: field '", p->field, "': ", p->message));
  }
  std::set<std::string> job_paths;
  for (const Input& in : spec.inputs) job_paths.insert(in.path);
  Budget total;
  TaskExpander expander(spec, job_paths, total);
  for (const TaskParams& t : tasks) {
    TaskInputFiles files;
    if (absl::Status s = expander.Expand(t, files); !s.ok()) return s;
    if (!files.inputs.empty()) out.push_back(std::move(files));
  }
  return out;
}

}  // namespace idlepool::spec
