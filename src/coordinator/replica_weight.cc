#include "coordinator/replica_weight.h"

#include <algorithm>
#include <cmath>

namespace idlepool::coordinator {

namespace {

// 1 at or below `ok`, kMinWeight at or above `bad`, linear between; 1 for NaN.
double Ramp(double value, double ok, double bad) {
  if (std::isnan(value) || value <= ok) return 1;
  if (value >= bad) return kMinWeight;
  return 1 - (1 - kMinWeight) * (value - ok) / (bad - ok);
}

}  // namespace

double ReplicaWeight(const v1::SensorReadings& sensors,
                     const google::protobuf::RepeatedPtrField<v1::GpuDevice>& gpus) {
  double w = 1;
  if (sensors.has_owner_cpu_load()) w *= Ramp(sensors.owner_cpu_load(), 0.1, 0.5);
  if (sensors.has_temperature_c()) w *= Ramp(sensors.temperature_c(), 75, 90);
  double hottest = NAN;
  for (const auto& g : gpus) {
    if (g.has_temperature_c() && !(g.temperature_c() <= hottest)) hottest = g.temperature_c();
  }
  w *= Ramp(hottest, 70, 85);
  return std::max(kMinWeight, w);
}

}  // namespace idlepool::coordinator
