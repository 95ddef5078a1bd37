// Unit tests of src/spec: the frame grammar beyond the corpus, chunking, job-spec TOML reading
// and its error messages, items files, inputs staging, placeholders, expansion and rendering.

#include "spec/spec.h"
#include "text/names.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "text/utf8.h"

namespace idlepool::spec {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

std::vector<int64_t> Frames(std::string_view spec) {
  absl::StatusOr<std::vector<int64_t>> f = ParseFrames(spec);
  EXPECT_TRUE(f.ok()) << spec << ": " << f.status();
  return f.ok() ? *f : std::vector<int64_t>{};
}

struct Span {
  int64_t start, end, step;
  bool operator==(const Span&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Span& r) {
  return os << r.start << ".." << r.end << " step " << r.step;
}

std::vector<Span> Runs(std::string_view spec, uint32_t chunk) {
  absl::StatusOr<std::vector<FrameChunk>> chunks = ChunkFrames(spec, chunk);
  EXPECT_TRUE(chunks.ok()) << spec << ": " << chunks.status();
  std::vector<Span> out;
  if (!chunks.ok()) return out;
  for (const FrameChunk& c : *chunks) out.push_back({c.start, c.end, c.step});
  return out;
}

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "idlepool_spec_test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& p, std::string_view content) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << content;
  ASSERT_TRUE(out.good()) << p;
}

// ==========================================================================================
// Frame grammar (the corpus test covers the documented forms row by row).

TEST(ParseFrames, WhitespaceAroundTermsIsIgnored) {
  EXPECT_THAT(Frames(" 1-3 ,\t5 "), ElementsAre(1, 2, 3, 5));
}

TEST(ParseFrames, RepeatsKeepTheFirstPosition) {
  EXPECT_THAT(Frames("5,1-6,3"), ElementsAre(5, 1, 2, 3, 4, 6));
  EXPECT_THAT(Frames("1-10x3,1-5"), ElementsAre(1, 4, 7, 10, 2, 3, 5));
}

TEST(ParseFrames, ErrorMessagesNameTheTermAndTheReason) {
  auto error = [](std::string_view spec) {
    absl::StatusOr<std::vector<int64_t>> f = ParseFrames(spec);
    EXPECT_FALSE(f.ok()) << spec;
    if (f.ok()) return std::string();
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << spec;
    return Msg(f.status());
  };
  EXPECT_EQ(error("1-5x0"), "frame spec '1-5x0': term '1-5x0': step must not be 0");
  EXPECT_THAT(error("1-20,1-8x-2"), AllOf(StartsWith("frame spec '1-20,1-8x-2': term '1-8x-2': "),
                                          HasSubstr("points away from 8")));
  EXPECT_THAT(error("8-1x2"), HasSubstr("points away from 1"));
  EXPECT_THAT(error("1-8:-2"), HasSubstr("points away from 8"));
  EXPECT_THAT(error("1-3,,5"), HasSubstr("term 2 is empty"));
  EXPECT_THAT(error("1-3,"), HasSubstr("term 2 is empty"));
  EXPECT_THAT(error(""), HasSubstr("empty"));
  EXPECT_THAT(error("   "), HasSubstr("empty"));
  EXPECT_THAT(error("1-10-20"), HasSubstr("term '1-10-20': unexpected '-20'"));
  EXPECT_THAT(error("1x10-20"), HasSubstr("term '1x10-20': expected '-' after 1"));
  EXPECT_THAT(error("1:10-20"), HasSubstr("expected '-' after 1"));
  EXPECT_THAT(error("1-5xc"), HasSubstr("expected a step after 'x'"));
  EXPECT_THAT(error("1.5"), HasSubstr("term '1.5'"));
  EXPECT_THAT(error("+3"), HasSubstr("expected a frame number"));
  EXPECT_THAT(error("1 - 3"), HasSubstr("term '1 - 3'"));
  EXPECT_THAT(error("1-5x2x2"), HasSubstr("after the step"));
}

TEST(ParseFrames, ATermListingNoFramesIsAllowedButASpecListingNoneIsNot) {
  // "y1" leaves out nothing that "x1" keeps, so it lists no frames.
  EXPECT_THAT(Frames("1-5y1,7"), ElementsAre(7));
  absl::StatusOr<std::vector<int64_t>> none = ParseFrames("1-5y1");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(Msg(none.status()), HasSubstr("lists no frames"));
}

TEST(ParseFrames, TwoBillionFramesAreRefusedBeforeAnyIsGenerated) {
  // Generating these would take 16 GB; the refusal is arithmetic.
  absl::StatusOr<std::vector<int64_t>> f = ParseFrames("1-2000000000");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Msg(f.status()), AllOf(HasSubstr("'1-2000000000'"), HasSubstr("2000000000 frames"),
                                     HasSubstr("limit of 1000000")));
  EXPECT_EQ(ChunkFrames("1-2000000000", 100).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ParseFrames("1-2000000000y2").status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ParseFrames("1-2000000000:4").status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ParseFrames, TheLimitAppliesToTheSumOfTheTerms) {
  EXPECT_TRUE(ParseFrames("1-600000").ok());
  absl::StatusOr<std::vector<int64_t>> f = ParseFrames("1-600000,700001-1300000");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Msg(f.status()), HasSubstr("add up to 1200000 frames"));

  EXPECT_TRUE(ParseFrames("1-10", 10).ok());
  EXPECT_EQ(ParseFrames("1-10", 9).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ParseFrames("1-5,1-5", 9).status().code(), absl::StatusCode::kResourceExhausted);
  // Terms that list nothing still count against the limit, as terms.
  absl::StatusOr<std::vector<int64_t>> empty_terms = ParseFrames("1-5y1,1-5y1,1-5y1,7", 3);
  ASSERT_FALSE(empty_terms.ok());
  EXPECT_EQ(empty_terms.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Msg(empty_terms.status()), HasSubstr("more than 3 terms"));
}

TEST(ParseFrames, SixtyFourBitExtremesNeitherOverflowNorCrash) {
  EXPECT_THAT(Frames("9223372036854775807"), ElementsAre(kI64Max));
  EXPECT_THAT(Frames("-9223372036854775808"), ElementsAre(kI64Min));
  // The whole int64 range has 2^64 frames: refused, not wrapped to 0.
  EXPECT_EQ(ParseFrames("-9223372036854775808-9223372036854775807").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Frames("-9223372036854775808-9223372036854775807x9223372036854775807"),
              ElementsAre(kI64Min, -1, kI64Max - 1));
  EXPECT_THAT(Frames("9223372036854775807-9223372036854775805x-1"),
              ElementsAre(kI64Max, kI64Max - 1, kI64Max - 2));
  EXPECT_THAT(Frames("9223372036854775805-9223372036854775807:2"),
              ElementsAre(kI64Max - 2, kI64Max, kI64Max - 1));
  EXPECT_THAT(Frames("-9223372036854775807--9223372036854775808y-2"), ElementsAre(kI64Min));

  absl::StatusOr<std::vector<int64_t>> big = ParseFrames("9223372036854775808");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(big.status()), HasSubstr("out of the 64-bit range"));
  EXPECT_FALSE(ParseFrames("1-5x99999999999999999999").ok());
}

TEST(ParseFrames, AnyStepSignFitsASingleFrameRange) {
  EXPECT_THAT(Frames("5-5x3"), ElementsAre(5));
  EXPECT_THAT(Frames("5-5x-3"), ElementsAre(5));
  EXPECT_THAT(Frames("5-5:4"), ElementsAre(5));
}

TEST(JoinFrames, CommaSeparated) {
  EXPECT_EQ(JoinFrames({}), "");
  EXPECT_EQ(JoinFrames({7}), "7");
  EXPECT_EQ(JoinFrames({1, -2, 3}), "1,-2,3");
}

// ==========================================================================================
// Chunking.

TEST(ChunkFrames, HeaderExamples) {
  EXPECT_THAT(Runs("1-10,20-30", 4),
              ElementsAre(Span{1, 4, 1}, Span{5, 8, 1}, Span{9, 10, 1}, Span{20, 23, 1},
                          Span{24, 27, 1}, Span{28, 30, 1}));
  const std::vector<Span> r72 = Runs("1-72", 10);
  ASSERT_EQ(r72.size(), 8u);
  EXPECT_EQ(r72.back(), (Span{71, 72, 1}));
}

TEST(ChunkFrames, NeverRunsPastTheEndOrIntoAGap) {
  absl::StatusOr<std::vector<FrameChunk>> chunks = ChunkFrames("1-72", 10);
  ASSERT_TRUE(chunks.ok());
  for (const FrameChunk& c : *chunks) {
    for (int64_t f : c.frames) EXPECT_LE(f, 72);
    EXPECT_LE(c.end, 72);
  }
  for (uint32_t chunk : {1u, 3u, 4u, 7u, 11u, 50u}) {
    absl::StatusOr<std::vector<FrameChunk>> gap = ChunkFrames("1-10,20-30", chunk);
    ASSERT_TRUE(gap.ok());
    for (const FrameChunk& c : *gap) {
      for (int64_t f : c.frames) EXPECT_FALSE(f > 10 && f < 20) << f << " chunk " << chunk;
      // A chunk from start to end with its step would also render only listed frames.
      for (int64_t f = c.start; c.step > 0 ? f <= c.end : f >= c.end; f += c.step) {
        EXPECT_FALSE(f > 10 && f < 20) << f << " chunk " << chunk;
      }
    }
  }
}

TEST(ChunkFrames, SteppedRangeGivesEveryOddFrameExactlyOnce) {
  absl::StatusOr<std::vector<FrameChunk>> chunks = ChunkFrames("1-3199x2", 4);
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->size(), 400u);
  EXPECT_EQ(chunks->front().start, 1);
  EXPECT_EQ(chunks->front().end, 7);
  std::multiset<int64_t> seen;
  for (const FrameChunk& c : *chunks) {
    EXPECT_EQ(c.step, 2);
    EXPECT_EQ(c.frames.size(), 4u);
    seen.insert(c.frames.begin(), c.frames.end());
  }
  ASSERT_EQ(seen.size(), 1600u);
  for (int64_t f = 1; f <= 3199; f += 2) EXPECT_EQ(seen.count(f), 1u) << f;
}

TEST(ChunkFrames, RepeatedFramesBreakRunsWhereTheDifferenceChanges) {
  // The second term's frames 5..10 were listed by the first: only 11..15 remain.
  EXPECT_THAT(Runs("1-10,5-15", 4), ElementsAre(Span{1, 4, 1}, Span{5, 8, 1}, Span{9, 10, 1},
                                                Span{11, 14, 1}, Span{15, 15, 1}));
  // After "1-10x2" took the odd frames, "1-10" leaves the even ones: a run of step 2.
  EXPECT_THAT(Runs("1-10x2,1-10", 3),
              ElementsAre(Span{1, 5, 2}, Span{7, 9, 2}, Span{2, 6, 2}, Span{8, 10, 2}));
  // Holes in the middle of a term split it: 1-20 less 8..12 is 1-7 then 13-20.
  EXPECT_THAT(Runs("8-12,1-20", 10), ElementsAre(Span{8, 12, 1}, Span{1, 7, 1}, Span{13, 20, 1}));
}

TEST(ChunkFrames, DescendingAndInterleavedTerms) {
  EXPECT_THAT(Runs("10-1", 4), ElementsAre(Span{10, 7, -1}, Span{6, 3, -1}, Span{2, 1, -1}));
  // 1-10:5 lists 1,6 | 3,5,7,9 | 2,4,8,10: each pass is a run; the last pass has a gap.
  EXPECT_THAT(Runs("1-10:5", 4),
              ElementsAre(Span{1, 6, 5}, Span{3, 9, 2}, Span{2, 4, 2}, Span{8, 10, 2}));
  EXPECT_THAT(Runs("1-8y2", 10), ElementsAre(Span{2, 8, 2}));
  EXPECT_THAT(Runs("1-9y3", 10), ElementsAre(Span{2, 3, 1}, Span{5, 6, 1}, Span{8, 9, 1}));
}

TEST(ChunkFrames, ChunkOfOneGivesSingleFramesWithStepOne) {
  absl::StatusOr<std::vector<FrameChunk>> chunks = ChunkFrames("1-9x4", 1);
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->size(), 3u);
  for (const FrameChunk& c : *chunks) {
    EXPECT_EQ(c.step, 1);
    EXPECT_EQ(c.start, c.end);
    EXPECT_THAT(c.frames, ElementsAre(c.start));
  }
}

TEST(ChunkFrames, DifferenceBeyondInt64SplitsTheChunk) {
  // After -1 is taken, the big term keeps INT64_MIN and INT64_MAX-1, whose difference does not
  // fit in int64: they cannot share a chunk.
  const std::string spec = "-1,-9223372036854775808-9223372036854775807x9223372036854775807";
  EXPECT_THAT(Runs(spec, 3), ElementsAre(Span{-1, -1, 1}, Span{kI64Min, kI64Min, 1},
                                         Span{kI64Max - 1, kI64Max - 1, 1}));
}

TEST(ChunkFrames, ChunkZeroIsAnError) {
  absl::StatusOr<std::vector<FrameChunk>> chunks = ChunkFrames("1-10", 0);
  ASSERT_FALSE(chunks.ok());
  EXPECT_EQ(chunks.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChunkFrames, UnionEqualsParseFramesOnAwkwardSpecs) {
  for (std::string_view spec : {"1-100x7,50-60,3,200-150:-8,1-30y4,-10--1x3,0", "100-1:-9,1-100",
                                "5,4,3,2,1,1-10", "1-1000:64,1-1000y3"}) {
    const std::vector<int64_t> frames = Frames(spec);
    for (uint32_t chunk : {1u, 2u, 5u, 13u, 1000u}) {
      absl::StatusOr<std::vector<FrameChunk>> chunks = ChunkFrames(spec, chunk);
      ASSERT_TRUE(chunks.ok());
      std::vector<int64_t> joined;
      for (const FrameChunk& c : *chunks) {
        ASSERT_LE(c.frames.size(), chunk);
        for (size_t i = 0; i < c.frames.size(); ++i) {
          EXPECT_EQ(c.frames[i], c.start + static_cast<int64_t>(i) * c.step);
        }
        joined.insert(joined.end(), c.frames.begin(), c.frames.end());
      }
      EXPECT_EQ(joined, frames) << spec << " chunk " << chunk;
      JobSpec job;
      job.kind = TaskKind::kFrames;
      job.frames = std::string(spec);
      job.chunk = chunk;
      absl::StatusOr<uint64_t> n = TaskCount(job);
      ASSERT_TRUE(n.ok());
      EXPECT_EQ(*n, chunks->size()) << spec << " chunk " << chunk;
    }
  }
}

// ==========================================================================================
// Job specs from TOML.

class JobToml : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()) << "cannot create a temp dir"; }
  absl::StatusOr<JobSpec> Parse(std::string_view text) {
    return ParseJobToml(text, "job.toml", dir_.path().string());
  }
  // Asserts an error with `code` whose message starts with `prefix`; returns the message.
  std::string Error(std::string_view text, absl::StatusCode code, std::string_view prefix) {
    absl::StatusOr<JobSpec> spec = Parse(text);
    EXPECT_FALSE(spec.ok()) << text;
    if (spec.ok()) return "";
    EXPECT_EQ(spec.status().code(), code) << spec.status();
    EXPECT_THAT(Msg(spec.status()), StartsWith(std::string(prefix)));
    return Msg(spec.status());
  }
  std::string Invalid(std::string_view text, std::string_view prefix) {
    return Error(text, absl::StatusCode::kInvalidArgument, prefix);
  }

  TempDir dir_;
};

TEST_F(JobToml, AllowEmptyOutputsIsABoolean) {
  const std::string head = "command = [\"a\"]\ncount = 1\n";
  EXPECT_FALSE(Parse(head)->allow_empty_outputs);
  EXPECT_TRUE(Parse(head + "allow_empty_outputs = true\n")->allow_empty_outputs);
  Invalid(head + "allow_empty_outputs = \"yes\"\n",
          "job.toml:3:23: key 'allow_empty_outputs': must be true or false, got the string");
}

// The example of DESIGN.md, read from a file next to its inputs.
TEST_F(JobToml, RealisticPovrayJob) {
  WriteFile(dir_.path() / "fractalzoom.ini", "Input_File_Name=fractalzoom.pov\n");
  WriteFile(dir_.path() / "fractalzoom.pov", "#include \"colors.inc\"\n");
  const fs::path job = dir_.path() / "fractalzoom.toml";
  WriteFile(job, R"(name    = "fractalzoom"
command = ["povray", "fractalzoom.ini", "-D", "+W320", "+H240",
           "+SF{frame_start}", "+EF{frame_end}", "+O{task_dir}/frame.png"]
frames  = "1-60"          # or: items = [...], items_file = "list.txt", count = N
chunk   = 4               # frames per task
inputs  = ["fractalzoom.ini", "fractalzoom.pov"]   # relative to this file; shipped as blobs
outputs = ["*.png"]       # globs collected from the task dir

[resources]
cpus = 1                  # slots; gpus = N for GPU tasks
memory_mb = 512

[retry]
max_attempts = 3          # failures only; preemptions never count
timeout_s = 600
)");
  absl::StatusOr<JobSpec> spec = ParseJobFile(job.string());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "fractalzoom");
  EXPECT_EQ(spec->kind, TaskKind::kFrames);
  EXPECT_EQ(spec->frames, "1-60");
  EXPECT_EQ(spec->chunk, 4u);
  EXPECT_EQ(spec->command.size(), 8u);
  EXPECT_EQ(spec->command[5], "+SF{frame_start}");
  ASSERT_EQ(spec->inputs.size(), 2u);
  EXPECT_EQ(spec->inputs[0].path, "fractalzoom.ini");
  EXPECT_EQ(spec->inputs[0].source, (dir_.path() / "fractalzoom.ini").string());
  EXPECT_EQ(spec->inputs[1].path, "fractalzoom.pov");
  EXPECT_THAT(spec->outputs, ElementsAre("*.png"));
  EXPECT_EQ(spec->resources.cpus, 1u);
  EXPECT_EQ(spec->resources.gpus, 0u);
  EXPECT_EQ(spec->resources.memory_mb, 512u);
  EXPECT_EQ(spec->max_attempts, 3u);
  EXPECT_EQ(spec->timeout_s, 600u);
  EXPECT_TRUE(Validate(*spec).ok());

  absl::StatusOr<uint64_t> n = TaskCount(*spec);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 15u);
  absl::StatusOr<std::vector<TaskParams>> tasks = ExpandTasks(*spec);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 15u);
  EXPECT_EQ(tasks->back().index, 14u);
  EXPECT_EQ(tasks->back().chunk.start, 57);
  EXPECT_EQ(tasks->back().chunk.end, 60);

  absl::StatusOr<std::vector<std::string>> argv =
      RenderCommand(spec->command, (*tasks)[1], "/w/t1", "/w/c1");
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ElementsAre("povray", "fractalzoom.ini", "-D", "+W320", "+H240", "+SF5",
                                 "+EF8", "+O/w/t1/frame.png"));
}

TEST_F(JobToml, DefaultsAndTheDefaultName) {
  absl::StatusOr<JobSpec> spec = Parse(R"(command = ["true"]
count = 3
)");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "job");  // the stem of "job.toml"
  EXPECT_EQ(spec->kind, TaskKind::kCount);
  EXPECT_EQ(spec->count, 3u);
  EXPECT_EQ(spec->chunk, 1u);
  EXPECT_EQ(spec->resources.cpus, 1u);
  EXPECT_EQ(spec->max_attempts, 3u);
  EXPECT_EQ(spec->timeout_s, 0u);
  EXPECT_TRUE(spec->inputs.empty());

  // A stem that is not a valid name is made into one rather than refused.
  absl::StatusOr<JobSpec> odd = ParseJobToml("command = [\"true\"]\ncount = 1\n",
                                             "/some/dir/my render (v2).toml", "/some/dir");
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ(odd->name, "my_render__v2_");
}

TEST_F(JobToml, TheKeyLineAndColumnOfABadValue) {
  EXPECT_EQ(Invalid(R"(name = "x"
command = ["render"]
frames = "1-10"
# a comment
outputs = ["*.png"]

chunk = 0
)",
                    ""),
            "job.toml:7:9: key 'chunk': must be a positive integer, got 0");
}

TEST_F(JobToml, MissingCommand) {
  EXPECT_THAT(Invalid("frames = \"1-10\"\n", "job.toml: missing required key 'command'"),
              Not(ContainsRegex("job.toml:[0-9]")));
}

TEST_F(JobToml, UnknownKeysAreErrorsWithASuggestion) {
  EXPECT_THAT(Invalid(R"(command = ["render"]
frames = "1-10"
chunks = 4
)",
                      "job.toml:3:1: unknown key 'chunks' (did you mean 'chunk'?)"),
              HasSubstr("allowed here:"));
  EXPECT_THAT(Invalid(R"(command = ["render"]
count = 1
[resources]
cpu = 2
)",
                      "job.toml:4:1: unknown key 'resources.cpu' (did you mean 'cpus'?)"),
              HasSubstr("memory_mb"));
  Invalid(R"(command = ["render"]
count = 1
[retry]
timeout = 5
)",
          "job.toml:4:1: unknown key 'retry.timeout' (did you mean 'timeout_s'?)");
  // A top-level key written after a [table] header lands in that table.
  EXPECT_THAT(Invalid(R"(command = ["render"]
[resources]
cpus = 2
frames = "1-10"
)",
                      "job.toml:4:1: unknown key 'resources.frames'"),
              HasSubstr("move 'frames' above it"));
  EXPECT_THAT(Invalid(R"(command = ["render"]
count = 1
gpus = 1
)",
                      "job.toml:3:1: unknown key 'gpus'"),
              HasSubstr("belongs under [resources]"));
  // Of several unknown keys, the first in the file is reported (the table is sorted by name).
  Invalid(R"(command = ["render"]
zzz = 1
count = 1
aaa = 1
)",
          "job.toml:2:1: unknown key 'zzz'");
}

TEST_F(JobToml, TomlSyntaxErrorsGiveTheirPosition) {
  EXPECT_THAT(Invalid(R"(command = ["render"]
frames = "1-10
chunk = 2
)",
                      "job.toml:2:"),
              HasSubstr("TOML syntax error"));
  EXPECT_THAT(Invalid("command = [\"a\"]\ncount = 1\ncount = 2\n", "job.toml:3:"),
              HasSubstr("TOML syntax error"));
  EXPECT_THAT(Invalid(std::string("command = [\"a\xff\"]\n"), "job.toml:1:"),
              HasSubstr("TOML syntax error"));
}

// Deep nesting crashed toml++ (a stack overflow): it is refused before toml++ reads it, with the
// file, line and column (the limit itself is tested in toml_prescan_test.cc).
TEST_F(JobToml, DeepNestingIsRefusedBeforeParsing) {
  std::string dotted = "command = [\"a\"]\ncount = 1\nx";
  for (int i = 0; i < 200000; ++i) dotted += ".x";
  EXPECT_THAT(Invalid(dotted + " = 1\n", "job.toml:3:128: "), HasSubstr("nested more than 64"));
  std::string header = "command = [\"a\"]\ncount = 1\n[resources";
  for (int i = 0; i < 200000; ++i) header += ".x";
  EXPECT_THAT(Invalid(header + "]\n", "job.toml:3:"), HasSubstr("nested more than 64"));
  const fs::path file = dir_.path() / "deep.toml";
  std::ofstream(file) << dotted << " = 1\n";
  absl::StatusOr<JobSpec> spec = ParseJobFile(file.string());
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(Msg(spec.status()), StartsWith(file.string() + ":3:128: nested more than 64"));
}

// A job file of one "ä" reached undefined behaviour inside toml++ 3.3 (found by tests/fuzz): a
// character that is not ASCII outside a string is refused before toml++ reads the file.
TEST_F(JobToml, NonAsciiOutsideStringsIsASyntaxErrorFoundBeforeParsing) {
  EXPECT_THAT(Invalid("\xc3\xa4", "job.toml:1:1: "), HasSubstr("TOML syntax error"));
  EXPECT_THAT(Invalid("command = [\"a\"]\ncount = 1 \xc3\xa9\n", "job.toml:2:11: "),
              HasSubstr("not ASCII outside a string or comment"));
  // Found by fuzzing: a quote inside a bare token opens no string, so the 'ä' is outside one.
  EXPECT_THAT(Invalid("command = [\"a\"]\nitems = [\"x\", 2\"p\xc3\xa4ge\"]\n", "job.toml:2:18: "),
              HasSubstr("TOML syntax error"));
  EXPECT_EQ(Parse("command = [\"caf\xc3\xa9\"]\ncount = 1\n")->command[0], "caf\xc3\xa9");
}

TEST_F(JobToml, WrongTypesNameTheKeyAndWhatWasFound) {
  Invalid("command = \"povray\"\ncount = 1\n",
          "job.toml:1:11: key 'command': must be an array of strings, got the string \"povray\"");
  Invalid("command = [\"povray\", 5]\ncount = 1\n",
          "job.toml:1:22: key 'command': element [1] must be a string, got 5");
  Invalid("command = [\"a\"]\nframes = 5\n", "job.toml:2:10: key 'frames': must be a string");
  Invalid("command = [\"a\"]\nframes = \"1-5\"\nchunk = \"4\"\n",
          "job.toml:3:9: key 'chunk': must be a positive integer, got the string \"4\"");
  Invalid("command = [\"a\"]\nframes = \"1-5\"\nchunk = 2.5\n",
          "job.toml:3:9: key 'chunk': must be a positive integer, got the float 2.5");
  Invalid("name = 3\ncommand = [\"a\"]\ncount = 1\n", "job.toml:1:8: key 'name': must be a string");
  Invalid("command = [\"a\"]\ncount = true\n",
          "job.toml:2:9: key 'count': must be a positive integer, got true");
  Invalid("command = [\"a\"]\ncount = 1\nresources = 3\n",
          "job.toml:3:13: key 'resources': must be a table");
  Invalid("command = [\"a\"]\ncount = 1\noutputs = \"*.png\"\n",
          "job.toml:3:11: key 'outputs': must be an array of strings");
  Invalid("command = [\"a\"]\ncount = 1\ninputs = \"a.txt\"\n",
          "job.toml:3:10: key 'inputs': must be an array of strings");
  Invalid("command = [\"a\"]\nitems_file = [\"a\"]\n",
          "job.toml:2:14: key 'items_file': must be a string");
}

TEST_F(JobToml, IntegerRanges) {
  const std::string head = "command = [\"a\"]\ncount = 1\n";
  Invalid(head + "[resources]\ncpus = 0\n",
          "job.toml:4:8: key 'resources.cpus': must be a positive integer, got 0");
  Invalid(head + "[resources]\ncpus = 5000000000\n",
          "job.toml:4:8: key 'resources.cpus': must be at most 4294967295, got 5000000000");
  Invalid(head + "[resources]\ngpus = -1\n",
          "job.toml:4:8: key 'resources.gpus': must be a non-negative integer, got -1");
  Invalid(head + "[resources]\nmemory_mb = -5\n",
          "job.toml:4:13: key 'resources.memory_mb': must be a non-negative integer, got -5");
  Invalid(head + "[retry]\nmax_attempts = 0\n",
          "job.toml:4:16: key 'retry.max_attempts': must be a positive integer, got 0");
  Invalid(head + "[retry]\nmax_attempts = 101\n",
          "job.toml:4:16: key 'retry.max_attempts': must be at most 100, got 101");
  Invalid(head + "[retry]\nmax_attempts = 5000000000\n",
          "job.toml:4:16: key 'retry.max_attempts': must be at most 100, got 5000000000");
  EXPECT_EQ(Parse(head + "[retry]\nmax_attempts = 100\n")->max_attempts, 100u);
  Invalid(head + "[retry]\ntimeout_s = -1\n",
          "job.toml:4:13: key 'retry.timeout_s': must be a non-negative integer, got -1");
  Invalid("command = [\"a\"]\ncount = 0\n",
          "job.toml:2:9: key 'count': must be a positive integer, got 0");

  absl::StatusOr<JobSpec> ok = Parse(head + "[resources]\ncpus = 4\ngpus = 2\nmemory_mb = 0\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->resources, (core::Resources{4, 2, 0}));
}

TEST_F(JobToml, GpuResources) {
  const std::string head = "command = [\"a\"]\ncount = 1\n";
  absl::StatusOr<JobSpec> ok = Parse(
      head + "[resources]\ngpus = 2\ngpu_memory_mb = 8000\ngpu_api = \"cuda\"\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->resources, (core::Resources{1, 2, 0, 8000, "cuda"}));
  for (const char* api : {"opencl", "rocm", "metal"}) {
    absl::StatusOr<JobSpec> s =
        Parse(head + "[resources]\ngpus = 1\ngpu_api = \"" + api + "\"\n");
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->resources.gpu_api, api);
  }
  Invalid(head + "[resources]\ngpus = 1\ngpu_api = \"vulkan\"\n",
          "job.toml:5:11: key 'resources.gpu_api': must be one of \"cuda\", \"opencl\", "
          "\"rocm\", \"metal\", got \"vulkan\"");
  Invalid(head + "[resources]\ngpus = 1\ngpu_api = 3\n",
          "job.toml:5:11: key 'resources.gpu_api': must be a string, got 3");
  Invalid(head + "[resources]\ngpus = 1\ngpu_memory_mb = -1\n",
          "job.toml:5:17: key 'resources.gpu_memory_mb': must be a non-negative integer, got -1");
  Invalid(head + "[resources]\ngpu_memory_mb = 1024\n",
          "job.toml:4:17: key 'resources.gpu_memory_mb': needs gpus = 1 or more (it is per GPU)");
  Invalid(head + "[resources]\ngpus = 0\ngpu_api = \"opencl\"\n",
          "job.toml:5:11: key 'resources.gpu_api': needs gpus = 1 or more");
  // A spec from the wire gets the same checks.
  JobSpec wire = *Parse(head);
  wire.resources.gpu_api = "directx";
  wire.resources.gpus = 1;
  EXPECT_THAT(std::string(Validate(wire).message()), HasSubstr("'resources.gpu_api'"));
}

TEST_F(JobToml, ExactlyOneWayToSplitTheJob) {
  Invalid("command = [\"a\"]\n",
          "job.toml: missing one of the keys 'frames', 'items', 'items_file', 'count'");
  EXPECT_THAT(Invalid("command = [\"a\"]\nframes = \"1-3\"\ncount = 4\n",
                      "job.toml:3:1: key 'count': only one of"),
              HasSubstr("'frames' is already given at line 2"));
  EXPECT_THAT(Invalid("items = [\"x\"]\ncommand = [\"a\"]\nframes = \"1-3\"\n",
                      "job.toml:3:1: key 'frames': only one of"),
              HasSubstr("'items' is already given at line 1"));
  Invalid("command = [\"a\"]\nitems = [\"x\"]\nchunk = 2\n",
          "job.toml:3:1: key 'chunk': only applies to 'frames' jobs");
  Invalid("command = [\"a\"]\ncount = 3\nchunk = 1\n",
          "job.toml:3:1: key 'chunk': only applies to 'frames' jobs");
}

TEST_F(JobToml, FrameSpecErrorsKeepTheirCodeAndGainThePosition) {
  Invalid("command = [\"a\"]\n\nframes = \"1-5x0\"\n",
          "job.toml:3:10: key 'frames': frame spec '1-5x0': term '1-5x0': step must not be 0");
  EXPECT_THAT(Error("command = [\"a\"]\nframes = \"1-2000000000\"\nchunk = 10\n",
                    absl::StatusCode::kResourceExhausted, "job.toml:2:10: key 'frames': "),
              HasSubstr("limit of 1000000"));
  Error("command = [\"a\"]\ncount = 2000000\n", absl::StatusCode::kResourceExhausted,
        "job.toml:2:9: key 'count': 2000000 tasks, over the limit of 1000000");
}

TEST_F(JobToml, NameMustBeValid) {
  Invalid("name = \"my job\"\ncommand = [\"a\"]\ncount = 1\n",
          "job.toml:1:8: key 'name': 'my job' is not a valid job name");
  Invalid("name = \"..\"\ncommand = [\"a\"]\ncount = 1\n", "job.toml:1:8: key 'name':");
  Invalid("name = \"\"\ncommand = [\"a\"]\ncount = 1\n", "job.toml:1:8: key 'name':");
  Invalid("name = \"" + std::string(129, 'a') + "\"\ncommand = [\"a\"]\ncount = 1\n",
          "job.toml:1:8: key 'name':");
  EXPECT_TRUE(
      Parse("name = \"" + std::string(128, 'a') + "\"\ncommand = [\"a\"]\ncount = 1\n").ok());
  EXPECT_TRUE(Parse("name = \"a.B_9-z\"\ncommand = [\"a\"]\ncount = 1\n").ok());
}

TEST_F(JobToml, CommandMustNameAProgram) {
  Invalid("command = []\ncount = 1\n", "job.toml:1:11: key 'command': must not be empty");
  Invalid("command = [\"\", \"x\"]\ncount = 1\n",
          "job.toml:1:12: key 'command': the program (element [0]) is empty");
}

TEST_F(JobToml, InlineItems) {
  absl::StatusOr<JobSpec> spec =
      Parse("command = [\"ocr\", \"{item}\"]\nitems = [\"a.png\", \"b c.png\"]\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, TaskKind::kItems);
  EXPECT_THAT(spec->items, ElementsAre("a.png", "b c.png"));
  Invalid("command = [\"a\"]\nitems = []\n",
          "job.toml:2:9: key 'items': must list at least one item");
  Invalid("command = [\"a\"]\nitems = [\"x\",\n  \"\"]\n",
          "job.toml:3:3: key 'items': item [1] is empty");
  Error("command = [\"a\"]\nitems = [\"" + std::string(kMaxItemBytes + 1, 'x') + "\"]\n",
        absl::StatusCode::kResourceExhausted,
        "job.toml:2:10: key 'items': item [0] is 65537 bytes");
}

// ------------------------------------------------------------------------------------------
// items_file.

TEST_F(JobToml, ItemsFileOneItemPerLineBlankLinesSkippedCrStripped) {
  WriteFile(dir_.path() / "lists" / "shards.txt", "shard-0\r\n\r\n  \nshard 1\nshard-2");
  absl::StatusOr<JobSpec> spec =
      Parse("command = [\"infer\", \"{item}\"]\nitems_file = \"lists/shards.txt\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, TaskKind::kItems);
  EXPECT_THAT(spec->items, ElementsAre("shard-0", "shard 1", "shard-2"));

  // An absolute path works too.
  absl::StatusOr<JobSpec> abs = Parse("command = [\"infer\", \"{item}\"]\nitems_file = \"" +
                                      (dir_.path() / "lists" / "shards.txt").string() + "\"\n");
  ASSERT_TRUE(abs.ok()) << abs.status();
  EXPECT_EQ(abs->items.size(), 3u);
}

TEST_F(JobToml, ItemsFileMissing) {
  const std::string msg = Error("command = [\"a\"]\n\nitems_file = \"nope.txt\"\n",
                                absl::StatusCode::kNotFound, "job.toml:3:14: key 'items_file': ");
  EXPECT_THAT(msg, HasSubstr((dir_.path() / "nope.txt").string()));
}

TEST_F(JobToml, ItemsFileOfTenGigabytesIsRefusedBeforeReading) {
  const fs::path big = dir_.path() / "huge.txt";
  WriteFile(big, "");
  // Sparse: no blocks are written, so this costs nothing on disk.
  if (::truncate(big.c_str(), 10LL << 30) != 0) GTEST_SKIP() << "cannot make a sparse file here";
  const std::string msg =
      Error("command = [\"a\"]\nitems_file = \"huge.txt\"\n", absl::StatusCode::kResourceExhausted,
            "job.toml:2:14: key 'items_file': ");
  EXPECT_THAT(msg, AllOf(HasSubstr(big.string()), HasSubstr("10737418240 bytes"),
                         HasSubstr("limit of 67108864 bytes")));
}

TEST_F(JobToml, ItemsFileOtherErrors) {
  WriteFile(dir_.path() / "blank.txt", "\n  \r\n\n");
  Invalid("command = [\"a\"]\nitems_file = \"blank.txt\"\n", "job.toml:2:14: key 'items_file': ");
  fs::create_directories(dir_.path() / "adir");
  EXPECT_THAT(
      Invalid("command = [\"a\"]\nitems_file = \"adir\"\n", "job.toml:2:14: key 'items_file': "),
      HasSubstr("not a regular file"));
  WriteFile(dir_.path() / "long.txt", "ok\n" + std::string(kMaxItemBytes + 1, 'x') + "\n");
  Error("command = [\"a\"]\nitems_file = \"long.txt\"\n", absl::StatusCode::kResourceExhausted,
        "job.toml:2:14: key 'items_file': 'long.txt' line 2: the item is 65537 bytes");
  WriteFile(dir_.path() / "bin.txt", std::string("a\nb\0c\n", 6));
  EXPECT_THAT(Invalid("command = [\"a\"]\nitems_file = \"bin.txt\"\n",
                      "job.toml:2:14: key 'items_file': 'bin.txt' line 2"),
              HasSubstr("NUL"));
  WriteFile(dir_.path() / "latin1.txt", "ok\ncaf\xE9\n");
  Invalid("command = [\"a\"]\nitems_file = \"latin1.txt\"\n",
          "job.toml:2:14: key 'items_file': 'latin1.txt' line 2: is not valid UTF-8");
  WriteFile(dir_.path() / "utf8.txt", "caf\xC3\xA9\n\xF0\x9F\x98\x80\n");
  absl::StatusOr<JobSpec> utf8 = Parse("command = [\"a\"]\nitems_file = \"utf8.txt\"\n");
  ASSERT_TRUE(utf8.ok()) << utf8.status();
  EXPECT_THAT(utf8->items, ElementsAre("caf\xC3\xA9", "\xF0\x9F\x98\x80"));
}

TEST_F(JobToml, ItemsFileWithTooManyItems) {
  std::string lines;
  lines.reserve((kMaxTasks + 1) * 2);
  for (uint64_t i = 0; i <= kMaxTasks; ++i) lines += "x\n";
  WriteFile(dir_.path() / "many.txt", lines);
  Error("command = [\"a\"]\nitems_file = \"many.txt\"\n", absl::StatusCode::kResourceExhausted,
        "job.toml:2:14: key 'items_file': 'many.txt' lists more than 1000000 items");
}

// ------------------------------------------------------------------------------------------
// inputs.

class JobInputs : public JobToml {
 protected:
  void SetUp() override {
    JobToml::SetUp();
    job_ = dir_.path() / "job";
    out_ = dir_.path() / "outside";
    WriteFile(job_ / "scene.pov", "scene");
    WriteFile(job_ / "assets" / "b.png", "b");
    WriteFile(job_ / "assets" / "tex" / "a.png", "a");
    WriteFile(job_ / "data" / "x1.csv", "1");
    WriteFile(job_ / "data" / "x2.csv", "2");
    WriteFile(job_ / "data" / "notes.txt", "n");
    WriteFile(out_ / "other.pov", "o");
    WriteFile(out_ / "lib" / "inc.inc", "i");
    WriteFile(out_ / "lib" / "deep" / "more.inc", "m");
  }
  absl::StatusOr<JobSpec> ParseInputs(const std::string& inputs) {
    return ParseJobToml("command = [\"render\"]\ncount = 1\ninputs = [" + inputs + "]\n",
                        "job.toml", job_.string());
  }
  fs::path job_, out_;
};

TEST_F(JobInputs, FilesDirectoriesAndGlobsInsideAndOutsideTheJobDir) {
  absl::StatusOr<JobSpec> spec =
      ParseInputs("\"scene.pov\", \"assets\", \"data/*.csv\", \"" + (out_ / "other.pov").string() +
                  "\", \"../outside/lib\"");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<std::pair<std::string, std::string>> got;
  for (const Input& in : spec->inputs) got.emplace_back(in.path, in.source);
  EXPECT_THAT(got,
              ElementsAre(std::pair{"scene.pov", (job_ / "scene.pov").string()},
                          std::pair{"assets/b.png", (job_ / "assets/b.png").string()},
                          std::pair{"assets/tex/a.png", (job_ / "assets/tex/a.png").string()},
                          std::pair{"data/x1.csv", (job_ / "data/x1.csv").string()},
                          std::pair{"data/x2.csv", (job_ / "data/x2.csv").string()},
                          std::pair{"other.pov", (out_ / "other.pov").string()},
                          std::pair{"lib/deep/more.inc", (out_ / "lib/deep/more.inc").string()},
                          std::pair{"lib/inc.inc", (out_ / "lib/inc.inc").string()}));
  EXPECT_TRUE(Validate(*spec).ok());
}

TEST_F(JobInputs, ATrailingSlashKeepsTheDirectoryName) {
  absl::StatusOr<JobSpec> spec = ParseInputs("\"../outside/lib/\", \"assets/\"");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<std::string> paths;
  for (const Input& in : spec->inputs) paths.push_back(in.path);
  EXPECT_THAT(paths,
              ElementsAre("lib/deep/more.inc", "lib/inc.inc", "assets/b.png", "assets/tex/a.png"));
}

TEST_F(JobInputs, GlobCharactersInTheJobDirAreNotPatterns) {
  const fs::path odd = dir_.path() / "shots[1]";
  WriteFile(odd / "a.pov", "a");
  WriteFile(odd / "b.pov", "b");
  absl::StatusOr<JobSpec> spec = ParseJobToml(
      "command = [\"r\"]\ncount = 1\ninputs = [\"*.pov\"]\n", "job.toml", odd.string());
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->inputs.size(), 2u);
  EXPECT_EQ(spec->inputs[0].path, "a.pov");
  EXPECT_EQ(spec->inputs[1].source, (odd / "b.pov").string());
}

TEST_F(JobInputs, TheSameFileListedTwiceIsStagedOnce) {
  absl::StatusOr<JobSpec> spec = ParseInputs("\"scene.pov\", \"*.pov\", \"./scene.pov\"");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->inputs.size(), 1u);
  EXPECT_EQ(spec->inputs[0].path, "scene.pov");
}

TEST_F(JobInputs, TwoFilesStagedAtOnePathIsAnError) {
  WriteFile(job_ / "other.pov", "inside");
  absl::StatusOr<JobSpec> spec = ParseInputs("\"other.pov\",\n  \"../outside/other.pov\"");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(spec.status()), AllOf(StartsWith("job.toml:4:3: key 'inputs': "),
                                        HasSubstr("would both be staged as 'other.pov'")));
}

TEST_F(JobInputs, AFileAndADirectoryAtOnePathIsAnError) {
  // 'lib' inside the job dir is a file; '../outside/lib' is a directory staged as 'lib/...'.
  WriteFile(job_ / "lib", "a file");
  absl::StatusOr<JobSpec> spec = ParseInputs("\"lib\", \"../outside/lib\"");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  // Points at the entry that brought in the second of the two.
  EXPECT_EQ(Msg(spec.status()),
            "job.toml:3:18: key 'inputs': inputs 'lib' and 'lib/deep/more.inc' cannot both be "
            "staged: 'lib' would have to be a file and a directory");
}

TEST_F(JobInputs, FileNamesThatCannotTravelAreRefusedAtTheirEntry) {
  WriteFile(job_ / "latin1" / "caf\xE9.txt", "x");
  EXPECT_EQ(Msg(ParseInputs("\"scene.pov\", \"latin1\"").status()),
            "job.toml:3:24: key 'inputs': staged path [1] 'latin1/caf?.txt' is not valid UTF-8 "
            "(invalid bytes are shown as '?')");
  WriteFile(job_ / "nl" / "a\nb.txt", "x");
  EXPECT_THAT(Msg(ParseInputs("\"scene.pov\", \"nl\"").status()),
              StartsWith("job.toml:3:24: key 'inputs': staged path [1] 'nl/a\\u000ab.txt' contains a "
                         "line break"));
}

TEST_F(JobInputs, DotsInsideANameAreFine) {
  WriteFile(job_ / "frame..png", "p");
  WriteFile(job_ / "v1..2" / "..hidden", "h");
  absl::StatusOr<JobSpec> spec = ParseInputs("\"frame..png\", \"v1..2\"");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<std::string> paths;
  for (const Input& in : spec->inputs) paths.push_back(in.path);
  EXPECT_THAT(paths, ElementsAre("frame..png", "v1..2/..hidden"));
  EXPECT_TRUE(Validate(*spec).ok());
}

TEST_F(JobInputs, MissingFileIsNotFoundWithKeyLineAndPath) {
  absl::StatusOr<JobSpec> spec = ParseInputs("\"scene.pov\", \"missing.pov\"");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Msg(spec.status()), AllOf(StartsWith("job.toml:3:24: key 'inputs': "),
                                        HasSubstr((job_ / "missing.pov").string())));
}

TEST_F(JobInputs, GlobMatchingNothingNamesTheEntry) {
  absl::StatusOr<JobSpec> spec = ParseInputs("\"data/*.exr\"");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Msg(spec.status()), AllOf(StartsWith("job.toml:3:11: key 'inputs': "),
                                        HasSubstr("'data/*.exr' matches no file")));
}

TEST_F(JobInputs, EntriesMustBeNonEmptyStrings) {
  EXPECT_THAT(Msg(ParseInputs("\"\"").status()), StartsWith("job.toml:3:11: key 'inputs': "));
  EXPECT_THAT(Msg(ParseInputs("\"scene.pov\", 3").status()),
              StartsWith("job.toml:3:24: key 'inputs': element [1] must be a string, got 3"));
}

// ------------------------------------------------------------------------------------------
// outputs.

TEST_F(JobToml, OutputsMustStayInTheTaskDir) {
  Invalid("command = [\"a\"]\ncount = 1\noutputs = [\"ok/*.png\", \"/tmp/*.png\"]\n",
          "job.toml:3:24: key 'outputs': element [1] '/tmp/*.png': must be relative");
  Invalid("command = [\"a\"]\ncount = 1\noutputs = [\"../*.png\"]\n",
          "job.toml:3:12: key 'outputs': element [0] '../*.png': must not contain '..'");
  Invalid("command = [\"a\"]\ncount = 1\noutputs = [\"a/../../b\"]\n",
          "job.toml:3:12: key 'outputs': element [0] 'a/../../b': must not contain '..'");
  Invalid("command = [\"a\"]\ncount = 1\noutputs = [\"\"]\n",
          "job.toml:3:12: key 'outputs': element [0] '': is empty");
  EXPECT_TRUE(Parse("command = [\"a\"]\ncount = 1\noutputs = [\"out/**/*.exr\", \"a..b\"]\n").ok());
}

TEST_F(JobToml, OutputsMustBeNormalized) {
  Invalid("command = [\"a\"]\ncount = 1\noutputs = [\"out//*.png\"]\n",
          "job.toml:3:12: key 'outputs': element [0] 'out//*.png': must be a normalized path "
          "(no empty component");
  Invalid("command = [\"a\"]\ncount = 1\noutputs = [\"*.png\", \"renders/\"]\n",
          "job.toml:3:21: key 'outputs': element [1] 'renders/': must be a normalized path "
          "(no trailing '/')");
  Invalid("command = [\"a\"]\ncount = 1\noutputs = [\"./*.png\"]\n",
          "job.toml:3:12: key 'outputs': element [0] './*.png': must be a normalized path "
          "(no '.' component)");
  Invalid("command = [\"a\"]\ncount = 1\noutputs = [\"a\\nb\"]\n",
          "job.toml:3:12: key 'outputs': element [0] 'a\\u000ab': contains a line break");
  absl::StatusOr<JobSpec> ok = Parse(
      "command = [\"a\"]\ncount = 1\noutputs = [\"frame..png\", \"shots/..x/*.exr\", \"...\"]\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT(ok->outputs, ElementsAre("frame..png", "shots/..x/*.exr", "..."));
}

// ------------------------------------------------------------------------------------------
// Placeholders.

class Placeholders : public JobToml {
 protected:
  // One argv element, `arg`, in a job split by `split` (TOML lines).
  absl::StatusOr<JobSpec> WithArg(const std::string& arg, const std::string& split) {
    return Parse("command = [\"render\", \"" + arg + "\"]\n" + split);
  }
};

TEST_F(Placeholders, UnknownAndUnbalanced) {
  EXPECT_THAT(Msg(WithArg("{framez}", "count = 1\n").status()),
              AllOf(StartsWith("job.toml:1:22: key 'command': element [1] '{framez}': "),
                    HasSubstr("unknown placeholder '{framez}'")));
  EXPECT_THAT(Msg(WithArg("-o={frame", "count = 1\n").status()),
              HasSubstr("element [1] '-o={frame': unbalanced '{' at offset 3"));
  EXPECT_THAT(Msg(WithArg("x}", "count = 1\n").status()),
              HasSubstr("element [1] 'x}': unbalanced '}' at offset 1"));
  EXPECT_THAT(Msg(WithArg("{a{index}", "count = 1\n").status()), HasSubstr("unbalanced '{'"));
  EXPECT_THAT(Msg(WithArg("{}", "count = 1\n").status()), HasSubstr("unknown placeholder '{}'"));
  EXPECT_TRUE(WithArg("{{frame}} {{ }} {index}", "count = 1\n").ok());
}

TEST_F(Placeholders, FrameNeedsChunkOne) {
  EXPECT_TRUE(WithArg("+F{frame}", "frames = \"1-10\"\n").ok());
  EXPECT_TRUE(WithArg("+F{frame}", "frames = \"1-10\"\nchunk = 1\n").ok());
  EXPECT_THAT(Msg(WithArg("+F{frame}", "frames = \"1-10\"\nchunk = 4\n").status()),
              AllOf(StartsWith("job.toml:1:22: key 'command': element [1] '+F{frame}': "),
                    HasSubstr("chunk = 4"), HasSubstr("{frame_start}"), HasSubstr("{frames}")));
}

TEST_F(Placeholders, KindSpecificPlaceholders) {
  for (const char* frame_arg :
       {"{frame}", "{frame_start}", "{frame_end}", "{frame_step}", "{frames}"}) {
    EXPECT_THAT(Msg(WithArg(frame_arg, "count = 2\n").status()),
                HasSubstr("is only for 'frames' jobs"))
        << frame_arg;
    EXPECT_THAT(Msg(WithArg(frame_arg, "items = [\"a\"]\n").status()),
                HasSubstr("is only for 'frames' jobs"))
        << frame_arg;
  }
  EXPECT_THAT(Msg(WithArg("{item}", "frames = \"1-3\"\n").status()),
              HasSubstr("{item} is only for 'items' or 'items_file' jobs"));
  EXPECT_THAT(Msg(WithArg("{item}", "count = 3\n").status()),
              HasSubstr("{item} is only for 'items' or 'items_file' jobs"));
  EXPECT_TRUE(WithArg("{item}", "items = [\"a\"]\n").ok());
  for (const char* any : {"{index}", "{task_dir}/x", "{checkpoint_dir}"}) {
    EXPECT_TRUE(WithArg(any, "count = 2\n").ok()) << any;
    EXPECT_TRUE(WithArg(any, "items = [\"a\"]\n").ok()) << any;
    EXPECT_TRUE(WithArg(any, "frames = \"1-4\"\nchunk = 2\n").ok()) << any;
  }
}

TEST_F(Placeholders, SteppedChunksNeedFrameStep) {
  const std::string bounds = "render\", \"+SF{frame_start}\", \"+EF{frame_end}";
  const absl::StatusOr<JobSpec> stepped = WithArg(bounds, "frames = \"1-100x10\"\nchunk = 4\n");
  ASSERT_FALSE(stepped.ok());
  EXPECT_THAT(Msg(stepped.status()),
              AllOf(StartsWith("job.toml:1:32: key 'command': element [2] '+SF{frame_start}': "),
                    HasSubstr("'1-100x10'"), HasSubstr("step 10"), HasSubstr("{frame_step}"),
                    HasSubstr("chunk = 1")));
  // Only the end used: still refused.
  EXPECT_FALSE(WithArg("+EF{frame_end}", "frames = \"1-100x10\"\nchunk = 4\n").ok());
  // Fine with the step, with chunk 1, or with unit-step chunks.
  EXPECT_TRUE(WithArg(bounds + "\", \"+SI{frame_step}", "frames = \"1-100x10\"\nchunk = 4\n").ok());
  EXPECT_TRUE(WithArg(bounds, "frames = \"1-100x10\"\n").ok());
  EXPECT_TRUE(WithArg(bounds, "frames = \"1-100,200-300\"\nchunk = 4\n").ok());
  EXPECT_TRUE(WithArg("{frames}", "frames = \"1-100x10\"\nchunk = 4\n").ok());
  // Descending chunks have step -1, which start/end alone cannot express either.
  EXPECT_THAT(Msg(WithArg(bounds, "frames = \"10-1\"\nchunk = 2\n").status()),
              HasSubstr("step -1"));
  // ANY chunk: here only the second term's chunks are stepped (its odd frames were taken).
  EXPECT_THAT(Msg(WithArg(bounds, "frames = \"1-10x2,1-10\"\nchunk = 3\n").status()),
              HasSubstr("step 2"));
}

// ==========================================================================================
// Validate: specs that did not come from a file.

JobSpec ValidSpec() {
  JobSpec s;
  s.name = "sweep";
  s.command = {"python3", "run.py", "--seed={index}", "--out={task_dir}"};
  s.kind = TaskKind::kCount;
  s.count = 10;
  s.outputs = {"*.json"};
  s.inputs = {{"/home/u/run.py", "run.py"}, {"/home/u/cfg/a.yaml", "cfg/a.yaml"}};
  return s;
}

void ExpectInvalid(const JobSpec& s, std::string_view prefix,
                   absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  const absl::Status st = Validate(s);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), code) << st;
  EXPECT_THAT(Msg(st), StartsWith(std::string(prefix)));
}

TEST(Validate, AcceptsAValidSpec) { EXPECT_TRUE(Validate(ValidSpec()).ok()); }

TEST(Validate, NameAndCommand) {
  JobSpec s = ValidSpec();
  s.name = "a/b";
  ExpectInvalid(s, "job spec: field 'name': 'a/b' is not a valid job name");
  s.name = "";
  ExpectInvalid(s, "job spec: field 'name':");
  s = ValidSpec();
  s.command.clear();
  ExpectInvalid(s, "job spec: field 'command': must not be empty");
  s.command = {"x", std::string("a\0b", 3)};
  ExpectInvalid(s, "job spec: field 'command': element [1]");
  s.command = {"x", "{nope}"};
  ExpectInvalid(s, "job spec: field 'command': element [1] '{nope}': unknown placeholder");
}

TEST(Validate, KindConsistency) {
  JobSpec s = ValidSpec();
  s.frames = "1-10";
  ExpectInvalid(s, "job spec: field 'frames': must not be set in a 'count' job");
  s = ValidSpec();
  s.items = {"a"};
  ExpectInvalid(s, "job spec: field 'items': must not be set in a 'count' job");
  s = ValidSpec();
  s.chunk = 2;
  ExpectInvalid(s, "job spec: field 'chunk': only applies to 'frames' jobs");
  s = ValidSpec();
  s.count = 0;
  ExpectInvalid(s, "job spec: field 'count': must be a positive integer, got 0");
  s.count = kMaxTasks + 1;
  ExpectInvalid(s, "job spec: field 'count': 1000001 tasks", absl::StatusCode::kResourceExhausted);

  s = ValidSpec();
  s.kind = TaskKind::kFrames;
  s.count = 0;
  s.frames = "1-10";
  s.chunk = 0;
  ExpectInvalid(s, "job spec: field 'chunk': must be a positive integer, got 0");
  s.chunk = 3;
  EXPECT_TRUE(Validate(s).ok());
  s.frames = "1-5x0";
  ExpectInvalid(s,
                "job spec: field 'frames': frame spec '1-5x0': term '1-5x0': step must not be 0");
  s.frames = "1-2000000000";
  ExpectInvalid(s, "job spec: field 'frames': frame spec '1-2000000000'",
                absl::StatusCode::kResourceExhausted);
  s.frames = "";
  ExpectInvalid(s, "job spec: field 'frames':");

  s = ValidSpec();
  s.kind = TaskKind::kItems;
  s.count = 0;
  ExpectInvalid(s, "job spec: field 'items': must list at least one item");
  s.items = {"a", std::string(kMaxItemBytes + 1, 'x')};
  ExpectInvalid(s, "job spec: field 'items': item [1] is 65537 bytes",
                absl::StatusCode::kResourceExhausted);
  s.items = {"a", ""};
  ExpectInvalid(s, "job spec: field 'items': item [1] is empty");
  s.items.assign(kMaxTasks + 1, "x");
  ExpectInvalid(s, "job spec: field 'items': 1000001 items", absl::StatusCode::kResourceExhausted);
}

TEST(Validate, ResourcesAndRetry) {
  JobSpec s = ValidSpec();
  s.resources.cpus = 0;
  ExpectInvalid(s, "job spec: field 'resources.cpus': must be a positive integer, got 0");
  s = ValidSpec();
  s.max_attempts = 0;
  ExpectInvalid(s, "job spec: field 'retry.max_attempts': must be a positive integer, got 0");
  s.max_attempts = kMaxAttempts;
  EXPECT_TRUE(Validate(s).ok());
  s.max_attempts = kMaxAttempts + 1;
  ExpectInvalid(s, "job spec: field 'retry.max_attempts': must be at most 100, got 101");
  s.max_attempts = std::numeric_limits<uint32_t>::max();
  ExpectInvalid(s, "job spec: field 'retry.max_attempts': must be at most 100, got 4294967295");
}

TEST(Validate, OutputAndInputPaths) {
  JobSpec s = ValidSpec();
  s.outputs = {"/etc/*"};
  ExpectInvalid(s, "job spec: field 'outputs': element [0] '/etc/*': must be relative");
  s.outputs = {"x/../../y"};
  ExpectInvalid(s, "job spec: field 'outputs': element [0] 'x/../../y': must not contain '..'");

  s = ValidSpec();
  s.inputs.push_back({"/x", "../escape"});
  ExpectInvalid(s, "job spec: field 'inputs': staged path [2] '../escape' must not contain '..'");
  s.inputs.back().path = "/abs";
  ExpectInvalid(s, "job spec: field 'inputs': staged path [2] '/abs' must be relative");
  s.inputs.back().path = "a//b";
  ExpectInvalid(s, "job spec: field 'inputs': staged path [2] 'a//b' must be a normalized path");
  s.inputs.back().path = "./a";
  ExpectInvalid(s, "job spec: field 'inputs': staged path [2] './a' must be a normalized path");
  s.inputs.back().path = "run.py";
  ExpectInvalid(s, "job spec: field 'inputs': staged paths [0] and [2] are both 'run.py'");
  s.inputs.assign(kMaxInputFiles + 1, Input{"/x", "x"});
  ExpectInvalid(s, "job spec: field 'inputs': 100001 files", absl::StatusCode::kResourceExhausted);
}

TEST(Validate, PathsMustBeNormalized) {
  JobSpec s = ValidSpec();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"a//b", "must be a normalized path (no empty component, as in 'a//b')"},
      {"out/", "must be a normalized path (no trailing '/')"},
      {"./a", "must be a normalized path (no '.' component)"},
      {"a/./b", "must be a normalized path (no '.' component)"},
      {".", "must be a normalized path (no '.' component)"},
      {"..", "must not contain '..' as a path component"},
      {"a/..", "must not contain '..' as a path component"},
      {"a/../b", "must not contain '..' as a path component"},
      {"a\nb", "contains a line break"},
      {"a\rb", "contains a line break"},
      {std::string("a\0b", 3), "contains a NUL byte"},
  };
  for (const auto& [path, why] : bad) {
    s = ValidSpec();
    s.inputs.push_back({"/x", path});
    // The message quotes the path with what a terminal would act on escaped (text/names.h).
    const std::string shown = text::VisibleText(path);
    ExpectInvalid(s, "job spec: field 'inputs': staged path [2] '" + shown + "' " + why);
    s = ValidSpec();
    s.outputs = {"*.json", path};
    ExpectInvalid(s, "job spec: field 'outputs': element [1] '" + shown + "': " + why);
  }
  // '..' inside a name is an ordinary name.
  for (const char* fine : {"frame..png", "v1..2/a", "..hidden", "a/b..", "...", "a.b/.c"}) {
    s = ValidSpec();
    s.inputs.push_back({"/x", fine});
    s.outputs = {fine};
    EXPECT_TRUE(Validate(s).ok()) << fine << ": " << Validate(s);
  }
}

TEST(Validate, AStagedPathUnderAnotherIsRefused) {
  const std::string conflict =
      "job spec: field 'inputs': inputs 'a' and 'a/b' cannot both be staged: 'a' would have to "
      "be a file and a directory";
  JobSpec s = ValidSpec();
  s.inputs = {{"/x/a", "a"}, {"/y/a/b", "a/b"}};
  EXPECT_EQ(Msg(Validate(s)), conflict);
  s.inputs = {{"/y/a/b", "a/b"}, {"/z", "z"}, {"/x/a", "a"}};  // either order
  EXPECT_EQ(Msg(Validate(s)), conflict);
  s.inputs = {{"/x/a", "cfg/a"}, {"/y/b", "cfg/a/deep/b"}};  // any depth
  ExpectInvalid(s,
                "job spec: field 'inputs': inputs 'cfg/a' and 'cfg/a/deep/b' cannot both be "
                "staged: 'cfg/a' would have to be a file and a directory");
  // Shared directories and names that only start alike are fine.
  s.inputs = {{"/1", "a/b"}, {"/2", "a/c"},    {"/3", "ab/c"}, {"/4", "a.b"},
              {"/5", "b"},   {"/6", "a/bc/d"}, {"/7", "bc/d"}};
  EXPECT_TRUE(Validate(s).ok()) << Validate(s);
}

TEST(Validate, EveryWireStringMustBeUtf8) {
  JobSpec s = ValidSpec();
  s.name = "r\xFF";
  ExpectInvalid(s, "job spec: field 'name': 'r?' is not valid UTF-8");
  s = ValidSpec();
  s.command = {"x", "a\xC3("};
  ExpectInvalid(s, "job spec: field 'command': element [1] 'a?(': is not valid UTF-8");
  s = ValidSpec();
  s.outputs = {"*.json", "out/\xED\xA0\x80.png"};
  ExpectInvalid(s, "job spec: field 'outputs': element [1] 'out/???.png': is not valid UTF-8");
  s = ValidSpec();
  s.inputs.push_back({"/x", "caf\xE9.txt"});
  ExpectInvalid(s, "job spec: field 'inputs': staged path [2] 'caf?.txt' is not valid UTF-8");
  s = ValidSpec();
  s.kind = TaskKind::kItems;
  s.count = 0;
  s.items = {"ok", "\xC0\xAF"};
  ExpectInvalid(s, "job spec: field 'items': item [1] '?\?' is not valid UTF-8");
  s = ValidSpec();
  s.kind = TaskKind::kFrames;
  s.count = 0;
  s.frames = "1-\xFF";
  ExpectInvalid(s, "job spec: field 'frames': '1-?' is not valid UTF-8");
  // The message itself is valid UTF-8, even when the text is cut at the 80-byte limit.
  s = ValidSpec();
  s.command = {"x", std::string(79, 'a') + "\xC3\xA9\xFF"};
  const absl::Status st = Validate(s);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(text::IsValidUtf8(Msg(st))) << st;
  EXPECT_THAT(Msg(st), HasSubstr("'" + std::string(79, 'a') + "...': is not valid UTF-8"));

  // Non-ASCII text that is valid UTF-8 travels fine.
  s = ValidSpec();
  s.command = {"echo", "h\xC3\xA9llo \xF0\x9F\x98\x80", "{index}"};
  s.outputs = {"\xC3\xA9t\xC3\xA9/*.png"};
  s.inputs = {{"/d/caf\xC3\xA9.csv", "caf\xC3\xA9.csv"}};
  EXPECT_TRUE(Validate(s).ok()) << Validate(s);
  s.kind = TaskKind::kItems;
  s.count = 0;
  s.items = {"\xE6\x97\xA5\xE6\x9C\xAC"};
  EXPECT_TRUE(Validate(s).ok()) << Validate(s);
}

TEST(Validate, Placeholders) {
  JobSpec s = ValidSpec();
  s.command = {"r", "{item}"};
  ExpectInvalid(s, "job spec: field 'command': element [1] '{item}': {item} is only for");
  s.kind = TaskKind::kFrames;
  s.count = 0;
  s.frames = "1-100x10";
  s.chunk = 4;
  s.command = {"r", "{frame_start}-{frame_end}"};
  ExpectInvalid(s,
                "job spec: field 'command': element [1] '{frame_start}-{frame_end}': the "
                "chunks of frame spec '1-100x10' are stepped");
  s.command = {"r", "{frame_start}-{frame_end}", "{frame_step}"};
  EXPECT_TRUE(Validate(s).ok());
}

// ==========================================================================================
// TaskCount and ExpandTasks.

TEST(TaskCount, PerKind) {
  JobSpec s;
  s.name = "t";
  s.command = {"x"};
  s.kind = TaskKind::kFrames;
  s.frames = "1-10,20-30";
  s.chunk = 4;
  EXPECT_EQ(*TaskCount(s), 6u);
  s.frames = "1-10,5-15";  // repeats: counted over the chunks, not arithmetically
  EXPECT_EQ(*TaskCount(s), 5u);
  s.frames = "1-1000000";
  s.chunk = 1;
  EXPECT_EQ(*TaskCount(s), 1000000u);
  s.frames = "1-2000000000";
  s.chunk = 1000;  // only 2,000,000 tasks, but 2e9 frames: refused on frames
  EXPECT_EQ(TaskCount(s).status().code(), absl::StatusCode::kResourceExhausted);

  s.kind = TaskKind::kItems;
  s.frames.clear();
  s.items = {"a", "b", "c"};
  EXPECT_EQ(*TaskCount(s), 3u);

  s.kind = TaskKind::kCount;
  s.items.clear();
  s.count = 7;
  EXPECT_EQ(*TaskCount(s), 7u);
  s.count = kMaxTasks + 1;
  EXPECT_EQ(TaskCount(s).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ExpandTasks(s).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ExpandTasks, FramesItemsCount) {
  JobSpec s;
  s.name = "t";
  s.command = {"x"};
  s.kind = TaskKind::kFrames;
  s.frames = "1-10,20-30";
  s.chunk = 4;
  absl::StatusOr<std::vector<TaskParams>> frames = ExpandTasks(s);
  ASSERT_TRUE(frames.ok());
  const std::vector<FrameChunk> chunks = *ChunkFrames(s.frames, s.chunk);
  ASSERT_EQ(frames->size(), chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ((*frames)[i].index, i);
    EXPECT_EQ((*frames)[i].chunk.frames, chunks[i].frames);
    EXPECT_EQ((*frames)[i].chunk.step, chunks[i].step);
    EXPECT_TRUE((*frames)[i].item.empty());
  }

  s.kind = TaskKind::kItems;
  s.frames.clear();
  s.chunk = 1;
  s.items = {"a", "b"};
  absl::StatusOr<std::vector<TaskParams>> items = ExpandTasks(s);
  ASSERT_TRUE(items.ok());
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[1].index, 1u);
  EXPECT_EQ((*items)[1].item, "b");
  EXPECT_TRUE((*items)[1].chunk.frames.empty());

  s.kind = TaskKind::kCount;
  s.items.clear();
  s.count = 3;
  absl::StatusOr<std::vector<TaskParams>> count = ExpandTasks(s);
  ASSERT_TRUE(count.ok());
  ASSERT_EQ(count->size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*count)[i].index, i);
    EXPECT_TRUE((*count)[i].item.empty());
    EXPECT_TRUE((*count)[i].chunk.frames.empty());
  }
}

// ==========================================================================================
// RenderCommand.

TaskParams FrameTask(std::vector<int64_t> frames, int64_t step, uint32_t index) {
  TaskParams t;
  t.index = index;
  t.chunk.frames = frames;
  t.chunk.start = frames.front();
  t.chunk.end = frames.back();
  t.chunk.step = step;
  return t;
}

TEST(RenderCommand, SubstitutesEveryPlaceholder) {
  const TaskParams t = FrameTask({1, 3, 5}, 2, 7);
  absl::StatusOr<std::vector<std::string>> argv =
      RenderCommand({"r", "{frame_start}..{frame_end}/{frame_step}", "{frames}", "#{index}",
                     "{task_dir}/out_{frame_start}.png", "--ckpt={checkpoint_dir}", "plain"},
                    t, "/w/task 7", "/w/ckpt");
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ElementsAre("r", "1..5/2", "1,3,5", "#7", "/w/task 7/out_1.png",
                                 "--ckpt=/w/ckpt", "plain"));

  const TaskParams one = FrameTask({-4}, 1, 0);
  EXPECT_THAT(*RenderCommand({"+F{frame}"}, one, "", ""), ElementsAre("+F-4"));

  TaskParams item;
  item.index = 2;
  item.item = "a {b}.png";  // braces in values are not templates
  EXPECT_THAT(*RenderCommand({"ocr", "{item}", "{index}"}, item, "/t", "/c"),
              ElementsAre("ocr", "a {b}.png", "2"));
}

TEST(RenderCommand, DoubledBracesAreLiteral) {
  TaskParams t;
  t.index = 3;
  EXPECT_THAT(*RenderCommand({"{{index}}", "{{{index}}}", "a}}b{{c", "{{}}"}, t, "", ""),
              ElementsAre("{index}", "{3}", "a}b{c", "{}"));
}

TEST(RenderCommand, MalformedTemplatesAndMissingValuesFail) {
  TaskParams t;
  EXPECT_THAT(Msg(RenderCommand({"ok", "{index"}, t, "", "").status()),
              HasSubstr("element [1] '{index': unbalanced '{'"));
  EXPECT_THAT(Msg(RenderCommand({"{nope}"}, t, "", "").status()),
              HasSubstr("unknown placeholder '{nope}'"));
  EXPECT_FALSE(RenderCommand({"}"}, t, "", "").ok());
  // No frames in a count task: frame placeholders cannot be rendered.
  EXPECT_FALSE(RenderCommand({"{frame_start}"}, t, "", "").ok());
  // {frame} of a three-frame chunk would silently drop two frames.
  EXPECT_THAT(Msg(RenderCommand({"{frame}"}, FrameTask({1, 2, 3}, 1, 0), "", "").status()),
              HasSubstr("{frame} needs a one-frame chunk"));
}


// ---------------------------------------------------------------------------------------------
// CalibrationSpec: the planner's k-task sample of a job.

JobSpec ParsedOrDie(std::string_view text) {
  absl::StatusOr<JobSpec> spec = ParseJobToml(text, "job.toml", "/nonexistent");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : JobSpec{};
}

TEST(SpreadSample, MiddlesOfEqualSlicesAscendingAndDistinct) {
  // n = 10, k = 4: slices [0,2.5) [2.5,5) [5,7.5) [7.5,10), middles 1.25 3.75 6.25 8.75.
  EXPECT_EQ(SpreadSample(10, 4), (std::vector<uint32_t>{1, 3, 6, 8}));
  EXPECT_EQ(SpreadSample(3, 8), (std::vector<uint32_t>{0, 1, 2}));  // k > n: every task once
  EXPECT_EQ(SpreadSample(1, 1), (std::vector<uint32_t>{0}));
  EXPECT_TRUE(SpreadSample(0, 3).empty());
  std::vector<uint32_t> big = SpreadSample(1'000'000, 16);
  ASSERT_EQ(big.size(), 16u);
  for (size_t i = 1; i < big.size(); ++i) EXPECT_LT(big[i - 1], big[i]);
  EXPECT_LT(big.back(), 1'000'000u);
}

TEST(CalibrationSpec, FramesKeepTheSampledChunksExactly) {
  JobSpec job = ParsedOrDie(
      "name = \"zoom\"\ncommand = [\"render\", \"{frames}\"]\n"
      "frames = \"1-40,100-91,201-229x2\"\nchunk = 4\noutputs = [\"*.png\"]\n");
  absl::StatusOr<std::vector<TaskParams>> all = ExpandTasks(job);
  ASSERT_TRUE(all.ok()) << all.status();
  absl::StatusOr<JobSpec> cal = CalibrationSpec(job, 5);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->name, "zoom.calibrate");
  EXPECT_EQ(cal->command, job.command);
  EXPECT_EQ(cal->outputs, job.outputs);
  EXPECT_EQ(cal->chunk, job.chunk);
  absl::StatusOr<std::vector<TaskParams>> sampled = ExpandTasks(*cal);
  ASSERT_TRUE(sampled.ok()) << sampled.status();
  std::vector<uint32_t> picked = SpreadSample(all->size(), 5);
  ASSERT_EQ(sampled->size(), picked.size());
  for (size_t i = 0; i < picked.size(); ++i) {
    // Same frames in the same order: ascending, descending and stepped chunks survive the trip
    // through the frame grammar.
    EXPECT_EQ((*sampled)[i].chunk.frames, (*all)[picked[i]].chunk.frames) << "sample " << i;
  }
}

TEST(CalibrationSpec, ItemsAndCounts) {
  JobSpec items = ParsedOrDie("command = [\"ocr\", \"{item}\"]\nitems = [\"a\", \"b\", \"c\", "
                              "\"d\", \"e\", \"f\"]\n");
  absl::StatusOr<JobSpec> cal = CalibrationSpec(items, 2);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->items, (std::vector<std::string>{"b", "e"}));  // middles of [0,3) and [3,6)
  JobSpec count = ParsedOrDie("command = [\"seed\", \"{index}\"]\ncount = 100\n");
  cal = CalibrationSpec(count, 3);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->count, 3u);
  // More samples than tasks: the whole job once.
  cal = CalibrationSpec(items, 50);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->items, items.items);
}

TEST(CalibrationSpec, RefusesZeroSamplesAndLongNamesStayValid) {
  JobSpec job = ParsedOrDie("command = [\"true\"]\ncount = 4\n");
  EXPECT_FALSE(CalibrationSpec(job, 0).ok());
  job.name = std::string(128, 'n');
  absl::StatusOr<JobSpec> cal = CalibrationSpec(job, 1);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->name.size(), 128u);
  EXPECT_TRUE(cal->name.ends_with(".calibrate"));
}

}  // namespace
}  // namespace idlepool::spec
