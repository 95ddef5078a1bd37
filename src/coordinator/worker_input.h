// What a worker sends, checked and cut to size before the core sees it: a report the store would
// refuse must never reach the core (the coordinator stops on a store error), and names and
// messages go to terminals, logs and dashboards. One entry point per WorkerMessage kind (the
// session service only routes; tests/fuzz/worker_message_fuzz.cc feeds them hostile messages).
// Pure functions except for the blob store lookups of CheckFiles (which only reads it);
// thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "blob/store.h"
#include "core/scheduler.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "idlepool.pb.h"

namespace idlepool::coordinator {

// Most cache entries taken from one Hello or CacheChange (proto: Hello.cached).
inline constexpr size_t kMaxCachedBlobs = 20000;
// Most attempt ids one message may list (Hello.held_attempts, .frozen_attempts,
// .delivering_attempts; OwnerState.suspended_attempts; Leaving.vacated_attempts). A worker holds
// at most its running attempts (one per slot, at most 4096 slots) and the finished ones whose
// reports wait in its outbox, so twice the most slots is generous; every held id the core does
// not know costs a Kill message, so an unbounded list was a 100x memory amplifier.
inline constexpr size_t kMaxListedAttempts = 8192;
// Most files one AttemptReport may list as outputs (kMaxInputFiles is the same bound on a job's
// inputs); a success listing more fails, saying so.
inline constexpr size_t kMaxReportFiles = 100000;

// Why `name` cannot name a worker (Hello.worker), as a message that shows the name with what is
// wrong escaped and names the character, e.g. `worker name "wa\u200b": U+200B (zero width space)
// is not allowed`; "" when it can. A name goes to terminals, logs and dashboards as it is: 1 to
// kMaxWorkerNameBytes bytes, nothing invisible or direction-changing (text::NameProblem).
inline constexpr size_t kMaxWorkerNameBytes = 256;
std::string WorkerNameProblem(const std::string& name);

// Why a Hello cannot open a session, or OK: kFailedPrecondition for another protocol version,
// kInvalidArgument for a worker name that is empty, over 256 bytes or not printable UTF-8, a
// capacity outside 1..4096 CPUs, an attempt list over kMaxListedAttempts (naming the field), or a
// GPU list wire::GpusProblem refuses.
absl::Status CheckHello(const v1::Hello& hello);

// The core's event for a Hello that passed CheckHello, opening session `session`.
core::WorkerHello HelloEvent(const v1::Hello& hello, core::SessionId session);

// The Hello's CPU calibration score and core count, or 0 (unknown) when out of range (an older
// worker sends 0 too).
double HelloCpuScore(const v1::Hello& hello);
uint32_t HelloCores(const v1::Hello& hello);

// The Hello's sandbox tier for display: at most 32 bytes, printable (text::PrintableText), as the
// worker said it ("userns", "uid", "none"; a newer worker's other word is kept); "" when none.
std::string HelloSandbox(const v1::Hello& hello);

// An OwnerState as the core takes it: state and cause cut to 32 bytes, reason to 256, all
// printable, at most kMaxListedAttempts suspended attempts (its sensors go through CleanSensors).
core::OwnerStateChanged OwnerEvent(const std::string& worker, core::SessionId session,
                                   const v1::OwnerState& o);

// A CacheChange as the core takes it: well-formed hashes only, at most kMaxCachedBlobs added and
// as many removed.
core::CacheChanged CacheEvent(const std::string& worker, core::SessionId session,
                              const v1::CacheChange& cache);

// A Leaving as the core takes it: at most kMaxListedAttempts vacated attempts (the rest stay
// held and end with the lease).
core::WorkerLeaving LeavingEvent(const std::string& worker, core::SessionId session,
                                 const v1::Leaving& leaving);

// GpuReadings: the live readings of at most wire::kMaxGpus devices into `live` (index,
// finite temperature, utilisation clamped to 0..1, memory used, `unavailable` cut to 32 printable
// bytes), and the core's event holding those whose `unavailable` is set.
core::GpusHeld GpusEvent(const std::string& worker, core::SessionId session,
                         const v1::GpuReadings& gpus, std::vector<v1::GpuDevice>* live);

// Whether a link measurement is plausible: a round trip within an hour, rates within 1 TB/s, a
// probe of at most `max_probe_bytes`. One that is not is ignored.
bool LinkInRange(const v1::LinkMeasured& m, uint64_t max_probe_bytes);

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
// and log tails cut, figures bounded, outputs (of a success, at most kMaxReportFiles) and a final
// checkpoint checked. Outputs that do not check turn the success into a failure saying why.
core::AttemptReport ToCoreReport(const blob::BlobStore& blobs, const std::string& worker,
                                 core::SessionId session, const v1::AttemptReport& r);

}  // namespace idlepool::coordinator
