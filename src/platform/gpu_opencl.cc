// OpenCL devices through the ICD loader, loaded at run time: dlopen of libOpenCL.so.1 (absent:
// no OpenCL devices, never an error). Types come from the Khronos headers (Debian
// opencl-c-headers); without them this file builds a backend that says "not built".
//
// Calls: clGetPlatformIDs, clGetPlatformInfo (CL_PLATFORM_NAME), clGetDeviceIDs
// (CL_DEVICE_TYPE_ALL, so that opencl_id "P:D" is the same whatever types are kept),
// clGetDeviceInfo (type, name, vendor, global memory size, extensions, and for merging with
// NVML: CL_DEVICE_PCI_BUS_INFO_KHR, else NVIDIA's CL_DEVICE_PCI_BUS_ID_NV/SLOT_ID_NV/
// DOMAIN_ID_NV; CL_DEVICE_UUID_KHR). A call that fails leaves that field empty; a platform
// whose devices cannot be listed is skipped. OpenCL has no live readings.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "platform/gpu.h"
#include "spdlog/spdlog.h"

#if __has_include(<CL/cl.h>)
#define IDLEPOOL_HAVE_OPENCL_HEADERS 1
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>
#endif

namespace idlepool::platform {

#ifdef IDLEPOOL_HAVE_OPENCL_HEADERS
namespace {

// cl_nv_device_attribute_query (not in every header version).
constexpr cl_device_info kPciBusIdNv = 0x4008;
constexpr cl_device_info kPciSlotIdNv = 0x4009;
constexpr cl_device_info kPciDomainIdNv = 0x400A;
#ifndef CL_DEVICE_PCI_BUS_INFO_KHR
constexpr cl_device_info CL_DEVICE_PCI_BUS_INFO_KHR = 0x410F;
struct cl_device_pci_bus_info_khr {
  cl_uint pci_domain, pci_bus, pci_device, pci_function;
};
#endif
#ifndef CL_DEVICE_UUID_KHR
constexpr cl_device_info CL_DEVICE_UUID_KHR = 0x106A;
#endif

using GetPlatformIDsFn = cl_int (*)(cl_uint, cl_platform_id*, cl_uint*);
using GetPlatformInfoFn = cl_int (*)(cl_platform_id, cl_platform_info, size_t, void*, size_t*);
using GetDeviceIDsFn = cl_int (*)(cl_platform_id, cl_device_type, cl_uint, cl_device_id*, cl_uint*);
using GetDeviceInfoFn = cl_int (*)(cl_device_id, cl_device_info, size_t, void*, size_t*);

std::string VendorOf(const std::string& platform, const std::string& vendor) {
  const std::string p = absl::AsciiStrToLower(platform), v = absl::AsciiStrToLower(vendor);
  if (absl::StrContains(p, "portable computing language") || absl::StrContains(p, "pocl")) {
    return "pocl";
  }
  if (absl::StrContains(v, "nvidia")) return "nvidia";
  if (absl::StrContains(v, "advanced micro devices") || absl::StrContains(v, "amd")) return "amd";
  if (absl::StrContains(v, "intel")) return "intel";
  if (absl::StrContains(v, "apple")) return "apple";
  std::string first = v.substr(0, v.find_first_of(" ,."));
  return first.empty() ? "unknown" : first;
}

class OpenClSource final : public GpuSource {
 public:
  explicit OpenClSource(bool include_cpu) : include_cpu_(include_cpu) {}

  std::vector<GpuDevice> Discover() override {
    std::vector<GpuDevice> out;
    // Never unloaded: ICDs may keep threads and exit handlers.
    void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* err = dlerror();
      message_ = absl::StrCat("not found (", err != nullptr ? err : "libOpenCL.so.1", ")");
      spdlog::debug("OpenCL: {}", message_);
      return out;
    }
    auto get_platforms = reinterpret_cast<GetPlatformIDsFn>(dlsym(lib, "clGetPlatformIDs"));
    auto platform_info = reinterpret_cast<GetPlatformInfoFn>(dlsym(lib, "clGetPlatformInfo"));
    auto get_devices = reinterpret_cast<GetDeviceIDsFn>(dlsym(lib, "clGetDeviceIDs"));
    device_info_ = reinterpret_cast<GetDeviceInfoFn>(dlsym(lib, "clGetDeviceInfo"));
    if (!get_platforms || !platform_info || !get_devices || !device_info_) {
      message_ = "libOpenCL.so.1 lacks clGetPlatformIDs/clGetDeviceIDs";
      spdlog::info("OpenCL: {}", message_);
      return out;
    }
    cl_uint np = 0;
    if (cl_int r = get_platforms(0, nullptr, &np); r != CL_SUCCESS || np == 0) {
      // The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR (-1001) when no ICD is installed.
      message_ = absl::StrCat("no platforms (clGetPlatformIDs: ", r, ")");
      spdlog::info("OpenCL: {}", message_);
      return out;
    }
    std::vector<cl_platform_id> platforms(np);
    if (get_platforms(np, platforms.data(), &np) != CL_SUCCESS) np = 0;
    size_t skipped_cpu = 0, total = 0;
    for (cl_uint p = 0; p < np; ++p) {
      char pname[256] = {};
      platform_info(platforms[p], CL_PLATFORM_NAME, sizeof pname - 1, pname, nullptr);
      cl_uint nd = 0;
      if (get_devices(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
      std::vector<cl_device_id> devices(nd);
      if (get_devices(platforms[p], CL_DEVICE_TYPE_ALL, nd, devices.data(), &nd) != CL_SUCCESS) {
        continue;
      }
      for (cl_uint i = 0; i < nd; ++i) {
        ++total;
        cl_device_type type = 0;
        device_info_(devices[i], CL_DEVICE_TYPE, sizeof type, &type, nullptr);
        const bool gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
        const bool cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
        if (!gpu && !(cpu && include_cpu_)) {
          if (cpu) ++skipped_cpu;
          continue;
        }
        out.push_back(Describe(devices[i], pname, absl::StrCat(p, ":", i)));
      }
    }
    message_ = absl::StrCat(np, np == 1 ? " platform, " : " platforms, ", total,
                            total == 1 ? " device, " : " devices, ", out.size(), " used");
    if (skipped_cpu > 0) {
      absl::StrAppend(&message_, " (", skipped_cpu,
                      " CPU device(s) skipped: a CPU is not a GPU; --opencl-cpu to use them)");
    }
    return out;
  }

  GpuBackendReport report() const override { return {"OpenCL", true, message_}; }

 private:
  std::string String(cl_device_id d, cl_device_info what) {
    size_t n = 0;
    if (device_info_(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0 || n > 65536) return "";
    std::string s(n, '\0');
    if (device_info_(d, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
    s.resize(strnlen(s.c_str(), n));
    return std::string(absl::StripAsciiWhitespace(s));
  }

  GpuDevice Describe(cl_device_id dev, const std::string& platform, std::string id) {
    GpuDevice d;
    d.name = String(dev, CL_DEVICE_NAME);
    d.vendor = VendorOf(platform, String(dev, CL_DEVICE_VENDOR));
    d.apis = {"opencl"};
    d.opencl_id = std::move(id);
    cl_ulong mem = 0;
    if (device_info_(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, nullptr) == CL_SUCCESS) {
      d.memory_mb = mem >> 20;
    }
    const std::string ext = " " + String(dev, CL_DEVICE_EXTENSIONS) + " ";
    if (absl::StrContains(ext, " cl_khr_pci_bus_info ")) {
      cl_device_pci_bus_info_khr pci{};
      if (device_info_(dev, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof pci, &pci, nullptr) == CL_SUCCESS) {
        d.pci_bus_id = PciBusId(pci.pci_domain, pci.pci_bus, pci.pci_device, pci.pci_function);
      }
    }
    if (d.pci_bus_id.empty() && absl::StrContains(ext, " cl_nv_device_attribute_query ")) {
      cl_uint bus = 0, slot = 0, domain = 0;
      if (device_info_(dev, kPciBusIdNv, sizeof bus, &bus, nullptr) == CL_SUCCESS &&
          device_info_(dev, kPciSlotIdNv, sizeof slot, &slot, nullptr) == CL_SUCCESS) {
        if (device_info_(dev, kPciDomainIdNv, sizeof domain, &domain, nullptr) != CL_SUCCESS) {
          domain = 0;
        }
        d.pci_bus_id = PciBusId(domain, bus, slot >> 3, slot & 7);  // slot: device << 3 | function
      }
    }
    if (absl::StrContains(ext, " cl_khr_device_uuid ")) {
      unsigned char u[16] = {};
      if (device_info_(dev, CL_DEVICE_UUID_KHR, sizeof u, u, nullptr) == CL_SUCCESS) {
        char s[40];
        std::snprintf(s, sizeof s,
                      "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                      u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                      u[13], u[14], u[15]);
        // NVML writes an NVIDIA GPU's UUID as "GPU-" and these 16 bytes.
        d.uuid = d.vendor == "nvidia" ? absl::StrCat("GPU-", s) : s;
      }
    }
    return d;
  }

  bool include_cpu_;
  GetDeviceInfoFn device_info_ = nullptr;
  std::string message_ = "not tried";
};

}  // namespace

std::unique_ptr<GpuSource> MakeOpenClSource(bool include_cpu) {
  return std::make_unique<OpenClSource>(include_cpu);
}

#else  // no OpenCL headers at build time

namespace {
class NoOpenClSource final : public GpuSource {
 public:
  std::vector<GpuDevice> Discover() override { return {}; }
  GpuBackendReport report() const override {
    return {"OpenCL", false, "not built (no OpenCL headers at build time)"};
  }
};
}  // namespace

std::unique_ptr<GpuSource> MakeOpenClSource(bool) { return std::make_unique<NoOpenClSource>(); }

#endif

}  // namespace idlepool::platform
