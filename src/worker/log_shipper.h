// LogShipper: sends the output of this worker's running attempts to the coordinator as
// LogChunks (proto/files.proto), for `idlepool logs` (issue 18).
//
// A task writes its stdout and stderr to two files (platform/process.h; the worker keeps a head
// of 8 MiB and a tail of 64 KiB of each). About once a second (`period`) the shipper's thread
// reads what each running attempt added to them since the last round and sends it as one chunk
// of at most `chunk_bytes`: that round's new stdout, then its new stderr (so the two interleave
// at the granularity of a round). Offsets count the attempt's output in that order.
//   - The first `in_order_bytes` of an attempt's output (what the coordinator keeps) are sent in
//     order, none skipped: a chatty task's chunks lag behind it for a while instead.
//   - Past them only the newest output of each round is sent (live readers stay current); what
//     is skipped is a gap between two chunks' offsets, which readers see as a line.
// When the attempt ends (Finish, from its runner thread, before its report is sent) what was not
// yet sent is sent at once, up to `in_order_bytes`, and then its newest chunk: a finished
// attempt's kept log is complete up to the coordinator's cap.
//
// Bounded: one chunk per attempt per round (64 KiB/s per attempt), one read buffer at a time;
// never on the task's path (it reads the files the task's pump writes). A chunk sent while no
// session is up is lost (Sender drops it): a gap again, never a retry.
//
// Threads: Start/Join from the worker's thread; Add, Finish, Drop from runner threads; the
// round runs on the shipper's own thread. One mutex for the table, one per attempt.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "worker/sender.h"
#include "worker/stop_signal.h"

namespace idlepool::worker {

struct LogShipperOptions {
  std::chrono::milliseconds period{1000};
  size_t chunk_bytes = size_t{64} << 10;  // LogChunk.data's cap
  // As much as the coordinator keeps per attempt (coordinator/log_keeper.h kDefaultLogCapBytes).
  uint64_t in_order_bytes = uint64_t{1} << 20;
};

class LogShipper {
 public:
  LogShipper(Sender send, LogShipperOptions options = {})
      : send_(std::move(send)), options_(options) {}
  ~LogShipper() { Join(); }

  // Runs rounds every `period` until `stop`.
  void Start(StopSignal& stop);
  void Join();

  // Ships attempt `id`'s output from its two log files (either may not exist yet).
  void Add(uint64_t id, std::string stdout_path, std::string stderr_path);
  // The attempt ended: sends what is left (see above) and stops shipping it.
  void Finish(uint64_t id);
  // Stops shipping it; sends nothing more (a killed attempt).
  void Drop(uint64_t id);

  // One round over every attempt (the thread's; tests call it directly).
  void Round();

 private:
  struct Shipping {
    std::mutex mu;
    std::string paths[2];      // stdout, stderr
    uint64_t pos[2] = {0, 0};  // bytes of each file read or skipped
    uint64_t offset = 0;       // the next chunk's offset in the attempt's output
    bool done = false;
  };
  // Sends at most one chunk of `s`'s new output; false when there was none. `final`: skip
  // nothing in order, only the newest chunk past in_order_bytes.
  bool ShipOne(uint64_t id, Shipping& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);

  const Sender send_;
  const LogShipperOptions options_;
  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Shipping>> attempts_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace idlepool::worker
