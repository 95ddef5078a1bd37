#include "cli/progress.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace idlepool::cli {
namespace {

// ANSI SGR sequences.
constexpr const char* kReset = "\x1b[0m";
constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kRed = "\x1b[31m";
constexpr const char* kYellow = "\x1b[33m";
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kBold = "\x1b[1m";

std::string Paint(const TermStyle& st, const char* sgr, const std::string& s) {
  return st.color && *sgr != '\0' && !s.empty() ? absl::StrCat(sgr, s, kReset) : s;
}

std::string Repeat(std::string_view glyph, int n) {
  std::string r;
  for (int i = 0; i < n; ++i) r.append(glyph);
  return r;
}

const char* Sep(const TermStyle& st) { return st.unicode ? " · " : ", "; }

// One part of a counts line; `keep`: shown even when less important parts must go.
struct Part {
  std::string text;
  bool keep = false;
};

// The parts that fit in `width` columns after `prefix`, joined by the style's separator, in
// their order (most important first): every kept part, then the others in order while they fit
// next to the kept ones; the first that does not fit ends the optional ones. The line is cut to
// `width` only if the kept parts alone do not fit.
std::string JoinFitting(const std::string& prefix, const std::vector<Part>& parts, int width,
                        const TermStyle& st) {
  const int sep = VisibleWidth(Sep(st));
  int used = VisibleWidth(prefix);
  int kept = 0;
  for (const auto& p : parts) {
    if (p.keep) used += (kept++ ? sep : 0) + VisibleWidth(p.text);
  }
  std::vector<bool> shown(parts.size(), false);
  int n = kept;
  bool full = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].keep) {
      shown[i] = true;
      continue;
    }
    if (full) continue;
    const int w = (n ? sep : 0) + VisibleWidth(parts[i].text);
    if (used + w > width) {
      full = true;
      continue;
    }
    used += w;
    ++n;
    shown[i] = true;
  }
  std::string line = prefix;
  bool first = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!shown[i]) continue;
    absl::StrAppend(&line, first ? "" : Sep(st), parts[i].text);
    first = false;
  }
  return FitWidth(line, width);
}


int Digits(uint64_t n) {
  int d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

// The fixed order of WorkerSummary; other words follow alphabetically.
constexpr std::array<std::string_view, 10> kActivityOrder = {
    "running", "idle",   "suspended",    "on_battery", "hot",
    "lid_closed", "outside_window", "disconnected", "lost", "left"};

int ActivityRank(const std::string& a) {
  for (size_t i = 0; i < kActivityOrder.size(); ++i) {
    if (a == kActivityOrder[i]) return static_cast<int>(i);
  }
  return static_cast<int>(kActivityOrder.size());
}

const char* ActivityColor(const std::string& a) {
  if (a == "running") return kGreen;
  if (a == "idle") return "";
  if (a == "lost" || a == "disconnected" || a == "unhealthy") return kRed;
  if (a == "left") return kDim;
  return kYellow;  // the owner has the machine: suspended, on_battery, hot, lid_closed, ...
}

std::string Words(const std::string& activity) {
  return absl::StrReplaceAll(activity, {{"_", " "}});
}

std::atomic<int> g_hidden_fd{-1};  // the descriptor whose cursor a LiveDisplay hid; -1: none

constexpr char kShowCursorNewline[] = "\x1b[?25h\n";

void OnSignal(int sig) {
  RestoreTerminal();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

Terminal TerminalFor(int fd) {
  Terminal t;
  const char* term = std::getenv("TERM");
  t.fancy = ::isatty(fd) == 1 && term != nullptr && *term != '\0' &&
            std::string_view(term) != "dumb";
  int width = 0;
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) width = ws.ws_col;
  if (width == 0) {
    if (const char* c = std::getenv("COLUMNS"); c != nullptr) width = std::atoi(c);
  }
  if (width <= 0) width = 80;
  t.style.width = std::max(width, kMinWidth);
  const char* loc = nullptr;
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') {
      loc = v;
      break;
    }
  }
  std::string l = loc ? loc : "";
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  t.style.unicode = l.find("utf-8") != std::string::npos || l.find("utf8") != std::string::npos;
  const char* no_color = std::getenv("NO_COLOR");
  t.style.color = no_color == nullptr || *no_color == '\0';
  return t;
}

int VisibleWidth(const std::string& s) {
  int cols = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = s[i];
    if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= 0x40 && s[i] <= 0x7e)) ++i;  // to the final byte
      continue;
    }
    cols += (c & 0xC0) != 0x80;
  }
  return cols;
}

std::string FitWidth(const std::string& s, int width) {
  if (VisibleWidth(s) <= width) return s;
  std::string out;
  int cols = 0;
  bool escapes = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = s[i];
    if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7e)) ++j;
      out.append(s, i, j + 1 - i);
      escapes = true;
      i = j;
      continue;
    }
    if ((c & 0xC0) != 0x80) {
      if (cols == width) break;
      ++cols;
    }
    out.push_back(static_cast<char>(c));
  }
  if (escapes) out += kReset;
  return out;
}

std::string ShortDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(0.0, seconds) + 0.5);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  return absl::StrCat(s / 86400, "d", (s % 86400) / 3600, "h");
}

std::string ProgressBar(const v1::JobStatus& s, int cols, const TermStyle& st) {
  cols = std::max(cols, 1);
  // succeeded, failed + cancelled, running, pending (whatever is left of `tasks`).
  const uint64_t total = s.tasks();
  std::array<uint64_t, 4> n = {s.succeeded(), uint64_t{s.failed()} + s.cancelled(), s.running(),
                               0};
  const uint64_t counted = n[0] + n[1] + n[2];
  n[3] = total > counted ? total - counted : 0;
  const uint64_t sum = n[0] + n[1] + n[2] + n[3];
  std::array<int, 4> w = {0, 0, 0, cols};
  if (sum > 0) {
    // Largest remainder: floors, then the leftover columns to the largest fractions (ties to the
    // earlier segment).
    std::array<uint64_t, 4> rem{};
    int used = 0;
    for (int i = 0; i < 4; ++i) {
      const unsigned __int128 x = static_cast<unsigned __int128>(n[i]) * cols;
      w[i] = static_cast<int>(x / sum);
      rem[i] = static_cast<uint64_t>(x % sum);
      used += w[i];
    }
    for (; used < cols; ++used) {
      int best = 0;
      for (int i = 1; i < 4; ++i) {
        if (rem[i] > rem[best]) best = i;
      }
      ++w[best];
      rem[best] = 0;
    }
    // A segment with tasks shows at least one column, taken from the widest one.
    for (int i = 0; i < 4; ++i) {
      if (n[i] == 0 || w[i] > 0) continue;
      const int widest = static_cast<int>(std::max_element(w.begin(), w.end()) - w.begin());
      if (w[widest] > 1) {
        --w[widest];
        w[i] = 1;
      }
    }
  }
  static constexpr std::array<const char*, 4> kUnicode = {"█", "✗", "▒", "░"};
  static constexpr std::array<const char*, 4> kAscii = {"#", "x", "=", "-"};
  static constexpr std::array<const char*, 4> kColor = {kGreen, kRed, kYellow, kDim};
  std::string bar;
  for (int i = 0; i < 4; ++i) {
    bar += Paint(st, kColor[i], Repeat(st.unicode ? kUnicode[i] : kAscii[i], w[i]));
  }
  return bar;
}

Eta EstimateEta(const v1::JobStatus& s, int64_t now_ms) {
  Eta eta;
  if (s.state() != "running" || s.submitted_ms() <= 0) return eta;
  const uint64_t finished = uint64_t{s.succeeded()} + s.failed() + s.cancelled();
  const uint64_t left = s.tasks() > finished ? s.tasks() - finished : 0;
  const double elapsed_s = static_cast<double>(now_ms - s.submitted_ms()) / 1000.0;
  const uint64_t tenth = (uint64_t{s.tasks()} + 9) / 10;
  const uint64_t round = std::max<uint64_t>(1, std::min<uint64_t>(tenth, s.running()));
  const bool predicted = s.has_prediction() && std::isfinite(s.prediction().makespan_s()) &&
                         s.prediction().makespan_s() > 0;
  if (finished > 0 && elapsed_s > 0 && (finished >= round || !predicted)) {
    eta.kind = Eta::Kind::kRate;
    eta.seconds = elapsed_s / static_cast<double>(finished) * static_cast<double>(left);
    return eta;
  }
  if (!predicted) return eta;
  const double expected_loss_s =
      std::isfinite(s.prediction().lost_work_s()) ? s.prediction().lost_work_s() : 0;
  const double extra_loss_s =
      std::max(0.0, static_cast<double>(s.lost_ms()) / 1000.0 - expected_loss_s) /
      static_cast<double>(std::max<uint32_t>(1, s.running()));
  const double ahead_s = s.prediction().makespan_s() + extra_loss_s - elapsed_s;
  if (ahead_s > 0) {
    eta.kind = Eta::Kind::kPredicted;
    eta.seconds = ahead_s;
  } else {
    eta.kind = Eta::Kind::kOverdue;
    eta.seconds = -ahead_s;
  }
  return eta;
}

std::string EtaText(const v1::JobStatus& s, const Eta& eta) {
  switch (eta.kind) {
    case Eta::Kind::kPredicted: return absl::StrCat(ShortDuration(eta.seconds), " (predicted)");
    case Eta::Kind::kRate: return ShortDuration(eta.seconds);
    case Eta::Kind::kOverdue:
      return absl::StrCat("overdue (predicted ", ShortDuration(s.prediction().makespan_s()), ")");
    case Eta::Kind::kUnknown: break;
  }
  return "";
}

std::string JobBlock(const v1::JobStatus& s, int64_t now_ms, const TermStyle& style) {
  TermStyle st = style;
  st.width = std::max(st.width, kMinWidth);
  const std::string state = s.state();
  const char* state_color = state == "succeeded" ? kGreen
                            : state == "running" ? kYellow
                                                 : kRed;  // failed, cancelled
  std::string head = absl::StrCat(Paint(st, kBold, absl::StrCat("job ", s.job())), "  ", s.name(),
                                  "  ", Paint(st, state_color, state));
  if (state == "running") {
    const std::string eta = EtaText(s, EstimateEta(s, now_ms));
    if (!eta.empty()) absl::StrAppend(&head, "  ETA ", eta);
  } else if (s.finished_ms() > s.submitted_ms() && s.submitted_ms() > 0) {
    absl::StrAppend(&head, "  in ",
                    ShortDuration(static_cast<double>(s.finished_ms() - s.submitted_ms()) / 1000));
  }
  if (!s.user().empty()) absl::StrAppend(&head, "  (user ", s.user(), ")");

  const uint64_t done = uint64_t{s.succeeded()} + s.failed() + s.cancelled();
  const int pct = s.tasks() > 0 ? static_cast<int>(std::min<uint64_t>(100, done * 100 / s.tasks()))
                  : state == "running" ? 0
                                       : 100;
  const std::string counts = absl::StrFormat("%*u/%u %3d%%", Digits(s.tasks()), done, s.tasks(), pct);
  const int bar_cols = std::max(10, st.width - 2 - 2 - 2 - static_cast<int>(counts.size()));
  const std::string bar_line =
      absl::StrCat("  [", ProgressBar(s, bar_cols, st), "]  ", counts);

  // Most important first (see the header); what must never be dropped is kept.
  std::vector<Part> parts;
  if (s.fits_no_worker()) parts.push_back({Paint(st, kRed, "no worker fits a task"), true});
  if (s.host_network_refused() > 0) {
    parts.push_back({Paint(st, kRed, "no worker allows host network"), true});
  }
  parts.push_back({absl::StrCat(s.succeeded(), " succeeded"), false});
  if (s.failed()) parts.push_back({Paint(st, kRed, absl::StrCat(s.failed(), " failed")), true});
  parts.push_back(
      {Paint(st, s.running() ? kYellow : "", absl::StrCat(s.running(), " running")), false});
  parts.push_back({absl::StrCat(s.pending(), " pending"), false});
  if (s.cancelled()) parts.push_back({absl::StrCat(s.cancelled(), " cancelled"), false});
  parts.push_back({absl::StrCat(s.preemptions(),
                               s.preemptions() == 1 ? " preemption" : " preemptions"), false});
  parts.push_back({absl::StrCat(s.suspensions(),
                               s.suspensions() == 1 ? " suspension" : " suspensions"), false});
  parts.push_back({absl::StrCat(s.attempts(), s.attempts() == 1 ? " attempt" : " attempts"),
                   false});

  return absl::StrCat(FitWidth(head, st.width), "\n", FitWidth(bar_line, st.width), "\n",
                      JoinFitting("  ", parts, st.width, st), "\n");
}

std::string ActivityOf(const v1::WorkerInfo& w) {
  if (!w.activity().empty()) return w.activity();
  if (w.state() != "connected") return w.state().empty() ? "unknown" : w.state();
  if (w.owner_state() == "suspend" || w.owner_state() == "vacate") return "suspended";
  if (w.attempts_running() > 0) return "running";
  if (!w.accepting()) return "suspended";
  return "idle";
}

std::string WorkerSummary(const v1::ListWorkersReply& r, const TermStyle& style) {
  TermStyle st = style;
  st.width = std::max(st.width, kMinWidth);
  std::map<std::string, int> count;
  for (const auto& w : r.workers()) ++count[ActivityOf(w)];
  if (count.empty()) return FitWidth("workers: none", st.width) + "\n";
  std::vector<std::pair<std::string, int>> order(count.begin(), count.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return ActivityRank(a.first) < ActivityRank(b.first);  // map order: alphabetical among ties
  });
  std::vector<Part> parts;
  for (const auto& [a, n] : order) {
    parts.push_back({Paint(st, ActivityColor(a), absl::StrCat(n, " ", Words(a))), false});
  }
  return JoinFitting("workers: ", parts, st.width, st) + "\n";
}

std::string WorkerLines(const v1::ListWorkersReply& r, const TermStyle& style) {
  TermStyle st = style;
  st.width = std::max(st.width, kMinWidth);
  std::vector<const v1::WorkerInfo*> shown;
  int name_cols = 6;
  for (const auto& w : r.workers()) {
    if (ActivityOf(w) == "left") continue;
    shown.push_back(&w);
    name_cols = std::max(name_cols, VisibleWidth(w.worker()));
  }
  name_cols = std::min(name_cols, 24);
  std::string out;
  for (const auto* w : shown) {
    const std::string a = ActivityOf(*w);
    std::string name = FitWidth(w->worker(), name_cols);
    name += std::string(name_cols - VisibleWidth(name), ' ');
    std::string word = Words(a);
    const int word_cols = VisibleWidth(word);
    word = Paint(st, ActivityColor(a), word) + std::string(std::max(0, 14 - word_cols), ' ');
    out += FitWidth(absl::StrFormat("  %s  %s  %u/%u slots busy", name, word, w->slots_busy(),
                                    w->capacity().cpus()),
                    st.width);
    out += "\n";
  }
  return out;
}

LiveDisplay::LiveDisplay(std::FILE* out) : out_(out) {}

LiveDisplay::~LiveDisplay() { Finish(); }

void LiveDisplay::Draw(const std::string& block) {
  std::string frame;
  if (!started_) {
    started_ = true;
    g_hidden_fd.store(::fileno(out_));
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      // Only where the default would kill us: a handler the program set (or SIG_IGN) stays.
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
        ::sigaction(sig, &sa, nullptr);
      }
    }
    frame += "\x1b[?25l";  // hide the cursor
  } else if (lines_ > 0) {
    frame += absl::StrFormat("\x1b[%dA", lines_);  // back to the first line of the last block
  }
  frame += "\r";
  int lines = 0;
  size_t start = 0;
  while (start < block.size()) {
    size_t end = block.find('\n', start);
    if (end == std::string::npos) end = block.size();
    frame.append(block, start, end - start);
    frame += "\x1b[K\n";  // clear what the previous, longer line left
    ++lines;
    start = end + 1;
  }
  frame += "\x1b[J";  // and any lines of a longer previous block
  lines_ = lines;
  std::fputs(frame.c_str(), out_);
  std::fflush(out_);
}

void LiveDisplay::Finish() {
  if (!started_) return;
  started_ = false;
  lines_ = 0;
  std::fputs("\x1b[?25h", out_);  // the last block stays; the cursor is below it
  std::fflush(out_);
  g_hidden_fd.store(-1);
}

void RestoreTerminal() {
  const int fd = g_hidden_fd.exchange(-1);
  if (fd < 0) return;
  ssize_t ignored = ::write(fd, kShowCursorNewline, sizeof kShowCursorNewline - 1);
  (void)ignored;
}

}  // namespace idlepool::cli
