// Core vocabulary of the pool: ids, time, resources, states. Plain values, no behaviour.
//
// Everything here is pure data shared by the scheduler core, the store and the shells. Times are
// monotonic milliseconds on the coordinator's clock (MonoTime); the core never reads a clock,
// the shell passes `now` in.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace idlepool::core {

// A clock type with no now(): only the platform layer produces MonoTime values, so nothing in
// core can read real time by accident.
struct MonoClock {
  using rep = int64_t;
  using period = std::milli;
  using duration = std::chrono::milliseconds;
  using time_point = std::chrono::time_point<MonoClock>;
  static constexpr bool is_steady = true;
};
using MonoTime = MonoClock::time_point;
using Millis = std::chrono::milliseconds;

using JobId = uint64_t;      // > 0, assigned by the coordinator in submission order
using AttemptId = uint64_t;  // > 0, unique for the life of a store; never reused
using SessionId = uint64_t;  // > 0, one per accepted worker session stream
using WorkerName = std::string;

// One task of a job: jobs are split into tasks numbered 0..task_count-1.
struct TaskKey {
  JobId job = 0;
  uint32_t index = 0;
  auto operator<=>(const TaskKey&) const = default;
};

// Capacity a worker offers / a task needs. cpus are slots (one attempt of a cpus=2 task takes
// two slots). memory_mb 0 means "not stated". A task's gpus are whole devices of one worker,
// each with at least gpu_memory_mb MiB (0: any) offering gpu_api ("cuda", "opencl", "rocm",
// "metal"; empty: any); a worker's gpus is the number of devices it offers (WorkerHello::gpus),
// and its gpu_memory_mb / gpu_api are unused. host_network: a task's job asks for the worker's
// network (spec `[sandbox] network = "host"`); a worker offers it when its owner policy allows
// that (Hello.allow_host_network). False for a worker refuses: a worker that never said it allows
// it gets no such task.
struct Resources {
  uint32_t cpus = 1;
  uint32_t gpus = 0;
  uint64_t memory_mb = 0;
  uint64_t gpu_memory_mb = 0;
  std::string gpu_api{};
  bool host_network = false;
  bool operator==(const Resources&) const = default;
};

// One GPU a worker offers, as the core needs it (proto GpuDevice has the rest). `index` is the
// worker's numbering (GpuDevice.index); memory_mb 0 means unknown (fits no gpu_memory_mb need).
struct GpuDevice {
  uint32_t index = 0;
  uint64_t memory_mb = 0;
  std::vector<std::string> apis;  // "cuda", "opencl", ...
  // The worker's owner policy holds it (the owner uses it, or it is too hot: GpusHeld): no
  // new attempt gets it; the attempts that own it keep it.
  bool held = false;
  bool operator==(const GpuDevice&) const = default;
};

enum class TaskState : uint8_t { kPending, kRunning, kSucceeded, kFailed, kCancelled };
enum class JobState : uint8_t { kRunning, kSucceeded, kFailed, kCancelled };

// How an attempt ended. Only kFailed and kTimedOut consume the task's max_attempts;
// kPreempted (owner took the machine back) and kLost (worker vanished) never do.
enum class AttemptOutcome : uint8_t {
  kRunning,
  kSucceeded,
  kFailed,     // the command exited non-zero or could not start
  kTimedOut,   // ran past the job's timeout_s; counts as a failure
  kPreempted,  // vacated for the owner; not a failure
  kLost,       // its worker was declared lost or restarted; not a failure
  kCancelled,  // the job was cancelled
  // Its machine failed it, not the task (the worker's disk is full); not a failure. The task
  // goes elsewhere; the worker takes no work until it recovers.
  kMachineFault,
};

// One committed output file of a task, stored as a content-addressed blob.
struct OutputFile {
  std::string path;    // relative to the task dir, '/'-separated, no "..", never absolute
  std::string sha256;  // lowercase hex, 64 chars
  uint64_t size = 0;   // bytes
  bool operator==(const OutputFile&) const = default;
};

// A content-addressed blob: a job's input, or an entry of a worker's cache.
struct BlobRef {
  std::string sha256;  // lowercase hex, 64 chars
  uint64_t size = 0;   // bytes
  auto operator<=>(const BlobRef&) const = default;
};

// One blob of one task's own inputs (JobSubmitted::task_inputs).
struct TaskBlob {
  uint32_t task = 0;
  BlobRef blob;
  auto operator<=>(const TaskBlob&) const = default;
};

// Bytes an attempt moved, as its worker counted them (proto Transfer). Staged files found in the
// worker's cache are hits; fetched ones (from the coordinator or from peers) misses.
struct Transfer {
  uint64_t input_bytes = 0;        // staged into the task dir (inputs and restored checkpoint)
  uint64_t cached_bytes = 0;       // of those, found in the worker's cache
  uint64_t coordinator_bytes = 0;  // fetched from the coordinator
  uint64_t peer_bytes = 0;         // fetched from other workers
  uint64_t output_bytes = 0;       // outputs and checkpoints uploaded
  uint64_t cache_hits = 0;
  uint64_t cache_misses = 0;
  Transfer& operator+=(const Transfer& o) {
    input_bytes += o.input_bytes;
    cached_bytes += o.cached_bytes;
    coordinator_bytes += o.coordinator_bytes;
    peer_bytes += o.peer_bytes;
    output_bytes += o.output_bytes;
    cache_hits += o.cache_hits;
    cache_misses += o.cache_misses;
    return *this;
  }
  bool operator==(const Transfer&) const = default;
};

// Where an attempt's time went, as its worker measured it on its own monotonic clock (proto
// AttemptReport.timing). Milliseconds. The core only carries it to the store;
// no decision reads it. All zero when the report carried none (an older worker, no report).
struct AttemptTiming {
  uint64_t stage_ms = 0;   // fetching and staging inputs, restoring the checkpoint, until start
  uint64_t run_ms = 0;     // the task process running, time frozen for the owner excluded
  uint64_t upload_ms = 0;  // hashing and uploading outputs or the checkpoint, until the report
  bool resumed = false;    // it started from a restored checkpoint (run_ms covers only the rest)
  bool operator==(const AttemptTiming&) const = default;
};

const char* ToString(TaskState s);
const char* ToString(JobState s);
const char* ToString(AttemptOutcome o);

}  // namespace idlepool::core
