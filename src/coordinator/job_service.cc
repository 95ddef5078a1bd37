#include "coordinator/job_service.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "blob/blob.h"
#include "coordinator/attempt_views.h"
#include "coordinator/job_after.h"
#include "coordinator/job_owner.h"
#include "coordinator/job_request.h"
#include "coordinator/planner.h"
#include "coordinator/timeline.h"
#include "spdlog/spdlog.h"
#include "spec/profile_key.h"
#include "spec/spec.h"
#include "status_convert.h"
#include "text/utf8.h"
#include "wire/wire.h"

namespace idlepool::coordinator {
namespace {

// GetJobTimeline: attempts by default and at most (TimelineRequest.max_attempts), and events.
constexpr uint32_t kTimelineMaxAttempts = 20000;
constexpr size_t kTimelineMaxEvents = 100000;
// Log tails a timeline carries in all, the newest attempts' first (GetTaskLog has the others'):
// 20,000 attempts with 4 KiB tails would make an 80 MB timeline.
constexpr size_t kTimelineLogTailBytes = 4 << 20;

// What a submission may write to the store, counted against the data dir's reserve (blob/space.h):
// its spec twice (the WAL, then the database at the next checkpoint) and a row per task.
constexpr uint64_t kStoreBytesPerTask = 256;
uint64_t SubmitStoreBytes(size_t spec_bytes, size_t tasks) {
  return 2 * (uint64_t{spec_bytes} + kStoreBytesPerTask * uint64_t{tasks});
}

// The first of `attempts` whose log tail a timeline carries: the newest ones within the budget.
size_t FirstWithLogTail(const std::vector<store::AttemptRecord>& attempts, size_t first) {
  size_t bytes = 0;
  for (size_t i = attempts.size(); i > first; --i) {
    bytes += attempts[i - 1].log_tail.size();
    if (bytes > kTimelineLogTailBytes) return i;
  }
  return first;
}

const char* WorkerStateName(core::WorkerState s) {
  return s == core::WorkerState::kConnected      ? "connected"
         : s == core::WorkerState::kDisconnected ? "disconnected"
         : s == core::WorkerState::kLeft         ? "left"
                                                 : "lost";
}

// The first failed tasks of a job onto its status (GetJob): at most kFailedTasksInStatus.
grpc::Status AddFailedTasks(store::Store& store, core::JobId id, v1::JobStatus* out) {
  auto page = store.ListFailedTasks({id, std::nullopt, kFailedTasksInStatus + 1});
  if (!page.ok()) return wire::ToGrpc(page.status());
  for (const store::AttemptRecord& a : *page) {
    if (out->failed_tasks_size() == static_cast<int>(kFailedTasksInStatus)) {
      out->set_more_failed_tasks(true);
      break;
    }
    FillFailedTask(a, out->add_failed_tasks());
  }
  return grpc::Status::OK;
}

// One succeeded attempt of a profile (GetProfile).
void AddProfileSample(const store::AttemptRecord& a, v1::ProfileReply* reply) {
  v1::ProfileSample* p = reply->add_samples();
  p->set_worker(a.worker);
  p->set_job(a.task.job);
  p->set_task(a.task.index);
  p->set_attempt(a.attempt);
  p->set_stage_ms(a.timing.stage_ms);
  p->set_run_ms(a.timing.run_ms);
  p->set_upload_ms(a.timing.upload_ms);
  p->set_resumed(a.timing.resumed);
  p->set_wall_ms(static_cast<uint64_t>(std::max<int64_t>(a.ended_ms - a.started_ms, 0)));
  p->set_ended_ms(a.ended_ms);
  ToProto(a.transfer, p->mutable_transfer());
}

// One job the samples of a profile come from (GetProfile).
void AddProfileJob(core::JobId id, const store::JobRecord& rec, v1::ProfileReply* reply) {
  v1::ProfileJob* j = reply->add_jobs();
  j->set_job(id);
  j->set_name(rec.name);
  j->set_state(core::ToString(rec.state));
  j->set_tasks(rec.sched.task_count);
  j->set_input_bytes(rec.input_bytes);
  j->set_input_files(rec.input_files);
  j->set_profile_key(rec.profile_key);
}

core::RetryBackoff RetryOf(const spec::JobSpec& spec) {
  auto ms = [](double s) { return core::Millis(static_cast<int64_t>(s * 1000)); };
  return core::RetryBackoff{ms(spec.backoff_s), ms(spec.max_backoff_s)};
}

}  // namespace

grpc::Status JobService::ResolveAfterOf(const spec::JobSpec& spec, core::JobSubmitted& sched,
                                        v1::JobSpec& stored) {
  auto ids = ResolveAfter(d_.store, spec.after);
  if (!ids.ok()) return wire::ToGrpc(ids.status());
  sched.after = *ids;
  stored.clear_after();
  for (const core::JobId id : *ids) stored.add_after(absl::StrCat(id));
  return grpc::Status::OK;
}

grpc::Status JobService::MayChange(core::JobId job, const trust::Principal& who,
                                   std::string_view action) {
  absl::StatusOr<store::JobRecord> header = d_.store.GetJobHeader(job);
  if (absl::IsNotFound(header.status())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", job));
  }
  if (!header.ok()) return wire::ToGrpc(header.status());
  return MayChangeJob(*header, who, action);
}

grpc::Status JobService::SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req,
                                   v1::SubmitJobReply* reply) {
  trust::Principal who;
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/SubmitJob", &who); !st.ok()) return st;
  const v1::JobSpec& proto = req->spec();
  // From the inputs' check until the core knows the job, no collection or delete runs
  // (collector.h).
  std::shared_lock<std::shared_mutex> guard;
  if (d_.collector != nullptr) guard = d_.collector->SubmitGuard();
  absl::StatusOr<CheckedJob> checked = CheckSubmitJob(d_.blobs, proto);
  if (!checked.ok()) return wire::ToGrpc(checked.status());
  const spec::JobSpec& spec = checked->spec;
  store::NewJob job;
  job.name = spec.name;
  job.spec = proto.SerializeAsString();  // again below, with `after` resolved
  job.sched.task_count = static_cast<uint32_t>(checked->tasks.size());
  job.sched.resources = spec.resources;
  job.sched.max_attempts = spec.max_attempts;
  job.sched.timeout = std::chrono::seconds(spec.timeout_s);
  if (!spec.service) job.sched.retry = RetryOf(spec);
  job.sched.hold_off_after = spec.hold_off_after;
  job.sched.user = who.user;
  job.sched.priority = spec.priority;
  v1::JobSpec stored = proto;  // `after` resolved to ids: a name means the job it named at submit
  if (grpc::Status st = ResolveAfterOf(spec, job.sched, stored); !st.ok()) return st;
  job.service = spec.service;
  if (spec.service) {  // its replicas: the minimum until scaled (autoscaling is not built yet)
    job.sched.service =
        core::ServiceShape{spec.service->min_replicas, spec.service->replicas_per_machine};
  }
  std::vector<std::string> input_hashes;
  for (const auto& in : proto.inputs()) {
    job.sched.inputs.push_back(core::BlobRef{in.sha256(), in.size()});
    input_hashes.push_back(in.sha256());
    job.input_bytes += in.size();
  }
  job.input_files = static_cast<uint32_t>(proto.inputs_size());
  absl::StatusOr<CheckedTaskInputs> own =
      CheckTaskInputs(d_.blobs, proto, job.sched.task_count, req->task_inputs());
  if (!own.ok()) return wire::ToGrpc(own.status());
  job.task_inputs = std::move(own->rows);
  job.sched.task_inputs = std::move(own->blobs);
  job.profile_key = spec::ProfileKeyOf(spec, std::move(input_hashes));
  if (spec.service) {
    if (grpc::Status st = CheckServiceUnique(proto); !st.ok()) return st;
  }
  if (absl::Status st =
          d_.blobs.CheckRoom(SubmitStoreBytes(job.spec.size(), checked->tasks.size()),
                             absl::StrCat("job '", spec.name, "'"), blob::kSubmitReserveMultiple);
      !st.ok()) {
    spdlog::warn("{}", std::string(st.message()));
    return wire::ToGrpc(st);
  }
  if (absl::Status st = d_.users
                            ? d_.users->CheckSubmit(who.user, job.sched.task_count, job.input_bytes)
                            : absl::OkStatus();
      !st.ok()) {
    return wire::ToGrpc(st);
  }
  job.spec = stored.SerializeAsString();
  auto id = d_.store.InsertJob(job, d_.clock.WallMs());
  if (!id.ok()) {
    spdlog::warn("job '{}' refused: the store cannot record it: {}", spec.name,
                 std::string(id.status().message()));
    return wire::ToGrpc(id.status());
  }
  // Durable now. Hand it to the core and answer once the core knows it, so a status call
  // right after submit always finds the job.
  job.sched.job = *id;
  uint32_t count = job.sched.task_count;
  auto info = std::make_shared<JobInfo>(JobInfo{stored, std::move(checked->tasks)});
  info->task_inputs = !job.task_inputs.empty();
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  d_.core.PostItem(CoreItem{core::Event(job.sched), [this, info, id = *id, done] {
                              if (d_.serve && info->spec.has_service()) {
                                d_.serve->ServiceStarted(id, info->spec);
                              }
                              d_.core.jobs()[id] = std::move(*info);
                              done->set_value();
                            }});
  fut.wait();
  // Held until the core knows the job: a delete (collector.h, exclusive) checks the core for
  // jobs that run after the one it deletes, so it must not run between the insert and here.
  if (guard.owns_lock()) guard.unlock();
  spdlog::info("job {} '{}' submitted by {}: {} tasks{}", *id, spec.name, who.user, count,
               stored.after().empty()
                   ? ""
                   : absl::StrCat(", after jobs ", absl::StrJoin(stored.after(), ", ")));
  d_.predictor.Await(*id, proto, count);
  reply->set_job(*id);
  reply->set_tasks(count);
  return grpc::Status::OK;
}

grpc::Status JobService::GetJob(grpc::ServerContext* ctx, const v1::JobRef* req,
                                v1::JobStatus* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/GetJob"); !st.ok()) return st;
  return FillJobStatus(req->job(), /*with_failures=*/true, reply);
}

grpc::Status JobService::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest*,
                                  v1::ListJobsReply* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/ListJobs"); !st.ok()) return st;
  return ListJobsInternal(reply);
}

// Every job: one core query for the summaries and one store query for the headers (never a
// query per job).
grpc::Status JobService::ListJobsInternal(v1::ListJobsReply* reply) {
  auto jobs =
      d_.core.Query<std::vector<core::JobSummary>>([this] { return d_.core.sched().Jobs(); });
  auto headers = d_.store.ListJobs();
  if (!headers.ok()) return wire::ToGrpc(headers.status());
  auto h = headers->begin();  // both by job id
  for (const auto& s : jobs) {
    while (h != headers->end() && h->id < s.job) ++h;
    if (h == headers->end() || h->id != s.job) continue;  // submitted after the store was read
    v1::JobStatus* out = reply->add_jobs();
    FillSummary(s, *h, out);
    FillAfter(
        s, *h,
        [&](core::JobId dep) -> std::optional<store::JobRecord> {
          auto d =
              std::lower_bound(headers->begin(), headers->end(), dep,
                               [](const store::JobRecord& r, core::JobId v) { return r.id < v; });
          return d != headers->end() && d->id == dep ? std::optional(*d) : std::nullopt;
        },
        out);
  }
  return grpc::Status::OK;
}

grpc::Status JobService::ListOutputs(grpc::ServerContext* ctx, const v1::JobRef* req,
                                     grpc::ServerWriter<v1::ListOutputsReply>* writer) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/ListOutputs"); !st.ok()) return st;
  auto job = d_.store.GetJobHeader(req->job());
  if (absl::IsNotFound(job.status())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", req->job()));
  }
  if (!job.ok()) return wire::ToGrpc(job.status());
  auto outputs = d_.store.ListOutputs(req->job());
  if (!outputs.ok()) return wire::ToGrpc(outputs.status());
  constexpr int kTasksPerPage = 10000;
  constexpr size_t kPageBytes = 16 << 20;  // well under the 128 MiB message limit
  size_t page_bytes = 0;
  v1::ListOutputsReply page;
  page.set_state(core::ToString(job->state));
  v1::TaskOutputs* cur = nullptr;
  for (const auto& o : *outputs) {
    if (!cur || cur->index() != o.index) {
      if (page.tasks_size() == kTasksPerPage || page_bytes > kPageBytes) {
        if (!writer->Write(page)) return grpc::Status::OK;
        page.clear_tasks();
        page_bytes = 0;
      }
      cur = page.add_tasks();
      cur->set_index(o.index);
    }
    auto* f = cur->add_files();
    f->set_path(o.file.path);
    f->set_sha256(o.file.sha256);
    f->set_size(o.file.size);
    page_bytes += o.file.path.size() + 96;  // path, hash, size and framing, roughly
  }
  writer->Write(page);
  return grpc::Status::OK;
}

grpc::Status JobService::ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest*,
                                     v1::ListWorkersReply* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/ListWorkers"); !st.ok()) return st;
  return ListWorkersInternal(reply);
}

grpc::Status JobService::ListWorkersInternal(v1::ListWorkersReply* reply) {
  auto now = d_.clock.Now();
  auto workers =
      d_.core.Query<std::vector<core::WorkerView>>([this] { return d_.core.sched().Workers(); });
  for (const auto& w : workers) {
    auto* out = reply->add_workers();
    out->set_worker(w.worker);
    out->set_state(WorkerStateName(w.state));
    *out->mutable_capacity() = wire::ToProto(w.capacity);
    out->set_allow_host_network(w.capacity.host_network);
    for (const std::string& u : w.accept_users) out->add_accept_users(u);
    for (const std::string& u : w.refuse_users) out->add_refuse_users(u);
    out->set_slots_busy(w.slots_busy);
    out->set_attempts_running(w.attempts_running);
    out->set_last_seen_ms_ago((now - w.last_seen).count());
    out->set_accepting(w.accepting);
    out->set_owner_state(w.owner_state);
    out->set_owner_reason(w.owner_reason);
    out->set_owner_cause(w.owner_cause);
    out->set_stalled(w.stalled);
    out->set_activity(
        WorkerActivity({out->state(), w.owner_state, w.owner_cause, w.attempts_running}));
    if (!w.unhealthy.empty()) {  // its own word on the dashboard (and STATE in `workers`)
      out->set_unhealthy(text::TruncateUtf8(w.unhealthy, 1024));
      out->set_unhealthy_ms_left(std::max<int64_t>(0, (w.unhealthy_until - now).count()));
      if (out->state() == "connected") out->set_activity("unhealthy");
    }
    for (uint32_t i : w.gpus_busy) out->add_gpus_busy(i);
    out->set_cache_bytes(w.cache_bytes);
    out->set_cache_blobs(w.cache_blobs);
    d_.sessions.Describe(w.state == core::WorkerState::kConnected, out);
  }
  // Measurements, and the workers known only from the store (not seen since this start).
  d_.book.FillWorkers(now, reply);
  return grpc::Status::OK;
}

grpc::Status JobService::CancelJob(grpc::ServerContext* ctx, const v1::JobRef* req,
                                   v1::CancelJobReply* reply) {
  trust::Principal who;
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/CancelJob", &who); !st.ok()) return st;
  auto known =
      d_.core.Query<bool>([this, id = req->job()] { return d_.core.sched().Job(id).has_value(); });
  if (!known) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", req->job()));
  }
  if (grpc::Status st = MayChange(req->job(), who, "cancel"); !st.ok()) return st;
  // Answer only once the cancellation is committed: a cancel acknowledged and then undone by
  // a crash would run the job again.
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  d_.core.PostItem(CoreItem{core::Event(core::JobCancelled{req->job()}), nullptr,
                            [done] { done->set_value(); }});
  fut.wait();
  auto state = d_.core.Query<std::string>([this, id = req->job()] {
    auto s = d_.core.sched().Job(id);
    return std::string(s ? core::ToString(s->state) : "unknown");
  });
  reply->set_state(state);
  return grpc::Status::OK;
}

grpc::Status JobService::PlanJob(grpc::ServerContext* ctx, const v1::PlanRequest* req,
                                 v1::PlanReply* reply) {
  trust::Principal who;
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/PlanJob", &who); !st.ok()) return st;
  const v1::JobSpec& proto = req->spec();
  absl::StatusOr<CheckedPlan> checked = CheckPlanJob(*req);
  if (!checked.ok()) return wire::ToGrpc(checked.status());
  const spec::JobSpec& spec = checked->spec;
  std::vector<std::string> only(req->workers().begin(), req->workers().end());
  std::string unknown;
  // Only the machines whose owners lend to the caller's user (a worker's token has none: all).
  std::vector<PlanWorker> workers = d_.predictor.GatherPlanWorkers(
      proto, only, &unknown,
      who.user.empty() ? std::nullopt : std::optional<std::string>(who.user));
  if (!unknown.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("worker '", unknown,
                                     "' is not connected and accepting work (see `idlepool "
                                     "workers`)"));
  }
  uint32_t fit = 0;
  for (const PlanWorker& w : workers) fit += SlotsFor(w.capacity, spec.resources) > 0 ? 1 : 0;
  reply->set_workers_available(fit);
  const std::string key = ProfileKeyOf(proto, spec);
  reply->set_profile_key(key);
  PlanJobFacts facts = FactsOf(proto, spec, checked->tasks);
  if (req->task_s() > 0) facts.task_s = req->task_s();
  if (req->has_output_bytes()) facts.output_bytes = static_cast<double>(req->output_bytes());
  auto samples = d_.store.ListSucceededAttempts({key, 0, kPlanSamples});
  if (!samples.ok()) return wire::ToGrpc(samples.status());
  auto p = coordinator::Predict(facts, workers, *samples,
                                facts.task_s ? "given task time" : HistoryBasis(*samples, 0),
                                d_.clock.WallMs());
  if (!p.ok()) {
    if (absl::IsFailedPrecondition(p.status()) && fit > 0) {
      reply->set_needs_calibration(true);
      return grpc::Status::OK;
    }
    return wire::ToGrpc(p.status());
  }
  *reply->mutable_prediction() = std::move(*p);
  return grpc::Status::OK;
}

grpc::Status JobService::GetProfile(grpc::ServerContext* ctx, const v1::ProfileRequest* req,
                                    v1::ProfileReply* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/GetProfile"); !st.ok()) return st;
  constexpr uint32_t kDefaultSamples = 200, kMaxSamples = 5000;
  store::SucceededAttemptsQuery q;
  q.job = req->job();
  if (q.job != 0 && !req->profile_key().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "GetProfile: give a job or a profile key, not both");
  }
  if (q.job == 0) {
    if (!blob::IsSha256Hex(req->profile_key())) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "GetProfile: profile_key must be 64 lowercase hex digits (or give a "
                          "job)");
    }
    q.profile_key = req->profile_key();
  }
  q.limit = req->max_samples() == 0 ? kDefaultSamples : std::min(req->max_samples(), kMaxSamples);
  std::set<core::JobId> job_ids;
  if (q.job != 0) {
    auto rec = d_.store.GetJobHeader(q.job);
    if (absl::IsNotFound(rec.status())) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", q.job));
    }
    if (!rec.ok()) return wire::ToGrpc(rec.status());
    reply->set_profile_key(rec->profile_key);
    job_ids.insert(q.job);
  } else {
    reply->set_profile_key(q.profile_key);
  }
  auto attempts = d_.store.ListSucceededAttempts(q);
  if (!attempts.ok()) return wire::ToGrpc(attempts.status());
  for (const store::AttemptRecord& a : *attempts) {
    AddProfileSample(a, reply);
    job_ids.insert(a.task.job);
  }
  for (core::JobId id : job_ids) {
    auto rec = d_.store.GetJobHeader(id);
    if (!rec.ok()) return wire::ToGrpc(rec.status());
    AddProfileJob(id, *rec, reply);
  }
  return grpc::Status::OK;
}

grpc::Status JobService::GetJobTimeline(grpc::ServerContext* ctx, const v1::TimelineRequest* req,
                                        v1::JobTimeline* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/GetJobTimeline"); !st.ok()) return st;
  return GetJobTimelineInternal(*req, reply);
}

// A job's attempts (log tails included) and the events of the workers that ran them, from its
// submission to its end (now while it runs).
grpc::Status JobService::GetJobTimelineInternal(const v1::TimelineRequest& req,
                                                v1::JobTimeline* reply) {
  const core::JobId job = req.job();
  if (auto st = FillJobStatus(job, /*with_failures=*/true, reply->mutable_job()); !st.ok()) {
    return st;
  }
  const int64_t now_ms = d_.clock.WallMs();
  reply->set_now_ms(now_ms);
  auto attempts = d_.store.ListAttempts(job);
  if (!attempts.ok()) return wire::ToGrpc(attempts.status());
  const std::vector<uint64_t> next = NextAttempts(*attempts);  // before any is dropped
  const uint32_t max_attempts = req.max_attempts() == 0
                                    ? kTimelineMaxAttempts
                                    : std::min(req.max_attempts(), kTimelineMaxAttempts);
  const size_t first = attempts->size() > max_attempts ? attempts->size() - max_attempts : 0;
  if (first > 0) reply->set_truncated(true);  // ListAttempts is by id: the newest are last
  std::set<std::string> workers;
  const size_t with_tails = FirstWithLogTail(*attempts, first);
  for (size_t i = first; i < attempts->size(); ++i) {
    workers.insert((*attempts)[i].worker);
    FillTimelineAttempt((*attempts)[i], next[i], i >= with_tails, reply->add_attempts());
  }
  if (workers.empty()) return grpc::Status::OK;
  return AddTimelineEvents(workers, now_ms, reply);
}

grpc::Status JobService::AddTimelineEvents(const std::set<std::string>& workers, int64_t now_ms,
                                           v1::JobTimeline* reply) {
  store::WorkerEventsQuery q;
  q.workers.assign(workers.begin(), workers.end());
  q.from_ms = reply->job().submitted_ms();
  q.to_ms = reply->job().finished_ms() > 0 ? reply->job().finished_ms() : now_ms;
  q.limit = kTimelineMaxEvents + 1;
  auto events = d_.store.ListWorkerEvents(q);
  if (!events.ok()) return wire::ToGrpc(events.status());
  const size_t skip = events->size() > kTimelineMaxEvents ? events->size() - kTimelineMaxEvents : 0;
  if (skip > 0) reply->set_truncated(true);
  for (size_t i = skip; i < events->size(); ++i) {
    const store::WorkerEvent& e = (*events)[i];
    v1::WorkerEvent* o = reply->add_events();
    o->set_worker(e.worker);
    o->set_at_ms(e.at_ms);
    o->set_kind(e.kind);
    o->set_state(e.state);
    o->set_cause(e.cause);
    o->set_reason(e.reason);
  }
  return grpc::Status::OK;
}

grpc::Status JobService::FillJobStatus(core::JobId id, bool with_failures, v1::JobStatus* out) {
  auto summary = d_.core.Query<std::optional<core::JobSummary>>(
      [this, id] { return d_.core.sched().Job(id); });
  if (!summary) return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", id));
  auto rec = d_.store.GetJobHeader(id);  // never the spec: this runs on every poll
  if (!rec.ok()) return wire::ToGrpc(rec.status());
  FillSummary(*summary, *rec, out);
  FillAfter(
      *summary, *rec,
      [this](core::JobId dep) -> std::optional<store::JobRecord> {
        auto h = d_.store.GetJobHeader(dep);
        return h.ok() ? std::optional<store::JobRecord>(std::move(*h)) : std::nullopt;
      },
      out);
  if (!with_failures) return grpc::Status::OK;  // ListJobs stays small
  auto own = d_.store.GetTaskInputTotals(id);
  if (!own.ok()) return wire::ToGrpc(own.status());
  out->set_task_input_bytes(own->bytes);
  if (auto p = d_.predictor.PredictionOf(id)) *out->mutable_prediction() = std::move(*p);
  if (summary->failed > 0) return AddFailedTasks(d_.store, id, out);
  return grpc::Status::OK;
}

void JobService::FillSummary(const core::JobSummary& summary, const store::JobRecord& rec,
                             v1::JobStatus* out) {
  out->set_job(summary.job);
  out->set_name(rec.name);
  out->set_user(rec.sched.user);
  out->set_priority(rec.sched.priority);
  out->set_state(core::ToString(summary.state));
  out->set_tasks(summary.tasks);
  out->set_pending(summary.pending);
  out->set_running(summary.running);
  out->set_succeeded(summary.succeeded);
  out->set_failed(summary.failed);
  out->set_cancelled(summary.cancelled);
  out->set_attempts(summary.counters.attempts);
  out->set_failures(summary.counters.failures);
  out->set_preemptions(summary.counters.preemptions);
  out->set_attempts_lost(summary.counters.lost);
  out->set_workers_lost(summary.workers_lost);
  out->set_fits_no_worker(summary.fits_no_worker);
  out->set_host_network(summary.host_network);
  out->set_host_network_refused(summary.host_network_refused);
  out->set_suspensions(summary.counters.suspensions);
  out->set_lost_ms(static_cast<uint64_t>(summary.counters.lost_work.count()));
  out->set_machine_faults(summary.counters.machine_faults);
  for (const core::HeldOff& h : summary.held_off) {
    v1::HeldOffWorker* w = out->add_held_off();
    w->set_worker(h.worker);
    w->set_failures(h.failures);
    w->set_last_error(text::TruncateUtf8(h.last_error, 1024));
  }
  ToProto(summary.counters.transfer, out->mutable_transfer());
  if (summary.quota != core::QuotaHold::kNone && out->reason().empty()) {
    const std::string who = rec.sched.user.empty() ? "(none)" : rec.sched.user;
    out->set_reason(absl::StrCat(
        "its tasks wait: user ", who, " holds its quota of ",
        summary.quota == core::QuotaHold::kMaxSlots ? "max_slots" : "max_gpus",
        " (`idlepool users`); the next one starts when one of the user's attempts ends"));
  }
  out->set_profile_key(rec.profile_key);
  out->set_submitted_ms(rec.submitted_ms);
  out->set_finished_ms(rec.finished_ms);
}

grpc::Status JobService::ListFailedTasks(grpc::ServerContext* ctx,
                                         const v1::FailedTasksRequest* req,
                                         v1::FailedTasksPage* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/ListFailedTasks"); !st.ok()) return st;
  return ListFailedTasksInternal(*req, reply);
}

grpc::Status JobService::ListFailedTasksInternal(const v1::FailedTasksRequest& req,
                                                 v1::FailedTasksPage* reply) {
  const core::JobId id = req.job();
  auto summary = d_.core.Query<std::optional<core::JobSummary>>(
      [this, id] { return d_.core.sched().Job(id); });
  if (!summary) return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job ", id));
  const uint32_t limit =
      req.limit() == 0 ? kFailedTasksPage : std::min(req.limit(), kFailedTasksPageMax);
  store::FailedTasksQuery q{id, std::nullopt, size_t{limit} + 1};
  if (req.has_after_task()) q.after_task = req.after_task();
  auto page = d_.store.ListFailedTasks(q);
  if (!page.ok()) return wire::ToGrpc(page.status());
  reply->set_job(id);
  reply->set_total(summary->failed);
  for (const store::AttemptRecord& a : *page) {
    if (reply->tasks_size() == static_cast<int>(limit)) {
      reply->set_more(true);
      break;
    }
    FillFailedTask(a, reply->add_tasks());
  }
  return grpc::Status::OK;
}

grpc::Status JobService::GetTaskLog(grpc::ServerContext* ctx, const v1::TaskRef* req,
                                    v1::TaskLog* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/GetTaskLog"); !st.ok()) return st;
  return GetTaskLogInternal(*req, reply);
}

grpc::Status JobService::GetTaskLogInternal(const v1::TaskRef& req, v1::TaskLog* reply) {
  auto attempts = d_.store.ListTaskAttempts({req.job(), req.task()}, kTaskLogAttempts);
  if (absl::IsNotFound(attempts.status())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("no task ", req.task(), " in job ", req.job()));
  }
  if (!attempts.ok()) return wire::ToGrpc(attempts.status());
  reply->set_job(req.job());
  reply->set_task(req.task());
  reply->set_state(core::ToString(attempts->state));
  reply->set_attempts_total(static_cast<uint32_t>(std::min<uint64_t>(attempts->total, UINT32_MAX)));
  const auto& list = attempts->attempts;
  for (size_t i = 0; i < list.size(); ++i) {
    const uint64_t next = i + 1 < list.size() ? list[i + 1].attempt : 0;
    FillTimelineAttempt(list[i], next, /*with_log_tail=*/true, reply->add_attempts());
  }
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
