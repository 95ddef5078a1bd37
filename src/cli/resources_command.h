// `idlepool worker --print-resources [--json]`: what this machine would offer a pool (cores,
// memory, slots, GPUs, sandbox tier) and what each GPU backend said, without connecting anywhere.
//
// JSON (one object): cores, memory_mb (physical), memory_offered_mb (null: not stated), slots,
// sandbox (worker::Options::sandbox_tier: "userns", "uid" or "none"),
// gpus (the offered devices as in the worker's Hello, plus pci_bus_id and pids), not_offered
// (discovered devices that --gpus leaves out, by discovery index), missing (--gpus indexes that
// match no device), backends [{backend, supported, message}].
#pragma once

#include <cstdint>
#include <string>

#include "platform/gpu.h"

namespace idlepool::cli {

struct ResourcesView {
  uint32_t slots = 0;      // 0 = number of cores
  uint64_t memory_mb = 0;  // offered; 0 = not stated
  bool json = false;
  std::string sandbox;  // the tier its Hello would say (worker::Options::sandbox_tier)
};

// Prints to stdout; returns the exit status (0).
int PrintResources(const platform::GpuInventory& gpus, const ResourcesView& view);

}  // namespace idlepool::cli
