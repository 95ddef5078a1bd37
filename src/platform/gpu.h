// GPUs of the lent machine: which devices there are, through which APIs, and their live
// readings (temperature, utilisation, memory in use, processes using them).
//
// Backends (GpuSource), each loaded at run time so that the binary runs on machines without
// any of them, and so that a missing driver means "no such GPUs", never an error:
//   NVML      NVIDIA GPUs (apis "cuda"). dlopen of libnvidia-ml.so.1, or of the file named by
//             the environment variable IDLEPOOL_NVML_LIBRARY (the tests' fake NVML,
//             tests/fake_nvml/). See gpu_nvml.cc for the calls used.
//   OpenCL    any OpenCL device through the ICD loader (dlopen of libOpenCL.so.1; apis
//             "opencl"). GPU-type devices only, unless CPU devices are asked for
//             (GpuDiscoveryOptions::opencl_cpu, or IDLEPOOL_OPENCL_CPU=1): PoCL's CPU device
//             makes the OpenCL path testable on machines without a GPU, but a CPU is not a GPU.
//             The worker lists them in a short-lived child (gpu_probe.h), since the runtime is
//             heavy and OpenCL has no live readings (GpuDiscoveryOptions::opencl_probe).
//   ROCm SMI  AMD GPUs: unsupported in this build (reported so, not an error).
//   Metal     Apple GPUs: unsupported in this build (reported so, not an error).
//
// Merging (MergeGpus): an NVIDIA OpenCL device that is an NVML device (same PCI bus id; else
// same UUID; else same name and about the same memory) becomes one device with apis
// {"cuda", "opencl"}. The merged list is indexed 0..n-1: NVML's devices in NVML order, then the
// OpenCL-only devices in platform/device order. The index is the worker's numbering of its GPUs
// (GpuDevice.index in the protocol); `--gpus 0,2` selects by it.
//
// Thread safety: GpuDevice is a value. A GpuSource is used by one thread at a time.
// GpuInventory is thread-safe (one mutex; NVML itself is thread-safe). It calls the backends
// with asynchronous signals blocked, so threads their libraries start (PoCL's) never take a
// SIGTERM meant for the process's sigwait thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idlepool::platform {

// One GPU as the worker sees it; mirrors v1::GpuDevice (proto/idlepool.proto) plus the fields
// the worker uses itself (PCI bus id, processes).
struct GpuDevice {
  uint32_t index = 0;           // position in the merged list (see above)
  std::string vendor;           // "nvidia", "amd", "intel", "apple", "pocl", ... (lower case)
  std::string name;
  uint64_t memory_mb = 0;       // total device memory, MiB
  std::string uuid;             // NVML "GPU-..."; OpenCL's cl_khr_device_uuid; else ""
  std::vector<std::string> apis;  // "cuda", "opencl"
  std::string cuda_id;          // the NVML index ("0", "1", ...), for CUDA_VISIBLE_DEVICES
  std::string opencl_id;        // "PLATFORM:DEVICE": indexes into clGetPlatformIDs and
                                // clGetDeviceIDs(CL_DEVICE_TYPE_ALL) of that platform
  // Live readings; nullopt when the API gives none or the call failed.
  std::optional<double> temperature_c;    // GPU core sensor, degrees Celsius
  std::optional<double> utilization;      // 0..1 over the API's last sample period
  std::optional<uint64_t> memory_used_mb; // MiB
  // Not in the protocol:
  std::string pci_bus_id;   // "dddd:bb:dd.f", lower-case hex; "" when unknown
  // Processes using the device (NVML: compute and graphics processes), ascending, no
  // duplicates; nullopt when unknown (no NVML, or the calls failed).
  std::optional<std::vector<int64_t>> pids;
};

// What one backend said during discovery, for `idlepool worker --print-resources`.
struct GpuBackendReport {
  std::string backend;  // "NVML", "OpenCL", "ROCm SMI", "Metal"
  bool supported = true;  // false: not built into this binary
  std::string message;    // "not found (...)", "loaded 2 devices", "unsupported in this build"
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Devices this backend sees, in its own order, with their readings (index unset). Never
  // fails: a backend that cannot run (no library, no driver) finds nothing and says why in
  // report(). Called once.
  virtual std::vector<GpuDevice> Discover() = 0;
  // What Discover() found or why it found nothing.
  virtual GpuBackendReport report() const = 0;
  // Refreshes the live readings and processes of `device`, one this backend discovered
  // (possibly merged with another backend's). A reading whose call fails becomes nullopt.
  // Backends without live readings leave the device as it is.
  virtual void ReadLive(GpuDevice* device) {}
};

// NVML through dlopen of `library` ("" = $IDLEPOOL_NVML_LIBRARY, else libnvidia-ml.so.1).
std::unique_ptr<GpuSource> MakeNvmlSource(std::string library = "");
// OpenCL through dlopen of libOpenCL.so.1. `include_cpu`: also CPU-type devices.
std::unique_ptr<GpuSource> MakeOpenClSource(bool include_cpu);
// Backends not built yet: Discover() finds nothing, report() says "unsupported in this build".
std::unique_ptr<GpuSource> MakeRocmSmiSource();
std::unique_ptr<GpuSource> MakeMetalSource();

// Pure: the merged, indexed list (see the top of this file). `nvml` devices keep their fields
// and gain "opencl" and opencl_id from the OpenCL device they match; each device matches at
// most one other. Name-and-memory matching (only when neither PCI bus id nor UUID can decide)
// takes the first unmatched NVML device in NVML order.
std::vector<GpuDevice> MergeGpus(std::vector<GpuDevice> nvml, std::vector<GpuDevice> opencl);

// Which discovered devices the worker offers (`--gpus`): all, none, or a list of indexes.
struct GpuSelection {
  bool all = true;
  std::vector<uint32_t> indexes;  // when !all; empty = none
};
// "all", "none", or "0,2" (indexes, no duplicates). kInvalidArgument otherwise.
absl::StatusOr<GpuSelection> ParseGpuSelection(const std::string& text);

struct GpuDiscoveryOptions {
  // CPU-type OpenCL devices too (for tests and CI); also turned on by IDLEPOOL_OPENCL_CPU=1.
  bool opencl_cpu = false;
  // The NVML library; "" = $IDLEPOOL_NVML_LIBRARY, else libnvidia-ml.so.1.
  std::string nvml_library;
  GpuSelection selection;
  // The command that lists OpenCL devices in a short-lived child (gpu_probe.h), so that the
  // OpenCL runtime (PoCL: LLVM, clang) never stays in this process: SelfGpuProbeCommand() in
  // the idlepool binary. Empty: OpenCL is loaded into this process (tests of the backend).
  std::vector<std::string> opencl_probe;
  // A probe still running after this long is killed; discovery goes on without its devices.
  std::chrono::milliseconds probe_timeout{20000};
  // When the selection offers nothing (--gpus none), no backend is loaded or run at all (their
  // reports say "not loaded (--gpus none)"), unless this is set: --print-resources still shows
  // the devices that --gpus none leaves out.
  bool discover_unoffered = false;
};

// The machine's GPUs: discovered once, then the offered ones' readings refreshed on demand.
class GpuInventory {
 public:
  // Runs every backend (none with --gpus none: see GpuDiscoveryOptions) and merges their
  // devices. Never fails.
  static std::shared_ptr<GpuInventory> Discover(const GpuDiscoveryOptions& options);
  // A fixed list with no live backend (tests, simulation): readings never change.
  static std::shared_ptr<GpuInventory> FromDevices(std::vector<GpuDevice> devices);

  // Every device found, indexed 0..n-1 in discovery order (what `--gpus` selects from).
  std::vector<GpuDevice> discovered() const;
  // The devices offered (the selection), re-indexed 0..n-1, with their last readings.
  std::vector<GpuDevice> offered() const;
  // Refreshes the offered devices' readings and processes, then returns offered().
  std::vector<GpuDevice> ReadLive();
  // Per backend, what discovery said, in the order tried.
  std::vector<GpuBackendReport> backends() const;
  // Selected indexes that no device has (ignored; printed by --print-resources, logged).
  std::vector<uint32_t> missing() const;

 private:
  GpuInventory() = default;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<GpuSource>> sources_;  // NVML first; guarded by mu_
  std::vector<GpuDevice> discovered_;
  std::vector<GpuDevice> offered_;  // guarded by mu_
  std::vector<uint32_t> offered_from_;  // discovered index of each offered device
  std::vector<GpuBackendReport> backends_;
  std::vector<uint32_t> missing_;
};

// Canonical PCI bus id "dddd:bb:dd.f" (lower-case hex) from the numbers, or from NVML's text
// ("00000000:01:00.0", "0000:01:00.0"; "" when it does not parse).
std::string PciBusId(uint32_t domain, uint32_t bus, uint32_t device, uint32_t function);
std::string NormalizePciBusId(const std::string& text);

}  // namespace idlepool::platform
