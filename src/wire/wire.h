// Conversions between the wire contract (proto/idlepool.proto) and the spec/core types.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "idlepool.pb.h"
#include "spec/spec.h"

namespace idlepool::wire {

// The session protocol's version (Hello.protocol_version). A coordinator refuses a worker that
// speaks another (FAILED_PRECONDITION: run the same idlepool version everywhere). 2: the
// services split by caller (WorkerSession, Blobs, Probes, Jobs) and Kill.code.
inline constexpr uint32_t kProtocolVersion = 2;

// spec -> wire. Input blobs are not known here: the caller fills Input.sha256/size/mode.
v1::JobSpec ToProto(const spec::JobSpec& spec);
// wire -> spec, for validation on the coordinator. Inputs' `source` is left empty.
spec::JobSpec FromProto(const v1::JobSpec& proto);

// A service's [service] table, every field as it is (Validate checks the values; proto3's
// zeros are not replaced by the defaults). JobSpec.service is set exactly when spec.service is.
v1::ServiceSpec ToProto(const spec::ServiceSpec& service);
spec::ServiceSpec FromProto(const v1::ServiceSpec& proto);

// A job's env (JobSpec.env, Assignment.env) as it is, in its order.
std::vector<spec::EnvVar> EnvFromProto(const google::protobuf::RepeatedPtrField<v1::EnvVar>& env);

v1::TaskParams ToProto(const spec::TaskParams& task);
spec::TaskParams FromProto(const v1::TaskParams& proto);

v1::Resources ToProto(const core::Resources& r);
core::Resources FromProto(const v1::Resources& r);

// GPUs a worker offers (Hello.gpus). GpusProblem: "" when the list is sane, else what is wrong
// (more than kMaxGpus devices, a repeated index, memory over kMaxGpuMemoryMb, an API or id that
// is empty or too long, too many APIs, a name, vendor or uuid over 256 bytes), for the refusal.
// GpusFromProto: what the core needs of each (index, memory, APIs, held = `unavailable` set),
// in the worker's order.
inline constexpr int kMaxGpus = 64;
inline constexpr uint64_t kMaxGpuMemoryMb = uint64_t{1} << 24;  // 16 TiB
std::string GpusProblem(const google::protobuf::RepeatedPtrField<v1::GpuDevice>& gpus);
std::vector<core::GpuDevice> GpusFromProto(
    const google::protobuf::RepeatedPtrField<v1::GpuDevice>& gpus);

// What a worker is told to run: attempt `attempt` of task `task` of job `job`, whose spec (as
// stored) is `spec`, on its devices `gpus`. Every field of the spec the worker acts on is copied
// (command, inputs, outputs, allow_empty_outputs, host_network, resources, timeout, env); the
// checkpoint is the caller's to add.
v1::Assignment ToAssignment(const v1::JobSpec& spec, uint64_t job, const spec::TaskParams& task,
                            uint64_t attempt, const std::vector<uint32_t>& gpus);

// The kill of `attempt` for `reason`: the typed code and a text for people.
v1::Kill ToKill(uint64_t attempt, core::KillReason reason);
// Whether a worker keeps an attempt's finished outputs (and delivers its report) when killed for
// `code`: only for a stale kill, which a late success may still overturn (docs/design.md).
// KILL_REASON_UNSPECIFIED (a coordinator before the code existed) counts as stale.
bool KeepsFinishedOutputs(v1::KillReason code);

}  // namespace idlepool::wire
