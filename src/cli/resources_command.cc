#include "cli/resources_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace idlepool::cli {

namespace {

uint64_t PhysicalMemoryMb() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0) return 0;
  return (static_cast<uint64_t>(pages) * static_cast<uint64_t>(size)) >> 20;
}

nlohmann::json GpuJson(const platform::GpuDevice& g) {
  nlohmann::json j = {{"index", g.index},         {"vendor", g.vendor},   {"name", g.name},
                      {"memory_mb", g.memory_mb}, {"uuid", g.uuid},       {"apis", g.apis},
                      {"cuda_id", g.cuda_id},     {"opencl_id", g.opencl_id},
                      {"pci_bus_id", g.pci_bus_id}};
  j["temperature_c"] = g.temperature_c ? nlohmann::json(*g.temperature_c) : nlohmann::json();
  j["utilization"] = g.utilization ? nlohmann::json(*g.utilization) : nlohmann::json();
  j["memory_used_mb"] = g.memory_used_mb ? nlohmann::json(*g.memory_used_mb) : nlohmann::json();
  j["pids"] = g.pids ? nlohmann::json(*g.pids) : nlohmann::json();
  return j;
}

std::string GpuLine(const platform::GpuDevice& g) {
  std::string s = absl::StrFormat("%-7s %s, %llu MiB", g.vendor, g.name,
                                  static_cast<unsigned long long>(g.memory_mb));
  absl::StrAppend(&s, ", apis ", absl::StrJoin(g.apis, ","));
  if (!g.uuid.empty()) absl::StrAppend(&s, ", uuid ", g.uuid);
  if (!g.cuda_id.empty()) absl::StrAppend(&s, ", cuda ", g.cuda_id);
  if (!g.opencl_id.empty()) absl::StrAppend(&s, ", opencl ", g.opencl_id);
  absl::StrAppend(&s, ", temperature ",
                  g.temperature_c ? absl::StrFormat("%.0f C", *g.temperature_c) : "unknown");
  absl::StrAppend(&s, ", utilization ",
                  g.utilization ? absl::StrFormat("%.0f%%", *g.utilization * 100) : "unknown");
  return s;
}

}  // namespace

int PrintResources(const platform::GpuInventory& gpus, const ResourcesView& view) {
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  const uint32_t slots = view.slots == 0 ? cores : view.slots;
  const auto offered = gpus.offered();
  const auto discovered = gpus.discovered();
  std::vector<platform::GpuDevice> left_out;
  for (const auto& d : discovered) {
    const bool in = std::any_of(offered.begin(), offered.end(), [&](const auto& o) {
      return o.cuda_id == d.cuda_id && o.opencl_id == d.opencl_id;
    });
    if (!in) left_out.push_back(d);
  }
  if (view.json) {
    nlohmann::json j;
    j["cores"] = cores;
    j["memory_mb"] = PhysicalMemoryMb();
    j["memory_offered_mb"] = view.memory_mb ? nlohmann::json(view.memory_mb) : nlohmann::json();
    j["slots"] = slots;
    j["sandbox"] = view.sandbox;
    j["gpus"] = nlohmann::json::array();
    for (const auto& g : offered) j["gpus"].push_back(GpuJson(g));
    j["not_offered"] = nlohmann::json::array();
    for (const auto& g : left_out) j["not_offered"].push_back(GpuJson(g));
    j["missing"] = gpus.missing();
    j["backends"] = nlohmann::json::array();
    for (const auto& b : gpus.backends()) {
      j["backends"].push_back(
          {{"backend", b.backend}, {"supported", b.supported}, {"message", b.message}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("cores     %u\n", cores);
  std::printf("memory    %llu MiB (offered: %s)\n",
              static_cast<unsigned long long>(PhysicalMemoryMb()),
              view.memory_mb ? absl::StrCat(view.memory_mb, " MiB").c_str() : "not stated");
  std::printf("slots     %u\n", slots);
  std::printf("sandbox   %s\n", view.sandbox.c_str());
  std::printf("gpus      %zu offered\n", offered.size());
  for (const auto& g : offered) std::printf("  gpu %u: %s\n", g.index, GpuLine(g).c_str());
  for (const auto& g : left_out) {
    std::printf("  not offered (--gpus): device %u: %s\n", g.index, GpuLine(g).c_str());
  }
  for (uint32_t m : gpus.missing()) std::printf("  --gpus %u: no such device\n", m);
  std::printf("backends\n");
  for (const auto& b : gpus.backends()) {
    std::printf("  %-9s %s\n", b.backend.c_str(), b.message.c_str());
  }
  return 0;
}

}  // namespace idlepool::cli
