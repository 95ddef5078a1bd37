#include "worker/gpu_binding.h"

#include <algorithm>
#include <set>

namespace idlepool::worker {
namespace {

bool Offers(const v1::GpuDevice& d, const std::string& api) {
  return std::find(d.apis().begin(), d.apis().end(), api) != d.apis().end();
}

void Append(std::string& list, const std::string& item) {
  if (!list.empty()) list += ',';
  list += item;
}

std::string Indices(const std::vector<v1::GpuDevice>& devices) {
  std::string out;
  for (const v1::GpuDevice& d : devices) Append(out, std::to_string(d.index()));
  return out;
}

}  // namespace

GpuBinding BindGpus(const std::vector<uint32_t>& assigned,
                    const std::vector<v1::GpuDevice>& offered) {
  GpuBinding b;
  std::set<uint32_t> seen;
  std::vector<const v1::GpuDevice*> mine;
  for (uint32_t i : assigned) {
    if (!seen.insert(i).second) {
      b.problem = "the coordinator assigned GPU " + std::to_string(i) + " twice";
      return b;
    }
    auto it = std::find_if(offered.begin(), offered.end(),
                           [&](const v1::GpuDevice& d) { return d.index() == i; });
    if (it == offered.end()) {
      b.problem = "this worker has no GPU " + std::to_string(i) + " (it offers " +
                  (offered.empty() ? std::string("none") : Indices(offered)) + ")";
      return b;
    }
    mine.push_back(&*it);
  }
  std::string gpus, cuda, rocm, opencl;
  for (const v1::GpuDevice* d : mine) {
    Append(gpus, std::to_string(d->index()));
    if (Offers(*d, "cuda")) Append(cuda, d->cuda_id().empty() ? d->uuid() : d->cuda_id());
    if (Offers(*d, "rocm")) Append(rocm, d->uuid());
    if (Offers(*d, "opencl") && !d->opencl_id().empty()) Append(opencl, d->opencl_id());
  }
  b.env = {{"IDLEPOOL_GPUS", gpus},
           {"CUDA_VISIBLE_DEVICES", cuda},
           // cuda_id is the NVML index, which follows PCI bus order; CUDA's own default order is
           // fastest-first, so without this a multi-GPU task could open another task's device.
           {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
           {"ROCR_VISIBLE_DEVICES", rocm},
           {"IDLEPOOL_OPENCL_DEVICES", opencl}};
  return b;
}

}  // namespace idlepool::worker
