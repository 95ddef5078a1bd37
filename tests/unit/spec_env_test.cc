// The job file's `env` table (spec/env_table.cc): names checked, values bounded, placeholders
// rendered per task, and errors that name the file, line and key.
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/spec.h"

namespace idlepool::spec {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::string_view kHead = "command = [\"true\"]\ncount = 2\n";

absl::StatusOr<JobSpec> Parse(std::string_view toml) {
  return ParseJobToml(toml, "job.toml", "/tmp");
}

std::string Error(std::string_view toml) {
  absl::StatusOr<JobSpec> spec = Parse(toml);
  EXPECT_FALSE(spec.ok()) << toml;
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
  return std::string(spec.status().message());
}

TEST(EnvSpec, AbsentIsEmpty) {
  absl::StatusOr<JobSpec> spec = Parse(kHead);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->env.empty());
}

TEST(EnvSpec, InlineAndTableFormsSortedByName) {
  absl::StatusOr<JobSpec> spec = Parse(
      std::string(kHead) + "env = { ZED = \"z\", BLENDER_USER_SCRIPTS = \"{task_dir}/s\" }\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->env.size(), 2u);
  EXPECT_EQ(spec->env[0].name, "BLENDER_USER_SCRIPTS");
  EXPECT_EQ(spec->env[0].value, "{task_dir}/s");
  EXPECT_EQ(spec->env[1].name, "ZED");
  spec = Parse(std::string(kHead) + "[env]\nPATH = \"/opt/x/bin:/usr/bin:/bin\"\nLANG = \"C\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->env.size(), 2u);
  EXPECT_EQ(spec->env[0].name, "LANG");
  EXPECT_EQ(spec->env[1].name, "PATH");
  EXPECT_TRUE(Validate(*spec).ok());
}

TEST(EnvSpec, WrongTypesNameThePlace) {
  EXPECT_THAT(Error(std::string(kHead) + "env = [\"A=1\"]\n"),
              AllOf(StartsWith("job.toml:3:7: key 'env': must be a table of variables"),
                    HasSubstr("got an array")));
  EXPECT_THAT(
      Error(std::string(kHead) + "env = { DEPTH = 3 }\n"),
      AllOf(StartsWith("job.toml:3:17: key 'env.DEPTH': must be a string"), HasSubstr("got 3")));
}

TEST(EnvSpec, NamesAreChecked) {
  EXPECT_THAT(Error(std::string(kHead) + "env = { \"1X\" = \"a\" }\n"),
              HasSubstr("key 'env': '1X' is not a variable name"));
  EXPECT_THAT(Error(std::string(kHead) + "env = { \"A-B\" = \"a\" }\n"),
              HasSubstr("'A-B' is not a variable name"));
  EXPECT_THAT(Error(std::string(kHead) + "env = { \"\" = \"a\" }\n"), HasSubstr("'' is empty"));
  for (std::string_view reserved :
       {"IDLEPOOL_TASK_DIR", "IDLEPOOL_ANYTHING", "HOME", "TMPDIR", "PWD", "OLDPWD", "USER",
        "LOGNAME", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES"}) {
    EXPECT_THAT(Error(std::string(kHead) + "env = { " + std::string(reserved) + " = \"x\" }\n"),
                AllOf(StartsWith("job.toml:3:"), HasSubstr("is set by the worker for every task")))
        << reserved;
  }
  for (std::string_view allowed : {"PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "_x1"}) {
    EXPECT_FALSE(EnvNameError(allowed).has_value()) << allowed;
  }
}

TEST(EnvSpec, ValuesAreBounded) {
  const std::string big(kMaxEnvValueBytes + 1, 'v');
  EXPECT_THAT(Error(std::string(kHead) + "env = { BIG = \"" + big + "\" }\n"),
              StartsWith("job.toml:3:15: key 'env.BIG': the value is 4097 bytes, over the limit "
                         "of 4096"));
  std::string many = std::string(kHead) + "[env]\n";
  for (size_t i = 0; i <= kMaxEnvVars; ++i) many += "V" + std::to_string(i) + " = \"x\"\n";
  EXPECT_THAT(Error(many), HasSubstr("65 variables, over the limit of 64"));
  std::string heavy = std::string(kHead) + "[env]\n";
  const std::string value(4000, 'w');
  for (size_t i = 0; i < 20; ++i) heavy += "V" + std::to_string(i) + " = \"" + value + "\"\n";
  EXPECT_THAT(Error(heavy), HasSubstr("key 'env': names and values take 78.1 KiB, over the limit"));
}

TEST(EnvSpec, PlaceholdersFitTheJob) {
  EXPECT_THAT(Error(std::string(kHead) + "env = { F = \"{frame}\" }\n"),
              HasSubstr("key 'env.F': {frame} is only for 'frames' jobs"));
  EXPECT_THAT(Error(std::string(kHead) + "env = { F = \"{nope}\" }\n"),
              HasSubstr("key 'env.F': unknown placeholder"));
  EXPECT_THAT(Error(std::string(kHead) + "env = { F = \"{port}\" }\n"),
              HasSubstr("{port} is only for services"));
  // A frame list that could not fit: {frames} of a big chunk, counted at its longest.
  EXPECT_THAT(Error("command = [\"true\"]\nframes = \"1-100000\"\nchunk = 10000\n"
                    "env = { F = \"{frames}\" }\n"),
              AllOf(HasSubstr("key 'env.F': the job's variables could take up to"),
                    HasSubstr("at most 128 KiB is allowed")));
}

TEST(EnvSpec, RenderedPerTask) {
  absl::StatusOr<JobSpec> spec = Parse(
      "command = [\"true\"]\nitems = [\"a\", \"b\"]\n"
      "env = { OUT = \"{task_dir}/out-{index}-{item}.txt\", BRACES = \"{{x}}\" }\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  TaskParams task;
  task.index = 1;
  task.item = "b";
  absl::StatusOr<std::vector<std::string>> env = RenderEnv(spec->env, task, "/w/t", "/w/c");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_THAT(*env, ElementsAre("BRACES={x}", "OUT=/w/t/out-1-b.txt"));
  // A service replica's {port}; without one, the error names the variable.
  absl::StatusOr<std::vector<std::string>> port =
      RenderEnv({EnvVar{"P", "{port}"}}, task, "/w/t", "/w/c", ReplicaParams{8080});
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_THAT(*port, ElementsAre("P=8080"));
  EXPECT_THAT(
      std::string(RenderEnv({EnvVar{"P", "{port}"}}, task, "/w/t", "/w/c").status().message()),
      StartsWith("env 'P': {port}"));
}

TEST(EnvSpec, RenderRefusesOversizedVariables) {
  // What a coordinator that did not check would send: refused before it grows past the limit.
  TaskParams task;
  task.item = std::string(64 * 1024, 'i');
  const std::vector<EnvVar> env = {EnvVar{"A", "{item}{item}{item}"}};
  absl::StatusOr<std::vector<std::string>> r = RenderEnv(env, task, "/t", "/c");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("take more than 128 KiB for task 0"));
}

TEST(EnvSpec, WireSpecsAreValidatedToo) {
  JobSpec spec = *Parse(kHead);
  spec.env = {EnvVar{"HOME", "/root"}};
  EXPECT_THAT(std::string(Validate(spec).message()),
              StartsWith("job spec: field 'env': 'HOME' is set by the worker"));
  spec.env = {EnvVar{"A", "1"}, EnvVar{"B", "2"}, EnvVar{"A", "3"}};
  EXPECT_THAT(std::string(Validate(spec).message()), HasSubstr("'A' is given twice"));
  spec.env = {EnvVar{"A", std::string("x\0y", 3)}};
  EXPECT_THAT(std::string(Validate(spec).message()),
              HasSubstr("field 'env.A': contains a NUL byte"));
}

}  // namespace
}  // namespace idlepool::spec
