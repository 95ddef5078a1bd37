// `idlepool sim --users`: the multi-user workload file and the fair share against FIFO report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "sim/users.h"

namespace idlepool::sim {
namespace {

using ::testing::HasSubstr;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sim_users_" + std::to_string(getpid()) + name))
          .string();
  std::ofstream(path) << text;
  return path;
}

constexpr char kTwoUsers[] = R"(
[[user]]
name = "alice"
[[user]]
name = "bob"
share = 2
max_slots = 3
[[job]]
user = "alice"
tasks = 100
task_seconds = 30
[[job]]
user = "bob"
at_s = 20
tasks = 2
task_seconds = "30"
repeat = 3
every_s = 100
)";

TEST(SimUsers, ReadsUsersAndTheirJobsInSubmitOrder) {
  std::mt19937_64 rng(1);
  auto w = ReadUsersFile(Write("ok.toml", kTwoUsers), rng);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->users.size(), 2u);
  EXPECT_EQ(w->users[1].share, 2);
  EXPECT_EQ(w->users[1].quota.max_slots, 3u);
  ASSERT_EQ(w->jobs.size(), 4u);
  EXPECT_EQ(w->jobs[0].user, "alice");
  EXPECT_EQ(w->jobs[0].task_seconds.size(), 100u);
  EXPECT_EQ(w->jobs[3].user, "bob");
  EXPECT_DOUBLE_EQ(w->jobs[3].submit_at_s, 220);
}

TEST(SimUsers, BadFilesNameTheLineAndTheKey) {
  std::mt19937_64 rng(1);
  auto unknown = ReadUsersFile(
      Write("u.toml", "[[user]]\nname = \"a\"\n[[job]]\nuser = \"b\"\ntasks = 1\n"), rng);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("u.toml:3: [[job]] needs 'user'"));
  auto share = ReadUsersFile(
      Write("s.toml", "[[user]]\nname = \"a\"\nshare = -1\n[[job]]\nuser = \"a\"\n"), rng);
  EXPECT_THAT(std::string(share.status().message()), HasSubstr("s.toml:3: 'share' must be"));
  auto empty = ReadUsersFile(Write("e.toml", "x = 1\n"), rng);
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("needs [[user]] tables"));
  auto syntax = ReadUsersFile(Write("p.toml", "[[user]\n"), rng);
  EXPECT_THAT(std::string(syntax.status().message()), HasSubstr("p.toml:1:"));
}

TEST(SimUsers, FairShareKeepsTheSmallUserNearItsTimeAloneWhereFifoDoesNot) {
  std::mt19937_64 rng(1);
  auto w = ReadUsersFile(Write("cmp.toml", kTwoUsers), rng);
  ASSERT_TRUE(w.ok());
  SimConfig c;
  for (int i = 0; i < 4; ++i) c.workers.push_back(SimWorker{.name = "w" + std::to_string(i)});
  c.users = w->users;
  c.jobs = w->jobs;
  c.persist = false;
  auto rows = CompareFairToFifo(c);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  const UserSlowdown& bob = (*rows)[1];
  EXPECT_EQ(bob.user, "bob");
  EXPECT_EQ(bob.jobs, 3u);
  // FIFO: bob's first job waits for alice's 100 tasks on 4 slots; fair share: the next free slot.
  EXPECT_GT(bob.fifo_max, 5.0);
  EXPECT_LT(bob.fair_max, 2.0);
  EXPECT_LT(bob.fair_mean, bob.fifo_mean);
  // alice gives up little for it: her one job ends at most a few tasks later.
  EXPECT_LT((*rows)[0].fair_mean, 1.2);
}

}  // namespace
}  // namespace idlepool::sim
