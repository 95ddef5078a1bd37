// Terminal progress for `idlepool status` and `wait` (and `run`): per job a bar with succeeded,
// failed, running and pending segments, counts, percent, ETA, preemptions and suspensions, and
// the pool's workers by activity. Only for a terminal (TerminalFor says when); scripts and pipes
// get the plain text of main.cc unchanged, and --json is untouched.
//
// The formatting functions are pure: protos + `now` + a TermStyle in, text out (every line ends
// in '\n' and is at most TermStyle::width columns wide, counting one column per code point and
// none for the ANSI colour escapes). The terminal probing (TerminalFor) and LiveDisplay do I/O.
//
// Thread safety: the functions keep no state. A LiveDisplay belongs to one thread; RestoreTerminal
// is async-signal-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "idlepool.pb.h"

namespace idlepool::cli {

struct TermStyle {
  int width = 80;        // columns; callers pass at least kMinWidth (the formatters clamp to it)
  bool unicode = true;   // block characters and '·'; false: plain ASCII ("[###==---]")
  bool color = true;     // ANSI SGR colours (off under NO_COLOR)
};
inline constexpr int kMinWidth = 40;

// How to draw on `fd`. fancy: a terminal (isatty) whose TERM is set and not "dumb"; false means
// plain text. width: ioctl(TIOCGWINSZ), else $COLUMNS, else 80;
// at least kMinWidth. unicode: the locale (LC_ALL, LC_CTYPE, LANG: the first one set) names
// UTF-8. color: $NO_COLOR unset or empty (no-color.org).
struct Terminal {
  bool fancy = false;
  TermStyle style;
};
Terminal TerminalFor(int fd);

// The bar alone, exactly `cols` columns between the brackets: succeeded, then failed (and
// cancelled), then running, then pending. Segments are sized by largest remainder, and a
// segment with any task gets at least one column while there is room, so one failure in a
// million still shows. 0 tasks: all pending.
std::string ProgressBar(const v1::JobStatus& s, int cols, const TermStyle& style);

// A running job's time left. The rule (the dashboard's app.js eta() is the same; docs/guide/cli.md
// "Terminal output"): the prediction until a first round of tasks has finished, then the
// observed rate.
//   - finished = succeeded + failed + cancelled; a round = the tasks running now (at least 1),
//     at most 10% of the tasks (rounded up).
//   - finished >= a round, or no usable prediction (absent, not finite, <= 0) and finished > 0:
//     kRate, (tasks - finished) * (now - submitted) / finished.
//   - else with a prediction: its end, submitted + makespan_s, pushed back by the work lost to
//     preemptions and lost workers beyond what it expected (lost_ms - prediction.lost_work_s,
//     when positive) spread over the running tasks (at least 1): kPredicted while that end is
//     ahead of now, kOverdue (seconds past it) once passed; never a made-up shrinking number.
//   - else kUnknown (nothing finished, no prediction; or not running).
struct Eta {
  enum class Kind { kUnknown, kPredicted, kRate, kOverdue };
  Kind kind = Kind::kUnknown;
  double seconds = 0;  // kPredicted, kRate: left; kOverdue: past the (adjusted) predicted end
};
Eta EstimateEta(const v1::JobStatus& s, int64_t now_ms);

// The ETA as shown after "ETA ": "2m10s (predicted)", "2m10s", "overdue (predicted 3m00s)";
// empty for kUnknown.
std::string EtaText(const v1::JobStatus& s, const Eta& eta);

// "42s", "9m05s", "2h10m", "3d4h".
std::string ShortDuration(double seconds);

// Three lines for one job:
//   job 12  render  running  ETA 2m10s
//     [█████▓▒▒░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░]  412/1000  41%
//     400 succeeded · 3 failed · 8 running · 589 pending · 2 preemptions · 430 attempts
// The counts line keeps its parts most important first ("no worker fits a task" or "no worker
// allows host network", succeeded, failed, running, pending, cancelled, preemptions,
// suspensions, attempts) and, when narrow, drops the least important ones, but never a non-zero
// failed count or why the job waits; a zero failed count is left out. now_ms: wall clock, Unix ms
// (for the ETA).
std::string JobBlock(const v1::JobStatus& s, int64_t now_ms, const TermStyle& style);

// A worker's state in one word: WorkerInfo.activity when the coordinator says it, else derived
// from state, owner_state and attempts_running (coordinators before activity existed).
std::string ActivityOf(const v1::WorkerInfo& w);

// "workers: 3 running · 1 idle · 1 suspended · 2 lost" (a fixed order, then other words
// alphabetically); "workers: none" when the pool has none.
std::string WorkerSummary(const v1::ListWorkersReply& r, const TermStyle& style);

// One line per worker that has not left the pool: name, activity, slots busy/total.
std::string WorkerLines(const v1::ListWorkersReply& r, const TermStyle& style);

// `s` cut to `width` visible columns (ANSI escapes kept, a colour reset added when cut).
std::string FitWidth(const std::string& s, int width);
// Visible columns of `s`: code points outside ANSI escape sequences.
int VisibleWidth(const std::string& s);

// A block of lines redrawn in place on a terminal: each Draw moves the cursor back up over the
// previous block and overwrites it; the cursor is hidden while drawing. Finish leaves the last
// block on screen and shows the cursor again. SIGINT/SIGTERM arriving meanwhile (when not
// blocked) restore the cursor, end the line and then take their default action.
class LiveDisplay {
 public:
  explicit LiveDisplay(std::FILE* out);
  ~LiveDisplay();  // Finish()
  LiveDisplay(const LiveDisplay&) = delete;
  LiveDisplay& operator=(const LiveDisplay&) = delete;

  void Draw(const std::string& block);  // lines ending in '\n'
  void Finish();

 private:
  std::FILE* out_;
  int lines_ = 0;
  bool started_ = false;
};

// Shows the cursor again if a LiveDisplay hid it, and ends the line (async-signal-safe: a
// write(2) on the display's descriptor). For signal paths that exit without unwinding.
void RestoreTerminal();

}  // namespace idlepool::cli
