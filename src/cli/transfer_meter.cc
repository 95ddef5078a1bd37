#include "cli/transfer_meter.h"

#include <unistd.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/progress.h"
#include "platform/clock.h"

namespace idlepool::cli {
namespace {

constexpr auto kRedrawEvery = std::chrono::milliseconds(200);

// Binary units, as `ls -h` prints them: "1.5 MiB".
std::string Size(uint64_t n) {
  if (n < 1024) return absl::StrCat(n, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", v, units[u]);
}

std::string Rate(uint64_t bytes, double seconds) {
  return Size(static_cast<uint64_t>(static_cast<double>(bytes) / seconds)) + "/s";
}

}  // namespace

std::string MeterLine(const std::string& verb, uint64_t done, uint64_t total, double elapsed_s,
                      int width) {
  std::string line = absl::StrCat(verb, "  ", Size(done), " / ", Size(total));
  if (total > 0) absl::StrAppend(&line, "  ", done * 100 / total, "%");
  if (elapsed_s > 0 && done > 0) {
    absl::StrAppend(&line, "  ", Rate(done, elapsed_s));
    if (done < total) {
      const double left = static_cast<double>(total - done) * elapsed_s / static_cast<double>(done);
      absl::StrAppend(&line, "  ", ShortDuration(left), " left");
    }
  }
  return FitWidth(line, width);
}

std::string MeterSummary(const std::string& done_verb, uint64_t bytes, double elapsed_s) {
  std::string line =
      absl::StrCat(done_verb, " ", Size(bytes), " in ", absl::StrFormat("%.1f s", elapsed_s));
  if (elapsed_s > 0) absl::StrAppend(&line, " (", Rate(bytes, elapsed_s), ")");
  return line;
}

TransferMeter::TransferMeter(std::string verb, std::string done_verb)
    : verb_(std::move(verb)),
      done_verb_(std::move(done_verb)),
      terminal_(TerminalFor(STDERR_FILENO).fancy),
      start_(platform::SystemClock().Now()) {}

TransferMeter::~TransferMeter() { Finish(); }

double TransferMeter::Elapsed() const {
  return std::chrono::duration<double>(platform::SystemClock().Now() - start_).count();
}

void TransferMeter::Update(uint64_t done, uint64_t total) {
  done_ = done;
  if (!terminal_ || finished_) return;
  const core::MonoTime now = platform::SystemClock().Now();
  if (drawn_at_ && now - *drawn_at_ < kRedrawEvery && done < total) return;
  drawn_at_ = now;
  const int width = TerminalFor(STDERR_FILENO).style.width - 1;  // never wrap
  std::fprintf(stderr, "\r\033[K%s", MeterLine(verb_, done, total, Elapsed(), width).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void TransferMeter::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!terminal_ || done_ == 0) {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    return;
  }
  std::fprintf(stderr, "\r\033[K%s\n", MeterSummary(done_verb_, done_, Elapsed()).c_str());
  std::fflush(stderr);
}

}  // namespace idlepool::cli
