// Cost model for coupled work on pooled machines: does spreading one job over p machines that
// must exchange data beat running it on one machine, and at which link speeds?
//
// Every model here reduces a job to a CriticalPath: the compute on the critical path, the number
// of point-to-point messages on it, and the bytes that cross one link on it, in sequence. On a
// Link (the alpha-beta model, Hockney 1994; as used by Thakur, Rabenseifner & Gropp,
// "Optimization of collective communication operations in MPICH", IJHPCA 2005) its time is
//
//   seconds = compute_s + messages * alpha + bytes / beta,
//   alpha   = rtt_s / 2 + per_hop_overhead_s   (one-way latency plus software cost per message),
//   beta    = bandwidth_bytes_per_s.
//
// The models (p machines, sources cited at each function):
//   - ring all-reduce:    2(p-1) messages, 2(p-1)/p * bytes           (Patarasuk & Yuan 2009)
//   - data-parallel step: fixed_s + compute_s/p + ring all-reduce of the gradient
//   - pipeline decoding:  compute per token (NOT divided: stages run one after another for one
//                         token) + hops * (alpha + activation_bytes/beta), hops = stages-1 for a
//                         chain, stages for a ring that returns the token to the first stage
//   - tensor parallel:    compute/p + layers * 2 ring all-reduces of the activation
//                         (Shoeybi et al., "Megatron-LM", arXiv:1909.08053, 2019, section 3)
//
// What the model leaves out, so callers know which way it errs: contention between concurrent
// transfers, protocol round trips beyond one message per hop (acknowledged RPCs, TCP slow start,
// retransmissions on lossy links), and overlap of communication with compute. It is therefore
// optimistic for the pool on lossy or RPC-heavy links; tests/unit/plan_test.cc records its error
// against published measurements.
//
// Units: seconds, bytes and bytes per second, as doubles. Errors: every function validates its
// inputs and returns Checked<T> whose `error` names the offending field (empty when ok). No
// exceptions, no I/O, no global state.
//
// Thread safety: all functions are pure and may be called from any thread concurrently.
#ifndef IDLEPOOL_PLAN_COUPLED_H_
#define IDLEPOOL_PLAN_COUPLED_H_

#include <optional>
#include <string>

namespace idlepool::plan {

// A value or an error naming the invalid input field ("link.rtt_s must be finite and >= 0").
template <typename T>
struct [[nodiscard]] Checked {
  T value{};
  std::string error;  // empty when ok
  bool ok() const { return error.empty(); }
};

// One link between two pooled machines (all pairs assumed alike).
struct Link {
  double rtt_s = 0;                  // round trip time; one-way latency is taken as rtt_s / 2
  double bandwidth_bytes_per_s = 0;  // beta; must be > 0
  double per_hop_overhead_s = 0;     // software cost per message (serialization, RPC, syscalls)
};

// Work on the critical path of one step (or one token). See the header comment for its time.
struct CriticalPath {
  double compute_s = 0;  // compute that is not overlapped with communication
  double messages = 0;   // point-to-point messages in sequence, each costing alpha
  double bytes = 0;      // bytes crossing one link in sequence, each costing 1/beta
};

// Time of `path` on `link`. Errors: invalid path or link field.
Checked<double> Seconds(const CriticalPath& path, const Link& link);

// Ring all-reduce of `bytes` over `machines`: 2(p-1) messages and 2(p-1)/p * bytes
// (reduce-scatter then all-gather; Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms
// for clusters of workstations", JPDC 69(2), 2009; Thakur et al. 2005). machines == 1 is free.
// Errors: bytes negative/NaN/inf, machines < 1.
Checked<CriticalPath> RingAllReduce(double bytes, int machines);
// Convenience: Seconds(RingAllReduce(bytes, machines), link).
Checked<double> RingAllReduceSeconds(double bytes, int machines, const Link& link);

// One synchronous data-parallel training step.
struct DataParallelStep {
  double compute_s = 0;       // divisible compute of one step on one machine; > 0
  double fixed_s = 0;         // per-step part that is not divided (optimizer, I/O); >= 0
  double gradient_bytes = 0;  // bytes all-reduced per step; >= 0
};
// Pool: fixed_s + compute_s/p + ring all-reduce(gradient_bytes, p). One machine: fixed + compute.
Checked<CriticalPath> DataParallelPath(const DataParallelStep& step, int machines);
Checked<double> DataParallelSingleSeconds(const DataParallelStep& step);

enum class PipelineTopology {
  kChain,  // stages-1 hops: the last stage emits the token itself
  kRing,   // stages hops: the token returns to the first stage for the next step; the published
           // cases (exo over a TCP ring; llama.cpp RPC, where the client sends work to the remote
           // backend and reads the logits back) are rings
};

// Autoregressive decoding of one token at a time through `stages` machines, each holding a
// slice of the layers. Because one token visits the stages one after another, the compute per
// token is the whole model's, not divided: the pool only adds hops. It pays off only when the
// model does not fit on one machine, which this model does not judge.
struct PipelineDecode {
  double compute_per_token_s = 0;  // the whole model's compute for one token; > 0
  int stages = 1;                  // machines in the pipeline; >= 1
  double activation_bytes = 0;     // bytes sent on each hop per token; >= 0
  PipelineTopology topology = PipelineTopology::kChain;
};
// Per token: compute + hops * (alpha + activation_bytes / beta). Tokens/s = 1 / seconds.
Checked<CriticalPath> PipelinePath(const PipelineDecode& decode);
Checked<double> PipelineSingleSeconds(const PipelineDecode& decode);

// Tensor-parallel decoding (Megatron-LM): every layer's matrices split over p machines, two
// all-reduces of the activation per layer (after attention and after the MLP).
struct TensorParallelDecode {
  double compute_per_token_s = 0;  // one machine's compute per token; > 0
  int layers = 1;                  // >= 1
  double activation_bytes = 0;     // bytes of one layer's activation for one token; >= 0
};
// Per token: compute/p + layers * 2 * ring all-reduce(activation_bytes, p).
Checked<CriticalPath> TensorParallelPath(const TensorParallelDecode& decode, int machines);
Checked<double> TensorParallelSingleSeconds(const TensorParallelDecode& decode);

// Whether the pool pays off on a link, and which link would make it break even.
struct Payoff {
  double single_s = 0;  // one machine, no network
  double pool_s = 0;    // the pool on the given link
  double speedup = 0;   // single_s / pool_s; > 1 means the pool pays off
  // False when even an infinitely fast, zero-latency link would not beat one machine (the
  // pool's compute on the critical path is not below single_s), e.g. pipeline decoding.
  bool can_ever_pay_off = false;
  // Bandwidth at which the pool matches one machine at the link's RTT and overhead; the pool
  // wins above it. nullopt: no bandwidth suffices at this latency. 0: any bandwidth does.
  std::optional<double> break_even_bandwidth_bytes_per_s;
  // RTT at which the pool matches one machine at the link's bandwidth and overhead; the pool
  // wins below it. nullopt: no RTT suffices at this bandwidth (or overhead alone is too much).
  // +infinity: the path has no messages, so any RTT does.
  std::optional<double> break_even_rtt_s;
};
// Errors: invalid path or link field, single_s not finite or <= 0.
Checked<Payoff> EvaluatePayoff(const CriticalPath& pool, double single_s, const Link& link);

}  // namespace idlepool::plan

#endif  // IDLEPOOL_PLAN_COUPLED_H_
