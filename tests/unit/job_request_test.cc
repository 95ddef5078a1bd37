// What a client sends, checked before anything is stored or planned (coordinator/job_request.h):
// SubmitJob's spec against the blob store, PlanJob's request.
#include "coordinator/job_request.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// SHA-256 of "hello\n".
constexpr char kHello[] = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

class JobRequest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/job_request_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    blob::BlobStore blobs(root_);
    ASSERT_TRUE(blobs.Init(0).ok());
    fs::create_directories(fs::path(blobs.PathOf(kHello)).parent_path());
    std::ofstream(blobs.PathOf(kHello)) << "hello\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  static v1::JobSpec Spec() {
    v1::JobSpec s;
    s.set_name("render");
    s.add_command("echo");
    s.add_command("{frame}");
    s.mutable_frames()->set_spec("1-10");
    s.mutable_frames()->set_chunk(1);
    s.mutable_resources()->set_cpus(1);
    s.set_max_attempts(3);
    v1::Input* in = s.add_inputs();
    in->set_path("scene.pov");
    in->set_sha256(kHello);
    in->set_size(6);
    return s;
  }

  std::string root_;
};

TEST_F(JobRequest, AValidSpecExpandsToItsTasks) {
  blob::BlobStore blobs(root_);
  absl::StatusOr<CheckedJob> job = CheckSubmitJob(blobs, Spec());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec.name, "render");
  EXPECT_EQ(job->tasks.size(), 10u);
  EXPECT_EQ(job->tasks[9].chunk.frames, std::vector<int64_t>{10});
}

TEST_F(JobRequest, InputsMustBeUploadedWithTheSizeTheyClaim) {
  blob::BlobStore blobs(root_);
  v1::JobSpec s = Spec();
  s.mutable_inputs(0)->set_size(7);
  EXPECT_EQ(CheckSubmitJob(blobs, s).status().code(), absl::StatusCode::kInvalidArgument);
  s.mutable_inputs(0)->set_sha256(std::string(64, 'a'));
  absl::Status st = CheckSubmitJob(blobs, s).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), HasSubstr("input 'scene.pov'"));
  s.mutable_inputs(0)->set_sha256("../../../etc/passwd");
  EXPECT_EQ(CheckSubmitJob(blobs, s).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(JobRequest, SpecRulesAndSizesAreTheValidatorsOnes) {
  blob::BlobStore blobs(root_);
  v1::JobSpec s = Spec();
  s.mutable_inputs(0)->set_path("../scene.pov");
  EXPECT_THAT(std::string(CheckSubmitJob(blobs, s).status().message()),
              HasSubstr("field 'inputs'"));
  s = Spec();
  s.mutable_frames()->set_spec("1-1000000000");
  EXPECT_EQ(CheckSubmitJob(blobs, s).status().code(), absl::StatusCode::kResourceExhausted);
  s = Spec();
  s.clear_tasks();
  s.set_count(0);
  EXPECT_EQ(CheckSubmitJob(blobs, s).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(JobRequest, APlanNeedsFiniteTaskTimeAndWellFormedHashesButNoUpload) {
  v1::PlanRequest req;
  *req.mutable_spec() = Spec();
  req.mutable_spec()->mutable_inputs(0)->set_sha256(std::string(64, 'a'));
  absl::StatusOr<CheckedPlan> plan = CheckPlanJob(req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->tasks, 10u);
  for (double t :
       {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    req.set_task_s(t);
    EXPECT_EQ(CheckPlanJob(req).status().code(), absl::StatusCode::kInvalidArgument) << t;
  }
  req.set_task_s(0);
  req.mutable_spec()->mutable_inputs(0)->set_sha256("AB");
  EXPECT_THAT(std::string(CheckPlanJob(req).status().message()), HasSubstr("64 hex digits"));
}

}  // namespace
}  // namespace idlepool::coordinator
