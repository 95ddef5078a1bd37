#include "platform/gpu_probe.h"

#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "platform/capture.h"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"

namespace idlepool::platform {

namespace {

using Json = nlohmann::json;

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json();
}

template <typename T>
std::optional<T> Optional(const Json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}

Json DeviceJson(const GpuDevice& d) {
  return {{"vendor", d.vendor},
          {"name", d.name},
          {"memory_mb", d.memory_mb},
          {"uuid", d.uuid},
          {"apis", d.apis},
          {"cuda_id", d.cuda_id},
          {"opencl_id", d.opencl_id},
          {"pci_bus_id", d.pci_bus_id},
          {"temperature_c", OrNull(d.temperature_c)},
          {"utilization", OrNull(d.utilization)},
          {"memory_used_mb", OrNull(d.memory_used_mb)},
          {"pids", OrNull(d.pids)}};
}

GpuDevice DeviceFromJson(const Json& j) {
  GpuDevice d;
  d.vendor = j.at("vendor").get<std::string>();
  d.name = j.at("name").get<std::string>();
  d.memory_mb = j.at("memory_mb").get<uint64_t>();
  d.uuid = j.value("uuid", "");
  d.apis = j.at("apis").get<std::vector<std::string>>();
  d.cuda_id = j.value("cuda_id", "");
  d.opencl_id = j.value("opencl_id", "");
  d.pci_bus_id = j.value("pci_bus_id", "");
  d.temperature_c = Optional<double>(j, "temperature_c");
  d.utilization = Optional<double>(j, "utilization");
  d.memory_used_mb = Optional<uint64_t>(j, "memory_used_mb");
  d.pids = Optional<std::vector<int64_t>>(j, "pids");
  return d;
}

// Discover() of the backend in a child: see gpu_probe.h.
class ProbeSource final : public GpuSource {
 public:
  ProbeSource(std::vector<std::string> argv, std::chrono::milliseconds timeout)
      : argv_(std::move(argv)), timeout_(timeout) {}

  std::vector<GpuDevice> Discover() override {
    std::vector<GpuDevice> devices;
    if (absl::Status st = Probe(&devices); !st.ok()) {
      devices.clear();
      report_ = {"OpenCL", true, absl::StrCat("probe failed: ", st.message())};
      spdlog::warn("gpu discovery: OpenCL: {}; going on without OpenCL devices", report_.message);
    }
    return devices;
  }

  GpuBackendReport report() const override { return report_; }

 private:
  absl::Status Probe(std::vector<GpuDevice>* devices) {
    absl::StatusOr<CapturedRun> run = RunCapturingStdout(argv_, timeout_);
    if (!run.ok()) return run.status();
    const std::string what = absl::StrCat("`", absl::StrJoin(argv_, " "), "`");
    if (run->timed_out) {
      return absl::DeadlineExceededError(
          absl::StrFormat("%s still running after %g s: killed", what, timeout_.count() / 1000.0));
    }
    if (run->signal != 0) {
      return absl::InternalError(absl::StrCat(what, " was killed by signal ", run->signal));
    }
    if (run->exit_code != 0) {
      return absl::InternalError(absl::StrCat(what, " exited with ", run->exit_code));
    }
    absl::StatusOr<GpuProbeResult> result = ParseProbeResult(run->stdout_text);
    if (!result.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", result.status().message()));
    }
    for (const auto& line : result->log) {
      spdlog::log(spdlog::level::from_str(line.level), "{}", line.message);
    }
    *devices = std::move(result->devices);
    report_ = std::move(result->report);
    return absl::OkStatus();
  }

  std::vector<std::string> argv_;
  std::chrono::milliseconds timeout_;
  GpuBackendReport report_{"OpenCL", true, "not tried"};
};

}  // namespace

std::vector<std::string> SelfGpuProbeCommand() { return {"/proc/self/exe", kGpuProbeSubcommand}; }

std::string ProbeResultJson(const GpuProbeResult& result) {
  const GpuBackendReport& r = result.report;
  Json j = {
      {"probe", 1},
      {"report", {{"backend", r.backend}, {"supported", r.supported}, {"message", r.message}}},
      {"devices", Json::array()},
      {"log", Json::array()}};
  for (const auto& d : result.devices) j["devices"].push_back(DeviceJson(d));
  for (const auto& l : result.log) j["log"].push_back({{"level", l.level}, {"msg", l.message}});
  // A driver's name that is not UTF-8 must not make the probe fail.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<GpuProbeResult> ParseProbeResult(const std::string& json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("probe", 0) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a probe result: '", absl::StripTrailingAsciiWhitespace(json.substr(0, 200)), "'"));
  }
  GpuProbeResult out;
  try {
    const Json& r = j.at("report");
    out.report = {r.at("backend").get<std::string>(), r.at("supported").get<bool>(),
                  r.at("message").get<std::string>()};
    for (const Json& d : j.at("devices")) out.devices.push_back(DeviceFromJson(d));
    for (const Json& l : j.value("log", Json::array())) {
      out.log.push_back({l.at("level").get<std::string>(), l.at("msg").get<std::string>()});
    }
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed probe result: ", e.what()));
  }
  return out;
}

[[noreturn]] void GpuProbeMain(int argc, char** argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the worker that waits for it
  bool opencl = false, cpu = false;
  std::string level = "warn";
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--opencl") == 0) {
      opencl = true;
    } else if (std::strcmp(argv[i], "--opencl-cpu") == 0) {
      cpu = true;
    } else if (std::strcmp(argv[i], "--log-level") == 0 && i + 1 < argc) {
      level = argv[++i];
    } else {
      opencl = false;
      break;
    }
  }
  if (!opencl) {
    std::fprintf(stderr, "usage: idlepool %s --opencl [--opencl-cpu] [--log-level LEVEL]\n",
                 kGpuProbeSubcommand);
    std::exit(2);
  }
  // Log lines are kept, to travel in the result (a ring far larger than discovery's few lines).
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("gpu-probe", ring));
  spdlog::set_level(spdlog::level::from_str(level));
  std::unique_ptr<GpuSource> source = MakeOpenClSource(cpu);
  GpuProbeResult result;
  result.devices = source->Discover();
  result.report = source->report();
  for (const auto& m : ring->last_raw()) {
    result.log.push_back({std::string(spdlog::level::to_string_view(m.level).data(),
                                      spdlog::level::to_string_view(m.level).size()),
                          std::string(m.payload.data(), m.payload.size())});
  }
  const std::string out = ProbeResultJson(result) + "\n";
  const bool written =
      std::fwrite(out.data(), 1, out.size(), stdout) == out.size() && std::fflush(stdout) == 0;
  // No exit handlers: the drivers' (PoCL's, LLVM's) cost time and protect nothing here.
  std::_Exit(written ? 0 : 1);
}

std::unique_ptr<GpuSource> MakeOpenClProbeSource(std::vector<std::string> probe, bool include_cpu,
                                                 std::chrono::milliseconds timeout) {
  probe.push_back("--opencl");
  if (include_cpu) probe.push_back("--opencl-cpu");
  probe.push_back("--log-level");
  const auto level = spdlog::level::to_string_view(spdlog::get_level());
  probe.push_back(std::string(level.data(), level.size()));
  return std::make_unique<ProbeSource>(std::move(probe), timeout);
}

}  // namespace idlepool::platform
