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

// The device nodes a sandboxed attempt needs for its GPUs `assigned`, and no other GPU's:
// NVIDIA: /dev/nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset and /dev/nvidiaN, N the
// device minor that `nvidia_proc` (/proc/driver/nvidia/gpus/*/information) gives for its UUID,
// else its cuda_id; AMD: /dev/kfd and every /dev/dri/renderD* (not told apart yet); Intel: every
// /dev/dri/renderD*; CPU OpenCL (pocl) and others: none. Reads `nvidia_proc` and /dev/dri.
std::vector<std::string> GpuDeviceNodes(
    const std::vector<uint32_t>& assigned, const std::vector<v1::GpuDevice>& offered,
    const std::string& nvidia_proc = "/proc/driver/nvidia/gpus");

}  // namespace idlepool::worker
