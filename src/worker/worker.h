// The worker agent: runs on a lent machine, connects out to the coordinator (so it works behind
// NAT), keeps one session stream, heartbeats, and runs the attempts it is assigned.
//
// Per attempt: inputs are fetched once into the blob cache (WORK_DIR/cache, verified by hash)
// and linked into a fresh task dir; the task's latest checkpoint, if any, is restored into its
// $IDLEPOOL_CHECKPOINT_DIR; the command runs in its own cgroup (where the machine allows, else
// its own process group) at low CPU and I/O priority, with IDLEPOOL_* variables set and capped
// logs; on cancel or timeout the whole tree is killed; outputs
// matching the job's globs are hashed, filed in the durable outbox (worker/outbox.h: they survive
// cut links, coordinator restarts and restarts of this worker), uploaded (resumable, retried with
// backoff, never dropped, never a reason to re-run) and only then reported; the report is resent
// after every reconnect until the coordinator acknowledges it. A zero-byte output fails the
// attempt unless the job allows empty outputs; an output that changes after it was hashed
// (truncated by a leftover process) fails it too. A full disk is the machine's fault (see
// Options::min_free_disk_bytes).
//
// The owner comes first. A thread samples the machine's sensors (or --sensors-dir) whenever
// they change, and at least once a second, and applies the owner policy (owner_policy.h):
//   run     - accept work; thaw frozen attempts.
//   suspend - accept none; freeze every running attempt's whole tree (cgroup freezer, else
//             SIGSTOP to its process group).
//   vacate  - accept none; each attempt gets SIGTERM, then SIGKILL after vacate_grace_s (2 s
//             when sleep is imminent); then its checkpoint dir is uploaded and the attempt is
//             reported PREEMPTED with the checkpoint and the work lost since it last changed.
// Every change is told to the coordinator (OwnerState), which assigns nothing while the worker
// does not accept. Checkpoint dirs that changed are uploaded at most every
// checkpoint_interval_s while the task runs. Stop() (SIGTERM, system shutdown) vacates every
// attempt the same way before Run() returns.
//
// Thread safety: Run() blocks in the calling thread; Stop() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/defaults.h"
#include "core/types.h"
#include "owner/owner_policy.h"
#include "platform/clock.h"
#include "platform/gpu.h"
#include "sandbox/probe.h"

namespace idlepool::worker {

struct Options {
  std::string coordinator;  // host:port
  // The worker's identity in the pool (identity.h: key, certificate, CA; made by Join). Every
  // connection is mTLS with it: to the coordinator, to peers and on the peer port.
  std::string identity_dir;
  std::string name;         // the certificate's name (identity.h); default: the identity's
  uint32_t slots = 0;       // CPU slots offered; 0 = number of cores
  uint64_t memory_mb = 0;   // 0 = not stated
  // The GPUs offered (platform/gpu.h; `--gpus`): each Hello lists them with fresh readings and
  // states their number as the capacity's gpus. Null: no GPUs.
  std::shared_ptr<platform::GpuInventory> gpus;
  std::string work_dir;     // task dirs, logs, blob cache
  // Unset: the coordinator's (Welcome.heartbeat_ms; core::kDefaultHeartbeat until welcomed).
  // Either way at most a third of the coordinator's lease timeout.
  std::optional<core::Millis> heartbeat;
  // SIGTERM -> SIGKILL on timeout (HTCondor's default is 10 s).
  core::Millis kill_grace{std::chrono::seconds(10)};
  owner::PolicyConfig policy;  // the owner policy, vacate grace and checkpoint interval
  // How tasks are isolated here, as every Hello says it (`idlepool workers`' SANDBOX) and
  // --print-resources prints it: "userns", "uid" or "none". Run sets it from its probe of the
  // machine (sandbox/probe.h; "none" with no_sandbox).
  std::string sandbox_tier = "none";
  // Non-empty: read the owner's sensors from one-value files in this dir (platform/sensors.h);
  // empty: the machine's own sensors (platform/linux_sensors.h).
  std::string sensors_dir;
  bool low_priority = true;  // run tasks as SCHED_IDLE, nice 19, idle I/O class
  // The soft descriptor limit tasks get (the one the worker started with, before it raised its
  // own: platform/fd_limit.h); 0: the worker's.
  uint64_t task_fd_limit = 0;
  // Free disk space (bytes, under work_dir) below which the worker takes no work. When the disk
  // fills during an attempt (ENOSPC, or the task fails while free space is below this), the
  // attempt ends MACHINE_FAULT (the task goes elsewhere, never counted against it) and the
  // worker accepts nothing until this much is free again. 256 MiB: room for logs, the outbox and
  // the cache index; BOINC's "leave at least N GB free" preference plays the same role.
  uint64_t min_free_disk_bytes = 256ull << 20;
  // Cap of the blob cache (WORK_DIR/cache), bytes; LRU eviction (see blob_cache.h). 10 GiB.
  uint64_t cache_bytes = uint64_t{10} << 30;
  // Peer-to-peer (blob/swarm.h, blob/peer_server.h): serve the cache's blobs, and the chunks of
  // blobs being fetched, to the pool's other workers on `peer_listen` (host:port; 0.0.0.0 = every
  // interface, announced as the address this worker connects from; port 0 = a free one), and
  // fetch inputs from peers and the coordinator at once. false: neither; every input comes from
  // the coordinator alone (centralized fan-out).
  bool peers = true;
  std::string peer_listen = "0.0.0.0:0";
  // Where the gateway's tunnels to this worker's service replicas are served
  // (replica_tunnel.h; host:port as peer_listen; `--tunnel-listen`). Empty: none (the worker
  // then runs no replica the gateway can reach; batch work is unaffected).
  std::string tunnel_listen = "0.0.0.0:0";
  // Measurements for the planner (worker/measure.h). `probe`: measure the link to the coordinator
  // on join and then every `probe_interval` (0 = only on join), deferred while inputs or outputs
  // are moving; false: never (the planner then assumes a default link). `calibrate`: measure
  // the CPU at start (64 MiB of SHA-256, well under a second) and say so in every Hello.
  bool probe = true;
  core::Millis probe_interval{std::chrono::minutes(10)};
  bool calibrate = true;
  // The task sandbox (sandbox/, docs/guide/sandbox.md). `no_sandbox`: tasks run as this
  // worker's user with its files in reach (a warning at start; `workers` shows "none"). Else the
  // worker probes its tier at start and refuses to start when the sandbox does not work.
  bool no_sandbox = false;
  // When the probe fails: warn and run unsandboxed instead of refusing to start. For
  // `idlepool run` (the user's own jobs on their own machine), never for a lent machine.
  bool sandbox_optional = false;
  uint64_t sandbox_uid_base = sandbox::kDefaultUidBase;  // tier uid: slot N runs as base + N
  uint64_t task_pids_max = sandbox::kDefaultPidsMax;     // processes and threads per task
  // Where device nodes are bound from (tests: stand-ins); "" = the host's own.
  std::string device_root;
  // Dirs tasks may read besides the system dirs (sandbox/mounts.h VisiblePaths).
  std::vector<std::string> sandbox_show;
};

class Worker {
 public:
  explicit Worker(Options options, const platform::Clock& clock = platform::SystemClock());
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Serves until Stop(). Reconnects with backoff whenever the coordinator is unreachable.
  // Returns kPermissionDenied when the coordinator refuses the token (retrying cannot help),
  // kFailedPrecondition when the work dir is unusable or the coordinator refuses this worker's
  // hello (protocol version, bad capacity), OK after Stop().
  absl::Status Run();

  // Vacates gracefully (SIGTERM, grace, checkpoint upload, PREEMPTED report: never a failure),
  // then Run() returns.
  void Stop();

  const std::string& boot_id() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idlepool::worker
