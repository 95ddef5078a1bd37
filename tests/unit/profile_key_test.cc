// spec::ProfileKey: equal work gives an equal key, any change to the command, the resources or
// the inputs' content another; input order and the task decomposition do not matter.
#include "spec/profile_key.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace idlepool::spec {
namespace {

// Resources of a job: cpus, gpus, memory_mb (no per-GPU needs).
core::Resources R(uint32_t cpus, uint32_t gpus, uint64_t memory_mb) {
  core::Resources r;
  r.cpus = cpus;
  r.gpus = gpus;
  r.memory_mb = memory_mb;
  return r;
}

const std::string kScene(64, 'a'), kModel(64, 'b'), kOther(64, 'c');
const std::vector<std::string> kCommand = {"povray", "scene.ini", "+SF{frame_start}",
                                           "+EF{frame_end}", "+O{task_dir}/f.png"};

TEST(ProfileKey, IsLowercaseHexSha256AndStable) {
  const std::string k = ProfileKey(kCommand, R(1, 0, 512), {kScene, kModel});
  ASSERT_EQ(k.size(), 64u);
  for (char c : k) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << k;
  EXPECT_EQ(k, ProfileKey(kCommand, R(1, 0, 512), {kScene, kModel}));
  // Pinned (computed independently: SHA-256 of "idlepool.profile.v1" followed by the fields, each
  // count and length as 8 bytes little-endian): stored keys must keep matching across versions
  // of idlepool. Change the encoding only with a new version tag, and these values with it.
  EXPECT_EQ(ProfileKey({"true"}, R(1, 0, 0), {}),
            "ed766b93892a5249a6ab45b3fd54611620913cac605b4c1e8c6ec2a16d09b66b");
  EXPECT_EQ(ProfileKey({"true"}, R(1, 0, 0), {std::string(64, 'b'), std::string(64, 'a')}),
            "1e2b4824f49b3970b839e0b0b19ab2e660b4d18a11be126ff1131b142b437b52");
}

TEST(ProfileKey, FramesPerTaskIsPartOfTheWork) {
  // chunk = 10 is ten times the work of chunk = 1: another key. 0 (not a frames job) is the
  // key without the field.
  const std::string one = ProfileKey(kCommand, R(1, 0, 512), {kScene}, 1);
  EXPECT_NE(one, ProfileKey(kCommand, R(1, 0, 512), {kScene}, 10));
  EXPECT_NE(one, ProfileKey(kCommand, R(1, 0, 512), {kScene}));
  EXPECT_EQ(ProfileKey(kCommand, R(1, 0, 512), {kScene}, 0), ProfileKey(kCommand, R(1, 0, 512), {kScene}));
}

TEST(ProfileKey, InputOrderDoesNotMatter) {
  EXPECT_EQ(ProfileKey(kCommand, R(1, 0, 512), {kScene, kModel}),
            ProfileKey(kCommand, R(1, 0, 512), {kModel, kScene}));
}

TEST(ProfileKey, DiffersWhenTheCommandDiffers) {
  const std::string k = ProfileKey(kCommand, R(1, 0, 512), {kScene});
  std::vector<std::string> c = kCommand;
  c[1] = "other.ini";
  EXPECT_NE(k, ProfileKey(c, R(1, 0, 512), {kScene}));
  c = kCommand;
  c.push_back("+A");
  EXPECT_NE(k, ProfileKey(c, R(1, 0, 512), {kScene}));
  // Element boundaries count: {"ab", "c"} is not {"a", "bc"}.
  EXPECT_NE(ProfileKey({"ab", "c"}, R(1, 0, 0), {}), ProfileKey({"a", "bc"}, R(1, 0, 0), {}));
}

TEST(ProfileKey, DiffersWhenTheResourcesDiffer) {
  const std::string k = ProfileKey(kCommand, R(1, 0, 512), {kScene});
  EXPECT_NE(k, ProfileKey(kCommand, R(2, 0, 512), {kScene}));
  EXPECT_NE(k, ProfileKey(kCommand, R(1, 1, 512), {kScene}));
  EXPECT_NE(k, ProfileKey(kCommand, R(1, 0, 1024), {kScene}));
}

TEST(ProfileKey, DiffersWhenAnInputsContentDiffers) {
  const std::string k = ProfileKey(kCommand, R(1, 0, 512), {kScene, kModel});
  EXPECT_NE(k, ProfileKey(kCommand, R(1, 0, 512), {kScene, kOther}));  // a new model
  EXPECT_NE(k, ProfileKey(kCommand, R(1, 0, 512), {kScene}));          // one input fewer
  EXPECT_NE(k, ProfileKey(kCommand, R(1, 0, 512), {kScene, kModel, kModel}));  // listed twice
}

TEST(ProfileKey, CommandAndInputsCannotBeConfused) {
  // A command element that spells a hash is not an input with that hash.
  EXPECT_NE(ProfileKey({"run", kScene}, R(1, 0, 0), {}), ProfileKey({"run"}, R(1, 0, 0), {kScene}));
}

}  // namespace
}  // namespace idlepool::spec
