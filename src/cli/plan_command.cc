#include "cli/plan_command.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "plan/coupled.h"
#include "text/units.h"
#include "worker/blob_cache.h"

namespace idlepool::cli {
namespace {

int Bad(const std::string& msg) {
  std::fprintf(stderr, "idlepool plan: %s\n", msg.c_str());
  return 2;
}

std::string Rate(double bytes_per_s) {
  const double bits = bytes_per_s * 8;
  if (bits >= 1e9) return absl::StrFormat("%.3g Gbit/s", bits / 1e9);
  if (bits >= 1e6) return absl::StrFormat("%.3g Mbit/s", bits / 1e6);
  return absl::StrFormat("%.3g kbit/s", bits / 1e3);
}

std::string Ms(double s) { return absl::StrFormat("%.4g ms", s * 1000); }

std::string Bytes(double b) {
  if (b >= 1 << 30) return absl::StrFormat("%.3g GiB", b / (1 << 30));
  if (b >= 1 << 20) return absl::StrFormat("%.3g MiB", b / (1 << 20));
  if (b >= 1 << 10) return absl::StrFormat("%.3g KiB", b / (1 << 10));
  return absl::StrFormat("%.0f B", b);
}

}  // namespace

double ParseLinkRate(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) return 0;
  char* end = nullptr;
  const std::string number = text.substr(0, i);
  const double v = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(v) || v <= 0) return 0;
  std::string unit;
  for (char c : text.substr(i)) unit.push_back(static_cast<char>(std::tolower(c)));
  const struct { const char* name; double factor; } units[] = {
      {"bit", 1.0 / 8},  {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8},
      {"b/s", 1},        {"kb/s", 1e3},     {"mb/s", 1e6},     {"gb/s", 1e9},
  };
  for (const auto& u : units) {
    if (unit == u.name) return v * u.factor;
  }
  return 0;
}

int RunPlanPattern(const PlanPatternOptions& o) {
  if (!(o.compute_ms > 0) || !std::isfinite(o.compute_ms)) {
    return Bad("--compute-ms must be a positive number of milliseconds");
  }
  if (o.machines < 1) return Bad("--machines must be at least 1");
  const double rate = ParseLinkRate(o.link);
  if (rate <= 0) {
    return Bad("--link '" + o.link.substr(0, 40) +
               "' is not a rate (100mbit, 1gbit, 125MB/s: bits or bytes per second, decimal)");
  }
  double bytes = 0;
  if (!o.bytes.empty()) {
    auto b = text::ParseByteSize(o.bytes);
    if (!b.ok()) return Bad("--bytes: " + std::string(b.status().message()));
    bytes = static_cast<double>(*b);
  }
  const plan::Link link{o.rtt_ms / 1000, rate, o.overhead_ms / 1000};
  const double compute_s = o.compute_ms / 1000;

  plan::Checked<plan::CriticalPath> path;
  plan::Checked<double> single;
  std::string what, unit_name;  // "step" or "token"
  if (o.pattern == "allreduce") {
    const plan::DataParallelStep step{compute_s, o.fixed_ms / 1000, bytes};
    path = plan::DataParallelPath(step, o.machines);
    single = plan::DataParallelSingleSeconds(step);
    what = absl::StrFormat(
        "data-parallel training on %d machines: %s of compute per step (%s not divided), %s of "
        "gradients ring-all-reduced per step",
        o.machines, Ms(compute_s), Ms(o.fixed_ms / 1000), Bytes(bytes));
    unit_name = "step";
  } else if (o.pattern == "pipeline") {
    const plan::PipelineDecode d{compute_s, o.machines, bytes,
                                 o.ring ? plan::PipelineTopology::kRing
                                        : plan::PipelineTopology::kChain};
    path = plan::PipelinePath(d);
    single = plan::PipelineSingleSeconds(d);
    what = absl::StrFormat(
        "pipeline decoding over %d stages (%s: %d hops per token), %s of compute per token, %s "
        "per hop",
        o.machines, o.ring ? "ring" : "chain", o.ring ? o.machines : o.machines - 1,
        Ms(compute_s), Bytes(bytes));
    unit_name = "token";
  } else if (o.pattern == "tensor") {
    if (o.layers < 1) return Bad("--layers must be at least 1");
    const plan::TensorParallelDecode d{compute_s, o.layers, bytes};
    path = plan::TensorParallelPath(d, o.machines);
    single = plan::TensorParallelSingleSeconds(d);
    what = absl::StrFormat(
        "tensor-parallel decoding on %d machines: %s of compute per token, %d layers, 2 "
        "all-reduces of %s per layer",
        o.machines, Ms(compute_s), o.layers, Bytes(bytes));
    unit_name = "token";
  } else {
    return Bad("--pattern must be allreduce, pipeline or tensor");
  }
  if (!path.ok()) return Bad(path.error);
  if (!single.ok()) return Bad(single.error);
  auto p = plan::EvaluatePayoff(path.value, single.value, link);
  if (!p.ok()) return Bad(p.error);
  const plan::Payoff& r = p.value;
  const bool tokens = unit_name == "token";
  const bool pays = r.speedup > 1;

  if (o.json) {
    nlohmann::json j;
    j["pattern"] = o.pattern;
    j["machines"] = o.machines;
    j["link_bytes_per_s"] = rate;
    j["rtt_s"] = link.rtt_s;
    j["overhead_s"] = link.per_hop_overhead_s;
    j["single_s"] = r.single_s;
    j["pool_s"] = r.pool_s;
    j["speedup"] = r.speedup;
    if (tokens) {
      j["single_tokens_per_s"] = 1 / r.single_s;
      j["pool_tokens_per_s"] = 1 / r.pool_s;
    }
    j["verdict"] = pays ? "pool" : "single machine";
    j["can_ever_pay_off"] = r.can_ever_pay_off;
    j["break_even_bytes_per_s"] = r.break_even_bandwidth_bytes_per_s
                                      ? nlohmann::json(*r.break_even_bandwidth_bytes_per_s)
                                      : nlohmann::json(nullptr);
    j["break_even_rtt_s"] =
        r.break_even_rtt_s && std::isfinite(*r.break_even_rtt_s)
            ? nlohmann::json(*r.break_even_rtt_s)
            : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  auto per = [&](double s) {
    return tokens ? absl::StrFormat("%.3g tokens/s (%s per token)", 1 / s, Ms(s))
                  : absl::StrFormat("%s per step", Ms(s));
  };
  std::printf("work:         %s\n", what.c_str());
  std::printf("link:         %s, round trip %s, %s per message\n", Rate(rate).c_str(),
              Ms(link.rtt_s).c_str(), Ms(link.per_hop_overhead_s).c_str());
  std::printf("one machine:  %s\n", per(r.single_s).c_str());
  std::printf("pool:         %s: %.2fx %s\n", per(r.pool_s).c_str(), r.speedup,
              pays ? "faster than one machine" : "(slower than one machine)");
  std::printf("verdict:      %s\n", pays ? "pool" : "single machine");
  if (!r.can_ever_pay_off) {
    std::printf("no link makes this pay off: the pool's compute per %s is not below one "
                "machine's%s\n",
                unit_name.c_str(),
                o.pattern == "pipeline"
                    ? " (a pipeline does not divide the compute per token: split a model only "
                      "when it does not fit on one machine)"
                    : "");
    return 0;
  }
  if (r.break_even_bandwidth_bytes_per_s) {
    if (*r.break_even_bandwidth_bytes_per_s == 0) {
      std::printf("pays off at any bandwidth at this round trip\n");
    } else {
      std::printf("pays off above %s at this round trip\n",
                  Rate(*r.break_even_bandwidth_bytes_per_s).c_str());
    }
  } else {
    std::printf("no bandwidth makes it pay off at this round trip\n");
  }
  if (r.break_even_rtt_s) {
    if (std::isfinite(*r.break_even_rtt_s)) {
      std::printf("pays off below a %s round trip at this bandwidth\n",
                  Ms(*r.break_even_rtt_s).c_str());
    } else {
      std::printf("pays off at any round trip at this bandwidth\n");
    }
  } else {
    std::printf("no round trip makes it pay off at this bandwidth\n");
  }
  return 0;
}

}  // namespace idlepool::cli
