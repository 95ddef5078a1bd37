#include "plan/coupled.h"

#include <cmath>
#include <limits>
#include <string>

namespace idlepool::plan {
namespace {

// Returns an error naming `field` unless `v` is finite and >= 0 (> 0 when `positive`).
std::string CheckNumber(double v, const char* field, bool positive) {
  if (!std::isfinite(v) || v < 0 || (positive && v == 0)) {
    return std::string(field) + (positive ? " must be finite and > 0" : " must be finite and >= 0");
  }
  return {};
}

std::string CheckCount(int v, const char* field) {
  if (v < 1) return std::string(field) + " must be >= 1";
  return {};
}

std::string CheckLink(const Link& link) {
  if (auto e = CheckNumber(link.rtt_s, "link.rtt_s", false); !e.empty()) return e;
  if (auto e = CheckNumber(link.bandwidth_bytes_per_s, "link.bandwidth_bytes_per_s", true);
      !e.empty()) {
    return e;
  }
  return CheckNumber(link.per_hop_overhead_s, "link.per_hop_overhead_s", false);
}

std::string CheckPath(const CriticalPath& path) {
  if (auto e = CheckNumber(path.compute_s, "path.compute_s", false); !e.empty()) return e;
  if (auto e = CheckNumber(path.messages, "path.messages", false); !e.empty()) return e;
  return CheckNumber(path.bytes, "path.bytes", false);
}

double Alpha(const Link& link) { return link.rtt_s / 2 + link.per_hop_overhead_s; }

template <typename T>
Checked<T> Error(std::string e) {
  Checked<T> r;
  r.error = std::move(e);
  return r;
}

template <typename T>
Checked<T> Ok(T v) {
  Checked<T> r;
  r.value = v;
  return r;
}

}  // namespace

Checked<double> Seconds(const CriticalPath& path, const Link& link) {
  if (auto e = CheckPath(path); !e.empty()) return Error<double>(e);
  if (auto e = CheckLink(link); !e.empty()) return Error<double>(e);
  return Ok(path.compute_s + path.messages * Alpha(link) +
            path.bytes / link.bandwidth_bytes_per_s);
}

Checked<CriticalPath> RingAllReduce(double bytes, int machines) {
  if (auto e = CheckNumber(bytes, "bytes", false); !e.empty()) return Error<CriticalPath>(e);
  if (auto e = CheckCount(machines, "machines"); !e.empty()) return Error<CriticalPath>(e);
  const double p = machines;
  return Ok(CriticalPath{.compute_s = 0, .messages = 2 * (p - 1), .bytes = 2 * (p - 1) / p * bytes});
}

Checked<double> RingAllReduceSeconds(double bytes, int machines, const Link& link) {
  auto path = RingAllReduce(bytes, machines);
  if (!path.ok()) return Error<double>(path.error);
  return Seconds(path.value, link);
}

namespace {
std::string CheckStep(const DataParallelStep& s) {
  if (auto e = CheckNumber(s.compute_s, "step.compute_s", true); !e.empty()) return e;
  if (auto e = CheckNumber(s.fixed_s, "step.fixed_s", false); !e.empty()) return e;
  return CheckNumber(s.gradient_bytes, "step.gradient_bytes", false);
}
}  // namespace

Checked<CriticalPath> DataParallelPath(const DataParallelStep& step, int machines) {
  if (auto e = CheckStep(step); !e.empty()) return Error<CriticalPath>(e);
  auto reduce = RingAllReduce(step.gradient_bytes, machines);
  if (!reduce.ok()) return reduce;
  CriticalPath path = reduce.value;
  path.compute_s = step.fixed_s + step.compute_s / machines;
  return Ok(path);
}

Checked<double> DataParallelSingleSeconds(const DataParallelStep& step) {
  if (auto e = CheckStep(step); !e.empty()) return Error<double>(e);
  return Ok(step.fixed_s + step.compute_s);
}

namespace {
std::string CheckPipeline(const PipelineDecode& d) {
  if (auto e = CheckNumber(d.compute_per_token_s, "decode.compute_per_token_s", true); !e.empty())
    return e;
  if (auto e = CheckCount(d.stages, "decode.stages"); !e.empty()) return e;
  if (d.topology != PipelineTopology::kChain && d.topology != PipelineTopology::kRing)
    return "decode.topology is not a PipelineTopology";
  return CheckNumber(d.activation_bytes, "decode.activation_bytes", false);
}
}  // namespace

Checked<CriticalPath> PipelinePath(const PipelineDecode& decode) {
  if (auto e = CheckPipeline(decode); !e.empty()) return Error<CriticalPath>(e);
  // One stage is one machine: nothing crosses a network, whatever the topology.
  double hops = 0;
  if (decode.stages > 1) {
    hops = decode.topology == PipelineTopology::kRing ? decode.stages : decode.stages - 1;
  }
  return Ok(CriticalPath{.compute_s = decode.compute_per_token_s,
                         .messages = hops,
                         .bytes = hops * decode.activation_bytes});
}

Checked<double> PipelineSingleSeconds(const PipelineDecode& decode) {
  if (auto e = CheckPipeline(decode); !e.empty()) return Error<double>(e);
  return Ok(decode.compute_per_token_s);
}

namespace {
std::string CheckTensor(const TensorParallelDecode& d) {
  if (auto e = CheckNumber(d.compute_per_token_s, "decode.compute_per_token_s", true); !e.empty())
    return e;
  if (auto e = CheckCount(d.layers, "decode.layers"); !e.empty()) return e;
  return CheckNumber(d.activation_bytes, "decode.activation_bytes", false);
}
}  // namespace

Checked<CriticalPath> TensorParallelPath(const TensorParallelDecode& decode, int machines) {
  if (auto e = CheckTensor(decode); !e.empty()) return Error<CriticalPath>(e);
  auto reduce = RingAllReduce(decode.activation_bytes, machines);
  if (!reduce.ok()) return reduce;
  const double reduces = 2.0 * decode.layers;
  return Ok(CriticalPath{.compute_s = decode.compute_per_token_s / machines,
                         .messages = reduces * reduce.value.messages,
                         .bytes = reduces * reduce.value.bytes});
}

Checked<double> TensorParallelSingleSeconds(const TensorParallelDecode& decode) {
  if (auto e = CheckTensor(decode); !e.empty()) return Error<double>(e);
  return Ok(decode.compute_per_token_s);
}

Checked<Payoff> EvaluatePayoff(const CriticalPath& pool, double single_s, const Link& link) {
  if (auto e = CheckNumber(single_s, "single_s", true); !e.empty()) return Error<Payoff>(e);
  auto pool_s = Seconds(pool, link);
  if (!pool_s.ok()) return Error<Payoff>(pool_s.error);

  Payoff r;
  r.single_s = single_s;
  r.pool_s = pool_s.value;
  r.speedup = r.pool_s > 0 ? single_s / r.pool_s : std::numeric_limits<double>::infinity();
  r.can_ever_pay_off = pool.compute_s < single_s;

  // single = compute + messages*alpha + bytes/beta, solved for beta at this alpha ...
  const double bandwidth_slack = single_s - pool.compute_s - pool.messages * Alpha(link);
  if (bandwidth_slack > 0) {
    r.break_even_bandwidth_bytes_per_s = pool.bytes / bandwidth_slack;
  }
  // ... and for rtt at this beta and overhead (alpha = rtt/2 + overhead).
  const double latency_slack =
      single_s - pool.compute_s - pool.bytes / link.bandwidth_bytes_per_s;
  if (pool.messages == 0) {
    if (latency_slack >= 0) r.break_even_rtt_s = std::numeric_limits<double>::infinity();
  } else {
    const double rtt = 2 * (latency_slack / pool.messages - link.per_hop_overhead_s);
    if (rtt >= 0) r.break_even_rtt_s = rtt;
  }
  return Ok(r);
}

}  // namespace idlepool::plan
