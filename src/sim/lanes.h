// Machine lanes of the simulator: when a simulated worker is up, when its state next changes, and
// the makespan no scheduler could beat on a set of lanes. Pure functions of their arguments;
// thread-safe. Times in seconds of simulated time.
#pragma once

#include "sim/simulator.h"

namespace idlepool::sim {

// The next time after `t` at which worker `w`'s lane changes state (up to down or down to up);
// +infinity when it never does.
[[nodiscard]] double NextChange(const SimWorker& w, double t);

}  // namespace idlepool::sim
