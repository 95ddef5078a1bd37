// The progress of `submit`'s uploads and `fetch`'s downloads: bytes done of the total, the rate
// and the time left, as one line redrawn in place on a terminal (stderr), ending with a summary
// line. Into a pipe or a file it writes nothing: scripts read stdout and stderr unchanged.
//
// MeterLine is pure (figures in, text out). TransferMeter reads the monotonic clock and writes to
// stderr; it belongs to one thread (the transfers call it on the caller's thread).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "core/types.h"

namespace idlepool::cli {

// "uploading inputs  120.0 MiB / 400.0 MiB  30%  12.3 MiB/s  23s left", cut to `width` columns.
// Rate and time left are left out until `elapsed_s` is above 0 and some bytes moved.
std::string MeterLine(const std::string& verb, uint64_t done, uint64_t total, double elapsed_s,
                      int width);
// "uploaded 400.0 MiB in 32.5 s (12.3 MiB/s)"
std::string MeterSummary(const std::string& done_verb, uint64_t bytes, double elapsed_s);

class TransferMeter {
 public:
  // verb: "uploading inputs"; done_verb: "uploaded inputs". Draws only when stderr is a
  // terminal (TerminalFor(STDERR_FILENO).fancy).
  TransferMeter(std::string verb, std::string done_verb);
  ~TransferMeter();  // Finish()
  TransferMeter(const TransferMeter&) = delete;
  TransferMeter& operator=(const TransferMeter&) = delete;

  // The figures so far: redrawn at most 5 times a second.
  void Update(uint64_t done, uint64_t total);
  // Replaces the line with the summary (when any byte moved). Idempotent.
  void Finish();

 private:
  double Elapsed() const;

  std::string verb_, done_verb_;
  bool terminal_ = false;
  bool drawn_ = false, finished_ = false;
  uint64_t done_ = 0;
  core::MonoTime start_{};
  std::optional<core::MonoTime> drawn_at_;
};

}  // namespace idlepool::cli
