// GpuDeviceNodes (gpu_binding.h): the device nodes a sandboxed attempt's GPUs need.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "worker/gpu_binding.h"

namespace idlepool::worker {
namespace {

namespace fs = std::filesystem;

// UUID -> device minor, from the driver's per-GPU "information" files ("GPU UUID:",
// "Device Minor:").
std::map<std::string, std::string> NvidiaMinors(const std::string& proc_dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& gpu : fs::directory_iterator(proc_dir, ec)) {
    std::ifstream in(gpu.path() / "information");
    std::string line, uuid, minor;
    while (std::getline(in, line)) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = line.substr(0, colon);
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      if (key == "GPU UUID") uuid = value;
      if (key == "Device Minor") minor = value;
    }
    if (!uuid.empty() && !minor.empty()) out[uuid] = minor;
  }
  return out;
}

std::vector<std::string> RenderNodes() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev/dri", ec)) {
    if (e.path().filename().string().rfind("renderD", 0) == 0) out.push_back(e.path().string());
  }
  return out;
}

}  // namespace

std::vector<std::string> GpuDeviceNodes(const std::vector<uint32_t>& assigned,
                                        const std::vector<v1::GpuDevice>& offered,
                                        const std::string& nvidia_proc) {
  std::set<std::string> nodes;
  std::map<std::string, std::string> minors;
  bool minors_read = false;
  for (uint32_t index : assigned) {
    auto d = std::find_if(offered.begin(), offered.end(),
                          [&](const v1::GpuDevice& g) { return g.index() == index; });
    if (d == offered.end()) continue;
    if (d->vendor() == "nvidia") {
      if (!minors_read) minors = NvidiaMinors(nvidia_proc), minors_read = true;
      for (const char* n :
           {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}) {
        nodes.insert(n);
      }
      auto m = minors.find(d->uuid());
      const std::string minor = m != minors.end() ? m->second : d->cuda_id();
      if (!minor.empty()) nodes.insert("/dev/nvidia" + minor);
    } else if (d->vendor() == "amd" || d->vendor() == "intel") {
      if (d->vendor() == "amd") nodes.insert("/dev/kfd");
      for (const auto& r : RenderNodes()) nodes.insert(r);
    }
  }
  return {nodes.begin(), nodes.end()};
}

}  // namespace idlepool::worker
