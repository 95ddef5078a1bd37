// Fuzz target: the coordinator's checks of what a worker sends (coordinator/worker_input.h).
// Input: a serialized v1::WorkerMessage; every entry point the session service routes a
// message kind to is run on it, against a scratch blob store holding two blobs (the empty blob
// and "hello\n", see corpus/worker_message/).
//
// Properties, beyond not crashing: a Hello that passes CheckHello has a printable name of 1 to
// 256 bytes, 1 to 4096 CPUs and a sane GPU list; what reaches the core is cut to its bounds
// (texts printable or valid UTF-8 and short, figures within a year or a petabyte, at most
// kMaxCachedBlobs well-formed hashes, at most wire::kMaxGpus GPU readings with finite values);
// outputs and checkpoints that reach it are safe relative paths, listed once, of uploaded blobs
// of the size they claim; a peer address is dialable host:port or nothing.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "blob/store.h"
#include "coordinator/worker_input.h"
#include "fuzz_util.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"
#include "text/host_port.h"
#include "text/utf8.h"
#include "wire/wire.h"

namespace idlepool::fuzz {
namespace {

using coordinator::kMaxCachedBlobs;
constexpr uint64_t kYearMs = 365ull * 24 * 3600 * 1000;

blob::BlobStore& Blobs() {
  static blob::BlobStore* blobs = [] {
    spdlog::set_level(spdlog::level::off);  // ToCoreReport warns about every bad checkpoint
    auto* b = new blob::BlobStore(MakeScratchDir("worker_message_fuzz").string());
    FUZZ_CHECK(b->Init(0).ok(), b->root());
    for (const std::string content : {"", "hello\n"}) {
      blob::Sha256 hash;
      hash.Update(content.data(), content.size());
      const std::string sha = hash.HexDigest();
      std::filesystem::create_directories(std::filesystem::path(b->PathOf(sha)).parent_path());
      std::ofstream(b->PathOf(sha)) << content;
    }
    return b;
  }();
  return *blobs;
}

void CheckFilesOut(const std::vector<core::OutputFile>& files, const std::string& what) {
  std::set<std::string> seen;
  for (const core::OutputFile& f : files) {
    FUZZ_CHECK(!spec::RelativePathError(f.path).has_value(), what + " " + f.path);
    FUZZ_CHECK(seen.insert(f.path).second, what + " twice: " + f.path);
    FUZZ_CHECK(Blobs().Has(f.sha256), what + " blob " + f.sha256);
    FUZZ_CHECK(std::filesystem::file_size(Blobs().PathOf(f.sha256)) == f.size, f.path);
  }
}

void CheckHelloPath(const v1::Hello& hello) {
  if (!coordinator::CheckHello(hello).ok()) return;
  FUZZ_CHECK(!hello.worker().empty() && hello.worker().size() <= 256, hello.worker());
  FUZZ_CHECK(text::IsPrintableUtf8(hello.worker()), hello.worker());
  FUZZ_CHECK(hello.capacity().cpus() >= 1 && hello.capacity().cpus() <= 4096, "cpus");
  core::WorkerHello ev = coordinator::HelloEvent(hello, 1);
  FUZZ_CHECK(ev.gpus.size() <= static_cast<size_t>(wire::kMaxGpus), "gpus");
  FUZZ_CHECK(ev.capacity.gpus == ev.gpus.size(), "gpus");
  FUZZ_CHECK(ev.cached.size() <= kMaxCachedBlobs, "cached");
  for (const core::BlobRef& b : ev.cached) FUZZ_CHECK(blob::IsSha256Hex(b.sha256), b.sha256);
  const double score = coordinator::HelloCpuScore(hello);
  FUZZ_CHECK(std::isfinite(score) && score >= 0 && score < 1e7, "cpu_score");
  FUZZ_CHECK(coordinator::HelloCores(hello) <= 65536, "cores");
  for (const char* peer : {"ipv4:10.0.0.5:41000", "ipv6:[fe80::1]:41000", "unix:/tmp/s"}) {
    const std::string address = coordinator::PeerAddress(hello.peer_address(), peer);
    if (address.empty()) continue;
    absl::StatusOr<text::HostPort> hp = text::SplitHostPort(address);
    FUZZ_CHECK(hp.ok() && hp->port != 0 && !text::IsWildcardHost(hp->host), address);
  }
}

void CheckReport(const v1::AttemptReport& r) {
  const core::AttemptReport ev = coordinator::ToCoreReport(Blobs(), "w", 1, r);
  FUZZ_CHECK(text::IsValidUtf8(ev.message) && ev.message.size() <= 1024 + 1 + 4096, ev.message);
  FUZZ_CHECK(text::IsValidUtf8(ev.log_tail) && ev.log_tail.size() <= 4096, ev.log_tail);
  FUZZ_CHECK(ev.lost.count() >= 0 && static_cast<uint64_t>(ev.lost.count()) <= kYearMs, "lost");
  const auto& t = ev.timing;
  FUZZ_CHECK(t.stage_ms <= kYearMs && t.run_ms <= kYearMs && t.upload_ms <= kYearMs, "timing");
  for (uint64_t bytes :
       {ev.transfer.input_bytes, ev.transfer.cached_bytes, ev.transfer.coordinator_bytes,
        ev.transfer.peer_bytes, ev.transfer.output_bytes}) {
    FUZZ_CHECK(bytes <= (1ull << 50), "transfer");
  }
  FUZZ_CHECK(ev.result == core::ReportResult::kSucceeded || ev.outputs.empty(), "outputs");
  CheckFilesOut(ev.outputs, "output");
  if (ev.checkpoint) {
    FUZZ_CHECK(ev.checkpoint->size() <= spec::kMaxCheckpointFiles, "checkpoint");
    CheckFilesOut(*ev.checkpoint, "checkpoint file");
  }
}

void CheckOthers(const v1::WorkerMessage& msg) {
  std::vector<core::OutputFile> files;
  if (coordinator::CheckpointProblem(Blobs(), msg.checkpoint().files(), &files).empty()) {
    FUZZ_CHECK(files.size() == static_cast<size_t>(msg.checkpoint().files_size()), "files");
    CheckFilesOut(files, "checkpoint file");
  } else {
    FUZZ_CHECK(files.empty(), "a refused checkpoint keeps no file");
  }
  const core::OwnerStateChanged owner = coordinator::OwnerEvent("w", 1, msg.owner_state());
  for (const std::string* s : {&owner.state, &owner.cause, &owner.reason}) {
    FUZZ_CHECK(text::IsPrintableUtf8(*s) && s->size() <= 256, *s);
  }
  FUZZ_CHECK(owner.state.size() <= 32 && owner.cause.size() <= 32, owner.state + owner.cause);
  const core::CacheChanged cache = coordinator::CacheEvent("w", 1, msg.cache());
  FUZZ_CHECK(cache.added.size() <= kMaxCachedBlobs && cache.removed.size() <= kMaxCachedBlobs,
             "cache");
  for (const core::BlobRef& b : cache.added) FUZZ_CHECK(blob::IsSha256Hex(b.sha256), b.sha256);
  for (const std::string& s : cache.removed) FUZZ_CHECK(blob::IsSha256Hex(s), s);
}

void CheckReadings(const v1::WorkerMessage& msg) {
  std::vector<v1::GpuDevice> live;
  const core::GpusHeld held = coordinator::GpusEvent("w", 1, msg.gpus(), &live);
  FUZZ_CHECK(live.size() <= static_cast<size_t>(wire::kMaxGpus), "live");
  FUZZ_CHECK(held.held.size() <= live.size(), "held");
  for (const v1::GpuDevice& g : live) {
    FUZZ_CHECK(!g.has_temperature_c() || std::isfinite(g.temperature_c()), "temperature");
    FUZZ_CHECK(!g.has_utilization() || (g.utilization() >= 0 && g.utilization() <= 1), "util");
    FUZZ_CHECK(g.name().empty() && g.apis().empty(), "only live fields");
    FUZZ_CHECK(text::IsPrintableUtf8(g.unavailable()) && g.unavailable().size() <= 32, "unav");
  }
  for (const v1::SensorReadings* in : {&msg.sensors(), &msg.owner_state().sensors()}) {
    const v1::SensorReadings s = coordinator::CleanSensors(*in);
    for (double v :
         {s.temperature_c(), s.battery_percent(), s.idle_seconds(), s.owner_cpu_load()}) {
      FUZZ_CHECK(std::isfinite(v), "sensor");
    }
  }
  if (coordinator::LinkInRange(msg.link(), 64 << 20)) {
    FUZZ_CHECK(msg.link().rtt_us() <= 3'600'000'000ull && msg.link().probe_bytes() <= 64 << 20,
               "link");
  }
}

}  // namespace
}  // namespace idlepool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idlepool;
  v1::WorkerMessage msg;
  if (!msg.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::CheckHelloPath(msg.hello());
  fuzz::CheckReport(msg.report());
  fuzz::CheckOthers(msg);
  fuzz::CheckReadings(msg);
  return 0;
}
