// Jobs.ScaleService (issue 17): how many replicas a service runs, changed by `idlepool scale`.
// Persisted first, then handed to the core (core::ScaleService), answered once the core has
// applied it: a scale acknowledged is never undone by a coordinator restart.
#include <future>
#include <memory>

#include "absl/strings/str_cat.h"
#include "coordinator/job_service.h"
#include "status_convert.h"
#include "wire/wire.h"

namespace idlepool::coordinator {

grpc::Status JobService::ScaleService(grpc::ServerContext* ctx, const v1::ScaleRequest* req,
                                      v1::ScaleReply* reply) {
  trust::Principal who;
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/ScaleService", &who); !st.ok()) return st;
  const uint64_t id = req->job();
  if (grpc::Status st = MayChange(id, who, "scale"); !st.ok()) return st;
  auto job = d_.core.Query<std::optional<core::JobSummary>>(
      [this, id] { return d_.core.sched().Job(id); });
  if (!job) return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", id));
  if (!job->service) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("job ", id, " is not a service: only a service scales"));
  }
  if (job->state != core::JobState::kRunning) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("service ", id, " is ", core::ToString(job->state)));
  }
  if (req->replicas() > job->tasks) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("field 'replicas': service ", id, " may run at most ",
                                     job->tasks, " replicas (its max_replicas), not ",
                                     req->replicas()));
  }
  if (absl::Status st = d_.store.ScaleService(id, req->replicas()); !st.ok()) {
    return wire::ToGrpc(st);
  }
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  d_.core.PostItem(CoreItem{core::Event(core::ScaleService{id, req->replicas()}), nullptr,
                            [done] { done->set_value(); }});
  fut.wait();
  reply->set_replicas(req->replicas());
  reply->set_max_replicas(job->tasks);
  return grpc::Status::OK;
}

grpc::Status JobService::CheckServiceUnique(const v1::JobSpec& spec) {
  const std::string clash = d_.core.Query<std::string>([this, &spec]() -> std::string {
    for (const auto& [id, info] : d_.core.jobs()) {
      if (!info.spec.has_service()) continue;
      if (info.spec.name() == spec.name()) {
        return absl::StrCat("a service named '", spec.name(), "' is running (job ", id,
                            "): cancel it first, or give this one another name");
      }
      const std::string& model = spec.service().model();
      if (!model.empty() && info.spec.service().model() == model) {
        return absl::StrCat("field 'service.model': model '", model,
                            "' is already served by service '", info.spec.name(), "' (job ", id,
                            ")");
      }
    }
    return "";
  });
  if (clash.empty()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, clash);
}

}  // namespace idlepool::coordinator
