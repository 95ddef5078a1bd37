// `idlepool plan --pattern allreduce|pipeline|tensor`: before running coupled work (gradient
// sync, a model's layers or tensors split over machines), says with numbers whether the pool
// beats one machine on the given link, and which link speeds would make it pay off. The model is
// src/plan/coupled.h (alpha-beta critical paths; its sources and its error against published
// measurements are in that header and in tests/unit/plan_test.cc).
//
// Thread safety: call from one thread. Prints to stdout (the plan) and stderr (errors).
// Returns the process exit code: 0 (whatever the verdict), 2 bad arguments (the option named).
#pragma once

#include <string>

namespace idlepool::cli {

struct PlanPatternOptions {
  std::string pattern;          // allreduce, pipeline, tensor
  int machines = 2;             // allreduce, tensor: machines; pipeline: stages
  double compute_ms = 0;        // allreduce: one step on one machine; pipeline/tensor: per token
  double fixed_ms = 0;          // allreduce: per-step part that is not divided
  std::string bytes;            // allreduce: gradient bytes; pipeline, tensor: activation bytes
  int layers = 1;               // tensor
  bool ring = false;            // pipeline: the token returns to the first stage (hops = stages)
  std::string link = "1gbit";   // bandwidth: 100mbit, 1gbit, 125MB/s, ...
  double rtt_ms = 0.5;          // round trip between two machines
  double overhead_ms = 0;       // software cost per message (RPC, serialization)
  bool json = false;
};

int RunPlanPattern(const PlanPatternOptions& o);

// "100mbit", "1gbit", "2.5Gbit", "500kbit" (bits/s, decimal) or "125MB/s", "1.5GB/s", "800KB/s",
// "1000B/s" (bytes/s, decimal) as bytes per second; nullopt-like 0 for anything else.
double ParseLinkRate(const std::string& text);

}  // namespace idlepool::cli
