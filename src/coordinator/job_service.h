// The Jobs service: the clients' calls (SubmitJob, GetJob, ListJobs, ListOutputs, ListWorkers,
// CancelJob, GetProfile, PlanJob, GetJobTimeline, ListFailedTasks, GetTaskLog, TaskLogs), and the
// same reads without the token check for the HTTP server (dashboard, JSON API, /metrics).
//
// Threads: gRPC's and the HTTP server's handler threads, concurrently; it asks the core thread
// through CoreLoop::Query/PostItem and never runs on it. Holds references (each must outlive
// it) to the token check, the core loop, the store, the blob store, the predictor, the worker
// book, the session registry and the clock; no state of its own. Errors: gRPC statuses whose
// codes and messages clients and tests rely on.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "blob/store.h"
#include "coordinator/auth.h"
#include "coordinator/collector.h"
#include "coordinator/core_loop.h"
#include "coordinator/log_keeper.h"
#include "coordinator/predictor.h"
#include "coordinator/serve_bridge.h"
#include "coordinator/sessions.h"
#include "coordinator/user_book.h"
#include "coordinator/worker_book.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "spec/spec.h"
#include "store/store.h"

namespace idlepool::coordinator {

class ServedRecorder;

struct JobServiceDeps {
  const Authorizer& authz;
  CoreLoop& core;
  store::Store& store;
  blob::BlobStore& blobs;
  Predictor& predictor;
  WorkerBook& book;
  SessionRegistry& sessions;
  const platform::Clock& clock;
  ServeBridge* serve = nullptr;  // the gateway's view of services; null: serving off
  const trust::CertificateAuthority* ca = nullptr;  // certifies gateways (WatchGateway)
  Collector* collector = nullptr;  // DeleteJob, CollectGarbage, SubmitJob's guard; null: none
  LogKeeper* logs = nullptr;  // attempts' output (TaskLogs); null: UNIMPLEMENTED
  UserBook* users = nullptr;  // shares and quotas (SubmitJob's check, ListUsers); null: none
  ServedRecorder* served = nullptr;  // saved before usage is read (GetUsage); null: none
};

class JobService final : public v1::Jobs::Service {
 public:
  explicit JobService(JobServiceDeps deps) : d_(deps) {}

  grpc::Status SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req,
                         v1::SubmitJobReply* reply) override;
  grpc::Status GetJob(grpc::ServerContext* ctx, const v1::JobRef* req,
                      v1::JobStatus* reply) override;
  grpc::Status ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                        v1::ListJobsReply* reply) override;
  grpc::Status ListOutputs(grpc::ServerContext* ctx, const v1::JobRef* req,
                           grpc::ServerWriter<v1::ListOutputsReply>* writer) override;
  grpc::Status ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req,
                           v1::ListWorkersReply* reply) override;
  grpc::Status CancelJob(grpc::ServerContext* ctx, const v1::JobRef* req,
                         v1::CancelJobReply* reply) override;
  // service_scale.cc
  // ALREADY_EXISTS when a running service has the same name (its /services/NAME/ route) or,
  // for an openai service, the same model.
  grpc::Status CheckServiceUnique(const v1::JobSpec& spec);
  grpc::Status ScaleService(grpc::ServerContext* ctx, const v1::ScaleRequest* req,
                            v1::ScaleReply* reply) override;
  // service_list.cc
  grpc::Status ListServices(grpc::ServerContext* ctx, const v1::ListServicesRequest* req,
                            v1::ListServicesReply* reply) override;
  grpc::Status ListServicesInternal(v1::ListServicesReply* reply);
  // gateway_watch.cc
  grpc::Status WatchGateway(grpc::ServerContext* ctx, const v1::WatchGatewayRequest* req,
                            grpc::ServerWriter<v1::GatewayState>* writer) override;
  grpc::Status GetProfile(grpc::ServerContext* ctx, const v1::ProfileRequest* req,
                          v1::ProfileReply* reply) override;
  grpc::Status PlanJob(grpc::ServerContext* ctx, const v1::PlanRequest* req,
                       v1::PlanReply* reply) override;
  grpc::Status GetJobTimeline(grpc::ServerContext* ctx, const v1::TimelineRequest* req,
                              v1::JobTimeline* reply) override;
  grpc::Status ListFailedTasks(grpc::ServerContext* ctx, const v1::FailedTasksRequest* req,
                               v1::FailedTasksPage* reply) override;
  grpc::Status GetTaskLog(grpc::ServerContext* ctx, const v1::TaskRef* req,
                          v1::TaskLog* reply) override;
  // job_delete.cc (issue 18)
  grpc::Status DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req,
                         v1::DeleteJobReply* reply) override;
  grpc::Status CollectGarbage(grpc::ServerContext* ctx, const v1::GcRequest* req,
                              v1::GcReply* reply) override;
  // task_logs.cc: a task's kept or live output (issue 18). NOT_FOUND for an unknown job, task
  // or attempt; INVALID_ARGUMENT for a job of several tasks and no task.
  grpc::Status TaskLogs(grpc::ServerContext* ctx, const v1::LogRequest* req,
                        grpc::ServerWriter<v1::LogData>* writer) override;

  // user_calls.cc (issue 32): a job's priority (its user's token, or an operator's), and the
  // users with their shares, quotas and usage.
  grpc::Status SetPriority(grpc::ServerContext* ctx, const v1::PriorityRequest* req,
                           v1::PriorityReply* reply) override;
  grpc::Status ListUsers(grpc::ServerContext* ctx, const v1::ListUsersRequest* req,
                         v1::ListUsersReply* reply) override;
  grpc::Status ListUsersInternal(v1::ListUsersReply* reply);
  // What ended attempts used since a day, by user or by worker (store::ListUsage).
  grpc::Status GetUsage(grpc::ServerContext* ctx, const v1::UsageRequest* req,
                        v1::UsageReply* reply) override;
  grpc::Status GetUsageInternal(const v1::UsageRequest& req, v1::UsageReply* reply);

  // The reads without the token check (also the HTTP API's).
  grpc::Status ListJobsInternal(v1::ListJobsReply* reply);
  grpc::Status ListWorkersInternal(v1::ListWorkersReply* reply);
  // `with_failures`: GetJob's detail (the prediction, the first failed tasks); ListJobs stays
  // small.
  grpc::Status FillJobStatus(core::JobId id, bool with_failures, v1::JobStatus* out);
  grpc::Status GetJobTimelineInternal(const v1::TimelineRequest& req, v1::JobTimeline* reply);
  grpc::Status ListFailedTasksInternal(const v1::FailedTasksRequest& req,
                                       v1::FailedTasksPage* reply);
  grpc::Status GetTaskLogInternal(const v1::TaskRef& req, v1::TaskLog* reply);
  // The kept output of `attempt` of `job` (at most the keeper's cap and its gap lines), for
  // GET /api/v1/jobs/N/attempts/A/log. NOT_FOUND when the job is unknown or nothing was kept.
  grpc::Status AttemptLogInternal(uint64_t job, uint64_t attempt, std::string* text);

 private:
  // The counters of `summary` and the header fields of `rec` (ListJobs' entry of a job).
  static void FillSummary(const core::JobSummary& summary, const store::JobRecord& rec,
                          v1::JobStatus* out);
  // OK when `who` may `action` job `job` (job_owner.h); NOT_FOUND for an unknown job.
  grpc::Status MayChange(core::JobId job, const trust::Principal& who, std::string_view action);
  // Resolves spec.after (job_after.h) into sched.after and, as ids, into the spec to store.
  grpc::Status ResolveAfterOf(const spec::JobSpec& spec, core::JobSubmitted& sched,
                              v1::JobSpec& stored);
  // The worker events of `workers` during the job's life, onto its timeline.
  grpc::Status AddTimelineEvents(const std::set<std::string>& workers, int64_t now_ms,
                                 v1::JobTimeline* reply);

  JobServiceDeps d_;
};

// The Jobs calls of role admin, served on the data dir's admin socket (admin_service.h: reaching
// it is the credential; no access token has role admin): CollectGarbage (`idlepool gc`). Every
// other Jobs call answers UNIMPLEMENTED there. Threads: gRPC's; holds a reference to the
// collector.
class AdminJobs final : public v1::Jobs::Service {
 public:
  explicit AdminJobs(Collector& collector) : collector_(collector) {}
  grpc::Status CollectGarbage(grpc::ServerContext* ctx, const v1::GcRequest* req,
                              v1::GcReply* reply) override;

 private:
  Collector& collector_;
};

}  // namespace idlepool::coordinator
