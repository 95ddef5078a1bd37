// A worker's replicas get less traffic as its owner gets busy or it gets hot, before the owner
// policy's thresholds (coordinator/replica_weight.h).
#include "coordinator/replica_weight.h"

#include <gtest/gtest.h>

namespace idlepool::coordinator {
namespace {

google::protobuf::RepeatedPtrField<v1::GpuDevice> Gpus(std::initializer_list<double> temps) {
  google::protobuf::RepeatedPtrField<v1::GpuDevice> out;
  for (double t : temps) out.Add()->set_temperature_c(t);
  return out;
}

TEST(ReplicaWeight, UnknownOrQuietIsFullWeight) {
  EXPECT_EQ(ReplicaWeight(v1::SensorReadings(), Gpus({})), 1.0);
  v1::SensorReadings s;
  s.set_owner_cpu_load(0.05);
  s.set_temperature_c(60);
  EXPECT_EQ(ReplicaWeight(s, Gpus({55, 65})), 1.0);
}

TEST(ReplicaWeight, FallsWithTheOwnersLoadBeforeThePolicySuspends) {
  v1::SensorReadings s;
  s.set_owner_cpu_load(0.3);
  const double mid = ReplicaWeight(s, Gpus({}));
  EXPECT_NEAR(mid, 0.6, 1e-9);  // halfway from 0.1 to 0.5
  s.set_owner_cpu_load(0.45);
  EXPECT_LT(ReplicaWeight(s, Gpus({})), mid);
  s.set_owner_cpu_load(0.9);
  EXPECT_EQ(ReplicaWeight(s, Gpus({})), kMinWeight);
}

TEST(ReplicaWeight, TheHottestGpuAndTheCpuEachCount) {
  v1::SensorReadings s;
  EXPECT_NEAR(ReplicaWeight(s, Gpus({60, 77.5})), 0.6, 1e-9);  // hottest GPU halfway 70..85
  EXPECT_EQ(ReplicaWeight(s, Gpus({95})), kMinWeight);
  s.set_temperature_c(82.5);  // CPU halfway 75..90
  EXPECT_NEAR(ReplicaWeight(s, Gpus({})), 0.6, 1e-9);
  EXPECT_NEAR(ReplicaWeight(s, Gpus({77.5})), 0.36, 1e-9);  // the product
  s.set_owner_cpu_load(1);
  EXPECT_EQ(ReplicaWeight(s, Gpus({99})), kMinWeight);  // never below the floor
}

}  // namespace
}  // namespace idlepool::coordinator
