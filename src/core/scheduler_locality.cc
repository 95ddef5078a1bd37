// Locality: placement prefers a worker that holds a task's inputs (the job's and the task's own,
// JobSubmitted::task_inputs), counting each worker's missing bytes over its own link (LinkRate,
// core/link.h; Options::link_bytes_per_ms when unmeasured). See "Placement" in scheduler.h.
#include <algorithm>
#include <utility>

#include "core/link.h"
#include "core/scheduler.h"

namespace idlepool::core {

std::pair<const TaskBlob*, const TaskBlob*> Scheduler::OwnInputs(const JobRec& job,
                                                                 uint32_t index) {
  const std::vector<TaskBlob>& all = job.spec.task_inputs;
  auto lo = std::lower_bound(all.begin(), all.end(), index,
                             [](const TaskBlob& t, uint32_t i) { return t.task < i; });
  auto hi = std::upper_bound(lo, all.end(), index,
                             [](uint32_t i, const TaskBlob& t) { return i < t.task; });
  return {all.data() + (lo - all.begin()), all.data() + (hi - all.begin())};
}

uint64_t Scheduler::MissingBytes(const JobRec& job, uint32_t index, const WorkerRec& w) const {
  uint64_t missing = 0;
  for (const BlobRef& b : job.spec.inputs) {
    if (w.blobs.count(b.sha256) == 0) missing += b.size;
  }
  auto [first, last] = OwnInputs(job, index);
  for (const TaskBlob* t = first; t != last; ++t) {
    if (w.blobs.count(t->blob.sha256) == 0) missing += t->blob.size;
  }
  return missing;
}

double Scheduler::FetchMs(const WorkerName& worker, uint64_t bytes) const {
  auto it = workers_.find(worker);
  const double measured = it == workers_.end() ? 0 : it->second.down_bytes_per_s;
  return TransferSeconds(bytes, measured, options_.link_bytes_per_ms * 1000) * 1000;
}

void Scheduler::PreferHolder(const TaskKey& key, bool avoiding, MonoTime now,
                             WorkerName& best_name) {
  const JobRec& job = JobOf(key);
  auto [own_first, own_last] = OwnInputs(job, key.index);
  if ((job.input_bytes == 0 && own_first == own_last) || options_.link_bytes_per_ms <= 0) return;
  const Resources& need = job.spec.resources;
  // Expected finish = missing bytes over its link + mean runtime / rank (the runtime term only
  // once the job's mean is learned). At most kLocalityCandidates holders are looked at.
  const double mean = MeanMs(job);
  auto cost = [&](const WorkerName& name, const WorkerRec& w) {
    return FetchMs(name, MissingBytes(job, key.index, w)) + (mean > 0 ? mean / w.rank : 0.0);
  };
  const WorkerRec& pick = workers_.at(best_name);
  double best_cost = cost(best_name, pick);
  FreeEntry best_entry{pick.rank, pick.indexed_free, best_name};
  size_t looked = 0;
  auto consider = [&](const std::string& sha) {
    auto h = holders_.find(sha);
    if (h == holders_.end()) return true;
    for (const WorkerName& name : h->second) {
      if (++looked > kLocalityCandidates) return false;
      const WorkerRec& w = workers_.at(name);
      if (w.indexed_free == 0 || !Fits(w, need) || !LendsTo(w, job.spec.user)) continue;
      if (avoiding && Avoided(key, name, now)) continue;
      const double c = cost(name, w);
      const FreeEntry entry{w.rank, w.indexed_free, name};
      if (c < best_cost || (c == best_cost && FreeOrder{}(entry, best_entry))) {
        best_cost = c;
        best_entry = entry;
        best_name = name;
      }
    }
    return true;
  };
  // The task's own inputs first: they are what sets one worker apart from the others.
  for (const TaskBlob* t = own_first; t != own_last; ++t) {
    if (!consider(t->blob.sha256)) return;
  }
  for (const BlobRef& b : job.spec.inputs) {
    if (!consider(b.sha256)) return;
  }
  // A worker that holds nothing may still finish first over a faster link (LinkRate).
  for (const FreeEntry& f : free_index_) {
    if (++looked > kLocalityCandidates) return;
    const WorkerRec& w = workers_.at(f.name);
    if (w.down_bytes_per_s <= 0 || !Fits(w, need) || !LendsTo(w, job.spec.user)) continue;
    if (avoiding && Avoided(key, f.name, now)) continue;
    const double c = cost(f.name, w);
    if (c < best_cost || (c == best_cost && FreeOrder{}(f, best_entry))) {
      best_cost = c;
      best_entry = f;
      best_name = f.name;
    }
  }
}

void Scheduler::NoteInputsSent(const TaskKey& key, const WorkerName& name) {
  WorkerRec& w = workers_.at(name);
  const JobRec& job = JobOf(key);
  for (const BlobRef& b : job.spec.inputs) {
    if (w.blobs.count(b.sha256) == 0) AddBlob(w, name, b, /*confirmed=*/false);
  }
  auto [first, last] = OwnInputs(job, key.index);
  for (const TaskBlob* t = first; t != last; ++t) {
    if (w.blobs.count(t->blob.sha256) == 0) AddBlob(w, name, t->blob, /*confirmed=*/false);
  }
}

void Scheduler::OnLinkRate(const LinkRate& e) {
  auto it = workers_.find(e.worker);
  if (it == workers_.end()) return;
  // Bounded whatever a worker says: a rate is finite and non-negative.
  const double r = e.down_bytes_per_s;
  it->second.down_bytes_per_s = (r > 0 && r < 1e15) ? r : 0;
}

}  // namespace idlepool::core
