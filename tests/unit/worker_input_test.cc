// What the coordinator takes from a worker (coordinator/worker_input.h): the Peer address a
// worker announces, completed from its session's address when it names no host; the Hello's
// checks; owner states, cache changes, GPU readings and link measurements cut to size.
#include "coordinator/worker_input.h"

#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "wire/wire.h"

namespace idlepool::coordinator {
namespace {

TEST(WorkerName, AVisibleNameIsAccepted) {
  EXPECT_EQ(WorkerNameProblem("wa"), "");
  EXPECT_EQ(WorkerNameProblem("render box \u00E9t\u00E9"), "");
  EXPECT_EQ(WorkerNameProblem(std::string(kMaxWorkerNameBytes, 'w')), "");
}

TEST(WorkerName, ANameThatShowsLikeAnotherIsRefusedNamingTheCharacter) {
  // Shown as "wa" on every screen: the message escapes it so the reader sees why.
  EXPECT_EQ(WorkerNameProblem("wa\u200B"),
            "worker name \"wa\\u200b\": U+200B (zero width space) is not allowed");
  EXPECT_EQ(WorkerNameProblem("w\u202Eab"),
            "worker name \"w\\u202eab\": U+202E (right-to-left override) is not allowed");
  EXPECT_EQ(WorkerNameProblem("evil\x1b]0;x\a"),
            "worker name \"evil\\u001b]0;x\\u0007\": U+001B (control character) is not allowed");
  EXPECT_EQ(WorkerNameProblem(""), "worker name of 0 bytes: a name has 1 to 256 bytes");
  EXPECT_EQ(WorkerNameProblem(std::string(kMaxWorkerNameBytes + 1, 'w')),
            "worker name of 257 bytes: a name has 1 to 256 bytes");
}

TEST(PeerAddress, AnAnnouncedHostIsKeptAsItIs) {
  EXPECT_EQ(PeerAddress("laptop.local:7000", "ipv4:10.0.0.5:41000"), "laptop.local:7000");
  EXPECT_EQ(PeerAddress("10.0.0.9:7000", "ipv4:10.0.0.5:41000"), "10.0.0.9:7000");
  EXPECT_EQ(PeerAddress("[::1]:7000", "ipv6:[::1]:41000"), "[::1]:7000");
}

TEST(PeerAddress, AWildcardOrMissingHostBecomesTheSessionsAddress) {
  EXPECT_EQ(PeerAddress("0.0.0.0:7000", "ipv4:10.0.0.5:41000"), "10.0.0.5:7000");
  EXPECT_EQ(PeerAddress(":7000", "ipv4:10.0.0.5:41000"), "10.0.0.5:7000");
  EXPECT_EQ(PeerAddress("[::]:7000", "ipv6:[fe80::1]:41000"), "[fe80::1]:7000");
  EXPECT_EQ(PeerAddress("0.0.0.0:7000", "unix:/tmp/sock"), "");
}

TEST(PeerAddress, WhatCannotBeDialedIsDropped) {
  EXPECT_EQ(PeerAddress("", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("7000", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("host:", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("host:0", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("host:65536", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("host:7x", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("unix:/tmp/peer:7000", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("a b:7000", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("user@host:7000", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("::1:7000", "ipv4:10.0.0.5:41000"), "");  // IPv6 must be bracketed
  EXPECT_EQ(PeerAddress(std::string(260, 'h') + ":7000", "ipv4:10.0.0.5:41000"), "");
}

v1::Hello GoodHello() {
  v1::Hello h;
  h.set_protocol_version(wire::kProtocolVersion);
  h.set_worker("laptop");
  h.mutable_capacity()->set_cpus(4);
  return h;
}

TEST(CheckHello, RefusesAnotherProtocolAndBadNamesOrCapacities) {
  EXPECT_TRUE(CheckHello(GoodHello()).ok());
  v1::Hello h = GoodHello();
  h.set_protocol_version(wire::kProtocolVersion + 1);
  EXPECT_EQ(CheckHello(h).code(), absl::StatusCode::kFailedPrecondition);
  for (const std::string& name :
       {std::string(), std::string(257, 'w'), std::string("a\x1b[2J"), std::string("caf\xc3")}) {
    h = GoodHello();
    h.set_worker(name);
    EXPECT_EQ(CheckHello(h).code(), absl::StatusCode::kInvalidArgument) << name;
  }
  for (uint32_t cpus : {0u, 4097u}) {
    h = GoodHello();
    h.mutable_capacity()->set_cpus(cpus);
    EXPECT_EQ(CheckHello(h).code(), absl::StatusCode::kInvalidArgument) << cpus;
  }
  h = GoodHello();
  for (int i = 0; i < 2; ++i) h.add_gpus()->set_index(0);  // a repeated index
  EXPECT_EQ(CheckHello(h).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckHello, RefusesAttemptListsOverTheLimitNamingTheField) {
  v1::Hello h = GoodHello();
  for (size_t i = 0; i < kMaxListedAttempts; ++i) h.add_held_attempts(i + 1);
  for (size_t i = 0; i < kMaxListedAttempts; ++i) h.add_delivering_attempts(i + 1);
  EXPECT_TRUE(CheckHello(h).ok());  // the limit itself is fine
  h.add_held_attempts(1u << 30);
  EXPECT_EQ(CheckHello(h).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckHello(h).message(), "Hello.held_attempts lists 8193 attempts (at most 8192)");
  h = GoodHello();
  for (size_t i = 0; i <= kMaxListedAttempts; ++i) h.add_frozen_attempts(i + 1);
  EXPECT_EQ(CheckHello(h).message(), "Hello.frozen_attempts lists 8193 attempts (at most 8192)");
  h = GoodHello();
  for (size_t i = 0; i <= kMaxListedAttempts; ++i) h.add_delivering_attempts(i + 1);
  EXPECT_EQ(CheckHello(h).message(),
            "Hello.delivering_attempts lists 8193 attempts (at most 8192)");
}

TEST(AttemptLists, OwnerStateAndLeavingAreCutToTheLimit) {
  v1::OwnerState o;
  v1::Leaving l;
  for (size_t i = 0; i < 3 * kMaxListedAttempts; ++i) {
    o.add_suspended_attempts(i + 1);
    l.add_vacated_attempts(i + 1);
  }
  EXPECT_EQ(OwnerEvent("w", 3, o).suspended.size(), kMaxListedAttempts);
  core::WorkerLeaving ev = LeavingEvent("w", 3, l);
  EXPECT_EQ(ev.worker, "w");
  EXPECT_EQ(ev.session, 3u);
  ASSERT_EQ(ev.vacated.size(), kMaxListedAttempts);
  EXPECT_EQ(ev.vacated.back(), kMaxListedAttempts);
}

TEST(ToCoreReport, ASuccessListingTooManyOutputsFailsSayingSo) {
  blob::BlobStore blobs(::testing::TempDir() + "/worker_input_blobs");  // nothing in it
  v1::AttemptReport r;
  r.set_attempt(5);
  r.set_result(v1::AttemptReport::SUCCEEDED);
  for (size_t i = 0; i <= kMaxReportFiles; ++i) {
    v1::OutputFile* f = r.add_outputs();
    f->set_path("f" + std::to_string(i));
    f->set_sha256(std::string(64, 'a'));
  }
  core::AttemptReport ev = ToCoreReport(blobs, "w", 3, r);
  EXPECT_EQ(ev.result, core::ReportResult::kFailed);
  EXPECT_EQ(ev.message, "100001 outputs listed (at most 100000)");
  EXPECT_TRUE(ev.outputs.empty());
}

TEST(HelloFigures, OutOfRangeReadsAsUnknown) {
  v1::Hello h = GoodHello();
  h.set_cpu_score(350.5);
  h.set_cores(8);
  EXPECT_EQ(HelloCpuScore(h), 350.5);
  EXPECT_EQ(HelloCores(h), 8u);
  for (double score : {-1.0, 1e7, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity()}) {
    h.set_cpu_score(score);
    EXPECT_EQ(HelloCpuScore(h), 0.0) << score;
  }
  h.set_cores(65537);
  EXPECT_EQ(HelloCores(h), 0u);
}

// Issue 19: the owner's allow_host_network becomes the capacity the core places by, and the
// sandbox tier is kept for display, cut and printable.
TEST(HelloSandbox, HostNetworkPermissionAndTier) {
  v1::Hello h = GoodHello();
  EXPECT_FALSE(HelloEvent(h, 1).capacity.host_network);  // an older worker: refuses
  h.set_allow_host_network(true);
  EXPECT_TRUE(HelloEvent(h, 1).capacity.host_network);
  EXPECT_EQ(HelloSandbox(h), "");
  for (const char* tier : {"userns", "uid", "none"}) {
    h.set_sandbox(tier);
    EXPECT_EQ(HelloSandbox(h), tier);
  }
  h.set_sandbox("vm\x1b[2J" + std::string(100, 'x'));
  const std::string shown = HelloSandbox(h);
  EXPECT_LE(shown.size(), 32u);
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
}

TEST(OwnerEvent, TextsAreCutAndMadePrintable) {
  v1::OwnerState o;
  o.set_accepting(true);
  o.set_state(std::string(40, 's'));
  o.set_reason("idle\x1b]0;title\x07 " + std::string(300, 'r'));
  o.set_cause("cpu\n");
  o.add_suspended_attempts(7);
  core::OwnerStateChanged ev = OwnerEvent("w", 3, o);
  EXPECT_EQ(ev.worker, "w");
  EXPECT_EQ(ev.session, 3u);
  EXPECT_TRUE(ev.accepting);
  EXPECT_EQ(ev.state, std::string(32, 's'));
  EXPECT_EQ(ev.reason.size(), 256u);
  EXPECT_EQ(ev.reason.substr(0, 15), "idle?]0;title? ");
  EXPECT_EQ(ev.cause, "cpu?");
  EXPECT_EQ(ev.suspended, std::vector<core::AttemptId>{7});
}

TEST(CacheEvent, OnlyWellFormedHashesAtMostTheLimit) {
  const std::string good(64, 'a');
  v1::CacheChange c;
  c.add_added()->set_sha256(good);
  c.add_added()->set_sha256("../../etc/passwd");
  c.add_removed(good);
  c.add_removed(std::string(64, 'A'));  // hashes are lower-case hex
  core::CacheChanged ev = CacheEvent("w", 1, c);
  ASSERT_EQ(ev.added.size(), 1u);
  EXPECT_EQ(ev.added[0].sha256, good);
  EXPECT_EQ(ev.removed, std::vector<std::string>{good});
  v1::CacheChange many;
  for (size_t i = 0; i <= kMaxCachedBlobs; ++i) many.add_removed(good);
  EXPECT_EQ(CacheEvent("w", 1, many).removed.size(), kMaxCachedBlobs);
}

TEST(GpusEvent, LiveFieldsOnlyClampedAndTheHeldOnes) {
  v1::GpuReadings r;
  v1::GpuDevice* a = r.add_devices();
  a->set_index(0);
  a->set_name("not a live field");
  a->set_utilization(7.5);
  a->set_temperature_c(std::numeric_limits<double>::infinity());
  a->set_unavailable("gpu_owner\x1b[31m" + std::string(40, 'x'));
  r.add_devices()->set_index(1);
  for (int i = 0; i < 100; ++i) r.add_devices()->set_index(2 + i);
  std::vector<v1::GpuDevice> live;
  core::GpusHeld ev = GpusEvent("w", 2, r, &live);
  ASSERT_EQ(live.size(), static_cast<size_t>(wire::kMaxGpus));
  EXPECT_EQ(live[0].name(), "");
  EXPECT_EQ(live[0].utilization(), 1.0);
  EXPECT_FALSE(live[0].has_temperature_c());
  EXPECT_EQ(live[0].unavailable(), "gpu_owner?[31m" + std::string(18, 'x'));
  EXPECT_EQ(ev.held, std::vector<uint32_t>{0});
}

TEST(LinkInRange, BoundsRoundTripRatesAndProbeSize) {
  v1::LinkMeasured m;
  m.set_rtt_us(500);
  m.set_down_bytes_per_s(100'000'000);
  m.set_up_bytes_per_s(uint64_t{1} << 40);
  m.set_probe_bytes(1 << 20);
  EXPECT_TRUE(LinkInRange(m, 1 << 20));
  EXPECT_FALSE(LinkInRange(m, (1 << 20) - 1));
  m.set_up_bytes_per_s((uint64_t{1} << 40) + 1);
  EXPECT_FALSE(LinkInRange(m, 1 << 20));
  m.set_up_bytes_per_s(1);
  m.set_rtt_us(3'600'000'001);
  EXPECT_FALSE(LinkInRange(m, 1 << 20));
}

}  // namespace
}  // namespace idlepool::coordinator
