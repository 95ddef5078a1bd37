// Which GPUs an attempt's process sees: the environment that binds it to the devices its
// Assignment gives it (Assignment.gpus, chosen by the coordinator), and nothing else.
//
// Pure function; thread-safe. The variables (docs/guide/job-spec.md):
//   IDLEPOOL_GPUS            the devices' GpuDevice.index values, comma-separated ("" for none)
//   CUDA_VISIBLE_DEVICES     cuda_id (else uuid) of those that offer "cuda"; "" hides every GPU
//                            from CUDA, which is what a task that asked for none must get
//   CUDA_DEVICE_ORDER        PCI_BUS_ID, so CUDA numbers devices as NVML does (cuda_id is the
//                            NVML index; CUDA's default order is fastest first)
//   ROCR_VISIBLE_DEVICES     uuid of those that offer "rocm"; "" likewise
//   IDLEPOOL_OPENCL_DEVICES  opencl_id ("PLATFORM:DEVICE") of those that offer "opencl"
// Every variable is always set, so nothing leaks in from the worker's own environment.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "idlepool.pb.h"

namespace idlepool::worker {

struct GpuBinding {
  // Empty when the binding is fine; else why the worker refuses the attempt (a device it does
  // not offer, or one listed twice): a machine fault, never the task's failure.
  std::string problem;
  std::vector<std::pair<std::string, std::string>> env;  // in the order above
};

// `assigned`: Assignment.gpus; `offered`: the devices this worker listed in its Hello.
GpuBinding BindGpus(const std::vector<uint32_t>& assigned,
                    const std::vector<v1::GpuDevice>& offered);

}  // namespace idlepool::worker
