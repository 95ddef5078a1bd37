// bench/throughput: end-to-end task throughput of a pool on this machine, against GNU parallel
// and Dask.
//
// A coordinator and 2 workers (in this process, over gRPC on 127.0.0.1, with the real SQLite
// store) run a job of N no-op tasks (`count = N`, command `true`); the figure is N over the
// job's makespan (submit to last commit, from the coordinator's records), with every task in
// its slot's sandbox (the default) and with --no-sandbox. In the same run, GNU parallel runs the
// same number of `true` with the same concurrency, Dask distributed (Debian
// python3-distributed: a LocalCluster of 2 processes x `slots` threads, each task
// subprocess.run(["true"])) the same, and a serial posix_spawn loop gives the machine's ceiling
// for spawning processes one after another. Each figure is the median of --repeats runs.
//
//   build/bench/throughput [--tasks 5000] [--repeats 3] [--slots 4]
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/client.h"
#include "coordinator/coordinator.h"
#include "platform/random.h"
#include "sandbox/agent.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"
#include "worker/identity.h"
#include "worker/worker.h"

extern char** environ;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One pool run; returns tasks per second (N / makespan).
double RunPool(int tasks, int slots, const std::string& dir, bool sandbox) {
  idlepool::coordinator::Options co;
  co.listen = "127.0.0.1:0";
  co.data_dir = dir + "/coordinator";
  auto c = idlepool::coordinator::Coordinator::Start(co);
  if (!c.ok()) {
    std::fprintf(stderr, "coordinator: %s\n", c.status().ToString().c_str());
    std::exit(1);
  }
  std::string addr = absl::StrCat("127.0.0.1:", (*c)->port());
  std::vector<std::unique_ptr<idlepool::worker::Worker>> ws;
  std::vector<std::thread> threads;
  auto join = (*c)->CreateToken("worker", 600, 2, "");
  auto submit = (*c)->CreateToken("submit", 600, -1, "bench");
  if (!join.ok() || !submit.ok()) {
    std::fprintf(stderr, "tokens: %s\n", join.status().ToString().c_str());
    std::exit(1);
  }
  for (int i = 0; i < 2; ++i) {
    idlepool::worker::Options o;
    o.coordinator = addr;
    o.name = absl::StrCat("bench-", i);
    o.slots = static_cast<uint32_t>(slots);
    o.work_dir = absl::StrCat(dir, "/worker-", i);
    o.identity_dir = idlepool::worker::IdentityDir(o.work_dir);
    if (auto id = idlepool::worker::Join(addr, *join, o.name, o.identity_dir); !id.ok()) {
      std::fprintf(stderr, "join: %s\n", id.status().ToString().c_str());
      std::exit(1);
    }
    // The coordinator shares this process and this machine: on a lent desktop its load would
    // read as the owner's. The bench measures the pool, so the machine is dedicated.
    idlepool::owner::MakeDedicated(&o.policy);
    o.probe = false;  // a loopback link probe would only compete with the measured work
    o.no_sandbox = !sandbox;
    ws.push_back(std::make_unique<idlepool::worker::Worker>(o));
    threads.emplace_back([w = ws.back().get()] { (void)w->Run(); });
  }
  idlepool::cli::PoolClient client(addr, *submit, (*c)->ca_pem());
  // Wait until both workers are connected, so the figure is the pool's, not its start-up.
  for (int i = 0; i < 400; ++i) {
    auto w = client.ListWorkers();
    if (w.ok() && w->workers_size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  idlepool::spec::JobSpec spec;
  spec.name = "noop";
  spec.command = {"true"};
  spec.kind = idlepool::spec::TaskKind::kCount;
  spec.count = static_cast<uint64_t>(tasks);
  auto reply = client.Submit(spec, "bench");
  if (!reply.ok()) {
    std::fprintf(stderr, "submit: %s\n", reply.status().ToString().c_str());
    std::exit(1);
  }
  auto st = client.Wait(reply->job(), nullptr);
  if (!st.ok() || st->state() != "succeeded") {
    std::fprintf(stderr, "job did not succeed\n");
    std::exit(1);
  }
  double makespan = static_cast<double>(st->finished_ms() - st->submitted_ms()) / 1000.0;
  for (auto& w : ws) w->Stop();
  for (auto& t : threads) t.join();
  (*c)->Shutdown();
  return tasks / makespan;
}

double RunParallel(int tasks, int jobs, const std::string& dir) {
  std::string list = dir + "/args.txt";
  {
    std::ofstream out(list);
    for (int i = 0; i < tasks; ++i) out << i << "\n";
  }
  std::string cmd = absl::StrCat("parallel --will-cite -j", jobs, " true :::: ", list,
                                 " >/dev/null 2>&1");
  auto t0 = Clock::now();
  int rc = std::system(cmd.c_str());
  auto t1 = Clock::now();
  if (rc != 0) return -1;
  return tasks / Seconds(t0, t1);
}

// Dask distributed on the same work; -1 when python3-distributed is not installed.
double RunDask(int tasks, int slots, const std::string& dir) {
  const std::string script = dir + "/dask_bench.py";
  {
    std::ofstream out(script);
    out << "import subprocess, sys, time\n"
           "from distributed import Client, LocalCluster\n"
           "def noop(i):\n"
           "    subprocess.run(['true'])\n"
           "    return i\n"
           "if __name__ == '__main__':\n"
           "    n, threads = int(sys.argv[1]), int(sys.argv[2])\n"
           "    with LocalCluster(n_workers=2, threads_per_worker=threads, processes=True,\n"
           "                      dashboard_address=None) as cluster, Client(cluster) as client:\n"
           "        client.gather(client.map(noop, range(50), key=[f'w{i}' for i in range(50)]))\n"
           "        t = time.monotonic()\n"
           "        client.gather(client.map(noop, range(n)))\n"
           "        print(n / (time.monotonic() - t))\n";
  }
  // Debian's interpreter, where python3-distributed installs (not a python3 earlier in PATH).
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string cmd = absl::StrCat(python, " ", script, " ", tasks, " ", slots, " 2>/dev/null");
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  double rate = -1;
  if (std::fscanf(p, "%lf", &rate) != 1) rate = -1;
  ::pclose(p);
  return rate;
}

double RunSerialSpawn(int tasks) {
  char* argv[] = {const_cast<char*>("true"), nullptr};
  auto t0 = Clock::now();
  for (int i = 0; i < tasks; ++i) {
    pid_t pid;
    if (posix_spawnp(&pid, "true", nullptr, nullptr, argv, environ) != 0) return -1;
    waitpid(pid, nullptr, 0);
  }
  return tasks / Seconds(t0, Clock::now());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == idlepool::sandbox::kAgentSubcommand) {
    idlepool::sandbox::AgentMain();  // the in-process workers' sandbox agents run this binary
  }
  int tasks = 5000, repeats = 3, slots = 4;
  bool pool_only = false;  // --pool-only: skip the peers (for profiling)
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--pool-only") pool_only = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--tasks") tasks = std::atoi(argv[i + 1]);
    else if (a == "--repeats") repeats = std::atoi(argv[i + 1]);
    else if (a == "--slots") slots = std::atoi(argv[i + 1]);
  }
  spdlog::set_level(spdlog::level::warn);
  std::string dir = (fs::temp_directory_path() /
                     ("idlepool-bench-" + idlepool::platform::RandomHex(4))).string();
  fs::create_directories(dir);
  std::printf("bench/throughput: %d no-op tasks (`true`), 2 workers x %d slots, %d repeats, %u cores\n",
              tasks, slots, repeats, std::thread::hardware_concurrency());
  std::vector<double> pool, bare, par, dask, spawn;
  for (int r = 0; r < repeats; ++r) {
    pool.push_back(RunPool(tasks, slots, absl::StrCat(dir, "/run-", r), /*sandbox=*/true));
    bare.push_back(RunPool(tasks, slots, absl::StrCat(dir, "/bare-", r), /*sandbox=*/false));
    par.push_back(pool_only ? 0 : RunParallel(tasks, 2 * slots, dir));
    dask.push_back(pool_only ? 0 : RunDask(tasks, slots, dir));
    spawn.push_back(pool_only ? 0 : RunSerialSpawn(tasks));
    std::printf(
        "  run %d: idlepool %.0f tasks/s sandboxed, %.0f --no-sandbox | GNU parallel %.0f | "
        "Dask %.0f | serial spawn %.0f/s\n",
        r + 1, pool.back(), bare.back(), par.back(), dask.back(), spawn.back());
    std::fflush(stdout);
  }
  const double p = Median(pool), b = Median(bare), g = Median(par), d = Median(dask),
               s = Median(spawn);
  std::printf(
      "median: idlepool %.0f tasks/s sandboxed, %.0f --no-sandbox (sandboxed/bare %.2f) | "
      "GNU parallel -j%d %.0f (idlepool/parallel %.2f) | Dask 2x%d %s (idlepool/Dask "
      "%.2f) | serial posix_spawn ceiling %.0f/s\n",
      p, b, b > 0 ? p / b : 0.0, 2 * slots, g, g > 0 ? p / g : 0.0, slots,
      d > 0 ? absl::StrCat(static_cast<int>(d)).c_str()
            : "n/a (apt-get install python3-distributed)",
      d > 0 ? p / d : 0.0, s);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
