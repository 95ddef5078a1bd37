// A job's timeline as a picture (SVG) and as a self-contained HTML report, from the
// Pool.GetJobTimeline reply. Used by `idlepool report` and the coordinator's HTTP server.
//
// Pure functions: no clock (a running attempt ends at timeline.now_ms), no I/O, no globals;
// thread-safe. All strings of the timeline (worker names, messages, log tails) are untrusted:
// they are escaped for XML/HTML, invalid UTF-8 and characters XML forbids become U+FFFD.
//
// The SVG: x is time since the job's submission (JobStatus.submitted_ms; the earliest attempt or
// event when that is 0) to its end (finished_ms, or now_ms while it runs), with ticks of
// readable steps (s, min, h, d); the submission time is printed in UTC under the axis. One lane
// per worker that ran an attempt, in the order of their first attempt's start (then by name); a
// worker running k attempts at once gets k rows in its lane. Drawn per lane, bottom to top:
//   - offline periods from WorkerEvents (disconnected/lost/left until the next connected):
//     <rect class="offline" data-kind=...> in grey;
//   - owner periods from WorkerEvents of kind "owner" (state suspend or vacate until the next
//     owner event, connected, disconnected, lost or left): a suspension (state suspend, attempts
//     frozen) is <rect class="suspension" data-state data-cause> hatched grey; a vacate (the
//     owner took the machine back: lid, battery, window, sleep...; it offers no work) is
//     <rect class="unavailable" data-state data-cause> hatched amber the other way, its <title>
//     "owner took the machine back: CAUSE"; both with their reason in the <title>;
//   - attempts: <rect class="attempt outcome-OUTCOME" data-attempt data-task data-worker>, with
//     task, attempt, worker, outcome, duration, exit code (only when it exited on its own:
//     succeeded or failed) and message in its <title>; colours
//     are the Okabe-Ito palette (safe for the common colour-vision deficiencies), with a legend;
//   - a preempted attempt gets a black triangle at the end of its bar: <polygon
//     class="preemption" data-attempt>;
//   - an attempt with next_attempt != 0 gets an arrow to that attempt's bar: <path
//     class="requeue" data-from data-to>.
// Scale: attempts narrower than min_bar_px that follow each other in one row (closer than
// min_bar_px) are merged into one block <rect class="merged outcome-MOST_COMMON" data-count>
// whose <title> counts its outcomes; a lone narrow attempt is drawn alone, at least 1 px wide.
// While more than max_bars bars and blocks would be drawn, the merge width doubles. Requeue
// arrows start only at attempts drawn alone; a block with preempted attempts gets one marker
// (data-count). So a 20,000-attempt job draws at most about max_bars bars.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "idlepool.pb.h"

namespace idlepool::report {

struct SvgOptions {
  int width_px = 1200;         // the SVG's width and viewBox width (it scales in a browser)
  int label_width_px = 160;    // the column of worker names, left of the lanes
  int row_height_px = 14;      // one row of bars
  int lane_padding_px = 3;     // above and below a lane's rows
  int max_rows_per_lane = 32;  // more attempts at once on one worker overlap in the last rows
  int max_label_chars = 24;    // worker names longer than this (code points) end with "…"
  double min_bar_px = 2;       // narrower attempts next to each other merge into one block
  int max_bars = 4000;         // bars + blocks; beyond it min_bar_px doubles (see above)
  bool legend = true;          // the colour legend under the axis
};

// The timeline as one <svg> element (no XML declaration: valid XML, and embeddable in HTML).
// Out-of-range options are clamped (width >= 320, heights >= 4, ...).
[[nodiscard]] std::string RenderTimelineSvg(const v1::JobTimeline& timeline,
                                            const SvgOptions& options = {});

struct ReportOptions {
  SvgOptions svg;
  // The log tails shown, at most this many bytes in all: the last attempt of each task and
  // every attempt that did not succeed first, then the others by attempt id; the rest say that
  // they were left out.
  size_t max_log_bytes = 8 << 20;
};

// One self-contained HTML document (inline CSS and SVG, no scripts, no external references):
// the job summary (state, tasks by state, attempts, failures, preemptions, suspensions,
// machine faults, lost work, bytes moved, submitted/finished in UTC, makespan, the prediction
// against the actual makespan when there is one), the timeline, a table of workers and a table
// of tasks with each attempt and its log tail in a <details> (open for failed and timed-out
// attempts; a print stylesheet shows every tail on paper). The prediction row gives the error as
// the CLI does, (predicted - actual) / actual, for a job that succeeded; the Exit column is blank
// for attempts that did not exit on their own. "Generated" is now_ms, in UTC.
[[nodiscard]] std::string RenderReportHtml(const v1::JobTimeline& timeline,
                                           const ReportOptions& options = {});

// Text escaped for XML/HTML text and attribute values (& < > " '), invalid UTF-8 and characters
// XML 1.0 forbids replaced by U+FFFD. Exposed for the HTTP server and tests.
[[nodiscard]] std::string EscapeXml(std::string_view text);

}  // namespace idlepool::report
