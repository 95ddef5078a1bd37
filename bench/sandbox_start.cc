// bench/sandbox_start: what the task sandbox adds to a task's start, and what a slot's sandbox
// costs to set up.
//
// Runs `true` --tasks times (a) unsandboxed through platform::Process (vfork + exec, as with
// `worker --no-sandbox`) and (b) in one slot's sandbox (sandbox::SlotSandbox: a request to the
// slot's agent, fork + exec inside its namespaces, the end reported once the PID namespace is
// empty and the scratch dirs emptied), alternating; each sample is spawn to reaped. Prints the
// median and p99 of each, their difference, and the median time to start a slot's sandbox
// (--setups of them). In this run's tier: uid as root, userns otherwise.
//
//   build/bench/sandbox_start [--tasks 2000] [--setups 20]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "platform/process.h"
#include "platform/random.h"
#include "sandbox/agent.h"
#include "sandbox/probe.h"
#include "sandbox/slot_sandbox.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

double RunOnce(idlepool::sandbox::SlotSandbox* sb, const std::string& cwd) {
  idlepool::platform::SpawnOptions o;
  o.argv = {"true"};
  o.env = {"PATH=/usr/bin:/bin"};
  o.cwd = cwd;
  const auto t0 = Clock::now();
  auto p = sb ? sb->Launch(o) : idlepool::platform::Process::Start(o);
  if (!p.ok()) {
    std::fprintf(stderr, "spawn: %s\n", p.status().ToString().c_str());
    std::exit(1);
  }
  (void)(*p)->Wait(std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  p->reset();
  return Ms(t0, Clock::now());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == idlepool::sandbox::kAgentSubcommand) {
    idlepool::sandbox::AgentMain();  // this binary is its own sandbox agent
  }
  int tasks = 2000, setups = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--tasks") tasks = std::atoi(argv[i + 1]);
    if (a == "--setups") setups = std::atoi(argv[i + 1]);
  }
  const std::string dir =
      (fs::temp_directory_path() / ("idlepool-sbbench-" + idlepool::platform::RandomHex(4)))
          .string();
  const std::string slot = dir + "/work/slots/0";
  fs::create_directories(slot + "/task");
  fs::create_directories(slot + "/checkpoint");
  fs::permissions(slot + "/task", fs::perms::all);
  idlepool::sandbox::Settings s = idlepool::sandbox::DetectSettings(dir + "/work");
  const auto config = idlepool::sandbox::ConfigFor(s, 0, slot, false, {});
  std::vector<double> setup_ms;
  std::unique_ptr<idlepool::sandbox::SlotSandbox> sb;
  for (int i = 0; i < setups; ++i) {
    const auto t0 = Clock::now();
    auto started = idlepool::sandbox::SlotSandbox::Start(config, s.agent_exe);
    if (!started.ok()) {
      std::fprintf(stderr, "sandbox: %s\n", started.status().ToString().c_str());
      return 1;
    }
    setup_ms.push_back(Ms(t0, Clock::now()));
    sb = std::move(*started);
  }
  std::vector<double> plain, boxed;
  for (int i = 0; i < tasks; ++i) {
    plain.push_back(RunOnce(nullptr, slot + "/task"));
    boxed.push_back(RunOnce(sb.get(), slot + "/task"));
  }
  const double p50 = Quantile(plain, 0.5), p99 = Quantile(plain, 0.99);
  const double b50 = Quantile(boxed, 0.5), b99 = Quantile(boxed, 0.99);
  std::printf("bench/sandbox_start: %d runs of `true` each, tier %s, Landlock ABI %d, %ld cores\n",
              tasks, std::string(idlepool::sandbox::TierName(s.tier)).c_str(), sb->landlock_abi(),
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("  unsandboxed (vfork+exec):  median %.3f ms, p99 %.3f ms\n", p50, p99);
  std::printf("  in the slot's sandbox:     median %.3f ms, p99 %.3f ms\n", b50, b99);
  std::printf("  the sandbox adds:          median %.3f ms, p99 %.3f ms per task start\n",
              b50 - p50, b99 - p99);
  std::printf("  a slot's sandbox set-up (once per slot): median %.2f ms over %d\n",
              Quantile(setup_ms, 0.5), setups);
  sb.reset();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
