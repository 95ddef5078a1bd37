// Per-task inputs (issue 18): the spec's `task_inputs` patterns expanded for each task on the
// submitting machine (spec/spec.h ExpandTaskInputs), and SubmitJobRequest.task_inputs checked by
// the coordinator (coordinator/job_request.h CheckTaskInputs), which trusts nothing of it.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/job_request.h"
#include "coordinator/staged_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/spec.h"

namespace idlepool {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// SHA-256 of "hello\n".
constexpr char kHello[] = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

class TaskInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/task_inputs_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((fs::path(root_) / rel).parent_path());
    std::ofstream(fs::path(root_) / rel) << text;
  }
  absl::StatusOr<spec::JobSpec> Parse(const std::string& toml) {
    return spec::ParseJobToml(toml, "job.toml", root_);
  }
  absl::StatusOr<std::vector<spec::TaskInputFiles>> Expand(const spec::JobSpec& s) {
    auto tasks = spec::ExpandTasks(s);
    if (!tasks.ok()) return tasks.status();
    return spec::ExpandTaskInputs(s, *tasks);
  }
  std::string root_;
};

TEST_F(TaskInputs, EachTaskGetsItsOwnFilesByPlaceholderAndGlob) {
  Write("segs/a.mp4", "A");
  Write("segs/b.mp4", "B");
  Write("segs/b.srt", "b subs");
  Write("shared.txt", "s");
  auto s = Parse(R"(command = ["ffmpeg", "-i", "segs/{item}.mp4"]
items = ["a", "b"]
inputs = ["shared.txt"]
task_inputs = ["segs/{item}.mp4", "segs/{item}.*"]
)");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->task_inputs, ::testing::ElementsAre("segs/{item}.mp4", "segs/{item}.*"));
  auto files = Expand(*s);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].task, 0u);
  ASSERT_EQ((*files)[0].inputs.size(), 1u);  // the mp4 named twice is staged once
  EXPECT_EQ((*files)[0].inputs[0].path, "segs/a.mp4");
  EXPECT_EQ((*files)[0].inputs[0].source, (fs::path(root_) / "segs/a.mp4").string());
  ASSERT_EQ((*files)[1].inputs.size(), 2u);
  EXPECT_EQ((*files)[1].inputs[0].path, "segs/b.mp4");
  EXPECT_EQ((*files)[1].inputs[1].path, "segs/b.srt");
}

TEST_F(TaskInputs, FramesAndIndexPlaceholdersRender) {
  Write("in/3.exr", "3");
  Write("in/4.exr", "4");
  Write("n/0.txt", "0");
  Write("n/1.txt", "1");
  auto s = Parse(R"(command = ["x", "{frame}"]
frames = "3-4"
task_inputs = ["in/{frame}.exr", "n/{index}.txt"]
)");
  ASSERT_TRUE(s.ok()) << s.status();
  auto files = Expand(*s);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  ASSERT_EQ((*files)[0].inputs.size(), 2u);
  EXPECT_EQ((*files)[0].inputs[0].path, "in/3.exr");
  EXPECT_EQ((*files)[0].inputs[1].path, "n/0.txt");
  ASSERT_EQ((*files)[1].inputs.size(), 2u);  // task 1: in/4.exr and n/1.txt
  EXPECT_EQ((*files)[1].inputs[1].path, "n/1.txt");
}

TEST_F(TaskInputs, APatternThatMatchesNothingNamesTheTaskAndThePattern) {
  Write("segs/a.mp4", "A");
  auto s = Parse(R"(command = ["x"]
items = ["a", "missing"]
task_inputs = ["segs/{item}.mp4"]
)");
  ASSERT_TRUE(s.ok()) << s.status();
  auto files = Expand(*s);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(files.status().message(), HasSubstr("task 1 (item 'missing')"));
  EXPECT_THAT(files.status().message(), HasSubstr("pattern 'segs/{item}.mp4'"));
  // A glob that matches nothing is the same error.
  s = Parse(R"(command = ["x"]
count = 2
task_inputs = ["segs/{index}*.mp4"]
)");
  ASSERT_TRUE(s.ok()) << s.status();
  files = Expand(*s);
  ASSERT_FALSE(files.ok());
  EXPECT_THAT(files.status().message(), HasSubstr("task 0"));
  EXPECT_THAT(files.status().message(), HasSubstr("matches no file"));
}

TEST_F(TaskInputs, PlaceholdersUnknownAtSubmitOrOfAnotherKindAreRefused) {
  for (const char* bad : {"{task_dir}/x", "{frame}.exr", "{port}"}) {
    auto s =
        Parse(absl::StrCat("command = [\"x\"]\nitems = [\"a\"]\ntask_inputs = [\"", bad, "\"]\n"));
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.status().message(), HasSubstr("task_inputs")) << bad;
  }
}

TEST_F(TaskInputs, APathTheJobsInputsStageIsRefused) {
  Write("a.txt", "a");
  auto s = Parse(R"(command = ["x"]
count = 1
inputs = ["a.txt"]
task_inputs = ["a.txt"]
)");
  ASSERT_TRUE(s.ok()) << s.status();
  auto files = Expand(*s);
  ASSERT_FALSE(files.ok());
  EXPECT_THAT(files.status().message(), HasSubstr("the job's inputs stage too"));
}

// The coordinator's side.
class TaskInputCheck : public TaskInputs {
 protected:
  void SetUp() override {
    TaskInputs::SetUp();
    blob::BlobStore blobs(root_);
    ASSERT_TRUE(blobs.Init(0).ok());
    fs::create_directories(fs::path(blobs.PathOf(kHello)).parent_path());
    std::ofstream(blobs.PathOf(kHello)) << "hello\n";
    spec_.add_inputs()->set_path("shared/scene");
  }
  absl::StatusOr<coordinator::CheckedTaskInputs> Check(uint32_t task, const std::string& path,
                                                       const std::string& sha = kHello,
                                                       uint64_t size = 6) {
    google::protobuf::RepeatedPtrField<v1::TaskInputs> list;
    v1::TaskInputs* t = list.Add();
    t->set_task(task);
    v1::Input* in = t->add_inputs();
    in->set_path(path);
    in->set_sha256(sha);
    in->set_size(size);
    in->set_mode(0640);
    blob::BlobStore blobs(root_);
    return coordinator::CheckTaskInputs(blobs, spec_, 4, list);
  }
  v1::JobSpec spec_;
};

TEST_F(TaskInputCheck, AGoodListIsStoredWithItsBytes) {
  auto c = Check(3, "segs/3.mp4");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->rows.size(), 1u);
  EXPECT_EQ(c->rows[0].index, 3u);
  EXPECT_EQ(c->rows[0].mode, 0640u);
  EXPECT_EQ(c->bytes, 6u);
  ASSERT_EQ(c->blobs.size(), 1u);
  EXPECT_EQ(c->blobs[0].blob.sha256, kHello);
}

TEST_F(TaskInputCheck, BadIndexMissingBlobUnsafePathAndClashesAreRefused) {
  auto c = Check(4, "x");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("task 4: no such task"));
  c = Check(0, "x", std::string(64, 'a'));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(c.status().message(), HasSubstr("was not uploaded"));
  c = Check(0, "x", "not-a-hash");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* bad : {"../etc/passwd", "/abs", "a/./b", ""}) {
    c = Check(1, bad);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(c.status().message(), HasSubstr("task 1")) << bad;
  }
  c = Check(1, "shared/scene");
  EXPECT_THAT(c.status().message(), HasSubstr("one of the job's inputs"));
  c = Check(1, "shared/scene/x");
  EXPECT_THAT(c.status().message(), HasSubstr("lies under 'shared/scene'"));
  c = Check(1, "shared");
  EXPECT_THAT(c.status().message(), HasSubstr("directory"));
  c = Check(1, "x", kHello, 7);
  EXPECT_THAT(c.status().message(), HasSubstr("claims 7 bytes"));
}

TEST_F(TaskInputCheck, ATaskListedTwiceOrAPathTwiceIsRefused) {
  google::protobuf::RepeatedPtrField<v1::TaskInputs> list;
  for (int i = 0; i < 2; ++i) {
    v1::TaskInputs* t = list.Add();
    t->set_task(0);
    v1::Input* in = t->add_inputs();
    in->set_path("x");
    in->set_sha256(kHello);
    in->set_size(6);
  }
  blob::BlobStore blobs(root_);
  auto c = coordinator::CheckTaskInputs(blobs, spec_, 4, list);
  EXPECT_THAT(c.status().message(), HasSubstr("listed twice"));
  list.RemoveLast();
  *list[0].add_inputs() = list[0].inputs(0);
  c = coordinator::CheckTaskInputs(blobs, spec_, 4, list);
  EXPECT_THAT(c.status().message(), HasSubstr("staged twice"));
}

// The check's work grows with the paths, not with tasks times the job's inputs: 5,000 job
// inputs and 5,000 tasks of one file each make about (5,000 + 5,000) x depth set entries. A
// check that copied the job's paths for each task would make 25,000,000.
TEST(StagedPathsWork, IsLinearInThePathsWhateverTheTasks) {
  constexpr uint64_t kJob = 5000, kTasks = 5000, kDepth = 3;  // "in/dN/fN": a file, two dirs
  coordinator::StagedPaths staged;
  for (uint64_t i = 0; i < kJob; ++i) {
    staged.AddJobPath(absl::StrCat("in/d", i % 100, "/f", i));
  }
  for (uint64_t t = 0; t < kTasks; ++t) {
    staged.NextTask();
    ASSERT_EQ(staged.Stage(absl::StrCat("own/d", t % 100, "/t", t)), "") << t;
  }
  EXPECT_LE(staged.entries_made(), (kJob + kTasks) * kDepth);
  // Still checked against the job's paths and the task's own.
  staged.NextTask();
  EXPECT_EQ(staged.Stage("in/d1/f1"), "is staged twice");
  EXPECT_THAT(staged.Stage("in/d1/f1/x"), HasSubstr("lies under 'in/d1/f1'"));
  EXPECT_EQ(staged.Stage("in/d1"), "is also a directory of another staged path");
  EXPECT_EQ(staged.Stage("mine/a"), "");
  EXPECT_EQ(staged.Stage("mine/a"), "is staged twice");
  EXPECT_EQ(staged.Stage("mine"), "is also a directory of another staged path");
  staged.NextTask();  // the previous task's paths are forgotten
  EXPECT_EQ(staged.Stage("mine/a"), "");
}

// Through the coordinator's check: the same submission, 5,000 tasks after 5,000 job inputs.
TEST_F(TaskInputCheck, FiveThousandTasksAfterFiveThousandJobInputs) {
  v1::JobSpec spec;
  for (int i = 0; i < 5000; ++i)
    spec.add_inputs()->set_path(absl::StrCat("in/d", i % 100, "/f", i));
  google::protobuf::RepeatedPtrField<v1::TaskInputs> list;
  for (uint32_t t = 0; t < 5000; ++t) {
    v1::TaskInputs* ti = list.Add();
    ti->set_task(t);
    v1::Input* in = ti->add_inputs();
    in->set_path(absl::StrCat("own/", t, ".bin"));
    in->set_sha256(kHello);
    in->set_size(6);
  }
  blob::BlobStore blobs(root_);
  auto c = coordinator::CheckTaskInputs(blobs, spec, 5000, list);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rows.size(), 5000u);
  EXPECT_EQ(c->bytes, 5000u * 6);
}

}  // namespace
}  // namespace idlepool

namespace idlepool {
namespace {

// A pattern whose matches add up to more names than a submission can carry is refused by name,
// before the client's memory goes: every one of 20,000 tasks stages one file of a ~3,600-byte
// path (about 140 MB of names in all, past the 64 MiB bound).
TEST_F(TaskInputs, NamesPastTheByteBoundAreRefusedNamingThePattern) {
  std::string deep;
  for (int i = 0; i < 14; ++i) deep += std::string(250, static_cast<char>('a' + i)) + "/";
  Write(deep + "f.bin", "x");
  auto s = Parse("command = [\"true\"]\ncount = 20000\ntask_inputs = [\"" + deep + "f.*\"]\n");
  ASSERT_TRUE(s.ok()) << s.status();
  auto files = Expand(*s);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), absl::StatusCode::kResourceExhausted) << files.status();
  EXPECT_THAT(files.status().message(), HasSubstr("pattern '"));
  EXPECT_THAT(files.status().message(), HasSubstr("64 MiB"));
}

TEST(OutputNames, ControlCharactersAreRefused) {
  for (const char* bad : {"evil\x1b]0;PWNED\x07.txt", "a\tb", "del\x7f",
                          "c1\xc2\x9b"
                          "31m"}) {
    auto why = spec::RelativePathError(bad);
    ASSERT_TRUE(why.has_value()) << bad;
    EXPECT_THAT(*why, HasSubstr("control character"));
  }
  EXPECT_FALSE(spec::RelativePathError("frames/\xc3\xa9t\xc3\xa9.png").has_value());  // été
  auto s = spec::ParseJobToml("command = [\"true\"]\ncount = 1\noutputs = [\"a\\u001b[31m.txt\"]\n",
                              "job.toml", "/tmp");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("control character"));
}

}  // namespace
}  // namespace idlepool
