// Command templates: scanning, what a task's command takes when it starts, rendering.
//
// Sizes are counted, never rendered: a template is its literal bytes plus, for each placeholder,
// how often it appears times the length of its value for the task. A spec whose command would
// render to gigabytes ("{frames}" of 100,000 frames, 2,000 times) is refused from these counts,
// and the worker counts again with its real paths before it renders anything.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spec/command_internal.h"
#include "spec/frames_internal.h"
#include "spec/spec.h"
#include "spec/toml_util.h"

namespace idlepool::spec {
namespace internal {

std::string Element(size_t i, std::string_view value) {
  return absl::StrCat("element [", i, "] '", toml_util::Shorten(value), "'");
}

absl::Status ScanTemplate(std::string_view s, std::vector<Piece>& out) {
  out.clear();
  size_t literal_start = 0;
  auto flush = [&](size_t end) {
    if (end > literal_start) out.push_back({false, s.substr(literal_start, end - literal_start)});
  };
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c != '{' && c != '}') {
      ++i;
      continue;
    }
    flush(i);
    if (i + 1 < s.size() && s[i + 1] == c) {  // "{{" or "}}": one literal brace
      out.push_back({false, s.substr(i, 1)});
      i += 2;
      literal_start = i;
      continue;
    }
    if (c == '}') {
      return absl::InvalidArgumentError(
          absl::StrCat("unbalanced '}' at offset ", i, " (write '}}' for a literal brace)"));
    }
    const size_t close = s.find_first_of("{}", i + 1);
    if (close == std::string_view::npos || s[close] != '}') {
      return absl::InvalidArgumentError(
          absl::StrCat("unbalanced '{' at offset ", i, " (write '{{' for a literal brace)"));
    }
    const std::string_view name = s.substr(i + 1, close - i - 1);
    if (std::find(std::begin(kPlaceholders), std::end(kPlaceholders), name) ==
        std::end(kPlaceholders)) {
      std::vector<std::string> known;
      for (std::string_view p : kPlaceholders) known.push_back(absl::StrCat("{", ToAbsl(p), "}"));
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown placeholder '{", toml_util::Shorten(name),
          "}'; known: ", absl::StrJoin(known, " "), " (write '{{' for a literal brace)"));
    }
    out.push_back({true, name});
    i = close + 1;
    literal_start = i;
  }
  flush(s.size());
  return absl::OkStatus();
}

}  // namespace internal

namespace {

using internal::Element;
using internal::kPlaceholders;
using internal::Piece;
using internal::ScanTemplate;
using internal::ToAbsl;

constexpr size_t kNumPlaceholders = std::size(kPlaceholders);
constexpr uint64_t kU64Max = UINT64_MAX;
constexpr uint64_t kPointerBytes = sizeof(char*);  // execve counts one per string
constexpr std::string_view kFramesVariable = "IDLEPOOL_FRAMES=";
constexpr std::string_view kItemVariable = "IDLEPOOL_ITEM=";
constexpr uint16_t kLongestPort = 65535;  // {port} before the worker picks one

uint64_t SatAdd(uint64_t a, uint64_t b) { return a > kU64Max - b ? kU64Max : a + b; }
uint64_t SatMul(uint64_t a, uint64_t b) { return b != 0 && a > kU64Max / b ? kU64Max : a * b; }

size_t PlaceholderIndex(std::string_view name) {
  return static_cast<size_t>(std::find(std::begin(kPlaceholders), std::end(kPlaceholders), name) -
                             std::begin(kPlaceholders));
}

// One argv template as lengths: its literal bytes, and how often each placeholder appears.
struct TemplateSize {
  uint64_t literal = 0;
  std::array<uint64_t, kNumPlaceholders> uses{};
};

absl::StatusOr<std::vector<TemplateSize>> TemplateSizes(const std::vector<std::string>& command) {
  std::vector<TemplateSize> out(command.size());
  std::vector<Piece> pieces;
  for (size_t i = 0; i < command.size(); ++i) {
    if (absl::Status s = ScanTemplate(command[i], pieces); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("command ", Element(i, command[i]), ": ", s.message()));
    }
    for (const Piece& p : pieces) {
      if (p.placeholder) {
        ++out[i].uses[PlaceholderIndex(p.text)];
      } else {
        out[i].literal += p.text.size();
      }
    }
  }
  return out;
}

uint64_t DecimalBytes(int64_t v) {
  uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  uint64_t n = v < 0 ? 2 : 1;  // the sign, and the first digit
  while (m >= 10) {
    m /= 10;
    ++n;
  }
  return n;
}

// What one task stands for, as the lengths of its values.
struct TaskValues {
  uint32_t index = 0;
  const FrameChunk* chunk = nullptr;  // null or empty frames: not a frames task
  std::string_view item;
  uint16_t port = kLongestPort;  // a replica's ({port}); the longest when not known yet
};

// The length of each placeholder's value for `t`, in kPlaceholders order.
std::array<uint64_t, kNumPlaceholders> ValueBytes(const TaskValues& t, uint64_t task_dir,
                                                  uint64_t checkpoint_dir) {
  std::array<uint64_t, kNumPlaceholders> v{};
  if (t.chunk != nullptr && !t.chunk->frames.empty()) {
    const FrameChunk& c = *t.chunk;
    if (c.frames.size() == 1) v[PlaceholderIndex("frame")] = DecimalBytes(c.frames[0]);
    v[PlaceholderIndex("frame_start")] = DecimalBytes(c.start);
    v[PlaceholderIndex("frame_end")] = DecimalBytes(c.end);
    v[PlaceholderIndex("frame_step")] = DecimalBytes(c.step);
    uint64_t frames = c.frames.size() - 1;  // the commas of JoinFrames
    for (int64_t f : c.frames) frames += DecimalBytes(f);
    v[PlaceholderIndex("frames")] = frames;
  }
  v[PlaceholderIndex("item")] = t.item.size();
  v[PlaceholderIndex("index")] = DecimalBytes(t.index);
  v[PlaceholderIndex("replica")] = DecimalBytes(t.index);
  v[PlaceholderIndex("port")] = DecimalBytes(t.port);
  v[PlaceholderIndex("task_dir")] = task_dir;
  v[PlaceholderIndex("checkpoint_dir")] = checkpoint_dir;
  return v;
}

// What a task's command takes as execve counts it: its arguments and its own variables.
struct ExecSize {
  uint64_t total = 0;        // every string with its NUL, plus a pointer each
  uint64_t argv = 0;         // the same for the arguments alone
  uint64_t longest_arg = 0;  // with its NUL
  int64_t element = 0;       // the argv index of the longest argument
  uint64_t longest_variable = 0;
  std::string_view variable;  // its name
};

// `values` as ValueBytes gives them; `frames`: the task has IDLEPOOL_FRAMES (of the length of
// {frames}); `item_bytes`: IDLEPOOL_ITEM's value, 0 for none.
ExecSize SizeOf(const std::vector<TemplateSize>& templates,
                const std::array<uint64_t, kNumPlaceholders>& values, bool frames,
                uint64_t item_bytes) {
  ExecSize s;
  for (size_t i = 0; i < templates.size(); ++i) {
    uint64_t bytes = SatAdd(templates[i].literal, 1);
    for (size_t p = 0; p < kNumPlaceholders; ++p) {
      bytes = SatAdd(bytes, SatMul(templates[i].uses[p], values[p]));
    }
    s.argv = SatAdd(s.argv, SatAdd(bytes, kPointerBytes));
    if (bytes > s.longest_arg) {
      s.longest_arg = bytes;
      s.element = static_cast<int64_t>(i);
    }
  }
  s.total = s.argv;
  auto variable = [&s](std::string_view name, uint64_t bytes) {
    s.total = SatAdd(s.total, SatAdd(bytes, kPointerBytes));
    if (bytes > s.longest_variable) {
      s.longest_variable = bytes;
      s.variable = name;
    }
  };
  if (frames) {
    variable("IDLEPOOL_FRAMES",
             SatAdd(kFramesVariable.size() + 1, values[PlaceholderIndex("frames")]));
  }
  if (item_bytes > 0) variable("IDLEPOOL_ITEM", kItemVariable.size() + 1 + item_bytes);
  return s;
}

ExecSize SizeOf(const std::vector<TemplateSize>& templates, const TaskValues& t, uint64_t task_dir,
                uint64_t checkpoint_dir) {
  return SizeOf(templates, ValueBytes(t, task_dir, checkpoint_dir),
                t.chunk != nullptr && !t.chunk->frames.empty(), t.item.size());
}

// What no task of `spec` exceeds, as SizeOf counts it: every number at most 20 characters (as
// INT64_MIN), a chunk's frames at most `chunk` of them, the longest item. When this fits, every
// task does, and the tasks need not be walked.
ExecSize UpperBound(const std::vector<TemplateSize>& templates, const JobSpec& spec) {
  constexpr uint64_t kNumberBytes = 20;
  std::array<uint64_t, kNumPlaceholders> v{};
  const bool frames = spec.kind == TaskKind::kFrames;
  if (frames) {
    for (std::string_view name : {"frame", "frame_start", "frame_end", "frame_step"}) {
      v[PlaceholderIndex(name)] = kNumberBytes;
    }
    v[PlaceholderIndex("frames")] = std::min<uint64_t>(spec.chunk, kMaxFrames) * (kNumberBytes + 1);
  }
  uint64_t item = 0;
  for (const std::string& i : spec.items) item = std::max<uint64_t>(item, i.size());
  v[PlaceholderIndex("item")] = item;
  v[PlaceholderIndex("index")] = DecimalBytes(kMaxTasks);
  v[PlaceholderIndex("replica")] = DecimalBytes(kMaxTasks);
  v[PlaceholderIndex("port")] = DecimalBytes(kLongestPort);
  v[PlaceholderIndex("task_dir")] = kAssumedDirBytes;
  v[PlaceholderIndex("checkpoint_dir")] = kAssumedDirBytes;
  return SizeOf(templates, v, frames, item);
}

bool TooBig(const ExecSize& s) {
  return s.longest_arg > kMaxArgBytes || s.longest_variable > kMaxArgBytes ||
         s.total > kMaxTaskExecBytes;
}

// The command is to blame unless its arguments alone would fit: then it is the frame list
// (IDLEPOOL_FRAMES; an item is at most kMaxItemBytes) that a smaller chunk would shorten.
bool FramesToBlame(const ExecSize& s) {
  return s.longest_arg <= kMaxArgBytes && s.argv <= kMaxTaskExecBytes &&
         s.variable == "IDLEPOOL_FRAMES";
}

// "589 bytes", "128 KiB", "1.75 MiB", "1.1 GiB".
std::string Bytes(uint64_t n) {
  if (n < 1024) return absl::StrCat(n, " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(n) / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return absl::StrCat(s, " ", units[u]);
}

std::string Explain(const ExecSize& s, uint32_t index) {
  const bool frames = FramesToBlame(s);
  const std::string longest = frames ? absl::StrCat("the variable ", ToAbsl(s.variable))
                                     : absl::StrCat("element [", s.element, "]");
  return absl::StrCat("task ", index, " would start with ", Bytes(s.total),
                      " of arguments and variables, the longest (", longest, ") ",
                      Bytes(frames ? s.longest_variable : s.longest_arg), "; the kernel allows ",
                      Bytes(kMaxArgBytes), " per argument or variable and about ",
                      Bytes(kMaxExecBytes), " in all (", Bytes(kMaxTaskExecBytes),
                      " for the task's own), so it could never start");
}

}  // namespace

namespace internal {

std::optional<SizeProblem> CommandSizeProblem(const JobSpec& spec) {
  absl::StatusOr<std::vector<TemplateSize>> templates = TemplateSizes(spec.command);
  if (!templates.ok()) return SizeProblem{"command", -1, std::string(templates.status().message())};
  if (!TooBig(UpperBound(*templates, spec))) return std::nullopt;  // the usual case
  std::optional<SizeProblem> problem;
  auto check = [&](const TaskValues& t) {
    const ExecSize s = SizeOf(*templates, t, kAssumedDirBytes, kAssumedDirBytes);
    if (!TooBig(s)) return true;
    problem = FramesToBlame(s) ? SizeProblem{"chunk", -1, Explain(s, t.index)}
                               : SizeProblem{"command", s.element, Explain(s, t.index)};
    return false;
  };
  switch (spec.kind) {
    case TaskKind::kFrames: {
      uint32_t index = 0;
      absl::Status s = ForEachChunk(spec.frames, spec.chunk, [&](const FrameChunk& c) {
        return check(TaskValues{index++, &c, {}});
      });
      if (!s.ok()) return SizeProblem{"frames", -1, std::string(s.message())};
      break;
    }
    case TaskKind::kItems:
      for (size_t i = 0; i < spec.items.size() && !problem; ++i) {
        check(TaskValues{static_cast<uint32_t>(i), nullptr, spec.items[i]});
      }
      break;
    case TaskKind::kCount: {  // only {index} varies: its longest value is the last task's
      const uint64_t count = spec.service.has_value() ? spec.service->max_replicas : spec.count;
      if (count > 0 && check(TaskValues{0, nullptr, {}})) {
        check(TaskValues{static_cast<uint32_t>(count - 1), nullptr, {}});
      }
      break;
    }
  }
  return problem;
}

std::optional<std::string> PlaceholderMisfit(const JobSpec& spec, std::string_view name) {
  const bool frame_placeholder = name == "frame" || name == "frames" || name.starts_with("frame_");
  if (frame_placeholder && spec.kind != TaskKind::kFrames) {
    return absl::StrCat("{", ToAbsl(name), "} is only for 'frames' jobs");
  }
  if (name == "frame" && spec.chunk != 1) {
    return absl::StrCat("{frame} needs chunk = 1, but chunk = ", spec.chunk,
                        " gives each task several frames; use {frame_start}, {frame_end} and "
                        "{frame_step}, or {frames}");
  }
  if ((name == "port" || name == "replica") && !spec.service.has_value()) {
    return absl::StrCat("{", ToAbsl(name), "} is only for services (a job with a [service] table)");
  }
  if (name == "checkpoint_dir" && spec.service.has_value()) {
    return "a service's replicas keep no checkpoints";
  }
  if (name == "item" && spec.kind != TaskKind::kItems) {
    return "{item} is only for 'items' or 'items_file' jobs";
  }
  return std::nullopt;
}

absl::Status AppendValue(std::string_view name, const TaskParams& task, std::string_view task_dir,
                         std::string_view checkpoint_dir,
                         const std::optional<ReplicaParams>& replica, std::string& arg) {
  const FrameChunk& c = task.chunk;
  if ((name == "port" || name == "replica") && !replica.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("{", ToAbsl(name), "} is only for a service's replica"));
  }
  const bool frame_placeholder = name == "frame" || name == "frames" || name.starts_with("frame_");
  if (frame_placeholder && c.frames.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("{", ToAbsl(name), "} needs a task with frames"));
  }
  if (name == "frame") {
    if (c.frames.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("{frame} needs a one-frame chunk, this task has ", c.frames.size()));
    }
    absl::StrAppend(&arg, c.frames[0]);
  } else if (name == "frame_start") {
    absl::StrAppend(&arg, c.start);
  } else if (name == "frame_end") {
    absl::StrAppend(&arg, c.end);
  } else if (name == "frame_step") {
    absl::StrAppend(&arg, c.step);
  } else if (name == "frames") {
    arg.append(JoinFrames(c.frames));
  } else if (name == "item") {
    arg.append(task.item);
  } else if (name == "index" || name == "replica") {
    absl::StrAppend(&arg, task.index);
  } else if (name == "port") {
    if (replica->port == 0) return absl::InvalidArgumentError("{port}: no port was picked (0)");
    absl::StrAppend(&arg, replica->port);
  } else if (name == "task_dir") {
    arg.append(task_dir);
  } else if (name == "checkpoint_dir") {
    arg.append(checkpoint_dir);
  }
  return absl::OkStatus();
}

}  // namespace internal

absl::StatusOr<std::vector<std::string>> RenderCommand(
    const std::vector<std::string>& command, const TaskParams& task, std::string_view task_dir,
    std::string_view checkpoint_dir, const std::optional<ReplicaParams>& replica) {
  // Counted before anything is rendered: a command too big to start is refused, not built.
  absl::StatusOr<std::vector<TemplateSize>> templates = TemplateSizes(command);
  if (!templates.ok()) return templates.status();
  const TaskValues values{task.index, &task.chunk, task.item,
                          replica.has_value() ? replica->port : kLongestPort};
  if (const ExecSize s = SizeOf(*templates, values, task_dir.size(), checkpoint_dir.size());
      TooBig(s)) {
    return absl::InvalidArgumentError(
        absl::StrCat("command: ", Explain(s, task.index), " (not rendered)"));
  }
  std::vector<std::string> out;
  out.reserve(command.size());
  std::vector<Piece> pieces;
  for (size_t i = 0; i < command.size(); ++i) {
    if (absl::Status s = ScanTemplate(command[i], pieces); !s.ok()) return s;  // scanned above
    std::string arg;
    for (const Piece& p : pieces) {
      if (!p.placeholder) {
        arg.append(p.text);
      } else if (absl::Status s =
                     internal::AppendValue(p.text, task, task_dir, checkpoint_dir, replica, arg);
                 !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("command ", Element(i, command[i]), ": ", s.message()));
      }
    }
    out.push_back(std::move(arg));
  }
  return out;
}

}  // namespace idlepool::spec
