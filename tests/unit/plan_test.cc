// Tests of the coupled-work cost model (src/plan/coupled.h): its formulas, its input checks, and
// its predictions against published measurements. The published cases take their inputs from
// the cited source; nothing is tuned to fit. Where the source lacks an input, the assumption and
// its reason are written next to it. Each case prints the model's error and asserts it within a
// stated tolerance; a case the model misses asserts the prediction itself and the size of the
// miss, so a change to the model that moves either shows up here.
#include "plan/coupled.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace idlepool::plan {
namespace {

// Relative error of a predicted rate against an observed one: +0.10 = predicted 10% too high.
double RelativeError(double predicted, double observed) { return (predicted - observed) / observed; }

void PrintCase(const char* name, double predicted, double observed, const char* unit) {
  std::printf("[plan case] %s: predicted %.3f %s, observed %.3f %s, error %+.1f%%\n", name,
              predicted, unit, observed, unit, 100 * RelativeError(predicted, observed));
}

double TokensPerSecond(const PipelineDecode& decode, const Link& link) {
  auto path = PipelinePath(decode);
  EXPECT_TRUE(path.ok()) << path.error;
  auto s = Seconds(path.value, link);
  EXPECT_TRUE(s.ok()) << s.error;
  return 1 / s.value;
}

// ---- Formulas -----------------------------------------------------------------------------

TEST(RingAllReduce, MatchesPatarasukYuanFormula) {
  const Link link{.rtt_s = 0.002, .bandwidth_bytes_per_s = 1e8, .per_hop_overhead_s = 0.0005};
  auto s = RingAllReduceSeconds(8e6, 8, link);
  ASSERT_TRUE(s.ok()) << s.error;
  const double alpha = 0.001 + 0.0005;
  EXPECT_DOUBLE_EQ(s.value, 2 * 7 * alpha + 2.0 * 7 / 8 * 8e6 / 1e8);
}

TEST(RingAllReduce, OneMachineIsFree) {
  auto s = RingAllReduceSeconds(1e9, 1, Link{.rtt_s = 0.1, .bandwidth_bytes_per_s = 1});
  ASSERT_TRUE(s.ok()) << s.error;
  EXPECT_EQ(s.value, 0);
}

TEST(DataParallel, DividesComputeAndAddsAllReduce) {
  const DataParallelStep step{.compute_s = 8, .fixed_s = 0.5, .gradient_bytes = 4e6};
  const Link link{.rtt_s = 0.001, .bandwidth_bytes_per_s = 1e7};
  auto path = DataParallelPath(step, 4);
  ASSERT_TRUE(path.ok()) << path.error;
  auto s = Seconds(path.value, link);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s.value, 0.5 + 2 + 2 * 3 * 0.0005 + 1.5 * 4e6 / 1e7);
  EXPECT_DOUBLE_EQ(DataParallelSingleSeconds(step).value, 8.5);
}

TEST(Pipeline, RingHasOneMoreHopThanChain) {
  PipelineDecode decode{.compute_per_token_s = 0.01, .stages = 3, .activation_bytes = 1000};
  decode.topology = PipelineTopology::kChain;
  EXPECT_EQ(PipelinePath(decode).value.messages, 2);
  EXPECT_EQ(PipelinePath(decode).value.bytes, 2000);
  decode.topology = PipelineTopology::kRing;
  EXPECT_EQ(PipelinePath(decode).value.messages, 3);
  decode.stages = 1;  // one machine: no network in either topology
  EXPECT_EQ(PipelinePath(decode).value.messages, 0);
}

TEST(Pipeline, NeverBeatsOneMachine) {
  const PipelineDecode decode{.compute_per_token_s = 0.02, .stages = 4, .activation_bytes = 8192,
                              .topology = PipelineTopology::kChain};
  auto path = PipelinePath(decode);
  ASSERT_TRUE(path.ok());
  auto payoff = EvaluatePayoff(path.value, PipelineSingleSeconds(decode).value,
                               Link{.rtt_s = 1e-6, .bandwidth_bytes_per_s = 1e12});
  ASSERT_TRUE(payoff.ok()) << payoff.error;
  EXPECT_FALSE(payoff.value.can_ever_pay_off);
  EXPECT_LT(payoff.value.speedup, 1);
  EXPECT_FALSE(payoff.value.break_even_bandwidth_bytes_per_s.has_value());
  EXPECT_FALSE(payoff.value.break_even_rtt_s.has_value());
}

TEST(TensorParallel, TwoAllReducesPerLayer) {
  const TensorParallelDecode decode{.compute_per_token_s = 0.04, .layers = 10,
                                    .activation_bytes = 16384};
  const Link link{.rtt_s = 0.0002, .bandwidth_bytes_per_s = 1e9};
  auto path = TensorParallelPath(decode, 4);
  ASSERT_TRUE(path.ok()) << path.error;
  const double reduce = RingAllReduceSeconds(16384, 4, link).value;
  EXPECT_NEAR(Seconds(path.value, link).value, 0.01 + 10 * 2 * reduce, 1e-12);
  // One machine is just the compute.
  EXPECT_DOUBLE_EQ(Seconds(TensorParallelPath(decode, 1).value, link).value, 0.04);
}

TEST(Payoff, BreakEvenLinkGivesSpeedupOne) {
  const DataParallelStep step{.compute_s = 10, .gradient_bytes = 1e9};
  const Link link{.rtt_s = 0.001, .bandwidth_bytes_per_s = 1e9, .per_hop_overhead_s = 1e-4};
  auto path = DataParallelPath(step, 4).value;
  auto payoff = EvaluatePayoff(path, 10, link);
  ASSERT_TRUE(payoff.ok()) << payoff.error;
  ASSERT_TRUE(payoff.value.can_ever_pay_off);
  ASSERT_TRUE(payoff.value.break_even_bandwidth_bytes_per_s.has_value());
  ASSERT_TRUE(payoff.value.break_even_rtt_s.has_value());

  Link at_bandwidth = link;
  at_bandwidth.bandwidth_bytes_per_s = *payoff.value.break_even_bandwidth_bytes_per_s;
  EXPECT_NEAR(EvaluatePayoff(path, 10, at_bandwidth).value.speedup, 1, 1e-12);
  Link at_rtt = link;
  at_rtt.rtt_s = *payoff.value.break_even_rtt_s;
  EXPECT_NEAR(EvaluatePayoff(path, 10, at_rtt).value.speedup, 1, 1e-12);

  // At 1e8 B/s the gradient alone takes 15 s > 10 s: no RTT makes up for that bandwidth.
  Link slow = link;
  slow.bandwidth_bytes_per_s = 1e8;
  EXPECT_FALSE(EvaluatePayoff(path, 10, slow).value.break_even_rtt_s.has_value());
}

TEST(Payoff, NoMessagesMeansAnyRtt) {
  auto payoff = EvaluatePayoff(CriticalPath{.compute_s = 1}, 2, Link{.bandwidth_bytes_per_s = 1});
  ASSERT_TRUE(payoff.ok());
  EXPECT_EQ(*payoff.value.break_even_rtt_s, std::numeric_limits<double>::infinity());
  EXPECT_EQ(*payoff.value.break_even_bandwidth_bytes_per_s, 0);
  EXPECT_DOUBLE_EQ(payoff.value.speedup, 2);
}

// ---- Input checks -------------------------------------------------------------------------

TEST(Validation, ErrorsNameTheField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Link good{.rtt_s = 0.001, .bandwidth_bytes_per_s = 1e8};
  EXPECT_NE(RingAllReduceSeconds(1, 2, Link{.rtt_s = nan, .bandwidth_bytes_per_s = 1})
                .error.find("link.rtt_s"), std::string::npos);
  EXPECT_NE(RingAllReduceSeconds(1, 2, Link{.rtt_s = 0, .bandwidth_bytes_per_s = 0})
                .error.find("link.bandwidth_bytes_per_s"), std::string::npos);
  EXPECT_NE(RingAllReduceSeconds(1, 2, Link{.rtt_s = 0, .bandwidth_bytes_per_s = 1,
                                            .per_hop_overhead_s = -1})
                .error.find("link.per_hop_overhead_s"), std::string::npos);
  EXPECT_NE(RingAllReduceSeconds(-1, 2, good).error.find("bytes"), std::string::npos);
  EXPECT_NE(RingAllReduceSeconds(1, 0, good).error.find("machines"), std::string::npos);
  EXPECT_NE(DataParallelPath({.compute_s = 0}, 2).error.find("step.compute_s"), std::string::npos);
  EXPECT_NE(DataParallelPath({.compute_s = 1, .fixed_s = nan}, 2).error.find("step.fixed_s"),
            std::string::npos);
  EXPECT_NE(PipelinePath({.compute_per_token_s = 1, .stages = 0}).error.find("decode.stages"),
            std::string::npos);
  EXPECT_NE(PipelinePath({.compute_per_token_s = std::numeric_limits<double>::infinity()})
                .error.find("decode.compute_per_token_s"), std::string::npos);
  EXPECT_NE(TensorParallelPath({.compute_per_token_s = 1, .layers = 0}, 2)
                .error.find("decode.layers"), std::string::npos);
  EXPECT_NE(EvaluatePayoff(CriticalPath{}, 0, good).error.find("single_s"), std::string::npos);
  EXPECT_NE(Seconds(CriticalPath{.messages = -1}, good).error.find("path.messages"),
            std::string::npos);
  EXPECT_TRUE(RingAllReduceSeconds(0, 2, good).ok());
}

// ---- Published figures --------------------------------------------------------------------

// Case 1: exo, github.com/exo-explore/exo/issues/2295. Four Macs in a pipeline serve one
// ~110 GB model: 25.4 tokens/s with RDMA over Thunderbolt, 8.7 tokens/s over a TCP ring on
// Wi-Fi with 7-30 ms round trips; about 37 ms of compute per token.
// Provenance: these figures are as given in the idlepool issue 6 brief that cites exo#2295; the
// issue text itself was not in the reference corpus available when this test was written (three
// searches), so they could not be checked against it.
// Inputs:
//   compute_per_token_s = 0.037       (source)
//   stages = 4, topology = kRing      (source: four machines, "TCP ring"; the same ring is
//                                      assumed for RDMA, since the next token starts at stage 1)
//   activation_bytes = 16384          ASSUMED: one fp16 hidden vector of width 8192, typical of
//                                      ~70-120B-parameter models; the source gives no width
//   RDMA: rtt_s = 100e-6              ASSUMED: RDMA over Thunderbolt has one-way latency of tens
//                                      of microseconds; 50 us one way taken as the round figure
//         bandwidth = 10e9 B/s        Thunderbolt 5 line rate, 80 Gbit/s
//   Wi-Fi: rtt_s = 18.5e-3            midpoint of the source's 7-30 ms (rule fixed in advance:
//                                      midpoint of a stated range), both ends also reported
//          bandwidth = 12.5e6 B/s     ASSUMED: 100 Mbit/s effective Wi-Fi throughput
//   per_hop_overhead_s = 0            not given; the model has no other place for it
// Results (printed by the test):
//   RDMA:  26.88 tokens/s vs 25.4 observed, error +5.8%   (tolerance 25%: passes)
//   Wi-Fi: 12.62 tokens/s vs 8.7 observed, error +45%     (MISS, kept, not tuned); at the 30 ms
//          end of the range 9.78 tokens/s (+12%), at 7 ms 17.8 tokens/s (+105%). The observed
//          rate is below the model even at the worst stated RTT: the model leaves out TCP
//          retransmission/backoff on a lossy Wi-Fi link and any request-response round trip per
//          hop (a full RTT per hop instead of RTT/2 would give 9.0 tokens/s). It is optimistic
//          for the pool on Wi-Fi, which is the safe direction only for "does not pay off".
TEST(PublishedCases, ExoPipelineRdmaVsWifiRing) {
  const PipelineDecode decode{.compute_per_token_s = 0.037, .stages = 4,
                              .activation_bytes = 16384, .topology = PipelineTopology::kRing};

  const double rdma = TokensPerSecond(decode, Link{.rtt_s = 100e-6,
                                                   .bandwidth_bytes_per_s = 10e9});
  PrintCase("exo#2295 RDMA/Thunderbolt", rdma, 25.4, "tokens/s");
  EXPECT_NEAR(RelativeError(rdma, 25.4), 0, 0.25);

  const double wifi_mid = TokensPerSecond(decode, Link{.rtt_s = 18.5e-3,
                                                       .bandwidth_bytes_per_s = 12.5e6});
  const double wifi_slow = TokensPerSecond(decode, Link{.rtt_s = 30e-3,
                                                        .bandwidth_bytes_per_s = 12.5e6});
  const double wifi_fast = TokensPerSecond(decode, Link{.rtt_s = 7e-3,
                                                        .bandwidth_bytes_per_s = 12.5e6});
  PrintCase("exo#2295 Wi-Fi ring, RTT 18.5 ms (midpoint)", wifi_mid, 8.7, "tokens/s");
  PrintCase("exo#2295 Wi-Fi ring, RTT 30 ms", wifi_slow, 8.7, "tokens/s");
  PrintCase("exo#2295 Wi-Fi ring, RTT 7 ms", wifi_fast, 8.7, "tokens/s");
  // The documented miss: the prediction itself, and an error above the 25% tolerance.
  EXPECT_NEAR(wifi_mid, 12.62, 0.01);
  EXPECT_NEAR(RelativeError(wifi_mid, 8.7), 0.45, 0.01);
  // Within tolerance only at the worst stated RTT.
  EXPECT_NEAR(RelativeError(wifi_slow, 8.7), 0, 0.25);
  // The model orders the links as observed.
  EXPECT_GT(rdma, wifi_slow);

  // Pipeline decoding of a model does not divide its compute: no link makes it beat one machine
  // that could hold the model (here none can; the pool buys memory, not speed).
  auto payoff = EvaluatePayoff(PipelinePath(decode).value, PipelineSingleSeconds(decode).value,
                               Link{.rtt_s = 100e-6, .bandwidth_bytes_per_s = 10e9});
  ASSERT_TRUE(payoff.ok());
  EXPECT_FALSE(payoff.value.can_ever_pay_off);
}

// Case 2: llama.cpp pull request 6829 ("ggml : add RPC backend"), github.com/ggml-org/llama.cpp/
// pull/6829, comment by rgerganov, 2024-05-10. Host A (Dell Precision 5560, NVIDIA T1200 Laptop
// 4 GB) runs `main`; Host B (Ryzen 9, GTX 1660 6 GB); "local gigabit network". TinyLlama-1.1B F16
// (2.05 GiB), -ngl 99 -fa, 64 tokens:
//   CUDA backend on Host A:                63 t/s
//   RPC to a server on Host A (loopback):  60 t/s
//   RPC to a server on Host B over 1 GbE:  42 t/s
// Setup as the model sees it: all layers on the one remote server, the client holds none; per
// token the client sends the work to the server and reads the logits back: a ring of 2 hops.
// Inputs:
//   compute_per_token_s = 1/63 s      source (Host A's local rate). ASSUMED equal on Host B's
//                                      GTX 1660: the source gives no local rate for Host B
//   per_hop_overhead_s = (1/60 - 1/63)/2 = 0.397 ms
//                                      DERIVED from the same source: the loopback RPC run costs
//                                      0.794 ms per token more than local, with no network, over
//                                      the model's 2 hops
//   activation_bytes = 128000         logits of TinyLlama's 32000-token vocabulary as F32, read
//                                      back each token; the outgoing hop (graph and token input)
//                                      is not sized in the source and is taken as the same
//   rtt_s = 0.2e-3                    ASSUMED: typical switched gigabit LAN; not in the source
//   bandwidth = 125e6 B/s             1 Gbit/s line rate
// Result: 52.87 tokens/s vs 42 observed, error +25.9% (just outside 25%: MISS, kept, not tuned).
// The model explains 3.0 ms of the 7.9 ms per token that the remote run adds over local. Left
// out: Host B's different GPU, the size of the per-token graph upload, and the several
// synchronous request-response round trips per token of the RPC protocol. The case checks the
// form (remote pipeline decoding is slower than local, never faster), and reports the gap.
TEST(PublishedCases, LlamaCppRpcTinyLlamaOverGigabit) {
  const double local_s = 1.0 / 63;
  const double overhead_s = (1.0 / 60 - 1.0 / 63) / 2;
  const PipelineDecode decode{.compute_per_token_s = local_s, .stages = 2,
                              .activation_bytes = 128000, .topology = PipelineTopology::kRing};
  const Link gbe{.rtt_s = 0.2e-3, .bandwidth_bytes_per_s = 125e6, .per_hop_overhead_s = overhead_s};

  // The derived overhead reproduces the loopback run by construction (zero RTT, memory-speed
  // link): a consistency check of the derivation, not a prediction.
  const Link loopback{.rtt_s = 0, .bandwidth_bytes_per_s = 1e15, .per_hop_overhead_s = overhead_s};
  EXPECT_NEAR(TokensPerSecond(decode, loopback), 60, 0.01);

  const double remote = TokensPerSecond(decode, gbe);
  PrintCase("llama.cpp#6829 RPC TinyLlama F16 over 1 GbE", remote, 42, "tokens/s");
  EXPECT_NEAR(remote, 52.87, 0.01);
  EXPECT_NEAR(RelativeError(remote, 42), 0.259, 0.005);  // the documented miss
  EXPECT_LT(remote, 63);                                  // the form: slower than local

  auto payoff = EvaluatePayoff(PipelinePath(decode).value, local_s, gbe);
  ASSERT_TRUE(payoff.ok());
  EXPECT_FALSE(payoff.value.can_ever_pay_off);
  EXPECT_LT(payoff.value.speedup, 1);
}

// Case 3: textbook ring all-reduce. 100 MB of gradients over 4 machines on 1 GbE
// (125e6 B/s line rate): bandwidth term 2*3/4 * 100e6 / 125e6 = 1.2 s (Patarasuk & Yuan 2009;
// Thakur et al. 2005), plus 2*3 messages of latency; rtt 0.2 ms ASSUMED (switched LAN), so
// the latency term is 0.6 ms. Expected 1.2 s + latency; tolerance 1%.
// Result: 1.2006 s, error +0.05% against 1.2 s.
// Then the question the planner asks: a data-parallel step of 1 s of compute on one machine
// takes 0.25 + 1.2006 = 1.4506 s on four (speedup 0.69): it does not pay off on 1 GbE; it
// breaks even at 150e6 / (1 - 0.25 - 0.0006) = 200.2e6 B/s, about 1.6 Gbit/s.
TEST(PublishedCases, TextbookRingAllReduceOnGigabit) {
  const Link gbe{.rtt_s = 0.2e-3, .bandwidth_bytes_per_s = 125e6};
  auto s = RingAllReduceSeconds(100e6, 4, gbe);
  ASSERT_TRUE(s.ok()) << s.error;
  PrintCase("textbook ring all-reduce 100 MB, 4 x 1 GbE", s.value, 1.2, "s");
  EXPECT_NEAR(RelativeError(s.value, 1.2), 0, 0.01);
  EXPECT_NEAR(s.value, 1.2006, 1e-9);

  const DataParallelStep step{.compute_s = 1, .gradient_bytes = 100e6};
  auto payoff = EvaluatePayoff(DataParallelPath(step, 4).value,
                               DataParallelSingleSeconds(step).value, gbe);
  ASSERT_TRUE(payoff.ok()) << payoff.error;
  std::printf("[plan case] data-parallel 1 s step on 4 x 1 GbE: speedup %.3f, break-even "
              "bandwidth %.4g B/s\n",
              payoff.value.speedup, *payoff.value.break_even_bandwidth_bytes_per_s);
  EXPECT_NEAR(payoff.value.pool_s, 1.4506, 1e-9);
  EXPECT_TRUE(payoff.value.can_ever_pay_off);
  EXPECT_LT(payoff.value.speedup, 1);
  EXPECT_NEAR(*payoff.value.break_even_bandwidth_bytes_per_s, 150e6 / 0.7494, 1);
}

}  // namespace
}  // namespace idlepool::plan
