// Pipelines in the coordinator (coordinator/job_after.h).
#include "coordinator/job_after.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace idlepool::coordinator {
namespace {

std::string Named(core::JobId id, const std::string& name) {
  return absl::StrCat("job ", id, " (", name, ")");
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

absl::StatusOr<std::vector<core::JobId>> ResolveAfter(store::Store& store,
                                                      const std::vector<std::string>& after) {
  std::vector<core::JobId> ids;
  if (after.empty()) return ids;
  auto jobs = store.ListJobs();  // headers, by id
  if (!jobs.ok()) return jobs.status();
  std::map<std::string, core::JobId> by_name;  // name -> the job of `ids` with it
  for (const std::string& entry : after) {
    const store::JobRecord* found = nullptr;
    uint64_t id = 0;
    if (AllDigits(entry) && absl::SimpleAtoi(entry, &id)) {
      auto it = std::lower_bound(jobs->begin(), jobs->end(), id,
                                 [](const store::JobRecord& r, uint64_t v) { return r.id < v; });
      if (it != jobs->end() && it->id == id) found = &*it;
    } else {
      for (auto it = jobs->rbegin(); it != jobs->rend() && found == nullptr; ++it) {
        if (it->name == entry) found = &*it;
      }
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "after: ", AllDigits(entry) ? "no job " : "no job named '", entry,
          AllDigits(entry) ? "" : "'", " (a job id, or the name of a job already submitted)"));
    }
    if (std::find(ids.begin(), ids.end(), found->id) != ids.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "after: '", entry, "' is ", Named(found->id, found->name), ", already listed"));
    }
    auto [it, fresh] = by_name.emplace(found->name, found->id);
    if (!fresh) {
      return absl::InvalidArgumentError(
          absl::StrCat("after: jobs ", it->second, " and ", found->id, " are both named '",
                       found->name, "': their outputs would both be staged under after/",
                       found->name, "/ (run after one of them, or rename one)"));
    }
    ids.push_back(found->id);
  }
  return ids;
}

void FillAfter(const core::JobSummary& summary, const store::JobRecord& rec, const HeaderOf& header,
               v1::JobStatus* out) {
  for (const core::JobId id : summary.after) out->add_after(id);
  if (!summary.service) out->set_backoff(summary.restarting);
  auto name = [&](core::JobId id) {
    auto h = header(id);
    return Named(id, h ? h->name : "deleted");
  };
  if (summary.state == core::JobState::kRunning && !summary.waiting_on.empty()) {
    out->set_state("waiting");
    std::string list;
    for (const core::JobId id : summary.waiting_on) {
      absl::StrAppend(&list, list.empty() ? "" : ", ", name(id));
    }
    out->set_reason(absl::StrCat("after ", list, ": running"));
    return;
  }
  if (summary.state != core::JobState::kCancelled || summary.counters.attempts != 0) return;
  std::optional<core::JobId> deleted;
  for (const core::JobId id : summary.after) {
    auto h = header(id);
    if (!h && !deleted) deleted = id;
    if (!h || h->finished_ms > rec.finished_ms) continue;
    if (h->state == core::JobState::kFailed || h->state == core::JobState::kCancelled) {
      out->set_reason(absl::StrCat(
          Named(id, h->name), h->state == core::JobState::kFailed ? " failed" : " was cancelled"));
      return;
    }
  }
  // The reason is derived, not stored: a job it ran after that is gone now (deleted, maybe by
  // retention) is named as such rather than leaving no reason at all.
  if (deleted) out->set_reason(absl::StrCat("job ", *deleted, ", which it ran after, was deleted"));
}

absl::StatusOr<std::vector<v1::Input>> AfterInputs(store::Store& store,
                                                   const std::vector<core::JobId>& after) {
  std::vector<v1::Input> inputs;
  for (const core::JobId id : after) {
    auto job = store.GetJobHeader(id);
    if (!job.ok()) return job.status();
    auto outputs = store.ListOutputs(id);  // by (task index, path)
    if (!outputs.ok()) return outputs.status();
    std::map<std::string, uint32_t> task_of;  // path -> the task that output it
    for (const store::TaskOutput& o : *outputs) {
      const std::string path = absl::StrCat("after/", job->name, "/", o.file.path);
      auto [it, fresh] = task_of.emplace(o.file.path, o.index);
      if (!fresh) {
        return absl::FailedPreconditionError(
            absl::StrCat(Named(id, job->name), ": tasks ", it->second, " and ", o.index,
                         " both output '", o.file.path, "'; they cannot both be staged at ", path));
      }
      v1::Input& in = inputs.emplace_back();
      in.set_path(path);
      in.set_sha256(o.file.sha256);
      in.set_size(o.file.size);
      in.set_mode(0644);
    }
  }
  return inputs;
}

}  // namespace idlepool::coordinator
