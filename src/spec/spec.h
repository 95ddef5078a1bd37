// Job specs (TOML) and the render-farm frame grammar, parsed, validated and expanded to tasks.
//
// Thread safety: all functions are reentrant. All are pure except ParseJobFile and ParseJobToml,
// which read the files a spec names (items_file, inputs).
// Errors are absl::Status with code kInvalidArgument (bad spec), kNotFound (missing file),
// kResourceExhausted (absurd size, refused before anything is expanded into memory). Messages
// name the place: "job.toml:7:9: key 'chunk': must be a positive integer, got 0".
//
// Frame grammar (the corpus ../shared/data/framespecs.tsv is the test of record): comma-separated
// terms, whitespace around terms ignored; `N`; `A-B` inclusive (descending when A > B); `A-BxS`
// every S-th frame from A toward B; `A-ByS` the frames of `A-B` that `A-BxS` leaves out; `A-B:S`
// interleaved (xS, then x(S/2), ... down to x1, each adding frames not yet present). Negative
// frames are allowed ("-5-3", "-20--13"). A frame listed twice is kept once, at its first
// position. Zero steps, steps pointing away from B, empty terms and non-integers are errors.
// This is the grammar of OpenCue, Deadline and the `fileseq` convention.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/defaults.h"
#include "core/types.h"
#include "spec/env.h"
#include "spec/service.h"

namespace idlepool::spec {

// Limits that refuse absurd jobs before anything is expanded into memory.
inline constexpr uint64_t kMaxFrames = 1'000'000;              // frames in one spec
inline constexpr uint64_t kMaxTasks = 1'000'000;               // tasks in one job
inline constexpr uint64_t kMaxItemsFileBytes = 64ull << 20;    // 64 MiB
inline constexpr uint64_t kMaxItemBytes = 64 * 1024;           // one item
inline constexpr uint64_t kMaxInputFiles = 100'000;
inline constexpr uint32_t kMaxAttempts = 100;                  // retry.max_attempts
inline constexpr uint32_t kMaxHoldOffAfter = 100;              // retry.hold_off_after
inline constexpr int32_t kMaxPriority = 1000;                  // priority: -1000..1000
// Retries with backoff ([retry] backoff_s, max_backoff_s; core/scheduler.h "Retries"). The
// defaults: a first wait of 1 s, doubling to at most 5 min (Kubernetes' CrashLoopBackOff caps at
// 5 min too, but starts at 10 s: a short first wait keeps a small job with a flaky task quick).
inline constexpr double kDefaultBackoffS = 1;
inline constexpr double kDefaultMaxBackoffS = 300;
inline constexpr double kMaxBackoffS = 86400;  // either key: at most a day
// Pipelines (`after`): jobs one job may run after, and the length of one entry (a job id or a
// job name, whose limit is 128 bytes too).
inline constexpr size_t kMaxAfter = 100;
inline constexpr size_t kMaxAfterBytes = 128;

// What a task may start with. Linux's execve takes each argument or environment string up to
// MAX_ARG_STRLEN (32 pages: 128 KiB, its NUL included) and all of them, with a pointer each, up
// to a quarter of the stack limit (2 MiB under the usual 8 MiB). A task's own part, its rendered
// arguments and the variables that carry its values (IDLEPOOL_FRAMES, IDLEPOOL_ITEM), may take
// kMaxTaskExecBytes of that; the rest is left to the worker's environment and the fixed IDLEPOOL_
// variables. {task_dir} and {checkpoint_dir} are the worker's paths, unknown when a spec is
// checked: they count kAssumedDirBytes each there, and at their real length on the worker.
inline constexpr uint64_t kMaxArgBytes = 128 * 1024;
inline constexpr uint64_t kMaxExecBytes = 2 * 1024 * 1024;
inline constexpr uint64_t kMaxTaskExecBytes = kMaxExecBytes - 256 * 1024;
inline constexpr uint64_t kAssumedDirBytes = 256;

// Why `path` is not a normalized path relative to a task (or checkpoint) dir, or nullopt when it
// is: staged inputs, outputs and checkpoint files must be valid UTF-8, at most 4096 bytes, not
// absolute, without NUL or line breaks, and without empty, "." or ".." components, so a path
// cannot leave its dir and one place has one spelling. The reason reads after the path: "is
// empty", "must not contain '..' as a path component", ...
[[nodiscard]] std::optional<std::string> RelativePathError(std::string_view path);

// A checkpoint holds at most this many files (each is a blob listed in every assignment).
inline constexpr size_t kMaxCheckpointFiles = 10000;

// Expands a frame spec to its frames, in order, duplicates removed (first position kept).
// Refuses (kResourceExhausted) a spec whose terms add up to more than `max_frames` frames,
// counted arithmetically before any frame is generated.
[[nodiscard]] absl::StatusOr<std::vector<int64_t>> ParseFrames(std::string_view spec,
                                                               uint64_t max_frames = kMaxFrames);

// One task's frames. Always one arithmetic run: frames == {start, start+step, ..., end}.
// A single-frame chunk has step 1.
struct FrameChunk {
  int64_t start = 0;
  int64_t end = 0;
  int64_t step = 1;
  std::vector<int64_t> frames;
};

// Splits a frame spec into chunks of at most `chunk` frames, in spec order. A chunk never mixes
// frames from two terms of the spec and never spans a change of step, so every chunk is one
// arithmetic run: "1-10,20-30" chunk 4 gives 1-4, 5-8, 9-10, 20-23, 24-27, 28-30; "1-72" chunk
// 10 ends with 71-72; "1-3199x2" chunk 4 gives 1-7x2, 9-15x2, ... No frame outside the spec is
// ever in a chunk and none is dropped.
[[nodiscard]] absl::StatusOr<std::vector<FrameChunk>> ChunkFrames(std::string_view spec,
                                                                  uint32_t chunk);

struct Input {
  std::string source;  // absolute path of a regular file on the submitting machine
  std::string path;    // where it is staged, relative to the task dir: '/'-separated, normalized
                       // (no "", "." or ".." component, no trailing '/'), valid UTF-8
};

enum class TaskKind : uint8_t { kFrames, kItems, kCount };

// A parsed and validated job spec. Field meanings follow docs/guide/job-spec.md.
struct JobSpec {
  std::string name;                  // [A-Za-z0-9._-]{1,128}; default: the file's stem
  std::vector<std::string> command;  // argv template, no shell
  TaskKind kind = TaskKind::kCount;
  std::string frames;                // kFrames
  uint32_t chunk = 1;                // kFrames: frames per task
  std::vector<std::string> items;    // kItems (items or the lines of items_file)
  uint64_t count = 0;                // kCount
  std::vector<Input> inputs;         // files (directories and globs already expanded)
  std::vector<std::string> outputs;  // globs relative to the task dir, normalized like Input::path
  // `task_inputs`: patterns as written, each task's own files (ExpandTaskInputs). A pattern may
  // hold the command's placeholders except {task_dir}, {checkpoint_dir}, {port} and {replica},
  // and glob characters once rendered; relative ones resolve against `base_dir`.
  std::vector<std::string> task_inputs;
  std::string base_dir;  // absolute: the spec file's directory (empty for a wire spec)
  // A zero-byte output fails the attempt (a render that wrote an empty frame is not done) unless
  // this is set (`allow_empty_outputs = true`: a task whose empty log is a result).
  bool allow_empty_outputs = false;
  // cpus default 1. gpu_memory_mb (per GPU) and gpu_api ("cuda", "opencl", "rocm", "metal")
  // need gpus >= 1. host_network comes from `[sandbox] network = "host"` (default "none":
  // false), not from [resources]: the task shares the worker's network, and only a worker whose
  // owner allows it gets the job's tasks.
  core::Resources resources;
  uint32_t max_attempts = 3;         // failures per task, 1..kMaxAttempts; preemptions never count
  uint32_t timeout_s = 0;            // per attempt; 0 = none
  // [retry] backoff_s, max_backoff_s: a failed task's wait before its next attempt, doubling
  // with each failure up to max_backoff_s, plus jitter (core::RetryBackoff). 0: at once.
  double backoff_s = kDefaultBackoffS;
  double max_backoff_s = kDefaultMaxBackoffS;
  // [retry] hold_off_after: a worker on which the job failed this many times, with no success of
  // it there, gets none of its tasks while another worker can run them (core "Health").
  // 1..kMaxHoldOffAfter.
  uint32_t hold_off_after = core::kDefaultHoldOffAfter;
  // `after`: jobs (ids, or names meaning the newest job of that name) that must succeed before
  // this one runs; their outputs are staged under after/<name>/ (docs/guide/job-spec.md).
  std::vector<std::string> after;
  // Set: the job is a service (its [service] table, spec/service.h), whose tasks are its
  // replicas, 0..max_replicas-1. A service has kind kCount with count 0, no frames, items,
  // outputs, allow_empty_outputs or timeout_s; a job file's [retry] keys are refused, and
  // max_attempts, which the wire always carries, means nothing for it.
  std::optional<ServiceSpec> service;
  // `env`: the job's own variables, by name (sorted, each name once).
  std::vector<EnvVar> env;
  // `priority`: among its user's jobs, a higher one is placed first (-kMaxPriority..kMaxPriority;
  // it never moves a job ahead of another user's: that is the fair share's).
  int32_t priority = 0;
};

// Reads and validates a job file. Relative `inputs` and `items_file` are resolved against the
// file's directory. An input inside that directory is staged at its relative path, one outside
// at its base name (a directory keeps its own name and tree). Unknown keys are errors.
[[nodiscard]] absl::StatusOr<JobSpec> ParseJobFile(const std::string& path);

// Parses TOML text. `file_name` is used in messages; `base_dir` resolves relative paths.
[[nodiscard]] absl::StatusOr<JobSpec> ParseJobToml(std::string_view toml,
                                                   const std::string& file_name,
                                                   const std::string& base_dir);

// Checks a spec that did not come from a file (e.g. one received over the wire): every rule
// ParseJobToml enforces that does not need the file (placeholders, sizes, paths, resources).
// Among the sizes: every task's command must fit what a process can start with (kMaxArgBytes,
// kMaxTaskExecBytes), counted task by task from lengths, without rendering anything:
// kResourceExhausted "job spec: field 'command': task 0 would start with 1.1 GiB of arguments
// and variables, the longest (element [1]) 575.09 KiB; the kernel allows 128 KiB per argument
// ...". A frame list too long for IDLEPOOL_FRAMES is the field 'chunk'.
// A service is held to its rules (spec/service.h), each named as "service.KEY", and to what it may
// not have of a batch job (frames, items, count, chunk, outputs, allow_empty_outputs,
// retry.timeout_s: "job spec: field 'outputs': a service has no outputs: ...").
// Among them: every string that travels in the wire form (name, command, frames, items,
// outputs, staged input paths) is valid UTF-8; staged paths and outputs globs are normalized
// relative paths without NUL or line breaks; no staged path lies under another (a file cannot
// also be a directory); max_attempts is at most kMaxAttempts.
// Messages name the field ("job spec: field 'chunk': ...").
[[nodiscard]] absl::Status Validate(const JobSpec& spec);

// Number of tasks the spec expands to, computed without expanding it. A service's: max_replicas
// (replica i is task i).
[[nodiscard]] absl::StatusOr<uint64_t> TaskCount(const JobSpec& spec);

// What one task stands for. `frames` is empty unless kind == kFrames; `item` empty unless
// kind == kItems.
struct TaskParams {
  uint32_t index = 0;
  FrameChunk chunk;
  std::string item;
};

[[nodiscard]] absl::StatusOr<std::vector<TaskParams>> ExpandTasks(const JobSpec& spec);

// Substitutes placeholders in every argv element: {frame} {frame_start} {frame_end}
// {frame_step} {frames} (comma-separated) {item} {index} {task_dir} {checkpoint_dir}, and for a
// service's replica (`replica` set) {port} (replica->port) and {replica} (task.index, as
// {index}); "{{" and "}}" are literal braces. Validate() has already refused unknown
// placeholders and ones that do not fit the job's kind ({port} and {replica} outside a service,
// {checkpoint_dir} in one), so this fails on a malformed template, on {port} or {replica}
// without `replica`, and on a command that would be too big to start (as Validate counts it,
// with the real dir lengths): that is counted before anything is rendered, so a spec that got
// past an older coordinator fails its attempt with kInvalidArgument instead of rendering
// gigabytes.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> RenderCommand(
    const std::vector<std::string>& command, const TaskParams& task, std::string_view task_dir,
    std::string_view checkpoint_dir, const std::optional<ReplicaParams>& replica = std::nullopt);

// The job's `env` for one task, "NAME=value" each, placeholders substituted as RenderCommand
// does. kInvalidArgument naming the variable for a template that cannot be rendered for this task,
// or when the rendered variables pass kMaxEnvRenderedBytes (a spec that got past an older
// coordinator).
[[nodiscard]] absl::StatusOr<std::vector<std::string>> RenderEnv(
    const std::vector<EnvVar>& env, const TaskParams& task, std::string_view task_dir,
    std::string_view checkpoint_dir, const std::optional<ReplicaParams>& replica = std::nullopt);

// One task's own inputs (JobSpec::task_inputs expanded for it), staged like `inputs`: a file
// inside base_dir at its path relative to it, one outside at its base name.
struct TaskInputFiles {
  uint32_t task = 0;
  std::vector<Input> inputs;  // by staged path
};

// Per-task inputs beyond this many files in all are refused (kResourceExhausted).
inline constexpr uint64_t kMaxTaskInputFiles = 1'000'000;

// Renders every `task_inputs` pattern for every task of `tasks` and expands its globs (reads the
// file system: the submitting machine's). Tasks with no file are left out. Errors name the task
// and the pattern: kNotFound "task_inputs: task 3 (item 'seg3'): pattern 'segs/{item}.mp4'
// matches no file ('/home/u/job/segs/seg3.mp4')"; kInvalidArgument for a path staged twice in
// one task, or one the job's `inputs` also stage; kResourceExhausted past kMaxTaskInputFiles.
[[nodiscard]] absl::StatusOr<std::vector<TaskInputFiles>> ExpandTaskInputs(
    const JobSpec& spec, const std::vector<TaskParams>& tasks);

// "1,2,3" — the `idlepool frames` output format.
std::string JoinFrames(const std::vector<int64_t>& frames);

// The planner's calibration run (`idlepool plan`): a job of min(k, tasks) of `job`'s tasks, taken
// from the middles of k equal slices of the task list so cheap and costly parts of a frame range
// are both sampled. Frames: the picked chunks, each one term of the frame grammar (a chunk is one
// arithmetic run), chunk size unchanged, so each sampled task renders exactly the frames it would
// in the job. Items: the picked items. Count: tasks 0..k-1 (a count job's {index} cannot be
// remapped). Name: the job's + ".calibrate". Everything else (command, inputs, outputs,
// resources) is the job's. Errors: k == 0, a job without tasks, a service, the job's own spec
// errors.
[[nodiscard]] absl::StatusOr<JobSpec> CalibrationSpec(const JobSpec& job, uint32_t k);

// Indices of min(n, k) tasks out of n, spread: the middle of each of k equal slices, ascending.
std::vector<uint32_t> SpreadSample(uint64_t n, uint32_t k);

}  // namespace idlepool::spec
