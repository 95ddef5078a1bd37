// GPU discovery (platform/gpu.h): NVML against the fake library (tests/fake_nvml), OpenCL on
// PoCL's CPU device where an ICD is installed, merging and --gpus as pure functions.
#include "platform/gpu.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "platform/capture.h"
#include "platform/gpu_probe.h"

namespace idlepool::platform {
namespace {

namespace fs = std::filesystem;

class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/idlepool-gpu-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    state_ = dir_ + "/gpus.txt";
    setenv("IDLEPOOL_FAKE_NVML_STATE", state_.c_str(), 1);
    unsetenv("IDLEPOOL_NVML_LIBRARY");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Replaces the state file the way a test script should: write, then rename over.
  void Write(const std::string& text) {
    const std::string tmp = state_ + ".tmp";
    std::ofstream(tmp) << text;
    ASSERT_EQ(std::rename(tmp.c_str(), state_.c_str()), 0);
  }
  std::string dir_, state_;
};

constexpr const char* kTwo =
    "# two GPUs\n"
    "name=\"NVIDIA GeForce RTX 3080\" uuid=GPU-11111111-2222-3333-4444-555555555555 "
    "pci=0000:01:00.0 memory_mb=10240 memory_used_mb=512 temp=45 util=10 pids=300,100 "
    "graphics_pids=100,200\n"
    "\n"
    "name=\"NVIDIA RTX A4000\" uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee pci=0000:02:00.0 "
    "memory_mb=16376 temp=60 util=99 pids=\n";

TEST_F(FakeNvml, DiscoversNamesMemoryUuidReadingsAndProcesses) {
  Write(kTwo);
  auto src = MakeNvmlSource(IDLEPOOL_FAKE_NVML);
  auto devs = src->Discover();
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].vendor, "nvidia");
  EXPECT_EQ(devs[0].name, "NVIDIA GeForce RTX 3080");
  EXPECT_EQ(devs[0].uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(devs[0].memory_mb, 10240u);
  EXPECT_EQ(devs[0].memory_used_mb, 512u);
  EXPECT_EQ(devs[0].temperature_c, 45.0);
  EXPECT_EQ(devs[0].utilization, 0.10);
  EXPECT_EQ(devs[0].pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(devs[0].apis, std::vector<std::string>{"cuda"});
  EXPECT_EQ(devs[0].cuda_id, "0");
  ASSERT_TRUE(devs[0].pids.has_value());
  EXPECT_EQ(*devs[0].pids, (std::vector<int64_t>{100, 200, 300}));  // compute + graphics
  EXPECT_EQ(devs[1].name, "NVIDIA RTX A4000");
  EXPECT_EQ(devs[1].cuda_id, "1");
  EXPECT_EQ(devs[1].utilization, 0.99);
  EXPECT_EQ(devs[1].memory_used_mb, 0u);
  ASSERT_TRUE(devs[1].pids.has_value());
  EXPECT_TRUE(devs[1].pids->empty());
  const auto r = src->report();
  EXPECT_EQ(r.backend, "NVML");
  EXPECT_TRUE(r.supported);
  EXPECT_NE(r.message.find("loaded 2 devices"), std::string::npos) << r.message;
}

TEST_F(FakeNvml, ReadLiveSeesTemperatureAndProcessesChange) {
  Write(kTwo);
  auto src = MakeNvmlSource(IDLEPOOL_FAKE_NVML);
  auto devs = src->Discover();
  ASSERT_EQ(devs.size(), 2u);
  Write(
      "name=\"NVIDIA GeForce RTX 3080\" uuid=GPU-11111111-2222-3333-4444-555555555555 "
      "memory_mb=10240 memory_used_mb=2048 temp=91 util=50 pids=4242\n"
      "name=\"NVIDIA RTX A4000\" uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee memory_mb=16376\n");
  src->ReadLive(&devs[0]);
  EXPECT_EQ(devs[0].temperature_c, 91.0);
  EXPECT_EQ(devs[0].utilization, 0.5);
  EXPECT_EQ(devs[0].memory_used_mb, 2048u);
  EXPECT_EQ(*devs[0].pids, std::vector<int64_t>{4242});
  src->ReadLive(&devs[1]);  // no temp/util now: unknown, not the old values
  EXPECT_FALSE(devs[1].temperature_c.has_value());
  EXPECT_FALSE(devs[1].utilization.has_value());
}

TEST_F(FakeNvml, ReadLiveOfADeviceThatChangedUnderUsIsUnknown) {
  Write(kTwo);
  auto src = MakeNvmlSource(IDLEPOOL_FAKE_NVML);
  auto devs = src->Discover();
  ASSERT_EQ(devs.size(), 2u);
  // Index 1 is now another GPU (different UUID): its readings are not this device's.
  Write("name=A uuid=GPU-0 memory_mb=1 temp=30\nname=B uuid=GPU-other memory_mb=1 temp=30\n");
  src->ReadLive(&devs[1]);
  EXPECT_FALSE(devs[1].temperature_c.has_value());
  EXPECT_FALSE(devs[1].pids.has_value());
}

TEST_F(FakeNvml, MissingLibraryMeansNoNvidiaGpus) {
  Write(kTwo);
  auto src = MakeNvmlSource(dir_ + "/no-such-libnvidia-ml.so.1");
  EXPECT_TRUE(src->Discover().empty());
  EXPECT_NE(src->report().message.find("not found"), std::string::npos) << src->report().message;
}

TEST_F(FakeNvml, LibraryFromTheEnvironmentVariable) {
  Write(kTwo);
  setenv("IDLEPOOL_NVML_LIBRARY", IDLEPOOL_FAKE_NVML, 1);
  auto src = MakeNvmlSource();
  EXPECT_EQ(src->Discover().size(), 2u);
}

TEST_F(FakeNvml, InitFailureMeansNoDriverNotAnError) {
  // No state file: the fake's nvmlInit_v2 fails as on a machine without the driver.
  auto src = MakeNvmlSource(IDLEPOOL_FAKE_NVML);
  EXPECT_TRUE(src->Discover().empty());
  EXPECT_NE(src->report().message.find("no driver"), std::string::npos) << src->report().message;
  Write("init=fail\nname=X memory_mb=1\n");
  auto again = MakeNvmlSource(IDLEPOOL_FAKE_NVML);
  EXPECT_TRUE(again->Discover().empty());
  EXPECT_NE(again->report().message.find("Driver Not Loaded"), std::string::npos);
}

TEST_F(FakeNvml, ADeviceWhoseCallsFailHasUnknownReadings) {
  Write(
      "name=Good uuid=GPU-1 memory_mb=100 temp=40 util=5 pids=7\n"
      "name=Broken uuid=GPU-2 memory_mb=200 temp=40 util=5 pids=8 fail=name,temp,util,procs\n"
      "name=Gone uuid=GPU-3 memory_mb=300 fail=handle\n"
      "name=Mute uuid=GPU-4 pci=0000:04:00.0 memory_mb=400 temp=40 fail=all\n");
  auto src = MakeNvmlSource(IDLEPOOL_FAKE_NVML);
  auto devs = src->Discover();
  ASSERT_EQ(devs.size(), 2u);  // "Gone" has no handle; "Mute" fails every call, handle first
  EXPECT_EQ(devs[0].name, "Good");
  EXPECT_EQ(devs[1].name, "NVIDIA GPU");  // name unknown
  EXPECT_EQ(devs[1].uuid, "GPU-2");
  EXPECT_EQ(devs[1].memory_mb, 200u);
  EXPECT_EQ(devs[1].cuda_id, "1");
  EXPECT_FALSE(devs[1].temperature_c.has_value());
  EXPECT_FALSE(devs[1].utilization.has_value());
  EXPECT_FALSE(devs[1].pids.has_value());
}

TEST_F(FakeNvml, InventorySelectsAndReindexes) {
  Write(kTwo);
  GpuDiscoveryOptions o;
  o.nvml_library = IDLEPOOL_FAKE_NVML;
  o.selection = *ParseGpuSelection("1,5");
  auto inv = GpuInventory::Discover(o);
  ASSERT_EQ(inv->discovered().size(), 2u);
  auto offered = inv->offered();
  ASSERT_EQ(offered.size(), 1u);
  EXPECT_EQ(offered[0].index, 0u);
  EXPECT_EQ(offered[0].name, "NVIDIA RTX A4000");
  EXPECT_EQ(offered[0].cuda_id, "1");  // the device's own NVML index, for CUDA_VISIBLE_DEVICES
  EXPECT_EQ(inv->missing(), std::vector<uint32_t>{5});
  auto backends = inv->backends();
  ASSERT_EQ(backends.size(), 4u);
  EXPECT_EQ(backends[0].backend, "NVML");
  EXPECT_EQ(backends[2].backend, "ROCm SMI");
  EXPECT_FALSE(backends[2].supported);
  EXPECT_EQ(backends[3].backend, "Metal");
  EXPECT_EQ(backends[3].message, "unsupported in this build");
  Write(
      "name=\"NVIDIA GeForce RTX 3080\" uuid=GPU-11111111-2222-3333-4444-555555555555 "
      "memory_mb=10240\n"
      "name=\"NVIDIA RTX A4000\" uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee memory_mb=16376 "
      "temp=77 pids=9\n");
  auto live = inv->ReadLive();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].temperature_c, 77.0);
  EXPECT_EQ(*live[0].pids, std::vector<int64_t>{9});
  o.selection = *ParseGpuSelection("none");
  EXPECT_TRUE(GpuInventory::Discover(o)->offered().empty());
}

TEST(OpenCl, PoclCpuDeviceOnlyWhenAsked) {
  auto with_cpu = MakeOpenClSource(true);
  auto devs = with_cpu->Discover();
  const std::string msg = with_cpu->report().message;
  if (msg.rfind("not found", 0) == 0 || msg.rfind("no platforms", 0) == 0 ||
      msg.rfind("not built", 0) == 0) {
    GTEST_SKIP() << "no OpenCL ICD here: " << msg;
  }
  const GpuDevice* pocl = nullptr;
  for (const auto& d : devs) {
    if (d.vendor == "pocl") pocl = &d;
  }
  if (pocl == nullptr) GTEST_SKIP() << "no PoCL device: " << msg;
  EXPECT_FALSE(pocl->name.empty());
  EXPECT_GT(pocl->memory_mb, 0u);
  EXPECT_EQ(pocl->apis, std::vector<std::string>{"opencl"});
  EXPECT_TRUE(pocl->cuda_id.empty());
  int p = -1, d = -1;
  char tail = 0;
  EXPECT_EQ(std::sscanf(pocl->opencl_id.c_str(), "%d:%d%c", &p, &d, &tail), 2) << pocl->opencl_id;
  // Without CPU devices, PoCL's CPU device is not offered (a CPU is not a GPU).
  auto gpu_only = MakeOpenClSource(false);
  for (const auto& g : gpu_only->Discover()) EXPECT_NE(g.opencl_id, pocl->opencl_id);
  EXPECT_NE(gpu_only->report().message.find("CPU device(s) skipped"), std::string::npos)
      << gpu_only->report().message;
}

GpuDevice Nv(std::string name, uint64_t mb, std::string pci, std::string uuid, std::string cuda) {
  GpuDevice d;
  d.vendor = "nvidia";
  d.name = std::move(name);
  d.memory_mb = mb;
  d.pci_bus_id = std::move(pci);
  d.uuid = std::move(uuid);
  d.apis = {"cuda"};
  d.cuda_id = std::move(cuda);
  return d;
}

GpuDevice Cl(std::string vendor, std::string name, uint64_t mb, std::string pci,
             std::string uuid, std::string id) {
  GpuDevice d;
  d.vendor = std::move(vendor);
  d.name = std::move(name);
  d.memory_mb = mb;
  d.pci_bus_id = std::move(pci);
  d.uuid = std::move(uuid);
  d.apis = {"opencl"};
  d.opencl_id = std::move(id);
  return d;
}

TEST(MergeGpus, PciBusIdDecidesEvenAgainstNameOrder) {
  // Two identical cards; OpenCL lists them in the other order.
  auto out = MergeGpus({Nv("RTX", 8192, "0000:01:00.0", "GPU-a", "0"),
                        Nv("RTX", 8192, "0000:02:00.0", "GPU-b", "1")},
                       {Cl("nvidia", "RTX", 8192, "0000:02:00.0", "", "0:0"),
                        Cl("nvidia", "RTX", 8192, "0000:01:00.0", "", "0:1")});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].cuda_id, "0");
  EXPECT_EQ(out[0].opencl_id, "0:1");
  EXPECT_EQ(out[1].opencl_id, "0:0");
  EXPECT_EQ(out[0].apis, (std::vector<std::string>{"cuda", "opencl"}));
  EXPECT_EQ(out[0].index, 0u);
  EXPECT_EQ(out[1].index, 1u);
}

TEST(MergeGpus, UuidThenNameAndMemory) {
  auto out = MergeGpus({Nv("A100", 40960, "", "GPU-x", "0"), Nv("T4", 15360, "", "GPU-y", "1")},
                       {Cl("nvidia", "T4", 15100, "", "", "1:0"),       // name + memory ~
                        Cl("nvidia", "A100", 40960, "", "GPU-x", "1:1")});  // uuid
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].opencl_id, "1:1");
  EXPECT_EQ(out[1].opencl_id, "1:0");
}

TEST(MergeGpus, DifferentDevicesStaySeparateAndOpenClOnlyComeLast) {
  auto out = MergeGpus(
      {Nv("RTX", 8192, "0000:01:00.0", "GPU-a", "0")},
      {Cl("pocl", "cpu", 8192, "", "", "0:0"),                              // not nvidia
       Cl("nvidia", "RTX", 8192, "0000:03:00.0", "", "1:0"),               // another slot
       Cl("nvidia", "RTX", 4096, "", "", "1:1"),                           // other memory
       Cl("intel", "UHD", 1024, "0000:00:02.0", "", "2:0")});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].apis, std::vector<std::string>{"cuda"});
  EXPECT_TRUE(out[0].opencl_id.empty());
  EXPECT_EQ(out[1].opencl_id, "0:0");
  EXPECT_EQ(out[2].opencl_id, "1:0");
  EXPECT_EQ(out[3].opencl_id, "1:1");
  EXPECT_EQ(out[4].vendor, "intel");
  for (uint32_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].index, i);
}

TEST(GpuSelection, Parses) {
  EXPECT_TRUE(ParseGpuSelection("all")->all);
  auto none = ParseGpuSelection("none");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->all);
  EXPECT_TRUE(none->indexes.empty());
  auto list = ParseGpuSelection("0, 2");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->indexes, (std::vector<uint32_t>{0, 2}));
  EXPECT_FALSE(ParseGpuSelection("0,0").ok());
  EXPECT_FALSE(ParseGpuSelection("gpu0").ok());
  EXPECT_FALSE(ParseGpuSelection("").ok());
  EXPECT_FALSE(ParseGpuSelection("-1").ok());
}

TEST(PciBusId, Normalizes) {
  EXPECT_EQ(NormalizePciBusId("00000000:0A:00.0"), "0000:0a:00.0");
  EXPECT_EQ(NormalizePciBusId("0000:01:00.1"), "0000:01:00.1");
  EXPECT_EQ(NormalizePciBusId("garbage"), "");
  EXPECT_EQ(PciBusId(1, 0x41, 3, 0), "0001:41:03.0");
}

// --- OpenCL in a child (gpu_probe.h) and the child runner (capture.h) ---

// A probe command: a shell script (the probe's own arguments, --opencl ..., become $0 $1 ...).
std::vector<std::string> Sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

constexpr const char* kPoclJson =
    R"({"probe": 1, "report": {"backend": "OpenCL", "supported": true,)"
    R"( "message": "1 platform, 1 device, 1 used"}, "devices": [{"vendor": "pocl",)"
    R"( "name": "cpu-haswell", "memory_mb": 2048, "uuid": "", "apis": ["opencl"], "cuda_id": "",)"
    R"( "opencl_id": "0:0", "pci_bus_id": "", "temperature_c": null, "utilization": null,)"
    R"( "memory_used_mb": null, "pids": null}]})";

TEST(GpuProbe, ResultJsonRoundTrips) {
  GpuDevice d = Nv("NVIDIA A100", 40960, "0000:41:00.0", "GPU-1", "");
  d.apis = {"opencl"};
  d.opencl_id = "1:0";
  d.temperature_c = 50;
  d.pids = std::vector<int64_t>{7, 9};
  auto back = ParseProbeResult(
      ProbeResultJson({{d}, {"OpenCL", true, "fine"}, {{"warning", "odd \"driver\""}}}));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->devices.size(), 1u);
  const GpuDevice& b = back->devices[0];
  EXPECT_EQ(b.name, d.name);
  EXPECT_EQ(b.memory_mb, d.memory_mb);
  EXPECT_EQ(b.pci_bus_id, d.pci_bus_id);
  EXPECT_EQ(b.uuid, d.uuid);
  EXPECT_EQ(b.apis, d.apis);
  EXPECT_EQ(b.opencl_id, d.opencl_id);
  EXPECT_EQ(b.temperature_c, 50.0);
  EXPECT_FALSE(b.utilization.has_value());
  EXPECT_EQ(b.pids, d.pids);
  EXPECT_EQ(back->report.backend, "OpenCL");
  EXPECT_EQ(back->report.message, "fine");
  ASSERT_EQ(back->log.size(), 1u);
  EXPECT_EQ(back->log[0].level, "warning");
  EXPECT_EQ(back->log[0].message, "odd \"driver\"");
  EXPECT_FALSE(ParseProbeResult("").ok());
  EXPECT_FALSE(ParseProbeResult("[1]").ok());
  EXPECT_FALSE(ParseProbeResult(R"({"probe": 1, "report": {}, "devices": []})").ok());
}

TEST(GpuProbe, DevicesComeFromTheChild) {
  auto src = MakeOpenClProbeSource(Sh(std::string("echo '") + kPoclJson + "'"), true,
                                   std::chrono::seconds(20));
  auto devs = src->Discover();
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_EQ(devs[0].vendor, "pocl");
  EXPECT_EQ(devs[0].opencl_id, "0:0");
  EXPECT_EQ(src->report().message, "1 platform, 1 device, 1 used");
}

TEST(GpuProbe, TheChildIsToldWhatToList) {
  auto src = MakeOpenClProbeSource(
      Sh("[ \"$0 $1\" = '--opencl --opencl-cpu' ] && [ \"$2\" = --log-level ] || exit 3; echo '" +
         std::string(kPoclJson) + "'"),
      true, std::chrono::seconds(20));
  EXPECT_EQ(src->Discover().size(), 1u) << src->report().message;
}

// Every way a probe can fail: no devices, a report saying why, never an error or a crash.
TEST(GpuProbe, AFailedChildMeansNoDevices) {
  const std::chrono::milliseconds t(20000);
  struct Case {
    std::unique_ptr<GpuSource> src;
    std::string want;
  } cases[] = {
      {MakeOpenClProbeSource({"/no/such/idlepool", "gpu-probe"}, false, t), "cannot run"},
      {MakeOpenClProbeSource(Sh("exit 3"), false, t), "exited with 3"},
      {MakeOpenClProbeSource(Sh("kill -KILL $$"), false, t), "killed by signal 9"},
      {MakeOpenClProbeSource(Sh("echo 'OpenCL: hello'"), false, t), "not a probe result"},
      // Hangs: killed at the (short) timeout, with what it started.
      {MakeOpenClProbeSource(Sh("sleep 600 & wait"), false, std::chrono::milliseconds(50)),
       "still running after 0.05 s: killed"},
  };
  for (auto& c : cases) {
    EXPECT_TRUE(c.src->Discover().empty());
    const GpuBackendReport r = c.src->report();
    EXPECT_EQ(r.backend, "OpenCL");
    EXPECT_EQ(r.message.rfind("probe failed: ", 0), 0u) << r.message;
    EXPECT_NE(r.message.find(c.want), std::string::npos) << r.message;
  }
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a child left unreaped";
}

TEST_F(FakeNvml, InventoryMergesTheProbedDevicesAfterNvmls) {
  Write(kTwo);
  GpuDiscoveryOptions o;
  o.nvml_library = IDLEPOOL_FAKE_NVML;
  o.opencl_probe = Sh(std::string("echo '") + kPoclJson + "'");
  auto inv = GpuInventory::Discover(o);
  auto all = inv->discovered();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].cuda_id, "0");
  EXPECT_EQ(all[2].vendor, "pocl");
  EXPECT_EQ(all[2].index, 2u);
  EXPECT_EQ(inv->backends()[1].message, "1 platform, 1 device, 1 used");
  EXPECT_EQ(inv->ReadLive().size(), 3u);
}

TEST_F(FakeNvml, GpusNoneLoadsNoBackendUnlessAskedToShowThem) {
  Write(kTwo);
  GpuDiscoveryOptions o;
  o.nvml_library = IDLEPOOL_FAKE_NVML;
  o.opencl_probe = {"/no/such/probe"};  // would be reported as failed, were it run
  o.selection = *ParseGpuSelection("none");
  auto inv = GpuInventory::Discover(o);
  EXPECT_TRUE(inv->discovered().empty());
  auto b = inv->backends();
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].message, "not loaded (--gpus none)");
  EXPECT_EQ(b[1].message, "not loaded (--gpus none)");
  EXPECT_EQ(b[2].message, "unsupported in this build");
  o.discover_unoffered = true;  // --print-resources --gpus none
  inv = GpuInventory::Discover(o);
  EXPECT_EQ(inv->discovered().size(), 2u);
  EXPECT_TRUE(inv->offered().empty());
}

TEST(RunCapturingStdout, OutputExitCodeSignalAndCap) {
  const std::chrono::seconds t(20);
  auto run = RunCapturingStdout(Sh("printf 'a\\nb'; echo to-stderr >&2; exit 4"), t);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->stdout_text, "a\nb");
  EXPECT_EQ(run->exit_code, 4);
  EXPECT_EQ(run->signal, 0);
  EXPECT_FALSE(run->timed_out);
  run = RunCapturingStdout(Sh("kill -TERM $$"), t);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->signal, SIGTERM);
  // Output past the cap is read and dropped: the child never blocks on its pipe.
  run = RunCapturingStdout(Sh("head -c 300000 /dev/zero; exit 0"), t, 1000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->stdout_text.size(), 1000u);
  EXPECT_EQ(run->exit_code, 0);
  // stdin is /dev/null, not this process's.
  run = RunCapturingStdout(Sh("cat"), t);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->stdout_text, "");
  EXPECT_EQ(RunCapturingStdout({}, t).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunCapturingStdout({"/no/such/file"}, t).status().code(), absl::StatusCode::kNotFound);
}

TEST(RunCapturingStdout, AChildThatClosedItsOutputButHangsIsKilled) {
  auto run = RunCapturingStdout(Sh("exec >&-; sleep 600"), std::chrono::milliseconds(50));
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->timed_out);
  EXPECT_EQ(run->signal, SIGKILL);
}

}  // namespace
}  // namespace idlepool::platform
