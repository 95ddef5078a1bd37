#include "coordinator/worker_input.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"
#include "text/host_port.h"
#include "text/names.h"
#include "text/utf8.h"
#include "wire/wire.h"

namespace idlepool::coordinator {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxLogTail = 4096;
constexpr int kMaxLendUsers = 256;  // as the owner policy allows
// Times a worker reports are bounded by a year, so that sums over attempts cannot overflow.
constexpr uint64_t kYearMs = core::Millis(std::chrono::days(365)).count();

core::ReportResult ResultOf(v1::AttemptReport::Result r) {
  switch (r) {
    case v1::AttemptReport::SUCCEEDED:
      return core::ReportResult::kSucceeded;
    case v1::AttemptReport::TIMED_OUT:
      return core::ReportResult::kTimedOut;
    case v1::AttemptReport::PREEMPTED:
      return core::ReportResult::kPreempted;
    case v1::AttemptReport::MACHINE_FAULT:
      return core::ReportResult::kMachineFault;
    default:
      return core::ReportResult::kFailed;
  }
}

// Bounded (a petabyte, a billion files) so that sums cannot overflow the store's int64.
core::Transfer BoundedTransfer(const v1::Transfer& t) {
  auto b = [](uint64_t v) { return std::min<uint64_t>(v, 1ull << 50); };
  auto n = [](uint64_t v) { return std::min<uint64_t>(v, 1ull << 30); };
  return core::Transfer{b(t.input_bytes()), b(t.cached_bytes()), b(t.coordinator_bytes()),
                        b(t.peer_bytes()),  b(t.output_bytes()), n(t.cache_hits()),
                        n(t.cache_misses())};
}

// Live readings (GpuReadings) as kept: only the live fields.
v1::GpuDevice LiveReading(const v1::GpuDevice& g) {
  v1::GpuDevice d;
  d.set_index(g.index());
  if (g.has_temperature_c() && std::isfinite(g.temperature_c())) {
    d.set_temperature_c(g.temperature_c());
  }
  if (g.has_utilization() && std::isfinite(g.utilization())) {
    d.set_utilization(std::clamp(g.utilization(), 0.0, 1.0));
  }
  if (g.has_memory_used_mb()) d.set_memory_used_mb(g.memory_used_mb());
  d.set_unavailable(text::PrintableText(text::TruncateUtf8(g.unavailable(), 32)));
  return d;
}

// The owner's accept_users / refuse_users: bounded, and names as tokens carry them.
absl::Status CheckLendUsers(const v1::Hello& hello) {
  for (const auto& [field, list] : {std::pair{"accept_users", &hello.accept_users()},
                                    std::pair{"refuse_users", &hello.refuse_users()}}) {
    if (list->size() > kMaxLendUsers) {
      return absl::InvalidArgumentError(absl::StrCat("Hello.", field, " lists ", list->size(),
                                                     " users (at most ", kMaxLendUsers, ")"));
    }
    for (const std::string& u : *list) {
      if (!text::IsUserName(u)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Hello.", field, " holds '", text::PrintableText(text::TruncateUtf8(u, 64)),
            "', not a user name (1 to 64 of letters, digits and . _ - @)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckHello(const v1::Hello& hello) {
  if (hello.protocol_version() != wire::kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker speaks protocol version ", hello.protocol_version(), ", this coordinator speaks ",
        wire::kProtocolVersion, "; run the same idlepool version on both"));
  }
  // Names go to terminals, logs and dashboards as they are: nothing there may hide or lie.
  if (std::string why = WorkerNameProblem(hello.worker()); !why.empty()) {
    return absl::InvalidArgumentError(why);
  }
  if (hello.capacity().cpus() == 0 || hello.capacity().cpus() > 4096) {
    return absl::InvalidArgumentError("Hello.capacity.cpus must be between 1 and 4096");
  }
  for (const auto& [field, n] :
       {std::pair{"held_attempts", hello.held_attempts_size()},
        std::pair{"frozen_attempts", hello.frozen_attempts_size()},
        std::pair{"delivering_attempts", hello.delivering_attempts_size()}}) {
    if (static_cast<size_t>(n) > kMaxListedAttempts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Hello.", field, " lists ", n, " attempts (at most ", kMaxListedAttempts, ")"));
    }
  }
  if (std::string problem = wire::GpusProblem(hello.gpus()); !problem.empty()) {
    return absl::InvalidArgumentError(problem);
  }
  return CheckLendUsers(hello);
}

core::WorkerHello HelloEvent(const v1::Hello& hello, core::SessionId session) {
  core::WorkerHello ev;
  ev.worker = hello.worker();
  ev.session = session;
  ev.boot_id = hello.boot_id();
  ev.capacity = wire::FromProto(hello.capacity());
  ev.capacity.host_network = hello.allow_host_network();  // not a field of v1::Resources
  ev.accept_users.assign(hello.accept_users().begin(), hello.accept_users().end());
  ev.refuse_users.assign(hello.refuse_users().begin(), hello.refuse_users().end());
  // The devices it listed are what it offers (an older worker lists none: no GPUs).
  ev.gpus = wire::GpusFromProto(hello.gpus());
  ev.capacity.gpus = static_cast<uint32_t>(ev.gpus.size());
  ev.held.assign(hello.held_attempts().begin(), hello.held_attempts().end());
  ev.accepting = !hello.not_accepting();
  ev.frozen.assign(hello.frozen_attempts().begin(), hello.frozen_attempts().end());
  ev.cached = CachedBlobs(hello.cached(), kMaxCachedBlobs);
  ev.delivering.assign(hello.delivering_attempts().begin(), hello.delivering_attempts().end());
  return ev;
}

double HelloCpuScore(const v1::Hello& hello) {
  const double s = hello.cpu_score();
  return std::isfinite(s) && s > 0 && s < 1e7 ? s : 0.0;
}

uint32_t HelloCores(const v1::Hello& hello) { return hello.cores() <= 65536 ? hello.cores() : 0; }

std::string HelloSandbox(const v1::Hello& hello) {
  return text::PrintableText(text::TruncateUtf8(hello.sandbox(), 32));
}

core::OwnerStateChanged OwnerEvent(const std::string& worker, core::SessionId session,
                                   const v1::OwnerState& o) {
  core::OwnerStateChanged ev;
  ev.worker = worker;
  ev.session = session;
  ev.accepting = o.accepting();
  ev.state = text::PrintableText(text::TruncateUtf8(o.state(), 32));
  ev.reason = text::PrintableText(text::TruncateUtf8(o.reason(), 256));
  ev.cause = text::PrintableText(text::TruncateUtf8(o.cause(), 32));
  const auto& s = o.suspended_attempts();
  ev.suspended.assign(s.begin(), s.begin() + std::min<int>(s.size(), kMaxListedAttempts));
  return ev;
}

core::WorkerLeaving LeavingEvent(const std::string& worker, core::SessionId session,
                                 const v1::Leaving& leaving) {
  const auto& v = leaving.vacated_attempts();
  return core::WorkerLeaving{
      worker, session,
      std::vector<core::AttemptId>(v.begin(),
                                   v.begin() + std::min<int>(v.size(), kMaxListedAttempts))};
}

core::CacheChanged CacheEvent(const std::string& worker, core::SessionId session,
                              const v1::CacheChange& cache) {
  core::CacheChanged ev;
  ev.worker = worker;
  ev.session = session;
  ev.added = CachedBlobs(cache.added(), kMaxCachedBlobs);
  for (const auto& sha : cache.removed()) {
    if (ev.removed.size() >= kMaxCachedBlobs) break;
    if (blob::IsSha256Hex(sha)) ev.removed.push_back(sha);
  }
  return ev;
}

core::GpusHeld GpusEvent(const std::string& worker, core::SessionId session,
                         const v1::GpuReadings& gpus, std::vector<v1::GpuDevice>* live) {
  core::GpusHeld ev;
  ev.worker = worker;
  ev.session = session;
  live->clear();
  for (const v1::GpuDevice& g : gpus.devices()) {
    if (live->size() >= static_cast<size_t>(wire::kMaxGpus)) break;
    v1::GpuDevice d = LiveReading(g);
    if (!d.unavailable().empty()) ev.held.push_back(d.index());
    live->push_back(std::move(d));
  }
  return ev;
}

bool LinkInRange(const v1::LinkMeasured& m, uint64_t max_probe_bytes) {
  constexpr uint64_t kMaxRate = uint64_t{1} << 40;  // 1 TB/s
  constexpr uint64_t kMaxRttUs = std::chrono::microseconds(std::chrono::hours(1)).count();
  return m.rtt_us() <= kMaxRttUs && m.down_bytes_per_s() <= kMaxRate &&
         m.up_bytes_per_s() <= kMaxRate && m.probe_bytes() <= max_probe_bytes;
}

v1::SensorReadings CleanSensors(const v1::SensorReadings& in) {
  v1::SensorReadings out;
  auto finite = [](bool has, double v) { return has && std::isfinite(v); };
  if (finite(in.has_temperature_c(), in.temperature_c())) out.set_temperature_c(in.temperature_c());
  if (finite(in.has_battery_percent(), in.battery_percent())) {
    out.set_battery_percent(in.battery_percent());
  }
  if (in.has_on_ac_power()) out.set_on_ac_power(in.on_ac_power());
  if (in.has_lid_closed()) out.set_lid_closed(in.lid_closed());
  if (finite(in.has_idle_seconds(), in.idle_seconds())) out.set_idle_seconds(in.idle_seconds());
  if (finite(in.has_owner_cpu_load(), in.owner_cpu_load())) {
    out.set_owner_cpu_load(in.owner_cpu_load());
  }
  return out;
}

std::vector<core::BlobRef> CachedBlobs(const google::protobuf::RepeatedPtrField<v1::CachedBlob>& in,
                                       size_t max) {
  std::vector<core::BlobRef> out;
  for (const auto& b : in) {
    if (out.size() >= max) break;
    if (blob::IsSha256Hex(b.sha256())) out.push_back(core::BlobRef{b.sha256(), b.size()});
  }
  return out;
}

std::string WorkerNameProblem(const std::string& name) {
  if (name.empty() || name.size() > kMaxWorkerNameBytes) {
    return absl::StrCat("worker name of ", name.size(), " bytes: a name has 1 to ",
                        kMaxWorkerNameBytes, " bytes");
  }
  if (std::string why = text::NameProblem(name); !why.empty()) {
    return absl::StrCat("worker name \"", text::VisibleText(name), "\": ", why);
  }
  return "";
}

std::string PeerAddress(const std::string& announced, const std::string& grpc_peer) {
  if (announced.empty() || announced.size() > 256) return "";
  if (announced.find(':') == std::string::npos) return "";  // a port alone is no address
  // A host name, an IPv4 address or a bracketed IPv6 one: never a gRPC scheme ("unix:/path")
  // or anything with a path, which other workers would otherwise be told to dial. A missing
  // host (":7000") is a wildcard.
  auto hp = text::SplitHostPort(announced.front() == ':' ? "0.0.0.0" + announced : announced);
  if (!hp.ok() || hp->port == 0) return "";
  if (!text::IsWildcardHost(hp->host)) return announced;
  std::string from = grpc_peer;
  if (absl::StartsWith(from, "ipv4:") || absl::StartsWith(from, "ipv6:")) {
    from = from.substr(5);
  } else {
    return "";
  }
  auto session = text::SplitHostPort(from);
  if (!session.ok()) return "";
  return text::JoinHostPort(session->host, hp->port);
}

std::string CheckFiles(const blob::BlobStore& blobs,
                       const google::protobuf::RepeatedPtrField<v1::OutputFile>& files,
                       std::vector<core::OutputFile>* out, const char* what) {
  if (static_cast<size_t>(files.size()) > kMaxReportFiles) {
    return absl::StrCat(files.size(), " ", what, "s listed (at most ", kMaxReportFiles, ")");
  }
  std::set<std::string> seen;
  for (const auto& f : files) {
    std::string problem = spec::RelativePathError(f.path()).value_or("");
    if (problem.empty() && !seen.insert(f.path()).second) problem = "is listed twice";
    if (problem.empty() && !blobs.Has(f.sha256())) problem = "was not uploaded";
    if (problem.empty()) {
      std::error_code ec;
      auto size = fs::file_size(blobs.PathOf(f.sha256()), ec);
      if (ec || size != f.size()) problem = "has a size that does not match its blob";
    }
    if (!problem.empty()) {
      out->clear();
      // Escaped: the path may hold what a terminal would act on.
      return absl::StrCat(what, " '", text::VisibleText(text::TruncateUtf8(f.path(), 256)), "' ",
                          problem);
    }
    out->push_back(core::OutputFile{f.path(), f.sha256(), f.size()});
  }
  return "";
}

std::string CheckpointProblem(const blob::BlobStore& blobs,
                              const google::protobuf::RepeatedPtrField<v1::OutputFile>& files,
                              std::vector<core::OutputFile>* out) {
  if (static_cast<size_t>(files.size()) > spec::kMaxCheckpointFiles) {
    return absl::StrCat(files.size(), " files (at most ", spec::kMaxCheckpointFiles, ")");
  }
  return CheckFiles(blobs, files, out);
}

core::AttemptReport ToCoreReport(const blob::BlobStore& blobs, const std::string& worker,
                                 core::SessionId session, const v1::AttemptReport& r) {
  core::AttemptReport ev;
  ev.worker = worker;
  ev.session = session;
  ev.attempt = r.attempt();
  ev.exit_code = r.exit_code();
  ev.message = text::TruncateUtf8(r.message(), 1024);
  if (!r.log_tail().empty()) ev.message += "\n" + text::TruncateUtf8(r.log_tail(), kMaxLogTail);
  ev.log_tail = text::TailUtf8(r.log_tail(), kMaxLogTail);
  ev.result = ResultOf(r.result());
  ev.cannot_start = ev.result == core::ReportResult::kMachineFault && r.cannot_start();
  if (r.has_transfer()) ev.transfer = BoundedTransfer(r.transfer());
  if (r.has_timing()) {
    const v1::AttemptTiming& t = r.timing();
    auto y = [](uint64_t v) { return std::min<uint64_t>(v, kYearMs); };
    ev.timing = core::AttemptTiming{y(t.stage_ms()), y(t.run_ms()), y(t.upload_ms()), t.resumed()};
  }
  if (ev.result == core::ReportResult::kPreempted) {
    // Work lost is bounded by what could plausibly have run: a year.
    ev.lost = core::Millis(std::min<uint64_t>(r.lost_ms(), kYearMs));
    if (r.has_checkpoint()) {
      std::vector<core::OutputFile> files;
      std::string problem = CheckpointProblem(blobs, r.checkpoint(), &files);
      if (problem.empty()) {
        ev.checkpoint = std::move(files);
      } else {
        spdlog::warn("worker {}: final checkpoint of attempt {} ignored: {}", worker, r.attempt(),
                     problem);
      }
    }
  }
  if (ev.result != core::ReportResult::kSucceeded) return ev;
  // Outputs are uploaded before the report. One that is missing, of another size, listed
  // twice, or at a path that could escape the output dir fails the attempt instead of
  // committing a hole.
  std::string problem = CheckFiles(blobs, r.outputs(), &ev.outputs, "output");
  if (!problem.empty()) {
    ev.result = core::ReportResult::kFailed;
    ev.message = std::move(problem);
  }
  return ev;
}

}  // namespace idlepool::coordinator
