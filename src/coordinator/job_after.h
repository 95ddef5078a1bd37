// Pipelines in the coordinator (`after`, docs/guide/job-spec.md): resolving a spec's `after`
// entries to job ids at submit, the waiting state and reasons that status shows, and the outputs
// of those jobs that a job's attempts stage under after/<job name>/<output path>.
//
// Thread safety: the functions hold no state; each reads the store (thread-safe) and is called
// from an RPC thread, or from the core thread for AfterInputs. Errors name the entry or job.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/scheduler.h"
#include "idlepool.pb.h"
#include "store/store.h"

namespace idlepool::coordinator {

// The jobs `after` names, in its order: an entry of digits is that job id (it must exist), any
// other a job name, meaning the newest job of that name. kInvalidArgument naming the entry when
// it matches no job ("after: no job named 'render'"), and when two entries resolve to the same
// job or to two jobs of the same name (their outputs would both be staged under
// after/<name>/: "after: jobs 12 and 14 are both named 'render' ...").
[[nodiscard]] absl::StatusOr<std::vector<core::JobId>> ResolveAfter(
    store::Store& store, const std::vector<std::string>& after);

// What a job's status says of the jobs it runs after: JobStatus.after, and for a job that waits
// state "waiting" and reason "after job 12 (render): running"; for one that the core cancelled
// because one of them failed or was cancelled, reason "job 12 (render) failed". That reason is
// not stored: it is the first such job that ended no later than this one, when this one never
// ran an attempt (a job cancelled by its user before that shows no reason). `header` gives a
// job's header, or nullopt when it is gone.
using HeaderOf = std::function<std::optional<store::JobRecord>(core::JobId)>;
void FillAfter(const core::JobSummary& summary, const store::JobRecord& rec, const HeaderOf& header,
               v1::JobStatus* out);

// The inputs that every attempt of a job running after `after` stages besides its own: each
// committed output of each of those jobs, at after/<its job's name>/<its path>. kFailedPrecondition
// naming them when two tasks of one job committed the same path ("job 12 (render): tasks 0 and 3
// both output 'a.png'; they cannot both be staged at after/render/a.png").
[[nodiscard]] absl::StatusOr<std::vector<v1::Input>> AfterInputs(
    store::Store& store, const std::vector<core::JobId>& after);

}  // namespace idlepool::coordinator
