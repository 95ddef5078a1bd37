#include "platform/gpu.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "platform/gpu_probe.h"
#include "spdlog/spdlog.h"

namespace idlepool::platform {

namespace {

class UnsupportedSource final : public GpuSource {
 public:
  explicit UnsupportedSource(std::string backend) : backend_(std::move(backend)) {}
  std::vector<GpuDevice> Discover() override { return {}; }
  GpuBackendReport report() const override {
    return {backend_, false, "unsupported in this build"};
  }

 private:
  std::string backend_;
};

// Same model: the same name, and total memory within 2% (at least 64 MiB): NVML and OpenCL may
// round the size differently.
// A backend left alone because nothing is to be offered (--gpus none).
class NotLoadedSource final : public GpuSource {
 public:
  explicit NotLoadedSource(std::string backend) : backend_(std::move(backend)) {}
  std::vector<GpuDevice> Discover() override { return {}; }
  GpuBackendReport report() const override { return {backend_, true, "not loaded (--gpus none)"}; }

 private:
  std::string backend_;
};

bool SameModel(const GpuDevice& a, const GpuDevice& b) {
  if (a.name.empty() || a.name != b.name) return false;
  const uint64_t hi = std::max(a.memory_mb, b.memory_mb), lo = std::min(a.memory_mb, b.memory_mb);
  return hi - lo <= std::max<uint64_t>(64, hi / 50);
}

bool HasApi(const GpuDevice& d, const std::string& api) {
  return std::find(d.apis.begin(), d.apis.end(), api) != d.apis.end();
}


// While alive, this thread blocks the asynchronous signals, so that threads a GPU library starts
// meanwhile (PoCL starts its worker threads when OpenCL is first called) inherit that mask: a
// process that waits for SIGTERM with sigwait (the worker) must not have it delivered, with its
// default action, to a thread it does not know of.
class BlockAsyncSignals {
 public:
  BlockAsyncSignals() {
    sigset_t set;
    sigfillset(&set);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) sigdelset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockAsyncSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockAsyncSignals(const BlockAsyncSignals&) = delete;
  BlockAsyncSignals& operator=(const BlockAsyncSignals&) = delete;

 private:
  sigset_t old_;
};
}  // namespace

std::unique_ptr<GpuSource> MakeRocmSmiSource() {
  return std::make_unique<UnsupportedSource>("ROCm SMI");
}
std::unique_ptr<GpuSource> MakeMetalSource() { return std::make_unique<UnsupportedSource>("Metal"); }

std::string PciBusId(uint32_t domain, uint32_t bus, uint32_t device, uint32_t function) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, device, function);
  return buf;
}

std::string NormalizePciBusId(const std::string& text) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4) {
    return "";
  }
  return PciBusId(domain, bus, device, function);
}

std::vector<GpuDevice> MergeGpus(std::vector<GpuDevice> nvml, std::vector<GpuDevice> opencl) {
  std::vector<bool> taken(nvml.size(), false);
  std::vector<int> match(opencl.size(), -1);
  // Decisive keys first (PCI bus id, then UUID) across all devices, so that a name-and-memory
  // guess never takes a device that a later OpenCL device names exactly.
  auto match_by = [&](auto same) {
    for (size_t o = 0; o < opencl.size(); ++o) {
      if (match[o] >= 0 || opencl[o].vendor != "nvidia") continue;
      for (size_t n = 0; n < nvml.size(); ++n) {
        if (!taken[n] && same(nvml[n], opencl[o])) {
          taken[n] = true;
          match[o] = static_cast<int>(n);
          break;
        }
      }
    }
  };
  match_by([](const GpuDevice& n, const GpuDevice& o) {
    return !n.pci_bus_id.empty() && n.pci_bus_id == o.pci_bus_id;
  });
  match_by([](const GpuDevice& n, const GpuDevice& o) {
    return !n.uuid.empty() && n.uuid == o.uuid;
  });
  // Name and memory only for devices that have nothing decisive on both sides.
  match_by([](const GpuDevice& n, const GpuDevice& o) {
    const bool pci_decides = !n.pci_bus_id.empty() && !o.pci_bus_id.empty();
    const bool uuid_decides = !n.uuid.empty() && !o.uuid.empty();
    return !pci_decides && !uuid_decides && SameModel(n, o);
  });

  std::vector<GpuDevice> out;
  out.reserve(nvml.size() + opencl.size());
  for (auto& d : nvml) out.push_back(std::move(d));
  for (size_t o = 0; o < opencl.size(); ++o) {
    if (match[o] >= 0) {
      GpuDevice& d = out[match[o]];
      if (!HasApi(d, "opencl")) d.apis.push_back("opencl");
      d.opencl_id = opencl[o].opencl_id;
      if (d.pci_bus_id.empty()) d.pci_bus_id = opencl[o].pci_bus_id;
    } else {
      out.push_back(std::move(opencl[o]));
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].index = static_cast<uint32_t>(i);
  return out;
}

absl::StatusOr<GpuSelection> ParseGpuSelection(const std::string& text) {
  std::string t(absl::StripAsciiWhitespace(text));
  if (t == "all") return GpuSelection{};
  if (t == "none") return GpuSelection{false, {}};
  GpuSelection s{false, {}};
  for (absl::string_view part : absl::StrSplit(t, ',')) {
    uint32_t i = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--gpus: '", t.substr(0, 100), "' is not all, none or a list of GPU indexes like 0,2"));
    }
    if (std::find(s.indexes.begin(), s.indexes.end(), i) != s.indexes.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus: GPU ", i, " is listed twice"));
    }
    s.indexes.push_back(i);
  }
  return s;
}

namespace {
// NVML, OpenCL (in this process, or through the probe child), ROCm SMI, Metal: in that order.
std::vector<std::unique_ptr<GpuSource>> MakeSources(const GpuDiscoveryOptions& options) {
  std::vector<std::unique_ptr<GpuSource>> sources;
  const GpuSelection& sel = options.selection;
  if (!sel.all && sel.indexes.empty() && !options.discover_unoffered) {
    // --gpus none: nothing is loaded, not even NVML.
    sources.push_back(std::make_unique<NotLoadedSource>("NVML"));
    sources.push_back(std::make_unique<NotLoadedSource>("OpenCL"));
  } else {
    const char* env_cpu = std::getenv("IDLEPOOL_OPENCL_CPU");
    const bool cpu = options.opencl_cpu || (env_cpu != nullptr && std::strcmp(env_cpu, "1") == 0);
    sources.push_back(MakeNvmlSource(options.nvml_library));
    sources.push_back(
        options.opencl_probe.empty()
            ? MakeOpenClSource(cpu)
            : MakeOpenClProbeSource(options.opencl_probe, cpu, options.probe_timeout));
  }
  sources.push_back(MakeRocmSmiSource());
  sources.push_back(MakeMetalSource());
  return sources;
}
}  // namespace

std::shared_ptr<GpuInventory> GpuInventory::Discover(const GpuDiscoveryOptions& options) {
  std::shared_ptr<GpuInventory> inv(new GpuInventory());
  inv->sources_ = MakeSources(options);
  BlockAsyncSignals block;
  std::vector<GpuDevice> nvml = inv->sources_[0]->Discover();
  std::vector<GpuDevice> opencl = inv->sources_[1]->Discover();
  for (size_t i = 2; i < inv->sources_.size(); ++i) (void)inv->sources_[i]->Discover();
  for (const auto& s : inv->sources_) {
    GpuBackendReport r = s->report();
    spdlog::debug("gpu discovery: {}: {}", r.backend, r.message);
    inv->backends_.push_back(std::move(r));
  }
  inv->discovered_ = MergeGpus(std::move(nvml), std::move(opencl));
  const GpuSelection& sel = options.selection;
  for (const auto& d : inv->discovered_) {
    if (sel.all || std::find(sel.indexes.begin(), sel.indexes.end(), d.index) != sel.indexes.end()) {
      inv->offered_from_.push_back(d.index);
      inv->offered_.push_back(d);
      inv->offered_.back().index = static_cast<uint32_t>(inv->offered_.size() - 1);
    }
  }
  if (!sel.all) {
    for (uint32_t i : sel.indexes) {
      if (i >= inv->discovered_.size()) {
        inv->missing_.push_back(i);
        spdlog::debug("--gpus: there is no GPU {} ({} found); not offered", i,
                     inv->discovered_.size());
      }
    }
  }
  return inv;
}

std::shared_ptr<GpuInventory> GpuInventory::FromDevices(std::vector<GpuDevice> devices) {
  std::shared_ptr<GpuInventory> inv(new GpuInventory());
  for (size_t i = 0; i < devices.size(); ++i) {
    devices[i].index = static_cast<uint32_t>(i);
    inv->offered_from_.push_back(static_cast<uint32_t>(i));
  }
  inv->discovered_ = devices;
  inv->offered_ = std::move(devices);
  return inv;
}

std::vector<GpuDevice> GpuInventory::discovered() const {
  std::lock_guard lock(mu_);
  return discovered_;
}

std::vector<GpuDevice> GpuInventory::offered() const {
  std::lock_guard lock(mu_);
  return offered_;
}

std::vector<GpuDevice> GpuInventory::ReadLive() {
  std::lock_guard lock(mu_);
  BlockAsyncSignals block;
  for (auto& d : offered_) {
    for (auto& s : sources_) s->ReadLive(&d);
  }
  return offered_;
}

std::vector<GpuBackendReport> GpuInventory::backends() const {
  std::lock_guard lock(mu_);
  return backends_;
}

std::vector<uint32_t> GpuInventory::missing() const {
  std::lock_guard lock(mu_);
  return missing_;
}

}  // namespace idlepool::platform
