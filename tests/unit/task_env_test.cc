// A task's environment (worker/task_env.h): exactly what the pool gives it, never the worker's
// own: the owner's secrets stay out, the owner's pass_env names come in, the job's env is applied,
// PWD is the task dir and OLDPWD is never set.
#include "worker/task_env.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace idlepool::worker {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsSupersetOf;
using ::testing::Not;

const std::vector<std::string> kWorkerEnv = {"AWS_SECRET_ACCESS_KEY=s3cr3t",
                                             "GITHUB_TOKEN=ghp_x",
                                             "PATH=/home/o/bin:/usr/bin",
                                             "HOME=/home/o",
                                             "TMPDIR=/var/tmp/o",
                                             "OLDPWD=/home/o/src",
                                             "PWD=/home/o",
                                             "LANG=de_DE.UTF-8",
                                             "LC_TIME=en_DK.UTF-8",
                                             "TZ=Europe/Berlin",
                                             "http_proxy=http://proxy:3128",
                                             "SSH_AUTH_SOCK=/run/user/1000/ssh",
                                             "USER=o",
                                             "CUDA_VISIBLE_DEVICES=0,1",
                                             "NOVALUE"};

TaskEnvFacts Facts(bool sandboxed) {
  TaskEnvFacts f;
  f.sandboxed = sandboxed;
  f.task_dir = "/w/slots/0/task";
  f.cpus = 2;
  f.pool = {{"IDLEPOOL_TASK_DIR", "/w/slots/0/task"}, {"CUDA_VISIBLE_DEVICES", ""}};
  return f;
}

TEST(TaskEnv, NothingOfTheWorkersButWhatIsListed) {
  const TaskEnvBase base =
      TaskEnvBaseFrom(kWorkerEnv, "/usr/local/bin:/usr/bin:/bin", {"http_proxy"}, "o");
  EXPECT_THAT(
      BuildTaskEnv(base, Facts(/*sandboxed=*/true)),
      ElementsAre("CUDA_VISIBLE_DEVICES=", "HOME=/tmp", "IDLEPOOL_TASK_DIR=/w/slots/0/task",
                  "LANG=de_DE.UTF-8", "LC_TIME=en_DK.UTF-8", "LOGNAME=o", "OMP_NUM_THREADS=2",
                  "PATH=/usr/local/bin:/usr/bin:/bin", "PWD=/w/slots/0/task", "TMPDIR=/tmp",
                  "TZ=Europe/Berlin", "USER=o", "http_proxy=http://proxy:3128"));
}

TEST(TaskEnv, NoSandboxKeepsTheWorkersHomeAndTmpdirOnly) {
  const TaskEnvBase base = TaskEnvBaseFrom(kWorkerEnv, "/usr/bin:/bin", {}, "o");
  const std::vector<std::string> env = BuildTaskEnv(base, Facts(/*sandboxed=*/false));
  EXPECT_THAT(env, IsSupersetOf({"HOME=/home/o", "TMPDIR=/var/tmp/o", "PWD=/w/slots/0/task",
                                 "PATH=/usr/bin:/bin", "USER=o", "LOGNAME=o"}));
  for (const char* secret : {"AWS_SECRET_ACCESS_KEY=s3cr3t", "GITHUB_TOKEN=ghp_x",
                             "SSH_AUTH_SOCK=/run/user/1000/ssh", "http_proxy=http://proxy:3128",
                             "OLDPWD=/home/o/src", "PWD=/home/o", "PATH=/home/o/bin:/usr/bin"}) {
    EXPECT_THAT(env, Not(Contains(secret)));
  }
  // A worker without HOME or TMPDIR gives none.
  const std::vector<std::string> bare =
      BuildTaskEnv(TaskEnvBaseFrom({}, "/bin", {}, "o"), Facts(/*sandboxed=*/false));
  for (const std::string& e : bare) {
    EXPECT_FALSE(e.starts_with("HOME=") || e.starts_with("TMPDIR=")) << e;
  }
}

TEST(TaskEnv, TheJobsEnvReplacesDefaultsButNotThePools) {
  const TaskEnvBase base = TaskEnvBaseFrom(kWorkerEnv, "/usr/bin:/bin", {"http_proxy"}, "o");
  TaskEnvFacts f = Facts(/*sandboxed=*/true);
  // What a coordinator that did not check could send, with what it may set.
  f.job = {"PATH=/opt/blender:/usr/bin",
           "OMP_NUM_THREADS=1",
           "LANG=C",
           "http_proxy=",
           "SCENE=/w/slots/0/task/a.blend",
           "HOME=/root",
           "PWD=/",
           "OLDPWD=/x",
           "USER=root",
           "IDLEPOOL_TASK_DIR=/etc",
           "CUDA_VISIBLE_DEVICES=0"};
  const std::vector<std::string> env = BuildTaskEnv(base, f);
  EXPECT_THAT(env, IsSupersetOf({"PATH=/opt/blender:/usr/bin", "OMP_NUM_THREADS=1", "LANG=C",
                                 "http_proxy=", "SCENE=/w/slots/0/task/a.blend", "HOME=/tmp",
                                 "PWD=/w/slots/0/task", "USER=o",
                                 "IDLEPOOL_TASK_DIR=/w/slots/0/task", "CUDA_VISIBLE_DEVICES="}));
  for (const std::string& e : env) EXPECT_FALSE(e.starts_with("OLDPWD=")) << e;
}

TEST(TaskEnv, TierUidRunsAsTheSlotsUid) {
  const TaskEnvBase base = TaskEnvBaseFrom({}, "/bin", {}, "root");
  TaskEnvFacts f = Facts(/*sandboxed=*/true);
  f.slot_uid = 1500000003;
  EXPECT_THAT(BuildTaskEnv(base, f), IsSupersetOf({"USER=1500000003", "LOGNAME=1500000003"}));
}

TEST(TaskEnv, PassEnvTakesOnlyTheNamedVariablesThatAreSet) {
  const TaskEnvBase base =
      TaskEnvBaseFrom(kWorkerEnv, "/bin", {"http_proxy", "https_proxy", "GITHUB"}, "o");
  EXPECT_THAT(base.passed, ElementsAre("LANG=de_DE.UTF-8", "LC_TIME=en_DK.UTF-8",
                                       "TZ=Europe/Berlin", "http_proxy=http://proxy:3128"));
}

}  // namespace
}  // namespace idlepool::worker
