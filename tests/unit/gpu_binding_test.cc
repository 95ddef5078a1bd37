// The worker's GPU binding (worker/gpu_binding.h) and the coordinator's check of the GPUs a
// Hello lists (coordinator/wire.h): pure functions.
#include "worker/gpu_binding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "idlepool.pb.h"
#include "wire/wire.h"

namespace idlepool {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Env = std::vector<std::pair<std::string, std::string>>;

v1::GpuDevice Dev(uint32_t index, std::vector<std::string> apis, std::string cuda_id = "",
                  std::string opencl_id = "", std::string uuid = "") {
  v1::GpuDevice d;
  d.set_index(index);
  d.set_memory_mb(8192);
  for (auto& a : apis) d.add_apis(a);
  d.set_cuda_id(cuda_id);
  d.set_opencl_id(opencl_id);
  d.set_uuid(uuid);
  return d;
}

const std::vector<v1::GpuDevice> kOffered = {
    Dev(0, {"cuda", "opencl"}, "0", "0:0", "GPU-aaaa"), Dev(1, {"cuda"}, "1", "", "GPU-bbbb"),
    Dev(2, {"opencl"}, "", "1:0"), Dev(3, {"rocm", "opencl"}, "", "2:0", "GPU-rrrr"),
    Dev(4, {"cuda"}, "", "", "GPU-nocudaid")};

TEST(GpuBinding, NoGpusHidesEveryDevice) {
  worker::GpuBinding b = worker::BindGpus({}, kOffered);
  EXPECT_EQ(b.problem, "");
  EXPECT_EQ(b.env, (Env{{"IDLEPOOL_GPUS", ""},
                        {"CUDA_VISIBLE_DEVICES", ""},
                        {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                        {"ROCR_VISIBLE_DEVICES", ""},
                        {"IDLEPOOL_OPENCL_DEVICES", ""}}));
  // Also on a worker without GPUs.
  EXPECT_EQ(worker::BindGpus({}, {}).env, b.env);
}

TEST(GpuBinding, EachApiSeesOnlyTheAssignedDevicesThatOfferIt) {
  worker::GpuBinding b = worker::BindGpus({1, 0, 3}, kOffered);
  EXPECT_EQ(b.problem, "");
  EXPECT_EQ(b.env, (Env{{"IDLEPOOL_GPUS", "1,0,3"},
                        {"CUDA_VISIBLE_DEVICES", "1,0"},
                        {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                        {"ROCR_VISIBLE_DEVICES", "GPU-rrrr"},
                        {"IDLEPOOL_OPENCL_DEVICES", "0:0,2:0"}}));
  // A CUDA device without a CUDA id is named by its uuid.
  EXPECT_EQ(worker::BindGpus({4}, kOffered).env[1],
            (std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", "GPU-nocudaid"}));
  // An OpenCL-only device: nothing for CUDA.
  EXPECT_EQ(worker::BindGpus({2}, kOffered).env[1].second, "");
}

TEST(GpuBinding, DevicesTheWorkerDoesNotOfferAreRefused) {
  worker::GpuBinding b = worker::BindGpus({0, 7}, kOffered);
  EXPECT_EQ(b.problem, "this worker has no GPU 7 (it offers 0,1,2,3,4)");
  EXPECT_THAT(b.env, IsEmpty());
  EXPECT_EQ(worker::BindGpus({0}, {}).problem, "this worker has no GPU 0 (it offers none)");
  EXPECT_THAT(worker::BindGpus({1, 1}, kOffered).problem, HasSubstr("GPU 1 twice"));
}

TEST(HelloGpus, SaneListsPassAndJunkIsNamed) {
  v1::Hello h;
  for (const auto& d : kOffered) *h.add_gpus() = d;
  EXPECT_EQ(wire::GpusProblem(h.gpus()), "");
  EXPECT_EQ(wire::GpusFromProto(h.gpus()).size(), kOffered.size());
  EXPECT_EQ(wire::GpusFromProto(h.gpus())[3].apis, (std::vector<std::string>{"rocm", "opencl"}));

  v1::Hello dup = h;
  *dup.add_gpus() = Dev(2, {"cuda"});
  EXPECT_EQ(wire::GpusProblem(dup.gpus()), "Hello.gpus: device 2 is listed twice");

  v1::Hello big;
  *big.add_gpus() = Dev(0, {"cuda"});
  big.mutable_gpus(0)->set_memory_mb(UINT64_MAX);
  EXPECT_THAT(wire::GpusProblem(big.gpus()), HasSubstr("memory_mb"));

  v1::Hello many;
  for (uint32_t i = 0; i < 65; ++i) *many.add_gpus() = Dev(i, {"cuda"});
  EXPECT_EQ(wire::GpusProblem(many.gpus()), "Hello.gpus lists 65 devices, at most 64");

  v1::Hello api;
  *api.add_gpus() = Dev(0, {""});
  EXPECT_THAT(wire::GpusProblem(api.gpus()), HasSubstr("api of 1 to 16 bytes"));
  api.mutable_gpus(0)->set_apis(0, std::string(100, 'x'));
  EXPECT_THAT(wire::GpusProblem(api.gpus()), HasSubstr("api of 1 to 16 bytes"));

  v1::Hello name;
  *name.add_gpus() = Dev(0, {"cuda"});
  name.mutable_gpus(0)->set_name(std::string(300, 'n'));
  EXPECT_THAT(wire::GpusProblem(name.gpus()), HasSubstr("over 256 bytes"));
}

}  // namespace
}  // namespace idlepool

namespace idlepool::worker {
namespace {

v1::GpuDevice NodeDevice(uint32_t index, const std::string& vendor, const std::string& uuid,
                         const std::string& cuda_id) {
  v1::GpuDevice d;
  d.set_index(index);
  d.set_vendor(vendor);
  d.set_uuid(uuid);
  d.set_cuda_id(cuda_id);
  return d;
}

// The nodes a sandboxed attempt gets are its own GPU's, by the driver's device minor for its
// UUID (not its NVML index), plus the shared control nodes; never another GPU's.
TEST(GpuDeviceNodes, OnlyTheAssignedGpusNodesByDeviceMinor) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpu_nodes_test." + std::to_string(::getpid()));
  for (const auto& [bus, uuid, minor] :
       {std::tuple{"0000:01:00.0", "GPU-aaa", "3"}, std::tuple{"0000:02:00.0", "GPU-bbb", "0"}}) {
    std::filesystem::create_directories(dir / bus);
    std::ofstream(dir / bus / "information")
        << "Model: \t\t Fake\nGPU UUID: \t " << uuid << "\nDevice Minor: \t " << minor << "\n";
  }
  const std::vector<v1::GpuDevice> offered = {NodeDevice(0, "nvidia", "GPU-aaa", "0"),
                                              NodeDevice(1, "nvidia", "GPU-bbb", "1"),
                                              NodeDevice(2, "pocl", "", "")};
  const auto first = GpuDeviceNodes({0}, offered, dir.string());
  EXPECT_EQ(first,
            (std::vector<std::string>{"/dev/nvidia-modeset", "/dev/nvidia-uvm",
                                      "/dev/nvidia-uvm-tools", "/dev/nvidia3", "/dev/nvidiactl"}));
  const auto second = GpuDeviceNodes({1}, offered, dir.string());
  EXPECT_NE(std::find(second.begin(), second.end(), "/dev/nvidia0"), second.end());
  EXPECT_EQ(std::find(second.begin(), second.end(), "/dev/nvidia3"), second.end());
  // No driver information: the NVML index stands in for the minor.
  const auto fallback = GpuDeviceNodes({1}, offered, (dir / "none").string());
  EXPECT_NE(std::find(fallback.begin(), fallback.end(), "/dev/nvidia1"), fallback.end());
  // A CPU OpenCL device and no GPU at all need no node.
  EXPECT_TRUE(GpuDeviceNodes({2}, offered, dir.string()).empty());
  EXPECT_TRUE(GpuDeviceNodes({}, offered, dir.string()).empty());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace idlepool::worker
