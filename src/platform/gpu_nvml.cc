// NVIDIA GPUs through NVML, loaded at run time (no link-time dependency on the driver).
//
// Library: $IDLEPOOL_NVML_LIBRARY if set (the tests' fake, tests/fake_nvml/), else
// libnvidia-ml.so.1 (the driver's; found through the dynamic loader's search path). A library
// that does not load, lacks a required symbol, or whose nvmlInit_v2 fails (no driver loaded)
// means: no NVIDIA GPUs. That is logged at info level and is never an error.
//
// NVML calls (versioned symbols, types declared below from NVIDIA's documented ABI, since
// Debian main has no nvml.h):
//   required  nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2
//   per device (optional symbols; each call's failure only leaves that reading unknown):
//             nvmlDeviceGetName, nvmlDeviceGetUUID, nvmlDeviceGetMemoryInfo (total, used),
//             nvmlDeviceGetTemperature (NVML_TEMPERATURE_GPU), nvmlDeviceGetUtilizationRates
//             (gpu %), nvmlDeviceGetPciInfo_v3 (bus id, for merging with OpenCL),
//             nvmlDeviceGetComputeRunningProcesses_v3 and nvmlDeviceGetGraphicsRunningProcesses_v3
//             (PIDs; _v2 where _v3 is missing: same struct), nvmlErrorString (log text).
// A device whose handle cannot be had is skipped (logged). ReadLive finds a device again by its
// NVML index and checks its UUID, so a device list that changed under us reads as unknown.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "platform/gpu.h"
#include "spdlog/spdlog.h"

namespace idlepool::platform {

namespace {

// --- NVML ABI (nvml.h, API version 12; stable across drivers for these calls) ---
using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;  // bytes
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;  // percent over the last sample period
};
struct nvmlPciInfo_t {  // nvmlPciInfo_st as used by nvmlDeviceGetPciInfo_v3
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];  // "00000000:01:00.0"
};
struct nvmlProcessInfo_t {  // nvmlProcessInfo_v2_t: what the _v2 and _v3 process calls fill
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
constexpr int NVML_TEMPERATURE_GPU = 0;
constexpr unsigned kNameSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

using InitFn = nvmlReturn_t (*)();
using CountFn = nvmlReturn_t (*)(unsigned int*);
using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using StringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using MemoryFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using TempFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using UtilFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using PciFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using ProcsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
using ErrorStringFn = const char* (*)(nvmlReturn_t);

class NvmlSource final : public GpuSource {
 public:
  explicit NvmlSource(std::string library) : library_(std::move(library)) {
    if (library_.empty()) {
      const char* env = std::getenv("IDLEPOOL_NVML_LIBRARY");
      library_ = env != nullptr && *env != '\0' ? env : "libnvidia-ml.so.1";
    }
  }

  ~NvmlSource() override {
    if (initialized_ && shutdown_ != nullptr) shutdown_();
    // The library stays mapped: unloading a driver library at exit gains nothing.
  }

  std::vector<GpuDevice> Discover() override {
    std::vector<GpuDevice> out;
    handle_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* err = dlerror();
      message_ = absl::StrCat("not found (", err != nullptr ? err : library_, ")");
      spdlog::debug("NVML: {}", message_);
      return out;
    }
    auto init = Sym<InitFn>("nvmlInit_v2");
    shutdown_ = Sym<InitFn>("nvmlShutdown");
    auto count_fn = Sym<CountFn>("nvmlDeviceGetCount_v2");
    handle_by_index_ = Sym<HandleFn>("nvmlDeviceGetHandleByIndex_v2");
    if (!init || !shutdown_ || !count_fn || !handle_by_index_) {
      message_ = absl::StrCat(library_, " lacks the NVML calls needed (nvmlInit_v2, ...)");
      spdlog::info("NVML: {}", message_);
      return out;
    }
    name_ = Sym<StringFn>("nvmlDeviceGetName");
    uuid_ = Sym<StringFn>("nvmlDeviceGetUUID");
    memory_ = Sym<MemoryFn>("nvmlDeviceGetMemoryInfo");
    temp_ = Sym<TempFn>("nvmlDeviceGetTemperature");
    util_ = Sym<UtilFn>("nvmlDeviceGetUtilizationRates");
    pci_ = Sym<PciFn>("nvmlDeviceGetPciInfo_v3");
    compute_procs_ = Sym<ProcsFn>("nvmlDeviceGetComputeRunningProcesses_v3");
    if (!compute_procs_) compute_procs_ = Sym<ProcsFn>("nvmlDeviceGetComputeRunningProcesses_v2");
    graphics_procs_ = Sym<ProcsFn>("nvmlDeviceGetGraphicsRunningProcesses_v3");
    if (!graphics_procs_) graphics_procs_ = Sym<ProcsFn>("nvmlDeviceGetGraphicsRunningProcesses_v2");
    error_string_ = Sym<ErrorStringFn>("nvmlErrorString");

    if (nvmlReturn_t r = init(); r != NVML_SUCCESS) {
      message_ = absl::StrCat("no driver (nvmlInit_v2: ", ErrorText(r), ")");
      spdlog::info("NVML: {}", message_);
      return out;
    }
    initialized_ = true;
    unsigned int count = 0;
    if (nvmlReturn_t r = count_fn(&count); r != NVML_SUCCESS) {
      message_ = absl::StrCat("nvmlDeviceGetCount_v2: ", ErrorText(r));
      spdlog::info("NVML: {}", message_);
      return out;
    }
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      if (nvmlReturn_t r = handle_by_index_(i, &dev); r != NVML_SUCCESS) {
        spdlog::info("NVML: device {} skipped (nvmlDeviceGetHandleByIndex_v2: {})", i, ErrorText(r));
        continue;
      }
      GpuDevice d;
      d.vendor = "nvidia";
      d.apis = {"cuda"};
      d.cuda_id = absl::StrCat(i);
      char buf[std::max(kNameSize, kUuidSize)] = {};
      if (name_ && name_(dev, buf, kNameSize) == NVML_SUCCESS) d.name = Terminated(buf, kNameSize);
      if (d.name.empty()) d.name = "NVIDIA GPU";
      std::memset(buf, 0, sizeof buf);
      if (uuid_ && uuid_(dev, buf, kUuidSize) == NVML_SUCCESS) d.uuid = Terminated(buf, kUuidSize);
      nvmlMemory_t mem{};
      if (memory_ && memory_(dev, &mem) == NVML_SUCCESS) d.memory_mb = mem.total >> 20;
      nvmlPciInfo_t pci{};
      if (pci_ && pci_(dev, &pci) == NVML_SUCCESS) {
        d.pci_bus_id = NormalizePciBusId(Terminated(pci.busId, sizeof pci.busId));
        if (d.pci_bus_id.empty()) {
          d.pci_bus_id = NormalizePciBusId(Terminated(pci.busIdLegacy, sizeof pci.busIdLegacy));
        }
      }
      Read(dev, &d);
      out.push_back(std::move(d));
    }
    message_ = absl::StrCat("loaded ", out.size(), out.size() == 1 ? " device" : " devices",
                            " (", library_, ")");
    return out;
  }

  GpuBackendReport report() const override { return {"NVML", true, message_}; }

  void ReadLive(GpuDevice* d) override {
    if (!initialized_ || d->cuda_id.empty()) return;
    unsigned int i = 0;
    nvmlDevice_t dev = nullptr;
    char buf[kUuidSize] = {};
    if (!absl::SimpleAtoi(d->cuda_id, &i) || handle_by_index_(i, &dev) != NVML_SUCCESS ||
        (!d->uuid.empty() &&
         (!uuid_ || uuid_(dev, buf, kUuidSize) != NVML_SUCCESS ||
          Terminated(buf, kUuidSize) != d->uuid))) {
      d->temperature_c.reset();
      d->utilization.reset();
      d->memory_used_mb.reset();
      d->pids.reset();
      return;
    }
    Read(dev, d);
  }

 private:
  template <typename F>
  F Sym(const char* name) {
    return reinterpret_cast<F>(dlsym(handle_, name));
  }

  static std::string Terminated(const char* buf, size_t size) {
    return std::string(buf, strnlen(buf, size));
  }

  std::string ErrorText(nvmlReturn_t r) const {
    const char* s = error_string_ ? error_string_(r) : nullptr;
    return s != nullptr ? absl::StrCat(s, " (", r, ")") : absl::StrCat("error ", r);
  }

  // The live readings; each failed call leaves its reading unknown.
  void Read(nvmlDevice_t dev, GpuDevice* d) {
    unsigned int t = 0;
    d->temperature_c.reset();
    if (temp_ && temp_(dev, NVML_TEMPERATURE_GPU, &t) == NVML_SUCCESS) d->temperature_c = t;
    nvmlUtilization_t u{};
    d->utilization.reset();
    if (util_ && util_(dev, &u) == NVML_SUCCESS) d->utilization = std::min(u.gpu, 100u) / 100.0;
    nvmlMemory_t mem{};
    d->memory_used_mb.reset();
    if (memory_ && memory_(dev, &mem) == NVML_SUCCESS) d->memory_used_mb = mem.used >> 20;
    std::vector<int64_t> pids;
    bool known = compute_procs_ && AppendPids(compute_procs_, dev, &pids);
    known = graphics_procs_ && AppendPids(graphics_procs_, dev, &pids) && known;
    d->pids.reset();
    if (known) {
      std::sort(pids.begin(), pids.end());
      pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
      d->pids = std::move(pids);
    }
  }

  // NVML's sizing protocol: too small a buffer answers INSUFFICIENT_SIZE with the count needed
  // (processes may start between calls, so it is asked a few times).
  static bool AppendPids(ProcsFn fn, nvmlDevice_t dev, std::vector<int64_t>* pids) {
    std::vector<nvmlProcessInfo_t> infos(64);
    for (int tries = 0; tries < 4; ++tries) {
      unsigned int n = static_cast<unsigned int>(infos.size());
      nvmlReturn_t r = fn(dev, &n, infos.data());
      if (r == NVML_SUCCESS) {
        n = std::min<unsigned int>(n, static_cast<unsigned int>(infos.size()));
        for (unsigned int k = 0; k < n; ++k) pids->push_back(infos[k].pid);
        return true;
      }
      if (r != NVML_ERROR_INSUFFICIENT_SIZE || n > 65536) return false;
      infos.resize(std::max<size_t>(n + 16, infos.size() * 2));
    }
    return false;
  }

  std::string library_;
  std::string message_ = "not tried";
  void* handle_ = nullptr;
  bool initialized_ = false;
  InitFn shutdown_ = nullptr;
  HandleFn handle_by_index_ = nullptr;
  StringFn name_ = nullptr;
  StringFn uuid_ = nullptr;
  MemoryFn memory_ = nullptr;
  TempFn temp_ = nullptr;
  UtilFn util_ = nullptr;
  PciFn pci_ = nullptr;
  ProcsFn compute_procs_ = nullptr;
  ProcsFn graphics_procs_ = nullptr;
  ErrorStringFn error_string_ = nullptr;
};

}  // namespace

std::unique_ptr<GpuSource> MakeNvmlSource(std::string library) {
  return std::make_unique<NvmlSource>(std::move(library));
}

}  // namespace idlepool::platform
