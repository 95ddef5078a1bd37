// Worker capacity accounting: what fits where, and charging an attempt's slots, memory and
// GPUs to its worker (see "GPUs" in scheduler.h). Same thread rules as the rest of the Scheduler.
#include <algorithm>
#include <optional>
#include <vector>

#include "core/check.h"
#include "core/scheduler.h"

namespace idlepool::core {

uint32_t Scheduler::FreeSlots(const WorkerRec& w) {
  return w.capacity.cpus > w.slots_busy ? w.capacity.cpus - w.slots_busy : 0;
}

bool Scheduler::Fits(const WorkerRec& w, const Resources& need) {
  if (!Schedulable(w) || !NetworkFits(w, need)) return false;
  if (FreeSlots(w) < need.cpus) return false;
  if (need.gpus > 0 && !ChooseGpus(w, need)) return false;
  if (need.memory_mb != 0 && w.capacity.memory_mb != 0) {
    const uint64_t free_mb =
        w.capacity.memory_mb > w.memory_busy_mb ? w.capacity.memory_mb - w.memory_busy_mb : 0;
    if (free_mb < need.memory_mb) return false;
  }
  return true;
}

bool Scheduler::GpuFits(const GpuDevice& d, const Resources& need) {
  if (need.gpu_memory_mb != 0 && d.memory_mb < need.gpu_memory_mb) return false;
  return need.gpu_api.empty() ||
         std::find(d.apis.begin(), d.apis.end(), need.gpu_api) != d.apis.end();
}

std::optional<std::vector<uint32_t>> Scheduler::ChooseGpus(const WorkerRec& w,
                                                           const Resources& need) {
  if (need.gpus == 0) return std::vector<uint32_t>{};
  std::vector<const GpuDevice*> free;
  for (const GpuDevice& d : w.gpus) {
    if (w.gpu_owner.count(d.index) == 0 && !d.held && GpuFits(d, need)) free.push_back(&d);
  }
  if (free.size() < need.gpus) return std::nullopt;
  // Best fit: the big devices stay free for the tasks that need them.
  std::sort(free.begin(), free.end(), [](const GpuDevice* a, const GpuDevice* b) {
    return a->memory_mb != b->memory_mb ? a->memory_mb < b->memory_mb : a->index < b->index;
  });
  std::vector<uint32_t> chosen;
  for (uint32_t i = 0; i < need.gpus; ++i) chosen.push_back(free[i]->index);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

bool Scheduler::GpusFree(const WorkerRec& w, const std::vector<uint32_t>& gpus) {
  return std::none_of(gpus.begin(), gpus.end(),
                      [&](uint32_t i) { return w.gpu_owner.count(i) != 0; });
}

void Scheduler::Charge(WorkerRec& w, const Resources& need, AttemptId id, const AttemptRec& a) {
  // A restored attempt's user holds its slots since the restore (RestoreUsers).
  if (!a.orphan_deadline) HoldUsage(a, now_);
  w.slots_busy += need.cpus;
  w.memory_busy_mb += need.memory_mb;
  for (uint32_t i : a.gpus) {
    const bool inserted = w.gpu_owner.emplace(i, id).second;
    CORE_CHECK(inserted, "two attempts on one GPU");
  }
}

void Scheduler::Release(WorkerRec& w, const Resources& need, AttemptId id, const AttemptRec& a) {
  CORE_CHECK(w.slots_busy >= need.cpus && w.memory_busy_mb >= need.memory_mb,
             "releasing more capacity than is busy");
  FreeUsage(a, now_);
  w.slots_busy -= need.cpus;
  w.memory_busy_mb -= need.memory_mb;
  for (uint32_t i : a.gpus) {
    auto it = w.gpu_owner.find(i);
    CORE_CHECK(it != w.gpu_owner.end() && it->second == id, "releasing a GPU the attempt lacks");
    w.gpu_owner.erase(it);
  }
}

bool Scheduler::CapacityFits(const WorkerRec& w, const Resources& need) {
  if (w.capacity.cpus < need.cpus || !NetworkFits(w, need)) return false;
  if (need.gpus > 0 && std::count_if(w.gpus.begin(), w.gpus.end(), [&](const GpuDevice& d) {
                         return GpuFits(d, need);
                       }) < need.gpus) {
    return false;
  }
  return need.memory_mb == 0 || w.capacity.memory_mb == 0 || w.capacity.memory_mb >= need.memory_mb;
}

}  // namespace idlepool::core
