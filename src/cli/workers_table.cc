#include "cli/workers_table.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/progress.h"
#include "text/names.h"

namespace idlepool::cli {
namespace {

// "42s", "9m", "2h10m", "3d4h".
std::string Span(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m");
  if (s < 86400) {
    return s % 3600 >= 60 ? absl::StrCat(s / 3600, "h", (s % 3600) / 60, "m")
                          : absl::StrCat(s / 3600, "h");
  }
  return absl::StrCat(s / 86400, "d", (s % 86400) / 3600, "h");
}

// "1.2MB/s", "112MB/s", "850kB/s" (10^3 multiples, as network rates are quoted).
std::string ShortRate(uint64_t bytes_per_s) {
  const double b = static_cast<double>(bytes_per_s);
  char buf[32];
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3gGB/s", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3gMB/s", b / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3gkB/s", b / 1e3);
  return buf;
}

// The table's LINK column: "0.4ms 112MB/s↓ 98MB/s↑", "-" when never measured.
std::string LinkText(const v1::WorkerInfo& w) {
  if (!w.has_link()) return "-";
  char rtt[32];
  std::snprintf(rtt, sizeof rtt, "%.3gms", w.link().rtt_ms());
  return absl::StrCat(rtt, " ", ShortRate(w.link().down_bytes_per_s()), "↓ ",
                      ShortRate(w.link().up_bytes_per_s()), "↑");
}

// The GPUS column: how many devices it offers and each one's memory ("2: 40G,8G"), "-" for none.
std::string GpusText(const v1::WorkerInfo& w) {
  if (w.gpus_size() == 0) return "-";
  std::string out = std::to_string(w.gpus_size()) + ":";
  for (int i = 0; i < w.gpus_size(); ++i) {
    const uint64_t mb = w.gpus(i).memory_mb();
    char one[32];
    if (mb >= 1024) {
      std::snprintf(one, sizeof one, "%.0fG", static_cast<double>(mb) / 1024.0);
    } else {
      std::snprintf(one, sizeof one, "%lluM", static_cast<unsigned long long>(mb));
    }
    out += (i == 0 ? " " : ",") + std::string(one);
  }
  return out;
}

// The table's UP column: "93% up 2h10m/down 9m": the up fraction, then the mean up and down
// periods ("(no end seen)" when none of them ended: the time so far, a lower bound).
std::string UpText(const v1::WorkerInfo& w) {
  const auto& a = w.availability();
  if (a.observed_s() <= 0) return "-";
  auto mean = [](double mean_s, uint32_t ended, double total_s) -> std::string {
    if (total_s <= 0) return "-";
    return ended > 0 ? Span(mean_s) : Span(mean_s) + " (no end seen)";
  };
  const double up_s = a.up_fraction() * a.observed_s(), down_s = a.observed_s() - up_s;
  return absl::StrCat(static_cast<int>(a.up_fraction() * 100 + 0.5), "% up ",
                      mean(a.mean_up_s(), a.up_periods(), up_s), "/down ",
                      mean(a.mean_down_s(), a.down_periods(), down_s));
}

struct Column {
  const char* header;
  bool right = false;  // numbers
  int drop = 0;        // 0: always kept; else left out in this order (1 first) when narrow
  std::vector<std::string> cells;
  int width = 0;
};

std::vector<Column> Columns(const v1::ListWorkersReply& reply) {
  std::vector<Column> c = {{"WORKER"},         {"HOST", false, 7},    {"STATE"},
                           {"ACTIVITY"},       {"SLOTS", true, 8},    {"BUSY", true},
                           {"GPUS", false, 4}, {"SANDBOX", false, 5}, {"SEEN", true, 6},
                           {"LINK", false, 2}, {"CPU", true, 3},      {"UP", false, 1},
                           {"OWNER"}};
  for (const auto& x : reply.workers()) {
    // Only a worker that is there has an owner policy to show.
    const bool here = x.state() == "connected" || x.state() == "disconnected";
    std::string owner = !here || x.owner_state().empty() ? "-" : x.owner_state();
    if (here && !x.owner_reason().empty()) owner += " (" + x.owner_reason() + ")";
    char seen[32] = "-";
    if (x.last_seen_ms_ago() >= 0) {
      std::snprintf(seen, sizeof seen, "%.1fs", static_cast<double>(x.last_seen_ms_ago()) / 1000.0);
    }
    // Shown escaped: a row stored before names were checked, or a host name, may hold what
    // would not show (text/names.h). SANDBOX: its tier as its last Hello said ("-": not known).
    const std::vector<std::string> row = {
        text::VisibleText(x.worker()),
        text::VisibleText(x.hostname()),
        // STATE: unhealthy while it is out for its failures (the lines below the table say why).
        !x.unhealthy().empty() && here ? std::string("unhealthy") : x.state(),
        x.activity().empty() ? "-" : x.activity(),
        std::to_string(x.capacity().cpus()),
        std::to_string(x.slots_busy()),
        GpusText(x),
        x.sandbox().empty() ? "-" : text::VisibleText(x.sandbox()),
        seen,
        LinkText(x),
        x.cpu_score() > 0 ? std::to_string(static_cast<int64_t>(x.cpu_score() + 0.5)) : "-",
        UpText(x),
        text::VisibleText(owner)};
    for (size_t i = 0; i < c.size(); ++i) c[i].cells.push_back(row[i]);
  }
  for (Column& col : c) {
    col.width = VisibleWidth(col.header);
    for (const std::string& cell : col.cells) col.width = std::max(col.width, VisibleWidth(cell));
  }
  return c;
}

constexpr int kGap = 2;        // spaces between columns
constexpr int kMinOwner = 16;  // the owner column's least width before more columns go

int WidthOf(const std::vector<Column>& cols) {
  int w = 0;
  for (const Column& c : cols) w += c.width + kGap;
  return w - kGap;
}

std::string Cell(const Column& c, const std::string& text, bool last) {
  const int pad = c.width - VisibleWidth(text);
  if (last) return text;
  return c.right ? std::string(pad, ' ') + text : text + std::string(pad, ' ');
}

}  // namespace

std::string WorkersTable(const v1::ListWorkersReply& reply, int width) {
  std::vector<Column> cols = Columns(reply);
  if (width > 0) {
    for (int drop = 1; drop <= 8; ++drop) {
      std::vector<Column> rest = cols;
      rest.back().width = std::min(rest.back().width, kMinOwner);
      if (WidthOf(rest) <= width) break;
      cols.erase(std::remove_if(cols.begin(), cols.end(),
                                [drop](const Column& c) { return c.drop == drop; }),
                 cols.end());
    }
  }
  auto line = [&](auto text_of) {
    std::string out;
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i > 0) out += std::string(kGap, ' ');
      out += Cell(cols[i], text_of(cols[i]), i + 1 == cols.size());
    }
    return (width > 0 ? FitWidth(out, width) : out) + "\n";
  };
  std::string table = line([](const Column& c) { return std::string(c.header); });
  for (int r = 0; r < reply.workers_size(); ++r) {
    table += line([r](const Column& c) { return c.cells[r]; });
  }
  return table;
}

}  // namespace idlepool::cli
