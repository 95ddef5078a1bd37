// Jobs.SetPriority and Jobs.ListUsers: a shared pool's calls (users.proto). SetPriority is
// persisted first, then handed to the core (core::JobPriority) and answered once applied, like a
// scale: an acknowledged change survives a restart.
#include <future>
#include <memory>

#include "absl/strings/str_cat.h"
#include "coordinator/job_service.h"
#include "coordinator/served_recorder.h"
#include "status_convert.h"
#include "text/names.h"
#include "wire/wire.h"

namespace idlepool::coordinator {

namespace {
constexpr int32_t kMaxPriority = 1000;  // as the spec's `priority`
}  // namespace

grpc::Status JobService::SetPriority(grpc::ServerContext* ctx, const v1::PriorityRequest* req,
                                     v1::PriorityReply* reply) {
  trust::Principal who;
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/SetPriority", &who); !st.ok()) return st;
  if (req->priority() < -kMaxPriority || req->priority() > kMaxPriority) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("field 'priority': must be between -", kMaxPriority, " and ",
                                     kMaxPriority, ", got ", req->priority()));
  }
  const uint64_t id = req->job();
  if (grpc::Status st = MayChange(id, who, "re-prioritise"); !st.ok()) return st;
  absl::StatusOr<store::JobRecord> header = d_.store.GetJobHeader(id);
  if (!header.ok()) return wire::ToGrpc(header.status());
  if (header->state != core::JobState::kRunning) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("job ", id, " is ", core::ToString(header->state),
                                     ": only a running job's priority matters"));
  }
  if (absl::Status st = d_.store.SetJobPriority(id, req->priority()); !st.ok()) {
    return wire::ToGrpc(st);
  }
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  d_.core.PostItem(CoreItem{core::Event(core::JobPriority{id, req->priority()}), nullptr,
                            [done] { done->set_value(); }});
  fut.wait();
  reply->set_previous(header->sched.priority);
  return grpc::Status::OK;
}

grpc::Status JobService::ListUsers(grpc::ServerContext* ctx, const v1::ListUsersRequest*,
                                   v1::ListUsersReply* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/ListUsers"); !st.ok()) return st;
  return ListUsersInternal(reply);
}

grpc::Status JobService::GetUsage(grpc::ServerContext* ctx, const v1::UsageRequest* req,
                                  v1::UsageReply* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/GetUsage"); !st.ok()) return st;
  return GetUsageInternal(*req, reply);
}

grpc::Status JobService::GetUsageInternal(const v1::UsageRequest& req, v1::UsageReply* reply) {
  if (req.by() != "" && req.by() != "user" && req.by() != "worker") {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("field 'by': 'user' or 'worker', not '",
                                     text::VisibleText(req.by().substr(0, 40)), "'"));
  }
  if (req.since_unix_s() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "field 'since_unix_s': must be >= 0");
  }
  const int64_t since_day = req.since_unix_s() / 86400;
  const store::UsageBy by = req.by() == "worker" ? store::UsageBy::kWorker : store::UsageBy::kUser;
  if (d_.served) d_.served->Save();  // what the gateway served so far counts too
  absl::StatusOr<std::vector<store::UsageTotals>> rows = d_.store.ListUsage(since_day, by);
  if (!rows.ok()) return wire::ToGrpc(rows.status());
  for (const store::UsageTotals& t : *rows) {
    v1::UsageRow* r = reply->add_rows();
    r->set_key(t.key);
    r->set_slot_s(static_cast<double>(t.slot_ms) / 1000.0);
    r->set_gpu_s(static_cast<double>(t.gpu_ms) / 1000.0);
    r->set_attempts(t.attempts);
    r->set_tasks(t.tasks);
    r->set_preempted(t.preempted);
    r->set_bytes_in(t.bytes_in);
    r->set_bytes_out(t.bytes_out);
    r->set_requests(t.requests);
    r->set_tokens(t.tokens);
  }
  reply->set_since_unix_s(since_day * 86400);
  return grpc::Status::OK;
}

grpc::Status JobService::ListUsersInternal(v1::ListUsersReply* reply) {
  if (d_.users == nullptr) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no users here");
  d_.users->List(reply);
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
