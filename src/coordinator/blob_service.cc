#include "coordinator/blob_service.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "status_convert.h"

namespace idlepool::coordinator {
namespace {

// `caller`: the name in the worker's certificate; a worker speaks only for itself.
grpc::Status CheckPeerRequest(const std::string& sha256, const std::string& worker,
                              const std::string& caller) {
  if (!blob::IsSha256Hex(sha256)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "sha256 must be 64 lowercase hex");
  }
  if (worker.empty() || worker.size() > 256) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "worker must be a name of 1 to 256 bytes");
  }
  if (worker != caller) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("worker ", caller, " cannot ask for blobs as another worker"));
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status BlobService::PutBlob(grpc::ServerContext* ctx,
                                  grpc::ServerReader<v1::BlobChunk>* reader,
                                  v1::PutBlobReply* reply) {
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Blobs/PutBlob"); !st.ok()) return st;
  auto got = blobs_.ReceiveUpload([&](v1::BlobChunk* m) {
    if (!reader->Read(m)) return false;
    metrics_.BytesReceived(m->data().size());
    return true;
  });
  if (!got.ok()) return wire::ToGrpc(got.status());
  *reply = *got;
  return grpc::Status::OK;
}

grpc::Status BlobService::GetBlob(grpc::ServerContext* ctx, const v1::GetBlobRequest* req,
                                  grpc::ServerWriter<v1::BlobChunk>* writer) {
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Blobs/GetBlob"); !st.ok()) return st;
  return wire::ToGrpc(blobs_.ServeRange(*req, [&](const v1::BlobChunk& m) {
    metrics_.BytesServed(m.data().size());
    return writer->Write(m);
  }));
}

grpc::Status BlobService::HasBlobs(grpc::ServerContext* ctx, const v1::HasBlobsRequest* req,
                                   v1::HasBlobsReply* reply) {
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Blobs/HasBlobs"); !st.ok()) return st;
  *reply = blobs_.Query(*req);
  return grpc::Status::OK;
}

grpc::Status BlobService::GetManifest(grpc::ServerContext* ctx, const v1::GetManifestRequest* req,
                                      v1::BlobManifest* reply) {
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Blobs/GetManifest"); !st.ok()) return st;
  auto m = blobs_.GetManifest(req->sha256());
  if (!m.ok()) return wire::ToGrpc(m.status());
  *reply = blob::ToProto(*m);
  return grpc::Status::OK;
}

grpc::Status BlobService::LocateBlob(grpc::ServerContext* ctx, const v1::LocateBlobRequest* req,
                                     v1::LocateBlobReply* reply) {
  trust::Principal who;
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Blobs/LocateBlob", &who); !st.ok()) return st;
  if (auto st = CheckPeerRequest(req->sha256(), req->worker(), who.name); !st.ok()) return st;
  auto m = blobs_.GetManifest(req->sha256());
  if (!m.ok()) return wire::ToGrpc(m.status());
  std::vector<PeerRef> peers;
  {
    std::lock_guard lock(tracker_.mu);
    peers = tracker_.tracker.Locate(req->sha256(), m->chunk_count(), req->worker(), clock_.Now());
  }
  *reply->mutable_manifest() = blob::ToProto(*m);
  for (const auto& p : peers) {
    auto* out = reply->add_peers();
    out->set_worker(p.worker);
    out->set_address(p.address);
    out->set_complete(p.complete);
  }
  return grpc::Status::OK;
}

grpc::Status BlobService::FetchChunk(grpc::ServerContext* ctx, const v1::FetchChunkRequest* req,
                                     v1::ChunkData* reply) {
  trust::Principal who;
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Blobs/FetchChunk", &who); !st.ok()) return st;
  if (auto st = CheckPeerRequest(req->sha256(), req->worker(), who.name); !st.ok()) return st;
  auto size = blobs_.SizeOf(req->sha256());
  if (!size.ok()) return wire::ToGrpc(size.status());
  const uint64_t chunks = blob::ChunkCountFor(*size);
  if (req->wanted_size() == 0 || static_cast<uint64_t>(req->wanted_size()) > chunks) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("FetchChunk.wanted must list 1 to ", chunks, " chunks, got ",
                                     req->wanted_size()));
  }
  std::vector<uint32_t> wanted(req->wanted().begin(), req->wanted().end());
  absl::StatusOr<uint32_t> index;
  {
    std::lock_guard lock(tracker_.mu);
    index = tracker_.tracker.Choose(req->sha256(), static_cast<uint32_t>(chunks), wanted,
                                    req->worker(), clock_.Now(), req->no_usable_peer());
  }
  if (!index.ok()) return wire::ToGrpc(index.status());
  auto data = blobs_.ReadChunk(req->sha256(), *index);
  if (!data.ok()) return wire::ToGrpc(data.status());
  reply->set_sha256(req->sha256());
  reply->set_index(*index);
  reply->set_data(std::move(*data));
  metrics_.BytesServed(reply->data().size());
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
