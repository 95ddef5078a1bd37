// What a client sends to the Jobs service, checked before anything is stored or planned:
// SubmitJob's spec and PlanJob's request. The service only adapts (job_service.cc);
// tests/fuzz/client_message_fuzz.cc feeds these hostile requests.
//
// Pure functions except for the blob store lookups of CheckSubmitJob (which only reads it);
// thread-safe. Errors are what the client is told, as gRPC statuses of the same code:
// kInvalidArgument (a rule of spec::Validate, a claimed size, no task, a bad figure),
// kFailedPrecondition (an input not uploaded yet), kResourceExhausted (too many tasks); messages
// name the field or input.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "blob/store.h"
#include "idlepool.pb.h"
#include "spec/spec.h"
#include "store/store.h"

namespace idlepool::coordinator {

// A SubmitJob spec that can be stored: it passes spec::Validate, every input is a blob of
// `blobs` with the size it claims, and it expands to at least one task.
struct CheckedJob {
  spec::JobSpec spec;                   // wire::FromProto of the request's spec
  std::vector<spec::TaskParams> tasks;  // its expansion, in task order
};
[[nodiscard]] absl::StatusOr<CheckedJob> CheckSubmitJob(const blob::BlobStore& blobs,
                                                        const v1::JobSpec& proto);

// SubmitJobRequest.task_inputs that can be stored for a job of `task_count` tasks whose job
// inputs are `spec.inputs()`: each task index in range and listed once, each path a safe relative
// path (spec::RelativePathError) staged once in its task, not one of the job's inputs and not
// under or above one of them or of the task's, each blob uploaded with the size it claims, at
// most spec::kMaxTaskInputFiles files. Never trusts the client's expansion. Errors name the task
// and the path: kInvalidArgument, kFailedPrecondition (a blob not uploaded), kResourceExhausted.
// Defined in task_input_check.cc.
struct CheckedTaskInputs {
  std::vector<store::TaskInputRow> rows;  // by (task, path)
  std::vector<core::TaskBlob> blobs;      // for the core, by (task, blob), unique
  uint64_t bytes = 0;                     // the sum of rows' sizes
};
[[nodiscard]] absl::StatusOr<CheckedTaskInputs> CheckTaskInputs(
    const blob::BlobStore& blobs, const v1::JobSpec& spec, uint32_t task_count,
    const google::protobuf::RepeatedPtrField<v1::TaskInputs>& task_inputs);

// A PlanJob request that can be planned: its spec passes spec::Validate and counts at least one
// task, task_s is finite and >= 0, and every input names a well-formed SHA-256 (inputs need not
// be uploaded to be planned).
struct CheckedPlan {
  spec::JobSpec spec;
  uint64_t tasks = 0;
};
[[nodiscard]] absl::StatusOr<CheckedPlan> CheckPlanJob(const v1::PlanRequest& req);

}  // namespace idlepool::coordinator
