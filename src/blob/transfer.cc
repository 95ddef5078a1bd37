#include "blob/transfer.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "blob/file_util.h"
#include "grpcpp/grpcpp.h"
#include "platform/clock.h"
#include "status_convert.h"

namespace idlepool::blob {

namespace {

constexpr const char* kTokenKey = "x-idlepool-token";
constexpr std::chrono::seconds kUnaryDeadline{30};

bool Cancelled(const TransferOptions& o) { return o.cancelled && o.cancelled(); }

// One PutBlob call from the coordinator's resume offset.
absl::Status UploadOnce(v1::Blobs::Stub* stub, const std::string& token, const std::string& path,
                        const Manifest& m, const TransferOptions& options, TransferStats* stats) {
  uint64_t resume = 0;
  {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata(kTokenKey, token);
    ctx.set_deadline(platform::DeadlineAfter(kUnaryDeadline));
    v1::HasBlobsRequest req;
    req.add_sha256(m.sha256);
    v1::HasBlobsReply reply;
    grpc::Status st = stub->HasBlobs(&ctx, req, &reply);
    if (!st.ok()) return wire::FromGrpc(st, absl::StrCat("upload of ", path));
    if (reply.present_size() == 1 && reply.present(0)) {
      stats->already_present = true;
      return absl::OkStatus();
    }
    // An offset that is not a chunk boundary within the blob is ignored: start over.
    if (reply.resume_offset_size() == 1 && reply.resume_offset(0) % kChunkBytes == 0 &&
        reply.resume_offset(0) <= m.size) {
      resume = reply.resume_offset(0);
    }
  }
  const bool own_fd = options.source_fd < 0;
  absl::StatusOr<int> opened = own_fd ? internal::OpenRegularFile(path, options.follow_symlinks)
                                      : absl::StatusOr<int>(options.source_fd);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata(kTokenKey, token);
  v1::PutBlobReply reply;
  ++stats->calls;
  auto writer = stub->PutBlob(&ctx, &reply);
  v1::BlobChunk msg;
  msg.set_sha256(m.sha256);
  msg.set_size(m.size);
  msg.set_offset(resume);
  for (const auto& h : m.chunk_sha256) msg.add_chunk_sha256(h);
  std::string buf(kChunkBytes, '\0');
  absl::Status local;
  uint32_t index = static_cast<uint32_t>(resume / kChunkBytes);
  if (index == m.chunk_count()) writer->Write(msg);  // nothing left to send (an empty blob)
  for (; index < m.chunk_count(); ++index) {
    const uint32_t len = m.ChunkSize(index);
    absl::StatusOr<size_t> n = internal::PreadFull(fd, buf.data(), len, m.ChunkOffset(index), path);
    if (!n.ok()) {
      local = n.status();
      break;
    }
    if (*n != len) {
      local = absl::FailedPreconditionError(
          absl::StrCat(path, " shrank since it was hashed; upload of ", m.sha256, " stopped"));
      break;
    }
    msg.set_data(buf.data(), len);
    if (!writer->Write(msg)) break;  // the server ended the call; Finish() says why
    stats->bytes_sent += len;
    if (options.moved) options.moved(len);
    if (index == static_cast<uint32_t>(resume / kChunkBytes)) {
      msg.clear_sha256();
      msg.clear_size();
      msg.clear_chunk_sha256();
      msg.clear_offset();
    }
    if (Cancelled(options)) {
      local = absl::CancelledError(absl::StrCat("upload of ", path, " cancelled"));
      break;
    }
  }
  if (own_fd) ::close(fd);
  // A half-close, not a cancel: the coordinator keeps every chunk it was sent.
  writer->WritesDone();
  grpc::Status st = writer->Finish();
  if (!local.ok()) return local;
  if (!st.ok()) return wire::FromGrpc(st, absl::StrCat("upload of ", path));
  return absl::OkStatus();
}

// GetBlob calls for every run of chunks `partial` lacks.
absl::Status FetchMissing(v1::Blobs::Stub* stub, const std::string& token, PartialBlob& partial,
                          const TransferOptions& options, TransferStats* stats) {
  const Manifest& m = partial.manifest();
  std::string buf;
  for (std::optional<uint32_t> first = partial.NextMissing(0); first;
       first = partial.NextMissing(*first)) {
    uint32_t last = *first + 1;  // one past the run of missing chunks
    while (last < m.chunk_count() && !partial.Has(last)) ++last;
    const uint64_t begin = m.ChunkOffset(*first);
    const uint64_t end = last == m.chunk_count() ? m.size : m.ChunkOffset(last);
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata(kTokenKey, token);
    v1::GetBlobRequest req;
    req.set_sha256(m.sha256);
    req.set_offset(begin);
    req.set_length(end - begin);
    ++stats->calls;
    auto reader = stub->GetBlob(&ctx, req);
    uint32_t index = *first;
    uint64_t expect = begin;
    buf.clear();
    absl::Status local;
    v1::BlobChunk msg;
    while (local.ok() && reader->Read(&msg)) {
      if (msg.offset() != expect || msg.data().size() > end - expect) {
        local = absl::DataLossError(absl::StrCat("blob ", m.sha256, ": got bytes at ",
                                                 msg.offset(), " (+", msg.data().size(),
                                                 "), expected them at ", expect, " up to ", end));
        break;
      }
      stats->bytes_received += msg.data().size();
      if (options.moved) options.moved(msg.data().size());
      expect += msg.data().size();
      std::string_view data = msg.data();
      while (!data.empty()) {
        const size_t want = m.ChunkSize(index) - buf.size();
        const size_t take = std::min(want, data.size());
        buf.append(data.substr(0, take));
        data.remove_prefix(take);
        if (buf.size() == m.ChunkSize(index)) {
          local = partial.PutChunk(index, buf);
          if (!local.ok()) break;
          buf.clear();
          ++index;
        }
      }
      if (local.ok() && Cancelled(options)) {
        local = absl::CancelledError(absl::StrCat("download of ", m.sha256, " cancelled"));
      }
    }
    if (!local.ok()) ctx.TryCancel();
    grpc::Status st = reader->Finish();
    if (!local.ok()) return local;
    if (!st.ok()) return wire::FromGrpc(st, absl::StrCat("download of blob ", m.sha256));
    if (index != last) {
      return absl::DataLossError(absl::StrCat("blob ", m.sha256, ": the coordinator sent ",
                                              expect - begin, " of ", end - begin, " bytes"));
    }
    if (last == m.chunk_count()) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<Manifest> ManifestFor(v1::Blobs::Stub* stub, const std::string& token,
                                     const std::string& sha256, uint64_t size) {
  absl::StatusOr<Manifest> m = FetchManifest(stub, token, sha256);
  if (!m.ok()) return m.status();
  if (m->size != size) {
    return absl::DataLossError(absl::StrCat("blob ", sha256, ": the coordinator holds ", m->size,
                                            " bytes, expected ", size));
  }
  return m;
}

}  // namespace

absl::Status RetryUnavailable(const RetryPolicy& policy, const std::function<bool()>& cancelled,
                              const std::function<absl::Status()>& once) {
  std::chrono::milliseconds backoff = policy.initial_backoff;
  for (int tries = 1;; ++tries) {
    if (cancelled && cancelled()) return absl::CancelledError("transfer cancelled");
    absl::Status st = once();
    if (st.code() != absl::StatusCode::kUnavailable) return st;
    if (policy.max_tries > 0 && tries >= policy.max_tries) return st;
    if (policy.wait) {
      policy.wait(backoff);
    } else {
      platform::SleepFor(backoff);
    }
    backoff = std::min(backoff * 2, policy.max_backoff);
  }
}

absl::StatusOr<Manifest> FetchManifest(v1::Blobs::Stub* stub, const std::string& token,
                                       const std::string& sha256) {
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata(kTokenKey, token);
  ctx.set_deadline(platform::DeadlineAfter(kUnaryDeadline));
  v1::GetManifestRequest req;
  req.set_sha256(sha256);
  v1::BlobManifest reply;
  grpc::Status st = stub->GetManifest(&ctx, req, &reply);
  if (!st.ok()) return wire::FromGrpc(st, absl::StrCat("manifest of blob ", sha256));
  absl::StatusOr<Manifest> m = FromProto(reply);
  if (!m.ok()) {
    return absl::DataLossError(absl::StrCat("the coordinator's manifest of blob ", sha256,
                                            " is invalid: ", m.status().message()));
  }
  if (m->sha256 != sha256) {
    return absl::DataLossError(absl::StrCat("asked for the manifest of ", sha256, ", got ",
                                            m->sha256));
  }
  return m;
}

absl::StatusOr<TransferStats> UploadResumable(v1::Blobs::Stub* stub, const std::string& token,
                                              const std::string& path, const FileDigest& digest,
                                              const TransferOptions& options) {
  absl::StatusOr<Manifest> m = options.source_fd >= 0
                                   ? ManifestOfFd(options.source_fd, path)
                                   : ManifestOfFile(path, options.follow_symlinks);
  if (!m.ok()) return m.status();
  if ((!digest.sha256.empty() && m->sha256 != digest.sha256) ||
      (!digest.sha256.empty() && m->size != digest.size)) {
    return absl::DataLossError(absl::StrCat(path, " changed since it was hashed (now ",
                                                      m->sha256, ", ", m->size, " bytes)"));
  }
  TransferStats stats;
  absl::Status st = RetryUnavailable(options.retry, options.cancelled, [&] {
    return UploadOnce(stub, token, path, *m, options, &stats);
  });
  if (!st.ok()) return st;
  return stats;
}

absl::StatusOr<TransferStats> DownloadToFile(v1::Blobs::Stub* stub, const std::string& token,
                                             const std::string& sha256, uint64_t size,
                                             const std::string& dest,
                                             const TransferOptions& options) {
  TransferStats stats;
  absl::Status st = RetryUnavailable(options.retry, options.cancelled, [&]() -> absl::Status {
    absl::StatusOr<Manifest> m = ManifestFor(stub, token, sha256, size);
    if (!m.ok()) return m.status();
    PartialBlob::Paths paths;
    paths.data = dest + ".partial";
    paths.manifest = dest + ".partial.manifest";
    paths.dest = dest;
    absl::StatusOr<std::unique_ptr<PartialBlob>> partial = PartialBlob::Open(paths, *m);
    if (!partial.ok()) return partial.status();
    if (absl::Status f = FetchMissing(stub, token, **partial, options, &stats); !f.ok()) return f;
    return (*partial)->Publish();
  });
  if (!st.ok()) return st;
  return stats;
}

absl::StatusOr<TransferStats> DownloadToStore(v1::Blobs::Stub* stub, const std::string& token,
                                              const std::string& sha256, uint64_t size,
                                              BlobStore& store, const TransferOptions& options) {
  TransferStats stats;
  if (store.Has(sha256)) {
    stats.already_present = true;
    return stats;
  }
  absl::Status st = RetryUnavailable(options.retry, options.cancelled, [&]() -> absl::Status {
    absl::StatusOr<Manifest> m = ManifestFor(stub, token, sha256, size);
    if (!m.ok()) return m.status();
    absl::StatusOr<std::shared_ptr<PartialBlob>> partial = store.OpenPartial(*m);
    if (!partial.ok()) return partial.status();
    if (absl::Status f = FetchMissing(stub, token, **partial, options, &stats); !f.ok()) return f;
    absl::Status p = (*partial)->Publish();
    // Published by a concurrent download of the same blob: the store has it.
    if (!p.ok() && store.Has(sha256)) return absl::OkStatus();
    return p;
  });
  if (!st.ok()) return st;
  return stats;
}

absl::Status UploadFile(v1::Blobs::Stub* stub, const std::string& token, const std::string& path,
                        const FileDigest& digest, bool follow_symlinks) {
  TransferOptions options;
  options.follow_symlinks = follow_symlinks;
  return UploadResumable(stub, token, path, digest, options).status();
}

absl::Status DownloadBlob(v1::Blobs::Stub* stub, const std::string& token,
                          const std::string& sha256, uint64_t size, const std::string& dest,
                          const std::function<bool()>& cancelled) {
  TransferOptions options;
  options.cancelled = cancelled;
  return DownloadToFile(stub, token, sha256, size, dest, options).status();
}

}  // namespace idlepool::blob
