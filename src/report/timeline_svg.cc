#include "report/timeline_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_map>
#include <vector>

#include "report/internal.h"

namespace idlepool::report {
namespace {

using internal::Appendf;
using internal::FormatDuration;

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// One attempt as drawn.
struct Bar {
  const v1::TimelineAttempt* a = nullptr;
  int64_t begin_ms = 0, end_ms = 0;
  int lane = 0, row = 0;
  double x0 = 0, x1 = 0;
  int outcome = 0;  // internal::OutcomeIndex
};

struct Lane {
  std::string worker;
  int64_t first_ms = 0;
  int rows = 1;
  double y = 0, height = 0;
  std::vector<size_t> bars;  // by begin, then attempt id
};

// A run of bars of one row drawn as one element: a bar alone, or a merged block.
struct Piece {
  std::vector<size_t> bars;
  double x0 = 0, x1 = 0;
};

// Cuts `s` to at most `max_chars` code points (of valid UTF-8; other bytes count as one),
// ending with "…" when cut.
std::string Shorten(const std::string& s, int max_chars) {
  size_t i = 0;
  int chars = 0;
  while (i < s.size() && chars < max_chars) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4 : 1;
    if (i + len > s.size()) len = 1;
    i += len;
    ++chars;
  }
  if (i >= s.size()) return s;
  return s.substr(0, i) + "\xE2\x80\xA6";
}

// The step between axis ticks: the smallest readable step at least `min_px` apart.
int64_t TickStep(int64_t span_ms, double plot_w, double min_px) {
  static constexpr int64_t kSteps[] = {
      1, 2, 5, 10, 20, 50, 100, 200, 500,                                  // ms
      1'000, 2'000, 5'000, 10'000, 15'000, 30'000,                         // s
      60'000, 120'000, 300'000, 600'000, 900'000, 1'800'000,               // min
      3'600'000, 7'200'000, 10'800'000, 21'600'000, 43'200'000,            // h
      86'400'000, 172'800'000, 604'800'000, 1'209'600'000, 2'592'000'000,  // d
  };
  for (int64_t step : kSteps) {
    if (static_cast<double>(step) * plot_w / static_cast<double>(span_ms) >= min_px) return step;
  }
  return std::max<int64_t>(span_ms, 1);
}

// Groups each row's bars into pieces with merge width `thr` px (see the header).
std::vector<Piece> Pieces(const std::vector<Bar>& bars, const std::vector<Lane>& lanes,
                          double thr) {
  std::vector<Piece> out;
  for (const Lane& lane : lanes) {
    for (int row = 0; row < lane.rows; ++row) {
      std::vector<size_t> idx;
      for (size_t b : lane.bars) {
        if (bars[b].row == row) idx.push_back(b);
      }
      size_t i = 0;
      while (i < idx.size()) {
        const Bar& b = bars[idx[i]];
        Piece p;
        p.bars.push_back(idx[i]);
        p.x0 = b.x0;
        p.x1 = b.x1;
        ++i;
        if (b.x1 - b.x0 < thr) {
          while (i < idx.size()) {
            const Bar& c = bars[idx[i]];
            if (c.x1 - c.x0 >= thr || c.x0 > p.x1 + thr || std::max(p.x1, c.x1) - p.x0 > thr) break;
            p.bars.push_back(idx[i]);
            p.x1 = std::max(p.x1, c.x1);
            ++i;
          }
        }
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

void AppendNum(std::string& out, double v) { Appendf(out, "%.1f", v); }

void AppendRect(std::string& out, double x, double y, double w, double h) {
  out += " x=\"";
  AppendNum(out, x);
  out += "\" y=\"";
  AppendNum(out, y);
  out += "\" width=\"";
  AppendNum(out, w);
  out += "\" height=\"";
  AppendNum(out, h);
  out += '"';
}

std::string AttemptTitle(const v1::TimelineAttempt& a, int64_t begin_ms, int64_t end_ms,
                         int64_t t0) {
  std::string t;
  Appendf(t, "task %u, attempt %llu on ", a.task(), static_cast<unsigned long long>(a.attempt()));
  t += a.worker();
  t += "\n";
  t += a.outcome();
  t += a.outcome() == "running" ? " for " : " after ";
  t += FormatDuration(end_ms - begin_ms);
  t += " (+" + FormatDuration(begin_ms - t0) + " to +" + FormatDuration(end_ms - t0) + ")";
  const bool exited = internal::ExitedOnItsOwn(a.outcome());
  if (exited) Appendf(t, "\nexit code %d", a.exit_code());
  if (!a.message().empty()) t += (exited ? ": " : "\n") + a.message();
  if (a.suspensions() > 0) Appendf(t, "\nsuspended %u times", a.suspensions());
  if (a.lost_ms() > 0) t += "\nwork lost: " + FormatDuration(static_cast<int64_t>(a.lost_ms()));
  if (a.next_attempt() != 0) {
    Appendf(t, "\nrequeued as attempt %llu", static_cast<unsigned long long>(a.next_attempt()));
  }
  return t;
}

}  // namespace

std::string EscapeXml(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default:
          if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            out += kReplacement;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (ok) {
      const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = cp >= min_cp && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE &&
           cp != 0xFFFF;
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

namespace {

// " (NAME), user USER" of a job, either left out when empty, escaped for XML.
std::string NameAndUser(const v1::JobStatus& job) {
  std::string out;
  if (!job.name().empty()) out += " (" + EscapeXml(job.name()) + ")";
  if (!job.user().empty()) out += ", user " + EscapeXml(job.user());
  return out;
}

}  // namespace

std::string RenderTimelineSvg(const v1::JobTimeline& t, const SvgOptions& options) {
  SvgOptions o = options;
  o.width_px = std::clamp(o.width_px, 320, 100'000);
  o.label_width_px = std::clamp(o.label_width_px, 40, o.width_px / 2);
  o.row_height_px = std::clamp(o.row_height_px, 4, 200);
  o.lane_padding_px = std::clamp(o.lane_padding_px, 0, 100);
  o.max_rows_per_lane = std::clamp(o.max_rows_per_lane, 1, 1024);
  o.max_label_chars = std::clamp(o.max_label_chars, 4, 1000);
  if (!(o.min_bar_px >= 0.1)) o.min_bar_px = 0.1;  // also NaN
  o.max_bars = std::max(o.max_bars, 1);

  const internal::Window win = internal::WindowOf(t);
  const int64_t t0 = win.begin_ms, span = win.end_ms - win.begin_ms;
  const double plot_x0 = o.label_width_px;
  const double plot_w = o.width_px - o.label_width_px - 16;
  auto X = [&](int64_t ms) {
    return plot_x0 + static_cast<double>(ms - t0) * plot_w / static_cast<double>(span);
  };

  // Bars and lanes (a lane per worker, by first start, then name).
  std::vector<Bar> bars;
  bars.reserve(static_cast<size_t>(t.attempts_size()));
  std::map<std::string, int64_t> first;
  for (const auto& a : t.attempts()) {
    Bar b;
    b.a = &a;
    b.begin_ms = a.started_ms() != 0 ? a.started_ms() : t0;
    b.end_ms = std::max(internal::AttemptEnd(a, t.now_ms()), b.begin_ms);
    b.x0 = X(b.begin_ms);
    b.x1 = X(b.end_ms);
    b.outcome = internal::OutcomeIndex(a.outcome());
    bars.push_back(b);
    auto [it, fresh] = first.emplace(a.worker(), b.begin_ms);
    if (!fresh) it->second = std::min(it->second, b.begin_ms);
  }
  std::vector<Lane> lanes;
  for (const auto& [worker, ms] : first) {
    Lane lane;
    lane.worker = worker;
    lane.first_ms = ms;
    lanes.push_back(std::move(lane));
  }
  std::stable_sort(lanes.begin(), lanes.end(),
                   [](const Lane& a, const Lane& b) { return a.first_ms < b.first_ms; });
  std::map<std::string, int> lane_of;
  for (size_t i = 0; i < lanes.size(); ++i) lane_of[lanes[i].worker] = static_cast<int>(i);
  for (size_t i = 0; i < bars.size(); ++i) {
    bars[i].lane = lane_of[bars[i].a->worker()];
    lanes[bars[i].lane].bars.push_back(i);
  }
  // Rows: attempts that overlap on one worker go to different rows (first free row).
  for (Lane& lane : lanes) {
    std::stable_sort(lane.bars.begin(), lane.bars.end(), [&](size_t a, size_t b) {
      if (bars[a].begin_ms != bars[b].begin_ms) return bars[a].begin_ms < bars[b].begin_ms;
      return bars[a].a->attempt() < bars[b].a->attempt();
    });
    std::vector<int64_t> row_end;
    for (size_t b : lane.bars) {
      int row = -1;
      for (size_t r = 0; r < row_end.size(); ++r) {
        if (row_end[r] <= bars[b].begin_ms) {
          row = static_cast<int>(r);
          break;
        }
      }
      if (row < 0 && static_cast<int>(row_end.size()) < o.max_rows_per_lane) {
        row = static_cast<int>(row_end.size());
        row_end.push_back(0);
      }
      if (row < 0) {  // full: the row that frees first
        row = static_cast<int>(std::min_element(row_end.begin(), row_end.end()) -
                               row_end.begin());
      }
      row_end[row] = std::max(row_end[row], bars[b].end_ms);
      bars[b].row = row;
    }
    lane.rows = std::max<int>(1, static_cast<int>(row_end.size()));
  }

  // Vertical layout.
  const double axis_y = 30;
  double y = axis_y + 6;
  for (Lane& lane : lanes) {
    lane.y = y;
    lane.height = 2.0 * o.lane_padding_px + lane.rows * o.row_height_px;
    y += lane.height;
  }
  if (lanes.empty()) y += 40;  // room for "no attempts"
  const double lanes_bottom = y;
  auto RowY = [&](const Bar& b) {
    return lanes[b.lane].y + o.lane_padding_px + b.row * o.row_height_px;
  };

  // Merge width: doubles while too many pieces would be drawn.
  double thr = o.min_bar_px;
  std::vector<Piece> pieces = Pieces(bars, lanes, thr);
  while (static_cast<int>(pieces.size()) > o.max_bars && thr < plot_w) {
    thr *= 2;
    pieces = Pieces(bars, lanes, thr);
  }
  std::vector<bool> alone(bars.size(), false);
  for (const Piece& p : pieces) {
    if (p.bars.size() == 1) alone[p.bars[0]] = true;
  }

  // Legend layout.
  const double caption_y = lanes_bottom + 16;
  double legend_y = caption_y + 18;
  struct Item {
    std::string kind;  // outcome index as text, or suspension/offline/preemption/requeue
    std::string label;
  };
  std::vector<Item> items;
  for (int i = 0; i < internal::kOutcomeCount; ++i) {
    items.push_back({std::to_string(i), internal::kOutcomes[i].label});
  }
  items.push_back({"suspension", "owner suspension"});
  items.push_back({"unavailable", "taken back by owner"});
  items.push_back({"offline", "disconnected / lost"});
  items.push_back({"preemption", "preemption"});
  items.push_back({"requeue", "requeued to"});
  const double item_w = 145;  // fits the longest label ("taken back by owner") at 11 px
  const int per_line = std::max(1, static_cast<int>((o.width_px - 20) / item_w));
  const int legend_lines =
      o.legend ? (static_cast<int>(items.size()) + per_line - 1) / per_line : 0;
  const double height = legend_y + legend_lines * 18 + 6;

  std::string out;
  out.reserve(4096 + pieces.size() * 260 + static_cast<size_t>(t.events_size()) * 40);
  Appendf(out,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"idlepool-timeline\" width=\"%d\" "
          "height=\"%.0f\" viewBox=\"0 0 %d %.0f\" font-family=\"sans-serif\" font-size=\"11\" "
          "data-job=\"%llu\">",
          o.width_px, height, o.width_px, height, static_cast<unsigned long long>(t.job().job()));
  Appendf(out, "<title>job %llu", static_cast<unsigned long long>(t.job().job()));
  out += NameAndUser(t.job());
  out += ": timeline of its attempts per worker</title>";
  out +=
      "<defs>"
      "<pattern id=\"idlepool-hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#8c8c8c\" stroke-width=\"2.5\"/>"
      "</pattern>"
      "<pattern id=\"idlepool-vacate\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
      "patternTransform=\"rotate(-45)\"><rect width=\"6\" height=\"6\" fill=\"#fbefdd\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c99a5b\" stroke-width=\"1.5\"/>"
      "</pattern>"
      "<marker id=\"idlepool-arrow\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" "
      "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" "
      "fill=\"#333333\"/></marker>"
      "</defs>";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>";

  // Lane backgrounds and names.
  out += "<g class=\"lanes\">";
  for (size_t i = 0; i < lanes.size(); ++i) {
    const Lane& lane = lanes[i];
    out += "<rect";
    AppendRect(out, 0, lane.y, o.width_px, lane.height);
    out += i % 2 ? " fill=\"#ffffff\"/>" : " fill=\"#f4f4f4\"/>";
    const std::string name = EscapeXml(lane.worker);
    out += "<text class=\"lane\" data-worker=\"" + name + "\" text-anchor=\"end\"";
    Appendf(out, " x=\"%d\" y=\"%.1f\">", o.label_width_px - 6,
            lane.y + o.lane_padding_px + o.row_height_px / 2.0 + 4);
    out += "<title>" + name + "</title>" + EscapeXml(Shorten(lane.worker, o.max_label_chars));
    out += "</text>";
  }
  out += "</g>";
  if (lanes.empty()) {
    Appendf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555555\">no attempts</text>", plot_x0 + 8,
            axis_y + 30);
  }

  // Axis: ticks and grid lines at readable steps from the submission.
  const int64_t step = TickStep(span, plot_w, 70);
  out += "<g class=\"axis\" fill=\"#333333\">";
  for (int64_t off = 0; off <= span; off += step) {
    const double x = X(t0 + off);
    Appendf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cccccc\" "
            "stroke-width=\"0.5\"/>",
            x, axis_y - 4, x, lanes_bottom);
    out += x + 30 > o.width_px ? "<text text-anchor=\"end\"" : "<text text-anchor=\"middle\"";
    Appendf(out, " x=\"%.1f\" y=\"%.1f\">", x, axis_y - 8);
    out += off == 0 ? std::string("0") : "+" + FormatDuration(off);
    out += "</text>";
  }
  Appendf(out, "<text x=\"%d\" y=\"%.1f\">", 4, axis_y - 8);
  out += "worker</text>";
  Appendf(out, "<text x=\"%.1f\" y=\"%.1f\">", plot_x0, caption_y);
  out += "time since submission, " + internal::FormatUtc(t0);
  if (t.truncated()) {
    Appendf(out, "; only the newest %d attempts are shown", t.attempts_size());
  }
  if (thr > o.min_bar_px || pieces.size() < bars.size()) {
    Appendf(out, "; attempts narrower than %.0f px merged", thr);
  }
  out += "</text></g>";

  // Offline periods and owner suspensions under the bars; sub-pixel neighbours merge.
  const std::vector<internal::Period> periods = internal::PeriodsOf(t, win);
  out += "<g class=\"periods\">";
  for (size_t i = 0; i < periods.size();) {
    const internal::Period& p = periods[i];
    auto it = lane_of.find(p.worker);
    if (it == lane_of.end()) {
      ++i;
      continue;
    }
    double x0 = X(p.begin_ms), x1 = X(p.end_ms);
    int64_t end_ms = p.end_ms;
    size_t j = i + 1, count = 1;
    while (j < periods.size() && periods[j].worker == p.worker &&
           periods[j].suspension == p.suspension && periods[j].state == p.state &&
           X(periods[j].begin_ms) <= x1 + 1) {
      x1 = std::max(x1, X(periods[j].end_ms));
      end_ms = std::max(end_ms, periods[j].end_ms);
      ++j;
      ++count;
    }
    const Lane& lane = lanes[it->second];
    // An owner's vacate is not a suspension: the machine was taken back (lid, battery, window,
    // sleep...) and offers no work until the owner lets it run again.
    const bool vacate = p.suspension && p.state == "vacate";
    out += vacate          ? "<rect class=\"unavailable\""
           : p.suspension ? "<rect class=\"suspension\""
                          : "<rect class=\"offline\"";
    out += " data-worker=\"" + EscapeXml(p.worker) + "\" data-state=\"" + EscapeXml(p.state) + "\"";
    if (p.suspension) out += " data-cause=\"" + EscapeXml(p.cause) + "\"";
    if (count > 1) Appendf(out, " data-count=\"%zu\"", count);
    AppendRect(out, x0, lane.y, std::max(x1 - x0, 1.0), lane.height);
    out += vacate          ? " fill=\"url(#idlepool-vacate)\">"
           : p.suspension ? " fill=\"url(#idlepool-hatch)\">"
                          : " fill=\"#d0d0d0\">";
    std::string title;
    bool reason_said = false;
    if (vacate) {
      title = "owner took the machine back: ";
      if (!p.cause.empty()) {
        title += p.cause;
      } else if (!p.reason.empty()) {
        title += p.reason;
        reason_said = true;
      } else {
        title += "no cause given";
      }
      title += "\n";
    } else if (p.suspension) {
      title = "suspended for the owner";
      title += p.cause.empty() ? std::string() : " (" + p.cause + ")";
      title += ": ";
    } else {
      title = p.state == "lost" ? "lost (lease expired)" : p.state;
      title += ": ";
    }
    title += p.worker + ", +" + FormatDuration(p.begin_ms - t0) + " for " +
             FormatDuration(end_ms - p.begin_ms);
    if (count > 1) Appendf(title, " (%zu periods)", count);
    if (!p.reason.empty() && !reason_said) title += "\n" + p.reason;
    out += "<title>" + EscapeXml(title) + "</title></rect>";
    i = j;
  }
  out += "</g>";

  // Attempts: bars alone, merged blocks.
  const double bar_h = std::max(2, o.row_height_px - 2);
  out += "<g class=\"attempts\" stroke=\"#ffffff\" stroke-width=\"0.5\">";
  std::string markers;
  for (const Piece& p : pieces) {
    const Bar& b = bars[p.bars[0]];
    const double by = RowY(b) + 1;
    if (p.bars.size() == 1) {
      const v1::TimelineAttempt& a = *b.a;
      const auto& style = internal::StyleOf(b.outcome);
      Appendf(out, "<rect class=\"attempt outcome-%s\" data-attempt=\"%llu\" data-task=\"%u\"",
              style.outcome, static_cast<unsigned long long>(a.attempt()), a.task());
      out += " data-worker=\"" + EscapeXml(a.worker()) + "\"";
      AppendRect(out, b.x0, by, std::max(b.x1 - b.x0, 1.0), bar_h);
      Appendf(out, " fill=\"%s\"><title>", style.fill);
      out += EscapeXml(AttemptTitle(a, b.begin_ms, b.end_ms, t0)) + "</title></rect>";
      if (b.outcome == internal::OutcomeIndex("preempted")) {
        const double mx = std::max(b.x1, b.x0 + 1);
        Appendf(markers,
                "<polygon class=\"preemption\" data-attempt=\"%llu\" points=\"%.1f,%.1f %.1f,%.1f "
                "%.1f,%.1f\" fill=\"#000000\"><title>preempted: ",
                static_cast<unsigned long long>(a.attempt()), mx - 4, by - 1, mx + 4, by - 1, mx,
                by + 6);
        markers += EscapeXml(a.message().empty() ? a.worker() : a.message()) + "</title></polygon>";
      }
      continue;
    }
    std::array<size_t, internal::kOutcomeCount + 1> counts{};
    uint32_t task_lo = UINT32_MAX, task_hi = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i : p.bars) {
      ++counts[bars[i].outcome];
      task_lo = std::min(task_lo, bars[i].a->task());
      task_hi = std::max(task_hi, bars[i].a->task());
      lo = std::min(lo, bars[i].begin_ms);
      hi = std::max(hi, bars[i].end_ms);
    }
    const int dominant =
        static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin());
    const auto& style = internal::StyleOf(dominant);
    Appendf(out, "<rect class=\"merged outcome-%s\" data-count=\"%zu\"", style.outcome,
            p.bars.size());
    out += " data-worker=\"" + EscapeXml(b.a->worker()) + "\"";
    AppendRect(out, p.x0, by, std::max(p.x1 - p.x0, 1.0), bar_h);
    Appendf(out, " fill=\"%s\" fill-opacity=\"0.75\"><title>", style.fill);
    std::string title;
    Appendf(title, "%zu attempts merged (each narrower than %.0f px):", p.bars.size(), thr);
    for (int k = 0; k <= internal::kOutcomeCount; ++k) {
      if (counts[k]) Appendf(title, " %zu %s,", counts[k], internal::StyleOf(k).label);
    }
    title.pop_back();
    Appendf(title, "\ntasks %u to %u on ", task_lo, task_hi);
    title += b.a->worker() + ", +" + FormatDuration(lo - t0) + " to +" + FormatDuration(hi - t0);
    out += EscapeXml(title) + "</title></rect>";
    const size_t preempted = counts[internal::OutcomeIndex("preempted")];
    if (preempted > 0) {
      Appendf(markers,
              "<polygon class=\"preemption\" data-count=\"%zu\" points=\"%.1f,%.1f %.1f,%.1f "
              "%.1f,%.1f\" fill=\"#000000\"><title>%zu preemptions</title></polygon>",
              preempted, p.x1 - 4, by - 1, p.x1 + 4, by - 1, p.x1, by + 6, preempted);
    }
  }
  out += "</g>";

  // Requeue arrows, from a bar drawn alone to the bar of the task's next attempt.
  std::unordered_map<uint64_t, size_t> by_id;
  by_id.reserve(bars.size());
  for (size_t i = 0; i < bars.size(); ++i) by_id.emplace(bars[i].a->attempt(), i);
  out += "<g class=\"requeues\" fill=\"none\" stroke=\"#333333\" stroke-width=\"1\">";
  for (size_t i = 0; i < bars.size(); ++i) {
    const v1::TimelineAttempt& a = *bars[i].a;
    if (a.next_attempt() == 0 || !alone[i]) continue;
    auto it = by_id.find(a.next_attempt());
    if (it == by_id.end()) continue;
    const Bar& from = bars[i];
    const Bar& to = bars[it->second];
    const double x1 = std::max(from.x1, from.x0 + 1), y1 = RowY(from) + 1 + bar_h / 2;
    const double x2 = to.x0, y2 = RowY(to) + 1 + bar_h / 2;
    const double dx = std::max(12.0, std::fabs(x2 - x1) / 2);
    Appendf(out,
            "<path class=\"requeue\" data-from=\"%llu\" data-to=\"%llu\" d=\"M%.1f,%.1f "
            "C%.1f,%.1f %.1f,%.1f %.1f,%.1f\" marker-end=\"url(#idlepool-arrow)\">",
            static_cast<unsigned long long>(a.attempt()),
            static_cast<unsigned long long>(a.next_attempt()), x1, y1, x1 + dx, y1, x2 - dx, y2,
            x2, y2);
    Appendf(out, "<title>task %u: attempt %llu requeued as attempt %llu</title></path>", a.task(),
            static_cast<unsigned long long>(a.attempt()),
            static_cast<unsigned long long>(a.next_attempt()));
  }
  out += "</g>";
  out += "<g class=\"markers\">" + markers + "</g>";

  if (o.legend) {
    out += "<g class=\"legend\">";
    for (size_t i = 0; i < items.size(); ++i) {
      const double lx = 10 + static_cast<double>(i % per_line) * item_w;
      const double ly = legend_y + static_cast<double>(i / per_line) * 18;
      const Item& it = items[i];
      if (it.kind == "suspension") {
        Appendf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" "
                     "fill=\"url(#idlepool-hatch)\"/>", lx, ly);
      } else if (it.kind == "unavailable") {
        Appendf(out, "<rect class=\"legend-unavailable\" x=\"%.1f\" y=\"%.1f\" width=\"14\" "
                     "height=\"10\" fill=\"url(#idlepool-vacate)\" stroke=\"#c99a5b\" "
                     "stroke-width=\"0.5\"/>", lx, ly);
      } else if (it.kind == "offline") {
        Appendf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"#d0d0d0\"/>",
                lx, ly);
      } else if (it.kind == "preemption") {
        Appendf(out, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"#000000\"/>", lx + 3,
                ly + 1, lx + 11, ly + 1, lx + 7, ly + 8);
      } else if (it.kind == "requeue") {
        Appendf(out,
                "<path d=\"M%.1f,%.1f L%.1f,%.1f\" stroke=\"#333333\" fill=\"none\" "
                "marker-end=\"url(#idlepool-arrow)\"/>", lx, ly + 5, lx + 14, ly + 5);
      } else {
        Appendf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>", lx,
                ly, internal::StyleOf(std::stoi(it.kind)).fill);
      }
      Appendf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", lx + 19, ly + 9, it.label.c_str());
    }
    out += "</g>";
  }
  out += "</svg>";
  return out;
}

}  // namespace idlepool::report
