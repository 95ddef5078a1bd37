// What a task's command takes when it starts (spec.h, kMaxArgBytes): counted from lengths at
// submit, so a placeholder bomb is refused before anything is rendered, and counted again by
// RenderCommand on the worker with its real paths. The boundaries are exact: a command that
// renders to the limit is accepted, one byte more is refused.

#include <cstdint>
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
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

JobSpec FramesJob(std::string frames, uint32_t chunk, std::vector<std::string> command) {
  JobSpec s;
  s.name = "sizes";
  s.command = std::move(command);
  s.kind = TaskKind::kFrames;
  s.frames = std::move(frames);
  s.chunk = chunk;
  return s;
}

JobSpec CountJob(uint64_t count, std::vector<std::string> command) {
  JobSpec s;
  s.name = "sizes";
  s.command = std::move(command);
  s.kind = TaskKind::kCount;
  s.count = count;
  return s;
}

// The bytes of JoinFrames(first..last) for 1 <= first <= last, counted the slow way.
uint64_t JoinedBytes(int64_t first, int64_t last) {
  uint64_t n = 0;
  for (int64_t f = first; f <= last; ++f) n += std::to_string(f).size() + (f > first ? 1 : 0);
  return n;
}

TEST(CommandSize, APlaceholderBombIsRefusedAtSubmitNamingTheSizes) {
  // The spec: 100,000 frames in one chunk, "{frames}" 2,000 times: 1.1 GiB of argv.
  std::vector<std::string> command = {"render"};
  command.insert(command.end(), 2000, "{frames}");
  const JobSpec bomb = FramesJob("1-100000", 100000, command);
  const absl::Status st = Validate(bomb);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(Msg(st), AllOf(StartsWith("job spec: field 'command': task 0 would start with "),
                             HasSubstr("1.1 GiB of arguments and variables"),
                             HasSubstr("the longest (element [1]) 575.09 KiB"),
                             HasSubstr("the kernel allows 128 KiB per argument or variable and "
                                       "about 2 MiB in all"),
                             HasSubstr("could never start")));
  // The same one in a file: the message points at the command.
  std::string toml = "name = \"bomb\"\nframes = \"1-100000\"\nchunk = 100000\ncommand = [\"r\"";
  for (int i = 0; i < 2000; ++i) toml += ", \"{frames}\"";
  toml += "]\n";
  const absl::StatusOr<JobSpec> parsed = ParseJobToml(toml, "bomb.toml", "/nonexistent");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(Msg(parsed.status()),
              AllOf(StartsWith("bomb.toml:4:"), HasSubstr("key 'command': task 0 would start")));
}

TEST(CommandSize, OneArgumentMayTakeExactly128KiBWithItsNul) {
  // 1-20000 chunked whole: {frames} is 108,893 bytes; pad the element to 131,071 + its NUL.
  const uint64_t frames = JoinedBytes(1, 20000);
  ASSERT_EQ(frames, 108893u);
  const std::string fits = "{frames}" + std::string(kMaxArgBytes - 1 - frames, 'x');
  EXPECT_TRUE(Validate(FramesJob("1-20000", 20000, {"r", fits})).ok());
  const absl::Status over = Validate(FramesJob("1-20000", 20000, {"r", fits + "x"}));
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Msg(over), HasSubstr("the longest (element [1]) 128 KiB"));
  // The count is what RenderCommand makes of it.
  absl::StatusOr<std::vector<TaskParams>> tasks = ExpandTasks(FramesJob("1-20000", 20000, {"r"}));
  ASSERT_TRUE(tasks.ok());
  absl::StatusOr<std::vector<std::string>> argv = RenderCommand({"r", fits}, tasks->at(0), "", "");
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_EQ(argv->at(1).size() + 1, kMaxArgBytes);
  EXPECT_FALSE(RenderCommand({"r", fits + "x"}, tasks->at(0), "", "").ok());
}

TEST(CommandSize, AChunkWhoseFrameListCannotBeAVariableIsTheChunksFault) {
  // No placeholder at all, but IDLEPOOL_FRAMES of 30,000 frames is 168,893 bytes.
  const absl::Status st = Validate(FramesJob("1-30000", 30000, {"true"}));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Msg(st), AllOf(StartsWith("job spec: field 'chunk': task 0 would start"),
                             HasSubstr("the longest (the variable IDLEPOOL_FRAMES)")));
  // The largest chunk that fits: "IDLEPOOL_FRAMES=" + the list + NUL <= 128 KiB.
  EXPECT_TRUE(Validate(FramesJob("1-20000", 20000, {"true"})).ok());
  const absl::StatusOr<JobSpec> parsed =
      ParseJobToml("command = [\"true\"]\nframes = \"1-30000\"\nchunk = 30000\n", "job.toml", "/x");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(Msg(parsed.status()), StartsWith("job.toml:3:9: key 'chunk': task 0 would start"));
}

TEST(CommandSize, AllArgumentsTogetherMayTakeTheTasksShareOfTwoMiB) {
  // Each string counts with its NUL and a pointer: "r" 10 bytes, 13 x 128 KiB + 8, and the
  // rest up to exactly 1.75 MiB.
  const std::string big(kMaxArgBytes - 1, 'a');
  std::vector<std::string> command(13, big);
  command.insert(command.begin(), "r");
  command.push_back(std::string(kMaxTaskExecBytes - 10 - 13 * (kMaxArgBytes + 8) - 9, 'b'));
  EXPECT_TRUE(Validate(CountJob(1, command)).ok());
  command.back() += "b";
  const absl::Status st = Validate(CountJob(1, command));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Msg(st), HasSubstr("(1.75 MiB for the task's own)"));
  command.back() = big;
  command.push_back(big);
  EXPECT_THAT(Msg(Validate(CountJob(1, command))), HasSubstr("task 0 would start with 1.88 MiB"));
}

TEST(CommandSize, TheFirstTaskTooBigIsNamed) {
  JobSpec s = CountJob(1, {"ocr", "{item}{item}{item}"});
  s.kind = TaskKind::kItems;
  s.count = 0;
  s.items = {"a.png", "b.png", std::string(50000, 'c'), "d.png"};  // 3 x 50,000 > 128 KiB
  EXPECT_THAT(Msg(Validate(s)), HasSubstr("field 'command': task 2 would start"));
  s.items[2].resize(40000);  // 120,000 bytes: fits
  EXPECT_TRUE(Validate(s).ok());
  // A count job: only {index} grows, and the last task has the longest.
  std::string pad(kMaxArgBytes - 1 - 5, 'x');  // room for a 5-digit index
  EXPECT_TRUE(Validate(CountJob(99999, {"r", pad + "{index}"})).ok());
  EXPECT_THAT(Msg(Validate(CountJob(100001, {"r", pad + "{index}"}))),
              HasSubstr("task 100000 would start"));
}

TEST(CommandSize, TheWorkerCountsItsRealPathsBeforeRendering) {
  // 600 x {task_dir}: fine at submit (each dir counted as kAssumedDirBytes)...
  const std::vector<std::string> command(600, "{task_dir}");
  EXPECT_TRUE(Validate(CountJob(1, command)).ok());
  TaskParams t;
  EXPECT_TRUE(RenderCommand(command, t, std::string(kAssumedDirBytes, 'd'), "").ok());
  // ...but not on a worker whose work dir is 4,000 bytes deep: 2.3 MiB, refused, not rendered.
  const absl::StatusOr<std::vector<std::string>> deep =
      RenderCommand(command, t, std::string(4000, 'd'), "");
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(deep.status()), AllOf(StartsWith("command: task 0 would start with 2.29 MiB"),
                                        HasSubstr("(not rendered)")));
}

TEST(CommandSize, TheWorkerRefusesTheBombWithoutRenderingIt) {
  // What a worker does if a bomb got past an older coordinator: an error, not 1.1 GiB of argv.
  absl::StatusOr<std::vector<TaskParams>> tasks = ExpandTasks(FramesJob("1-100000", 100000, {"r"}));
  ASSERT_TRUE(tasks.ok());
  std::vector<std::string> command = {"render"};
  command.insert(command.end(), 2000, "{frames}");
  const absl::StatusOr<std::vector<std::string>> argv =
      RenderCommand(command, tasks->at(0), "/w/t", "/w/c");
  EXPECT_EQ(argv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(argv.status()), HasSubstr("task 0 would start with 1.1 GiB"));
}

TEST(CommandSize, NegativeFramesAndStepsCountTheirSigns) {
  // {frames} of -9..-1 is "-9,-8,...,-1": 9 x 2 + 8 commas = 26 bytes; IDLEPOOL_FRAMES the same.
  absl::StatusOr<std::vector<TaskParams>> tasks = ExpandTasks(FramesJob("-9--1", 9, {"r"}));
  ASSERT_TRUE(tasks.ok());
  const std::string pad(kMaxArgBytes - 1 - 26 - 2, 'x');  // and {frame_step}: "1"; {index}: "0"
  EXPECT_TRUE(Validate(FramesJob("-9--1", 9, {pad + "{frames}{frame_step}{index}"})).ok());
  EXPECT_FALSE(Validate(FramesJob("-9--1", 9, {pad + "x{frames}{frame_step}{index}"})).ok());
  const absl::StatusOr<std::vector<std::string>> argv =
      RenderCommand({pad + "{frames}{frame_step}{index}"}, tasks->at(0), "", "");
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ(argv->at(0).size() + 1, kMaxArgBytes);
}

}  // namespace
}  // namespace idlepool::spec
