// The Blobs service: blobs up and down (PutBlob, GetBlob, HasBlobs, GetManifest; the logic
// lives in blob::BlobStore, these handlers only adapt the streams and count bytes for the
// metrics), and the peer-to-peer side (LocateBlob: the manifest and which workers hold the
// blob's chunks; FetchChunk: the chunk of the coordinator's choosing, see tracker.h).
//
// Threads: gRPC's handler threads, concurrently. Holds references (each must outlive it) to
// the token check, the blob store (thread-safe), the shared tracker (locked per call), the
// metrics and the clock.
#pragma once

#include "blob/store.h"
#include "coordinator/auth.h"
#include "coordinator/pool_metrics.h"
#include "coordinator/shared_tracker.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"

namespace idlepool::coordinator {

class BlobService final : public v1::Blobs::Service {
 public:
  BlobService(const Authorizer& authz, blob::BlobStore& blobs, SharedTracker& tracker,
              PoolMetrics& metrics, const platform::Clock& clock)
      : authz_(authz), blobs_(blobs), tracker_(tracker), metrics_(metrics), clock_(clock) {}

  grpc::Status PutBlob(grpc::ServerContext* ctx, grpc::ServerReader<v1::BlobChunk>* reader,
                       v1::PutBlobReply* reply) override;
  grpc::Status GetBlob(grpc::ServerContext* ctx, const v1::GetBlobRequest* req,
                       grpc::ServerWriter<v1::BlobChunk>* writer) override;
  grpc::Status HasBlobs(grpc::ServerContext* ctx, const v1::HasBlobsRequest* req,
                        v1::HasBlobsReply* reply) override;
  grpc::Status GetManifest(grpc::ServerContext* ctx, const v1::GetManifestRequest* req,
                           v1::BlobManifest* reply) override;
  grpc::Status LocateBlob(grpc::ServerContext* ctx, const v1::LocateBlobRequest* req,
                          v1::LocateBlobReply* reply) override;
  grpc::Status FetchChunk(grpc::ServerContext* ctx, const v1::FetchChunkRequest* req,
                          v1::ChunkData* reply) override;

 private:
  const Authorizer& authz_;
  blob::BlobStore& blobs_;
  SharedTracker& tracker_;
  PoolMetrics& metrics_;
  const platform::Clock& clock_;
};

}  // namespace idlepool::coordinator
