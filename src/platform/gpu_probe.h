// GPU discovery in a short-lived child process, so that a heavy runtime never stays in the
// worker. OpenCL is the one: the ICD loader loads every installed driver, and PoCL brings LLVM
// and clang (some 70 MB resident) that would stay mapped for the worker's whole life although
// OpenCL gives no live readings. The worker runs `idlepool gpu-probe --opencl`, the same binary
// (/proc/self/exe), reads the devices it prints, and the child exits with the runtime in it.
//
// Protocol: the child prints one JSON object on stdout and exits 0:
//   {"probe": 1, "report": {"backend", "supported", "message"},
//    "devices": [{"vendor", "name", "memory_mb", "uuid", "apis", "cuda_id", "opencl_id",
//                 "pci_bus_id", "temperature_c", "utilization", "memory_used_mb", "pids"}],
//    "log": [{"level", "msg"}]}
// (the GpuDevice fields of gpu.h; the readings are null when unknown; index is not sent). What it
// logs travels in "log" and the parent logs it as its own (its --log-format and logger); only
// what a driver writes to stderr itself goes to the stderr the two share.
//
// A child that cannot be started, hangs past the timeout (it is killed), crashes or prints
// something else means no devices from that backend: the report says why, a warning is logged,
// and discovery goes on. Never an error.
//
// Thread safety: free functions are reentrant; a probe source is a GpuSource (one thread at a
// time).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/gpu.h"

namespace idlepool::platform {

// argv[1] of the child: `idlepool gpu-probe ...` (not listed in --help).
inline constexpr char kGpuProbeSubcommand[] = "gpu-probe";

// The probe command of this very binary: {"/proc/self/exe", "gpu-probe"}.
std::vector<std::string> SelfGpuProbeCommand();

// The child's main, for argv = {..., "gpu-probe", "--opencl", ["--opencl-cpu"], ["--log-level",
// LEVEL]}: prints the JSON above and exits 0 (1 when stdout cannot be written; 2 for a command
// line it does not know), without running exit handlers (the drivers' cost time and protect
// nothing). Call it first thing in main(): it sets up its own logger, on stderr.
[[noreturn]] void GpuProbeMain(int argc, char** argv);

// What the child found and said.
struct GpuProbeLogLine {
  std::string level;  // spdlog's names: "trace", "debug", "info", "warning", "error", ...
  std::string message;
};
struct GpuProbeResult {
  std::vector<GpuDevice> devices;
  GpuBackendReport report;
  std::vector<GpuProbeLogLine> log;
};

// The JSON of one backend's discovery, and back. Parse errors: kInvalidArgument.
std::string ProbeResultJson(const GpuProbeResult& result);
absl::StatusOr<GpuProbeResult> ParseProbeResult(const std::string& json);

// An OpenCL GpuSource whose Discover() runs `probe` + {"--opencl", ["--opencl-cpu"],
// "--log-level", LEVEL} and takes what it prints; a child still running after `timeout` is
// killed. No live readings (OpenCL has none). `probe` must not be empty.
std::unique_ptr<GpuSource> MakeOpenClProbeSource(std::vector<std::string> probe, bool include_cpu,
                                                 std::chrono::milliseconds timeout);

}  // namespace idlepool::platform
