// Jobs.DeleteJob and Jobs.CollectGarbage (issue 18): adapters of the collector (collector.h).
#include <chrono>

#include "absl/strings/str_cat.h"
#include "coordinator/job_service.h"
#include "status_convert.h"

namespace idlepool::coordinator {
namespace {

constexpr int kMaxListedBlobs = 1000;  // GcReply.blobs

grpc::Status NoCollector() {
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this coordinator collects no blobs");
}

grpc::Status RunCollectGarbage(Collector& collector, const v1::GcRequest& req, v1::GcReply* reply) {
  // At most a century: the milliseconds stay far from overflowing.
  constexpr uint64_t kMaxKeepS = 100ULL * 365 * 86400;
  if (req.keep_finished_s() > kMaxKeepS) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("GcRequest.keep_finished_s ", req.keep_finished_s(),
                                     " is over ", kMaxKeepS, " (100 years)"));
  }
  absl::StatusOr<GcResult> r = collector.Collect(
      req.dry_run(), std::chrono::seconds(static_cast<int64_t>(req.keep_finished_s())));
  if (!r.ok()) return wire::ToGrpc(r.status());
  for (core::JobId id : r->jobs) reply->add_jobs(id);
  for (const blob::BlobFile& b : r->blobs) {
    if (reply->blobs_size() == kMaxListedBlobs) break;
    v1::GcBlob* g = reply->add_blobs();
    g->set_sha256(b.sha256);
    g->set_size(b.size);
  }
  reply->set_blob_count(r->blobs.size());
  reply->set_bytes(r->bytes);
  reply->set_dry_run(r->dry_run);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status JobService::DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req,
                                   v1::DeleteJobReply* reply) {
  trust::Principal who;
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/DeleteJob", &who); !st.ok()) return st;
  if (d_.collector == nullptr) return NoCollector();
  if (grpc::Status st = MayChange(req->job(), who, "delete"); !st.ok()) return st;
  absl::StatusOr<DeleteResult> r = d_.collector->DeleteJob(req->job(), req->cancel());
  if (!r.ok()) return wire::ToGrpc(r.status());
  reply->set_blobs_removed(r->blobs_removed);
  reply->set_bytes_freed(r->bytes_freed);
  return grpc::Status::OK;
}

grpc::Status JobService::CollectGarbage(grpc::ServerContext* ctx, const v1::GcRequest* req,
                                        v1::GcReply* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/CollectGarbage"); !st.ok()) return st;
  if (d_.collector == nullptr) return NoCollector();
  return RunCollectGarbage(*d_.collector, *req, reply);
}

grpc::Status AdminJobs::CollectGarbage(grpc::ServerContext* ctx, const v1::GcRequest* req,
                                       v1::GcReply* reply) {
  if (ctx->peer().rfind("unix:", 0) != 0) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "administration is only served on the data dir's admin socket");
  }
  return RunCollectGarbage(collector_, *req, reply);
}

}  // namespace idlepool::coordinator
