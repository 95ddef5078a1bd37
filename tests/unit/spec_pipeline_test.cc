// `after` and [retry] backoff_s / max_backoff_s of a job file (spec/pipeline_table.cc): their
// defaults, the values read, and the errors that name the file, line and key; Validate refuses
// the same values in a spec that came over the wire.
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
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr std::string_view kHead = "command = [\"true\"]\ncount = 2\n";

absl::StatusOr<JobSpec> Parse(std::string_view toml) {
  return ParseJobToml(std::string(kHead) + std::string(toml), "job.toml", "/tmp");
}

std::string Error(std::string_view toml) {
  absl::StatusOr<JobSpec> spec = Parse(toml);
  EXPECT_FALSE(spec.ok()) << toml;
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
  return std::string(spec.status().message());
}

TEST(PipelineSpec, Defaults) {
  absl::StatusOr<JobSpec> spec = Parse("");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->backoff_s, kDefaultBackoffS);
  EXPECT_EQ(spec->max_backoff_s, kDefaultMaxBackoffS);
  EXPECT_THAT(spec->after, IsEmpty());
}

TEST(PipelineSpec, ReadsAfterAndBackoff) {
  absl::StatusOr<JobSpec> spec =
      Parse("after = [\"render\", \"12\"]\n[retry]\nbackoff_s = 0.5\nmax_backoff_s = 30\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->after, ElementsAre("render", "12"));
  EXPECT_EQ(spec->backoff_s, 0.5);
  EXPECT_EQ(spec->max_backoff_s, 30);
  spec = Parse("[retry]\nbackoff_s = 0\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->backoff_s, 0);
}

TEST(PipelineSpec, ErrorsNameThePlace) {
  EXPECT_THAT(Error("[retry]\nbackoff_s = \"1s\"\n"),
              AllOf(StartsWith("job.toml:4:13: key 'retry.backoff_s'"),
                    HasSubstr("must be a number of seconds, got the string")));
  EXPECT_THAT(Error("[retry]\nbackoff_s = -1\n"),
              AllOf(HasSubstr("retry.backoff_s"), HasSubstr("must be between 0 and 86400")));
  EXPECT_THAT(Error("[retry]\nmax_backoff_s = nan\n"), HasSubstr("retry.max_backoff_s"));
  EXPECT_THAT(
      Error("[retry]\nbackoff_s = 600\n"),
      AllOf(HasSubstr("retry.backoff_s"), HasSubstr("600 is over retry.max_backoff_s (300")));
  EXPECT_THAT(Error("after = \"render\"\n"),
              AllOf(StartsWith("job.toml:3:9: key 'after'"), HasSubstr("must be an array")));
  EXPECT_THAT(Error("after = [12]\n"), HasSubstr("each element must be a job id or name"));
  EXPECT_THAT(Error("after = [\"\"]\n"), HasSubstr("an empty job id or name"));
  EXPECT_THAT(Error("after = [\"a\", \"a\"]\n"), HasSubstr("\"a\" is listed twice"));
  EXPECT_THAT(Error("[retry]\nbakoff_s = 1\n"), HasSubstr("did you mean 'backoff_s'"));
}

TEST(PipelineSpec, ValidateRefusesTheSameValues) {
  absl::StatusOr<JobSpec> spec = Parse("");
  ASSERT_TRUE(spec.ok());
  spec->backoff_s = 1e9;
  EXPECT_THAT(std::string(Validate(*spec).message()), HasSubstr("retry.backoff_s"));
  spec->backoff_s = 1;
  spec->after = {std::string(200, 'x')};
  EXPECT_THAT(std::string(Validate(*spec).message()), HasSubstr("'after'"));
  spec->after = {};
  spec->hold_off_after = 0;
  EXPECT_THAT(std::string(Validate(*spec).message()), HasSubstr("retry.hold_off_after"));
}

// [retry] hold_off_after: failures of a job on one worker before it is held off (core "Health").
TEST(PipelineSpec, HoldOffAfter) {
  absl::StatusOr<JobSpec> spec = Parse("");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->hold_off_after, 3u);
  spec = Parse("[retry]\nhold_off_after = 1\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->hold_off_after, 1u);
  EXPECT_THAT(Error("[retry]\nhold_off_after = 0\n"),
              AllOf(StartsWith("job.toml:4:18: key 'retry.hold_off_after'"),
                    HasSubstr("must be a positive integer, got 0")));
  EXPECT_THAT(Error("[retry]\nhold_off_after = 101\n"), HasSubstr("must be at most 100"));
  EXPECT_THAT(Error("[retry]\nhold_off_after = \"3\"\n"), HasSubstr("retry.hold_off_after"));
}

}  // namespace
}  // namespace idlepool::spec
