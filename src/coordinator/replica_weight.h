// How much traffic a worker's replicas get, from its machine's state (issue 17, point 3: a hot
// GPU or a busy owner gets less traffic before the owner policy has to act). The gateway's
// router scales a replica's share by this weight (Router::SetWeight, 0..1); it never lowers a
// replica's capacity, so under saturation every slot still serves.
//
//   owner load  1 at or below 0.1 (a quiet machine), falling linearly to kMinWeight at 0.5, the
//               owner policy's default max_owner_cpu_load (owner_policy.h), where it suspends.
//   CPU heat    1 at or below 75 C, falling linearly to kMinWeight at 90 C, the policy's
//               default max_temperature_c.
//   GPU heat    the same over the hottest offered GPU, from 70 C to 85 C, the GPU policy's
//               default max_temperature_c (gpu_policy.h), where it holds the device.
// The weight is the product, at least kMinWeight: a replica is never starved by readings alone
// (the owner policy's drain does that). An unknown reading counts as fine.
//
// Pure; thread-compatible.
#pragma once

#include "idlepool.pb.h"

namespace idlepool::coordinator {

inline constexpr double kMinWeight = 0.2;

double ReplicaWeight(const v1::SensorReadings& sensors,
                     const google::protobuf::RepeatedPtrField<v1::GpuDevice>& gpus);

}  // namespace idlepool::coordinator
