// A fake NVML for tests: the NVML calls idlepool uses (src/platform/gpu_nvml.cc), answered from
// the text file named by IDLEPOOL_FAKE_NVML_STATE, re-read on every call. Format: README.md here.
// Standard library only; each call is independent (no state but the init count).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kUninitialized = 1;
constexpr nvmlReturn_t kInvalidArgument = 2;
constexpr nvmlReturn_t kNotSupported = 3;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr nvmlReturn_t kDriverNotLoaded = 9;
constexpr nvmlReturn_t kUnknown = 999;

struct Device {
  std::map<std::string, std::string> kv;
  bool Fails(const std::string& call) const {
    auto it = kv.find("fail");
    if (it == kv.end()) return false;
    std::stringstream ss(it->second);
    for (std::string c; std::getline(ss, c, ',');) {
      if (c == call || c == "all") return true;
    }
    return false;
  }
  const std::string* Get(const std::string& key) const {
    auto it = kv.find(key);
    return it == kv.end() ? nullptr : &it->second;
  }
};

struct State {
  bool init_fails = false;
  std::vector<Device> devices;
};

std::atomic<int> g_init_count{0};

std::optional<State> Load() {
  const char* path = std::getenv("IDLEPOOL_FAKE_NVML_STATE");
  if (path == nullptr) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  State s;
  for (std::string line; std::getline(in, line);) {
    size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size() || line[i] == '#') continue;
    Device d;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      if (i == line.size()) break;
      size_t eq = line.find('=', i);
      if (eq == std::string::npos) break;
      std::string key = line.substr(i, eq - i), value;
      i = eq + 1;
      if (i < line.size() && line[i] == '"') {
        size_t end = line.find('"', i + 1);
        if (end == std::string::npos) end = line.size();
        value = line.substr(i + 1, end - i - 1);
        i = end + 1;
      } else {
        size_t end = line.find_first_of(" \t\r", i);
        if (end == std::string::npos) end = line.size();
        value = line.substr(i, end - i);
        i = end;
      }
      d.kv[key] = value;
    }
    if (d.kv.size() == 1 && d.kv.count("init") && d.kv["init"] == "fail") {
      s.init_fails = true;
      continue;
    }
    s.devices.push_back(std::move(d));
  }
  return s;
}

// The device behind a handle (index + 1), with the state it was read from.
nvmlReturn_t Find(void* handle, State* state, const Device** dev, const char* call) {
  if (g_init_count.load() <= 0) return kUninitialized;
  auto s = Load();
  if (!s) return kUnknown;
  *state = std::move(*s);
  const uintptr_t i = reinterpret_cast<uintptr_t>(handle);
  if (i == 0 || i > state->devices.size()) return kInvalidArgument;
  *dev = &state->devices[i - 1];
  if ((*dev)->Fails(call)) return kUnknown;
  return kSuccess;
}

bool ToU64(const std::string* s, unsigned long long* v) {
  if (s == nullptr || s->empty()) return false;
  char* end = nullptr;
  *v = std::strtoull(s->c_str(), &end, 10);
  return *end == '\0';
}

nvmlReturn_t CopyString(const std::string* s, char* buf, unsigned int length) {
  if (s == nullptr) return kNotSupported;
  if (buf == nullptr || length < s->size() + 1) return kInsufficientSize;
  std::memcpy(buf, s->c_str(), s->size() + 1);
  return kSuccess;
}

struct ProcessInfo {  // nvmlProcessInfo_v2_t
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};

nvmlReturn_t Procs(void* handle, unsigned int* count, ProcessInfo* infos, const char* key) {
  State s;
  const Device* d = nullptr;
  if (nvmlReturn_t r = Find(handle, &s, &d, "procs"); r != kSuccess) return r;
  if (count == nullptr) return kInvalidArgument;
  std::vector<unsigned int> pids;
  if (const std::string* v = d->Get(key)) {
    std::stringstream ss(*v);
    for (std::string p; std::getline(ss, p, ',');) {
      if (!p.empty()) pids.push_back(static_cast<unsigned int>(std::strtoul(p.c_str(), nullptr, 10)));
    }
  }
  if (*count < pids.size() || (infos == nullptr && !pids.empty())) {
    *count = static_cast<unsigned int>(pids.size());
    return kInsufficientSize;
  }
  for (size_t k = 0; k < pids.size(); ++k) infos[k] = ProcessInfo{pids[k], 0, 0xFFFFFFFFu, 0xFFFFFFFFu};
  *count = static_cast<unsigned int>(pids.size());
  return kSuccess;
}

}  // namespace

#define FAKE_NVML_API extern "C" __attribute__((visibility("default")))

FAKE_NVML_API nvmlReturn_t nvmlInit_v2() {
  auto s = Load();
  if (!s || s->init_fails) return kDriverNotLoaded;
  ++g_init_count;
  return kSuccess;
}

FAKE_NVML_API nvmlReturn_t nvmlShutdown() {
  if (g_init_count.load() <= 0) return kUninitialized;
  --g_init_count;
  return kSuccess;
}

FAKE_NVML_API const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kInsufficientSize: return "Insufficient Size";
    case kDriverNotLoaded: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init_count.load() <= 0) return kUninitialized;
  auto s = Load();
  if (!s) return kUnknown;
  *count = static_cast<unsigned int>(s->devices.size());
  return kSuccess;
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (g_init_count.load() <= 0) return kUninitialized;
  auto s = Load();
  if (!s) return kUnknown;
  if (index >= s->devices.size()) return kInvalidArgument;
  if (s->devices[index].Fails("handle")) return kUnknown;
  *device = reinterpret_cast<void*>(static_cast<uintptr_t>(index) + 1);
  return kSuccess;
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetName(void* h, char* buf, unsigned int length) {
  State s;
  const Device* d = nullptr;
  if (nvmlReturn_t r = Find(h, &s, &d, "name"); r != kSuccess) return r;
  return CopyString(d->Get("name"), buf, length);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetUUID(void* h, char* buf, unsigned int length) {
  State s;
  const Device* d = nullptr;
  if (nvmlReturn_t r = Find(h, &s, &d, "uuid"); r != kSuccess) return r;
  return CopyString(d->Get("uuid"), buf, length);
}

struct Memory {
  unsigned long long total, free, used;
};

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(void* h, Memory* m) {
  State s;
  const Device* d = nullptr;
  if (nvmlReturn_t r = Find(h, &s, &d, "memory"); r != kSuccess) return r;
  unsigned long long total = 0, used = 0;
  if (!ToU64(d->Get("memory_mb"), &total)) return kNotSupported;
  if (!ToU64(d->Get("memory_used_mb"), &used)) used = 0;
  m->total = total << 20;
  m->used = used << 20;
  m->free = m->total > m->used ? m->total - m->used : 0;
  return kSuccess;
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetTemperature(void* h, int sensor, unsigned int* t) {
  State s;
  const Device* d = nullptr;
  if (nvmlReturn_t r = Find(h, &s, &d, "temp"); r != kSuccess) return r;
  unsigned long long v = 0;
  if (sensor != 0 || !ToU64(d->Get("temp"), &v)) return kNotSupported;
  *t = static_cast<unsigned int>(v);
  return kSuccess;
}

struct Utilization {
  unsigned int gpu, memory;
};

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(void* h, Utilization* u) {
  State s;
  const Device* d = nullptr;
  if (nvmlReturn_t r = Find(h, &s, &d, "util"); r != kSuccess) return r;
  unsigned long long v = 0;
  if (!ToU64(d->Get("util"), &v)) return kNotSupported;
  u->gpu = static_cast<unsigned int>(v);
  u->memory = 0;
  return kSuccess;
}

struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(void* h, PciInfo* p) {
  State s;
  const Device* d = nullptr;
  if (nvmlReturn_t r = Find(h, &s, &d, "pci"); r != kSuccess) return r;
  const std::string* v = d->Get("pci");
  if (v == nullptr) return kNotSupported;
  std::memset(p, 0, sizeof *p);
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(v->c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return kUnknown;
  // As the driver writes them: an 8-digit domain in busId, 4 digits in busIdLegacy.
  std::snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.%X", domain, bus, dev, fn);
  std::snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", domain, bus, dev, fn);
  p->domain = domain;
  p->bus = bus;
  p->device = dev;
  return kSuccess;
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned int* count,
                                                                   ProcessInfo* infos) {
  return Procs(h, count, infos, "pids");
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(void* h, unsigned int* count,
                                                                    ProcessInfo* infos) {
  return Procs(h, count, infos, "graphics_pids");
}
