// The job file's [sandbox] table (spec/sandbox_table.cc): `network = "none" | "host"` into
// JobSpec::resources.host_network, and the errors that name the file, line and key.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/spec.h"

namespace idlepool::spec {
namespace {

using ::testing::AllOf;
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

TEST(SandboxSpec, NetworkDefaultsToNone) {
  absl::StatusOr<JobSpec> spec = Parse(kHead);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->resources.host_network);
  spec = Parse(std::string(kHead) + "[sandbox]\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->resources.host_network);
}

TEST(SandboxSpec, NoneAndHost) {
  absl::StatusOr<JobSpec> none = Parse(std::string(kHead) + "[sandbox]\nnetwork = \"none\"\n");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->resources.host_network);
  absl::StatusOr<JobSpec> host = Parse(std::string(kHead) + "[sandbox]\nnetwork = \"host\"\n");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_TRUE(host->resources.host_network);
  // The other resources are untouched by it, and [resources] after it does not undo it.
  EXPECT_EQ(host->resources.cpus, 1u);
  host = Parse(std::string(kHead) + "[sandbox]\nnetwork = \"host\"\n[resources]\ncpus = 2\n");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_TRUE(host->resources.host_network);
  EXPECT_EQ(host->resources.cpus, 2u);
  // A dotted key is the same table.
  host = Parse(std::string(kHead) + "sandbox.network = \"host\"\n");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_TRUE(host->resources.host_network);
}

TEST(SandboxSpec, OtherNetworkValuesAreRefusedWithTheirPlace) {
  const std::string head = std::string(kHead) + "[sandbox]\n";
  EXPECT_EQ(Error(head + "network = \"bridge\"\n"),
            "job.toml:4:11: key 'sandbox.network': must be \"none\" (no network: inputs come "
            "through the pool) or \"host\" (the worker's network), got the string \"bridge\"");
  EXPECT_THAT(Error(head + "network = \"Host\"\n"),
              StartsWith("job.toml:4:11: key 'sandbox.network': must be \"none\""));
  EXPECT_THAT(Error(head + "network = \"\"\n"), HasSubstr("got the string \"\""));
  EXPECT_THAT(Error(head + "network = true\n"),
              AllOf(StartsWith("job.toml:4:11: key 'sandbox.network': "), HasSubstr("got true")));
  EXPECT_THAT(Error(head + "network = 1\n"), HasSubstr("key 'sandbox.network'"));
  EXPECT_THAT(Error(head + "network = [\"host\"]\n"), HasSubstr("got an array"));
}

TEST(SandboxSpec, UnknownKeysAndMisplacedOnesAreNamed) {
  EXPECT_THAT(Error(std::string(kHead) + "[sandbox]\nnetwrok = \"host\"\n"),
              AllOf(StartsWith("job.toml:4:1: unknown key 'sandbox.netwrok'"),
                    HasSubstr("did you mean 'network'?")));
  EXPECT_THAT(Error(std::string(kHead) + "[sandbox]\nnetwork = \"host\"\nuid = 0\n"),
              AllOf(StartsWith("job.toml:5:1: unknown key 'sandbox.uid'"),
                    HasSubstr("allowed here: network")));
  // A top-level key written after the header belongs to [sandbox] in TOML: say so.
  EXPECT_THAT(Error(std::string(kHead) + "[sandbox]\nnetwork = \"host\"\noutputs = [\"a\"]\n"),
              HasSubstr("keys after the [sandbox] header belong to that table"));
  // [sandbox]'s key at the top level is told where it belongs.
  EXPECT_THAT(Error(std::string(kHead) + "network = \"host\"\n"),
              AllOf(StartsWith("job.toml:3:1: unknown key 'network'"),
                    HasSubstr("(it belongs under [sandbox])")));
  EXPECT_EQ(Error(std::string(kHead) + "sandbox = \"host\"\n"),
            "job.toml:3:11: key 'sandbox': must be a table ([sandbox]), got the string \"host\"");
}

}  // namespace
}  // namespace idlepool::spec
