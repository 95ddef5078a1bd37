#include "cli/client.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "blob/blob.h"
#include "blob/transfer.h"
#include "cli/client_error.h"
#include "grpc/support/log.h"
#include "grpcpp/grpcpp.h"
#include "platform/clock.h"
#include "spdlog/spdlog.h"
#include "spec/profile_key.h"
#include "spec/spec.h"
#include "status_convert.h"
#include "text/names.h"
#include "text/utf8.h"
#include "trust/grpc_tls.h"
#include "wire/wire.h"

namespace idlepool::cli {
namespace fs = std::filesystem;

void QuietGrpcLog() {
  gpr_set_log_function([](gpr_log_func_args* args) {
    spdlog::debug("grpc: {}:{}: {}", args->file, args->line, args->message);
  });
}

PoolClient::PoolClient(const std::string& address, std::string token, const std::string& ca_pem)
    : address_(address), token_(std::move(token)) {
  QuietGrpcLog();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(128 << 20);
  args.SetMaxSendMessageSize(128 << 20);
  channel_ = grpc::CreateCustomChannel(address, trust::CaOnlyChannelCredentials(ca_pem), args);
  stub_ = v1::Jobs::NewStub(channel_);
  blobs_ = v1::Blobs::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> PoolClient::Context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("x-idlepool-token", token_);
  ctx->set_deadline(platform::DeadlineAfter(std::chrono::seconds(30)));
  return ctx;
}

absl::Status PoolClient::CallError(const grpc::Status& st, const std::string& what) const {
  return ExplainCall(st, address_, what);
}

namespace {

// One file to send: its digest and permission bits, hashed once however often it is named.
struct Hashed {
  blob::FileDigest digest;
  uint32_t mode = 0644;
};

absl::StatusOr<Hashed> HashOnce(const std::string& source, std::map<std::string, Hashed>& seen) {
  if (auto it = seen.find(source); it != seen.end()) return it->second;
  auto d = blob::HashFile(source);
  if (!d.ok()) return d.status();
  struct stat st;
  Hashed h{*d, ::stat(source.c_str(), &st) == 0 ? (st.st_mode & 0777) : 0644u};
  seen.emplace(source, h);
  return h;
}

void FillInput(const Hashed& h, v1::Input* p) {
  p->set_sha256(h.digest.sha256);
  p->set_size(h.digest.size);
  p->set_mode(h.mode);
}

}  // namespace

absl::StatusOr<v1::SubmitJobReply> PoolClient::Submit(const spec::JobSpec& spec,
                                                      const std::string& source_file,
                                                      const TransferProgress& progress) {
  v1::SubmitJobRequest req;
  *req.mutable_spec() = wire::ToProto(spec);
  req.mutable_spec()->set_source(text::TruncateUtf8(source_file, 4096));  // display only
  std::map<std::string, Hashed> hashed;                                   // source path -> digest
  std::map<std::string, std::string> to_send;       // sha256 -> a source holding it
  std::map<std::string, blob::FileDigest> digests;  // sha256 -> digest
  auto add = [&](const spec::Input& in, v1::Input* p) -> absl::Status {
    auto h = HashOnce(in.source, hashed);
    if (!h.ok()) return h.status();
    FillInput(*h, p);
    to_send.emplace(h->digest.sha256, in.source);
    digests.emplace(h->digest.sha256, h->digest);
    return absl::OkStatus();
  };
  for (int i = 0; i < static_cast<int>(spec.inputs.size()); ++i) {
    if (auto s = add(spec.inputs[i], req.mutable_spec()->mutable_inputs(i)); !s.ok()) return s;
  }
  if (!spec.task_inputs.empty()) {
    auto tasks = spec::ExpandTasks(spec);
    if (!tasks.ok()) return tasks.status();
    auto files = spec::ExpandTaskInputs(spec, *tasks);
    if (!files.ok()) return files.status();
    for (const spec::TaskInputFiles& t : *files) {
      v1::TaskInputs* ti = req.add_task_inputs();
      ti->set_task(t.task);
      for (const spec::Input& in : t.inputs) {
        v1::Input* p = ti->add_inputs();
        p->set_path(in.path);
        if (auto s = add(in, p); !s.ok()) return s;
      }
    }
  }
  if (absl::Status s = UploadMissing(to_send, digests, progress); !s.ok()) return s;
  v1::SubmitJobReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->SubmitJob(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, "submit");
  return reply;
}

absl::Status PoolClient::UploadMissing(const std::map<std::string, std::string>& sources,
                                       const std::map<std::string, blob::FileDigest>& digests,
                                       const TransferProgress& progress) {
  if (sources.empty()) return absl::OkStatus();
  v1::HasBlobsRequest has;
  for (const auto& [sha, source] : sources) has.add_sha256(sha);
  v1::HasBlobsReply present;
  auto ctx = Context();
  grpc::Status st = blobs_->HasBlobs(ctx.get(), has, &present);
  if (!st.ok()) return CallError(st, "checking inputs");
  auto there = [&](int i) { return i < present.present_size() && present.present(i); };
  uint64_t total = 0, done = 0;
  int i = 0;
  for (const auto& [sha, source] : sources) total += there(i++) ? 0 : digests.at(sha).size;
  i = 0;
  bool uploaded = false;
  for (const auto& [sha, source] : sources) {
    if (there(i++)) continue;
    const blob::FileDigest& digest = digests.at(sha);
    const uint64_t before = done;
    blob::TransferOptions options;
    if (progress) {
      options.moved = [&](uint64_t n) {
        done = std::min(done + n, before + digest.size);
        progress(done, total);
      };
    }
    auto up = blob::UploadResumable(blobs_.get(), token_, source, digest, options);
    if (!up.ok()) return up.status();
    done = before + digest.size;
    if (progress) progress(done, total);
    uploaded = true;
  }
  if (uploaded) {            // touches them all again: the coordinator's grace (blob/collect.h)
    auto again = Context();  // restarts from now, however long the uploads took
    grpc::Status touched = blobs_->HasBlobs(again.get(), has, &present);
    if (!touched.ok()) return CallError(touched, "checking inputs");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::JobStatus> PoolClient::GetJob(uint64_t job) {
  v1::JobRef ref;
  ref.set_job(job);
  v1::JobStatus reply;
  auto ctx = Context();
  grpc::Status st = stub_->GetJob(ctx.get(), ref, &reply);
  if (!st.ok()) return CallError(st, absl::StrCat("job ", job));
  return reply;
}

absl::StatusOr<v1::ListJobsReply> PoolClient::ListJobs() {
  v1::ListJobsReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->ListJobs(ctx.get(), v1::ListJobsRequest(), &reply);
  if (!st.ok()) return CallError(st, "list jobs");
  return reply;
}

absl::StatusOr<v1::ListWorkersReply> PoolClient::ListWorkers() {
  v1::ListWorkersReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->ListWorkers(ctx.get(), v1::ListWorkersRequest(), &reply);
  if (!st.ok()) return CallError(st, "list workers");
  return reply;
}

absl::StatusOr<std::string> PoolClient::Cancel(uint64_t job) {
  v1::JobRef ref;
  ref.set_job(job);
  v1::CancelJobReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->CancelJob(ctx.get(), ref, &reply);
  if (!st.ok()) return CallError(st, absl::StrCat("cancel job ", job));
  return reply.state();
}

absl::StatusOr<v1::DeleteJobReply> PoolClient::DeleteJob(uint64_t job, bool cancel) {
  v1::DeleteJobRequest req;
  req.set_job(job);
  req.set_cancel(cancel);
  v1::DeleteJobReply reply;
  auto ctx = Context();
  ctx->set_deadline(platform::DeadlineAfter(std::chrono::minutes(10)));  // a big job's blobs
  grpc::Status st = stub_->DeleteJob(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, absl::StrCat("delete job ", job));
  return reply;
}

absl::StatusOr<v1::ScaleReply> PoolClient::Scale(uint64_t job, uint32_t replicas) {
  v1::ScaleRequest req;
  req.set_job(job);
  req.set_replicas(replicas);
  v1::ScaleReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->ScaleService(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, absl::StrCat("scale service ", job));
  return reply;
}

absl::StatusOr<v1::PriorityReply> PoolClient::SetPriority(uint64_t job, int32_t priority) {
  v1::PriorityRequest req;
  req.set_job(job);
  req.set_priority(priority);
  v1::PriorityReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->SetPriority(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, absl::StrCat("set the priority of job ", job));
  return reply;
}

absl::StatusOr<v1::ListUsersReply> PoolClient::ListUsers() {
  v1::ListUsersReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->ListUsers(ctx.get(), v1::ListUsersRequest(), &reply);
  if (!st.ok()) return CallError(st, "list users");
  return reply;
}

absl::StatusOr<v1::UsageReply> PoolClient::GetUsage(int64_t since_unix_s, const std::string& by) {
  v1::UsageRequest req;
  req.set_since_unix_s(since_unix_s);
  req.set_by(by);
  v1::UsageReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->GetUsage(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, "read usage");
  return reply;
}

absl::StatusOr<v1::ListServicesReply> PoolClient::ListServices() {
  v1::ListServicesReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->ListServices(ctx.get(), v1::ListServicesRequest(), &reply);
  if (!st.ok()) return CallError(st, "list services");
  return reply;
}

absl::StatusOr<v1::ProfileReply> PoolClient::GetProfile(const std::string& profile_key,
                                                        uint64_t job, uint32_t max_samples) {
  v1::ProfileRequest req;
  req.set_profile_key(profile_key);
  req.set_job(job);
  req.set_max_samples(max_samples);
  v1::ProfileReply reply;
  auto ctx = Context();
  grpc::Status st = stub_->GetProfile(ctx.get(), req, &reply);
  if (!st.ok()) {
    return CallError(st, job != 0 ? absl::StrCat("profile of job ", job)
                                  : absl::StrCat("profile ", profile_key));
  }
  return reply;
}

absl::StatusOr<v1::JobTimeline> PoolClient::GetJobTimeline(uint64_t job, uint32_t max_attempts) {
  v1::TimelineRequest req;
  req.set_job(job);
  req.set_max_attempts(max_attempts);
  v1::JobTimeline reply;
  auto ctx = Context();
  grpc::Status st = stub_->GetJobTimeline(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, absl::StrCat("timeline of job ", job));
  return reply;
}

absl::StatusOr<v1::FailedTasksPage> PoolClient::ListFailedTasks(uint64_t job,
                                                                std::optional<uint32_t> after,
                                                                uint32_t limit) {
  v1::FailedTasksRequest req;
  req.set_job(job);
  if (after) req.set_after_task(*after);
  req.set_limit(limit);
  v1::FailedTasksPage reply;
  auto ctx = Context();
  grpc::Status st = stub_->ListFailedTasks(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, absl::StrCat("failed tasks of job ", job));
  return reply;
}

absl::StatusOr<v1::TaskLog> PoolClient::GetTaskLog(uint64_t job, uint32_t task) {
  v1::TaskRef req;
  req.set_job(job);
  req.set_task(task);
  v1::TaskLog reply;
  auto ctx = Context();
  grpc::Status st = stub_->GetTaskLog(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, absl::StrCat("log of job ", job, " task ", task));
  return reply;
}

absl::Status PoolClient::TaskLogs(const v1::LogRequest& req,
                                  const std::function<void(const v1::LogData&)>& on_data) {
  auto ctx = Context();
  if (req.follow()) {
    ctx = std::make_unique<grpc::ClientContext>();  // following lasts as long as the task
    ctx->AddMetadata("x-idlepool-token", token_);
  }
  auto reader = stub_->TaskLogs(ctx.get(), req);
  v1::LogData d;
  while (reader->Read(&d)) on_data(d);
  grpc::Status st = reader->Finish();
  if (!st.ok()) return CallError(st, absl::StrCat("logs of job ", req.job()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ProfileKeyOf(const spec::JobSpec& spec) {
  std::vector<std::string> hashes;
  for (const auto& in : spec.inputs) {
    auto d = blob::HashFile(in.source);
    if (!d.ok()) return d.status();
    hashes.push_back(d->sha256);
  }
  return spec::ProfileKeyOf(spec, std::move(hashes));
}

absl::StatusOr<v1::JobStatus> PoolClient::Wait(
    uint64_t job, const std::function<void(const v1::JobStatus&)>& progress,
    std::chrono::milliseconds every) {
  std::string last;
  core::MonoTime last_call{};
  int unavailable = 0;
  bool reached = false;
  while (true) {
    auto s = GetJob(job);
    if (!s.ok()) {
      // Ride out a coordinator restart once we have reached it; give up after about a minute
      // of silence. A coordinator never reached is an error at once (wrong address).
      if (reached && s.status().code() == absl::StatusCode::kUnavailable && ++unavailable < 600) {
        if (unavailable == 1) {
          spdlog::warn("coordinator unreachable ({}); still waiting for job {}",
                       std::string(s.status().message()), job);
        }
        platform::SleepFor(std::chrono::milliseconds(100));
        continue;
      }
      return s.status();
    }
    reached = true;
    unavailable = 0;
    std::string key = absl::StrCat(s->state(), s->succeeded(), "/", s->running(), "/",
                                   s->failed(), "/", s->attempts());
    const core::MonoTime now = platform::SystemClock().Now();
    if (key != last || (every.count() > 0 && now - last_call >= every)) {
      if (progress) progress(*s);
      last = key;
      last_call = now;
    }
    if (s->state() != "running" && s->state() != "waiting") return *s;  // waiting: `after`
    platform::SleepFor(std::chrono::milliseconds(50));
  }
}

absl::StatusOr<std::vector<std::string>> PoolClient::Fetch(uint64_t job, const std::string& out_dir,
                                                           const TransferProgress& progress) {
  v1::JobRef ref;
  ref.set_job(job);
  v1::ListOutputsReply outputs;
  {
    auto ctx = Context();
    auto reader = stub_->ListOutputs(ctx.get(), ref);
    v1::ListOutputsReply page;
    while (reader->Read(&page)) {
      outputs.set_state(page.state());
      for (auto& t : *page.mutable_tasks()) *outputs.add_tasks() = std::move(t);
    }
    grpc::Status st = reader->Finish();
    if (!st.ok()) return CallError(st, absl::StrCat("outputs of job ", job));
  }
  std::map<std::string, int> path_count;
  for (const auto& t : outputs.tasks()) {
    for (const auto& f : t.files()) path_count[f.path()]++;
  }
  bool per_task = std::any_of(path_count.begin(), path_count.end(),
                              [](const auto& kv) { return kv.second > 1; });
  uint64_t total = 0, done = 0;
  for (const auto& t : outputs.tasks()) {
    for (const auto& f : t.files()) total += f.size();
  }
  std::vector<std::string> written;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot create ", out_dir));
  uint64_t refused = 0;
  std::string first_refused;
  for (const auto& t : outputs.tasks()) {
    for (const auto& f : t.files()) {
      // Never written: a name a terminal would act on, or one that leaves out_dir (a row stored
      // before names were checked, or a coordinator that is not to be trusted with the disk).
      if (auto why = spec::RelativePathError(f.path())) {
        if (refused++ == 0) {
          first_refused =
              absl::StrCat("task ", t.index(), " '",
                           text::VisibleText(text::TruncateUtf8(f.path(), 256)), "' ", *why);
        }
        continue;
      }
      std::string rel = per_task ? absl::StrFormat("task-%06d/%s", t.index(), f.path()) : f.path();
      fs::path dest = fs::path(out_dir) / rel;
      fs::create_directories(dest.parent_path(), ec);
      const uint64_t before = done;
      if (fs::exists(dest)) {
        auto d = blob::HashFile(dest.string());
        if (d.ok() && d->sha256 == f.sha256()) {
          written.push_back(rel);
          done = before + f.size();
          if (progress) progress(done, total);
          continue;
        }
      }
      blob::TransferOptions options;
      if (progress) {
        options.moved = [&](uint64_t n) {
          done = std::min(done + n, before + f.size());
          progress(done, total);
        };
      }
      auto st =
          blob::DownloadToFile(blobs_.get(), token_, f.sha256(), f.size(), dest.string(), options);
      if (!st.ok()) return st.status();
      done = before + f.size();
      if (progress) progress(done, total);
      written.push_back(rel);
    }
  }
  if (refused > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(refused, " output", refused == 1 ? "" : "s", " of job ", job,
                     " not written (the others are in ", out_dir, "): ", first_refused));
  }
  return written;
}

}  // namespace idlepool::cli

namespace idlepool::cli {

absl::StatusOr<v1::PlanReply> PoolClient::PlanJob(const spec::JobSpec& spec,
                                                  const v1::PlanRequest& extras) {
  v1::PlanRequest req = extras;
  *req.mutable_spec() = wire::ToProto(spec);
  for (int i = 0; i < static_cast<int>(spec.inputs.size()); ++i) {
    auto d = blob::HashFile(spec.inputs[i].source);
    if (!d.ok()) return d.status();
    req.mutable_spec()->mutable_inputs(i)->set_sha256(d->sha256);
    req.mutable_spec()->mutable_inputs(i)->set_size(d->size);
  }
  v1::PlanReply reply;
  auto ctx = Context();
  // A plan of a huge job simulates it up to 15 times: give it longer than the usual 30 s.
  ctx->set_deadline(platform::DeadlineAfter(std::chrono::seconds(120)));
  grpc::Status st = stub_->PlanJob(ctx.get(), req, &reply);
  if (!st.ok()) return CallError(st, "plan");
  return reply;
}

}  // namespace idlepool::cli
