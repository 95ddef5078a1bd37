// What a worker sends, checked and cut to size before the core sees it: a report the store would
// refuse must never reach the core (the coordinator stops on a store error), and names and
// messages go to terminals, logs and dashboards. Pure functions except for the blob store
// lookups of CheckFiles (which only reads it); thread-safe.
#pragma once

#include <string>
#include <vector>

#include "blob/store.h"
#include "core/scheduler.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "idlepool.pb.h"

namespace idlepool::coordinator {

// Most cache entries taken from one Hello or CacheChange (proto: Hello.cached).
inline constexpr size_t kMaxCachedBlobs = 20000;

// Why `name` cannot name a worker (Hello.worker), as a message that shows the name with what is
// wrong escaped and names the character, e.g. `worker name "wa\u200b": U+200B (zero width space)
// is not allowed`; "" when it can. A name goes to terminals, logs and dashboards as it is: 1 to
// kMaxWorkerNameBytes bytes, nothing invisible or direction-changing (text::NameProblem).
inline constexpr size_t kMaxWorkerNameBytes = 256;
std::string WorkerNameProblem(const std::string& name);

// The readings a worker sent, with every non-finite number dropped (unknown).
v1::SensorReadings CleanSensors(const v1::SensorReadings& in);

// Cache entries as a worker lists them: well-formed hashes only, at most `max`.
std::vector<core::BlobRef> CachedBlobs(const google::protobuf::RepeatedPtrField<v1::CachedBlob>& in,
                                       size_t max);

// Where other workers reach a worker's Peer service: its announced host:port, with a wildcard
// or missing host replaced by the address its session comes from (gRPC's "ipv4:1.2.3.4:5" or
// "ipv6:[::1]:5"). Empty when it announced nothing or something unusable.
std::string PeerAddress(const std::string& announced, const std::string& grpc_peer);

// Checks files as they come from a worker (outputs, checkpoints): each at a safe relative path,
// listed once, and already uploaded with the size it claims. Returns "" and fills `out`, or
// what is wrong (naming the file as `what`).
std::string CheckFiles(const blob::BlobStore& blobs,
                       const google::protobuf::RepeatedPtrField<v1::OutputFile>& files,
                       std::vector<core::OutputFile>* out, const char* what = "file");
// CheckFiles for a checkpoint, at most spec::kMaxCheckpointFiles of them.
std::string CheckpointProblem(const blob::BlobStore& blobs,
                              const google::protobuf::RepeatedPtrField<v1::OutputFile>& files,
                              std::vector<core::OutputFile>* out);

// A worker's AttemptReport as the core takes it, from session `session` of `worker`: messages
// and log tails cut, figures bounded, outputs (of a success) and a final checkpoint checked.
// Outputs that do not check turn the success into a failure saying why.
core::AttemptReport ToCoreReport(const blob::BlobStore& blobs, const std::string& worker,
                                 core::SessionId session, const v1::AttemptReport& r);

}  // namespace idlepool::coordinator
