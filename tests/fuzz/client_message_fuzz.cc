// Fuzz target: the coordinator's checks of what a client sends (coordinator/job_request.h).
// Input: a serialized v1::PlanRequest; a SubmitJobRequest (its field 1, the spec, is the same)
// parses as one. Its spec is checked as SubmitJob would, against a scratch blob store holding
// "hello\n" (see corpus/client_message/), and the request as PlanJob would.
//
// Properties, beyond not crashing: errors carry the codes job_request.h lists and valid UTF-8
// messages; an accepted job passes spec::Validate, uses only uploaded inputs of the size they
// claim, has 1 to kMaxTasks tasks (TaskCount of them) and renders each of them; a job SubmitJob
// accepts is one PlanJob accepts (given a sane task_s), with the same task count.
//
// Jobs of more than kMaxExpanded tasks are only planned: expanding a million tasks per input
// would slow the search a thousandfold.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "blob/blob.h"
#include "blob/store.h"
#include "coordinator/job_request.h"
#include "fuzz_util.h"
#include "spec/profile_key.h"
#include "spec/spec.h"
#include "text/utf8.h"
#include "wire/wire.h"

namespace idlepool::fuzz {
namespace {

constexpr uint64_t kMaxExpanded = 2000;

blob::BlobStore& Blobs() {
  static blob::BlobStore* blobs = [] {
    auto* b = new blob::BlobStore(MakeScratchDir("client_message_fuzz").string());
    FUZZ_CHECK(b->Init(0).ok(), b->root());
    const std::string content = "hello\n";
    blob::Sha256 hash;
    hash.Update(content.data(), content.size());
    const std::string path = b->PathOf(hash.HexDigest());
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << content;
    return b;
  }();
  return *blobs;
}

void CheckError(const absl::Status& s, bool submit) {
  const absl::StatusCode c = s.code();
  FUZZ_CHECK(c == absl::StatusCode::kInvalidArgument || c == absl::StatusCode::kResourceExhausted ||
                 (submit && c == absl::StatusCode::kFailedPrecondition),
             s.ToString());
  FUZZ_CHECK(text::IsValidUtf8(std::string_view(s.message().data(), s.message().size())),
             s.ToString());
}

void CheckJob(const v1::JobSpec& proto, const coordinator::CheckedJob& job) {
  FUZZ_CHECK(spec::Validate(job.spec).ok(), job.spec.name);
  absl::StatusOr<uint64_t> n = spec::TaskCount(job.spec);
  FUZZ_CHECK(n.ok() && *n == job.tasks.size(), job.spec.name);
  FUZZ_CHECK(!job.tasks.empty() && job.tasks.size() <= spec::kMaxTasks, job.spec.name);
  std::vector<std::string> hashes;
  for (const v1::Input& in : proto.inputs()) {
    FUZZ_CHECK(Blobs().Has(in.sha256()), in.sha256());
    FUZZ_CHECK(std::filesystem::file_size(Blobs().PathOf(in.sha256())) == in.size(), in.path());
    hashes.push_back(in.sha256());
  }
  FUZZ_CHECK(blob::IsSha256Hex(spec::ProfileKeyOf(job.spec, hashes)), job.spec.name);
  for (const spec::TaskParams& t : job.tasks) {
    absl::StatusOr<std::vector<std::string>> argv =
        spec::RenderCommand(job.spec.command, t, "/task", "/checkpoint");
    FUZZ_CHECK(argv.ok(), argv.status().ToString());
  }
}

}  // namespace
}  // namespace idlepool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idlepool;
  v1::PlanRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<coordinator::CheckedPlan> plan = coordinator::CheckPlanJob(req);
  if (!plan.ok()) fuzz::CheckError(plan.status(), /*submit=*/false);
  if (plan.ok() && plan->tasks > fuzz::kMaxExpanded) return 0;
  absl::StatusOr<uint64_t> count = spec::TaskCount(wire::FromProto(req.spec()));
  if (count.ok() && *count > fuzz::kMaxExpanded) return 0;
  absl::StatusOr<coordinator::CheckedJob> job =
      coordinator::CheckSubmitJob(fuzz::Blobs(), req.spec());
  if (!job.ok()) {
    fuzz::CheckError(job.status(), /*submit=*/true);
    return 0;
  }
  fuzz::CheckJob(req.spec(), *job);
  if (std::isfinite(req.task_s()) && req.task_s() >= 0) {
    FUZZ_CHECK(plan.ok() && plan->tasks == job->tasks.size(), plan.status().ToString());
  }
  return 0;
}
