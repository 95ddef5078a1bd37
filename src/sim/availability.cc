#include "sim/availability.h"
#include "sim/draw.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace idlepool::sim {
namespace {

// The whole file, refused before reading when absurdly large.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read: ", ec.message()));
  }
  if (size > kMaxTraceBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": ", size, " bytes, over the limit of ",
                                                     kMaxTraceBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open"));
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// A JSON value for an error message: its type for containers (never dumped: a deeply nested one
// would recurse), else its text cut to 60 bytes, with invalid UTF-8 replaced.
std::string Excerpt(const nlohmann::json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

absl::Status TooManyLanes(const std::string& path, uint64_t n) {
  return absl::ResourceExhaustedError(
      absl::StrCat(path, ": ", n, " lanes, over the limit of ", kMaxLanes));
}

// Lines without their terminator (and a trailing '\r'), numbered from 1.
std::vector<absl::string_view> SplitLines(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (absl::string_view& l : lines) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  }
  return lines;
}

std::vector<absl::string_view> SplitFields(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

std::string FieldError(const std::string& path, size_t line, size_t field, absl::string_view name,
                       absl::string_view what) {
  return absl::StrCat(path, ":", line, ": field ", field, " ('", name, "'): ", what);
}

// Sorted [start, end) pairs in integer units joined where they overlap or touch.
std::vector<std::pair<int64_t, int64_t>> Join(std::vector<std::pair<int64_t, int64_t>> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [s, e] : v) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.emplace_back(s, e);
    }
  }
  return out;
}

std::vector<Interval> ToSeconds(const std::vector<std::pair<int64_t, int64_t>>& v, int64_t origin,
                                double seconds_per_unit) {
  std::vector<Interval> out;
  out.reserve(v.size());
  for (const auto& [s, e] : v) {
    out.push_back({static_cast<double>(s - origin) * seconds_per_unit,
                   static_cast<double>(e - origin) * seconds_per_unit});
  }
  return out;
}

// ---- JSON positions: where a value of already-valid JSON starts, for line numbers. ----

size_t SkipWs(absl::string_view t, size_t p) {
  while (p < t.size() && (t[p] == ' ' || t[p] == '\t' || t[p] == '\n' || t[p] == '\r')) ++p;
  return p;
}

// Past the string starting at t[p] == '"'.
size_t SkipString(absl::string_view t, size_t p) {
  for (++p; p < t.size(); ++p) {
    if (t[p] == '\\') {
      ++p;
    } else if (t[p] == '"') {
      return p + 1;
    }
  }
  return t.size();
}

size_t SkipValue(absl::string_view t, size_t p) {
  if (p >= t.size()) return p;
  if (t[p] == '"') return SkipString(t, p);
  if (t[p] == '{' || t[p] == '[') {
    int depth = 0;
    while (p < t.size()) {
      const char c = t[p];
      if (c == '"') {
        p = SkipString(t, p);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return p + 1;
      }
      ++p;
    }
    return p;
  }
  while (p < t.size() && t[p] != ',' && t[p] != ']' && t[p] != '}' && t[p] != ' ' &&
         t[p] != '\t' && t[p] != '\n' && t[p] != '\r') {
    ++p;
  }
  return p;
}

// Start of the value of member `key` of the object at t[p], or npos. The last of duplicate keys
// wins, as in nlohmann::json.
size_t FindMember(absl::string_view t, size_t p, absl::string_view key) {
  p = SkipWs(t, p);
  if (p >= t.size() || t[p] != '{') return absl::string_view::npos;
  size_t found = absl::string_view::npos;
  p = SkipWs(t, p + 1);
  while (p < t.size() && t[p] == '"') {
    const size_t key_end = SkipString(t, p);
    const absl::string_view k = t.substr(p + 1, key_end - p - 2);
    p = SkipWs(t, key_end);
    if (p < t.size() && t[p] == ':') p = SkipWs(t, p + 1);
    if (k == key) found = p;
    p = SkipWs(t, SkipValue(t, p));
    if (p < t.size() && t[p] == ',') p = SkipWs(t, p + 1);
  }
  return found;
}

size_t FindElement(absl::string_view t, size_t p, size_t index) {
  p = SkipWs(t, p);
  if (p >= t.size() || t[p] != '[') return absl::string_view::npos;
  p = SkipWs(t, p + 1);
  for (size_t i = 0; p < t.size() && t[p] != ']'; ++i) {
    if (i == index) return p;
    p = SkipWs(t, SkipValue(t, p));
    if (p < t.size() && t[p] == ',') p = SkipWs(t, p + 1);
  }
  return absl::string_view::npos;
}

size_t LineAt(absl::string_view t, size_t p) {
  if (p == absl::string_view::npos) return 1;
  p = std::min(p, t.size());
  return 1 + static_cast<size_t>(std::count(t.begin(), t.begin() + static_cast<ptrdiff_t>(p), '\n'));
}

}  // namespace

absl::StatusOr<std::vector<Lane>> ReadSpotTrace(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  const absl::string_view t = *text;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(t);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", LineAt(t, e.byte == 0 ? 0 : e.byte - 1), ": not JSON: ", e.what()));
  }
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":1: not a JSON object"));
  }
  const size_t meta_pos = FindMember(t, 0, "metadata");
  const auto meta = doc.find("metadata");
  if (meta == doc.end() || !meta->is_object() || !meta->contains("gap_seconds")) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", LineAt(t, meta_pos),
                                                   ": field 'metadata.gap_seconds': missing"));
  }
  const nlohmann::json& gap_json = (*meta)["gap_seconds"];
  const size_t gap_pos = FindMember(t, meta_pos, "gap_seconds");
  if (!gap_json.is_number() || !(gap_json.get<double>() >= 0.001) ||
      !(gap_json.get<double>() <= 1e7)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ":", LineAt(t, gap_pos),
        ": field 'metadata.gap_seconds': not a number of seconds in [0.001, 1e7]: ",
        Excerpt(gap_json)));
  }
  const double gap_s = gap_json.get<double>();
  const size_t data_pos = FindMember(t, 0, "data");
  const auto data = doc.find("data");
  if (data == doc.end() || !data->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", LineAt(t, data_pos),
                                                   ": field 'data': missing or not an array"));
  }
  std::vector<uint64_t> counts;
  counts.reserve(data->size());
  uint64_t max_count = 0;
  for (size_t i = 0; i < data->size(); ++i) {
    const nlohmann::json& v = (*data)[i];
    const char* what = nullptr;
    if (!v.is_number_integer()) {
      what = "not an integer";
    } else if (v.is_number_unsigned() ? false : v.get<int64_t>() < 0) {
      what = "negative";
    }
    if (what != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", LineAt(t, FindElement(t, data_pos, i)),
                                                     ": field 'data[", i, "]': ", what, ": ",
                                                     Excerpt(v)));
    }
    const uint64_t c = v.get<uint64_t>();
    if (c > kMaxLanes) return TooManyLanes(path, c);
    counts.push_back(c);
    max_count = std::max(max_count, c);
  }
  // Every rise of the count starts that many up periods: refuse a series that would expand
  // into more than kMaxIntervals of them before holding any.
  uint64_t intervals = 0, last = 0;
  for (uint64_t c : counts) {
    if (c > last) intervals += c - last;
    last = c;
  }
  if (intervals > kMaxIntervals) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": the series expands into ", intervals, " up periods (more than ", kMaxIntervals,
        "): counts this large and this changeable are not a spot trace"));
  }
  std::vector<Lane> lanes(max_count);
  for (uint64_t i = 0; i < max_count; ++i) lanes[i].name = absl::StrCat("spot-", i);
  // Lane i is up from the tick the count rises above i until the tick it falls to i or below.
  std::vector<uint64_t> up_since(max_count, 0);
  uint64_t prev = 0;
  for (size_t k = 0; k <= counts.size(); ++k) {
    const uint64_t c = k < counts.size() ? counts[k] : 0;
    for (uint64_t i = prev; i < c; ++i) up_since[i] = k;
    for (uint64_t i = c; i < prev; ++i) {
      lanes[i].up.push_back(
          {static_cast<double>(up_since[i]) * gap_s, static_cast<double>(k) * gap_s});
    }
    prev = c;
  }
  return lanes;
}

absl::StatusOr<std::vector<Lane>> ReadStunnerTrace(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  constexpr int64_t kWeekMs = int64_t{168} * 3600 * 1000;
  constexpr int64_t kToleranceMs = 1000;
  struct Week {
    size_t line;
    int64_t start_ms;
    int64_t length_ms;
    std::vector<std::pair<int64_t, int64_t>> up;  // absolute epoch ms
  };
  std::map<std::string, std::vector<Week>> users;  // ordered: deterministic lane order
  const std::vector<absl::string_view> lines = SplitLines(*text);
  static constexpr const char* kNames[] = {"user", "first_state", "week_start_epoch_ms",
                                           "utc_offset_hours"};
  for (size_t li = 0; li < lines.size(); ++li) {
    const size_t line_no = li + 1;
    const std::vector<absl::string_view> f = SplitFields(lines[li]);
    if (f.empty()) continue;
    if (f.size() < 5) {
      const size_t missing = f.size() + 1;
      return absl::InvalidArgumentError(FieldError(
          path, line_no, missing, missing <= 4 ? kNames[missing - 1] : "d1", "missing"));
    }
    int64_t first_state = 0, start_ms = 0, offset_h = 0;
    if (!absl::SimpleAtoi(f[1], &first_state) || (first_state != 0 && first_state != 1)) {
      return absl::InvalidArgumentError(
          FieldError(path, line_no, 2, kNames[1], absl::StrCat("not 0 or 1: '", f[1], "'")));
    }
    if (!absl::SimpleAtoi(f[2], &start_ms)) {
      return absl::InvalidArgumentError(
          FieldError(path, line_no, 3, kNames[2], absl::StrCat("not an integer: '", f[2], "'")));
    }
    if (!absl::SimpleAtoi(f[3], &offset_h) || offset_h < -24 || offset_h > 24) {
      return absl::InvalidArgumentError(FieldError(
          path, line_no, 4, kNames[3], absl::StrCat("not an integer in [-24, 24]: '", f[3], "'")));
    }
    Week week{line_no, start_ms, 0, {}};
    bool online = first_state == 1;
    for (size_t i = 4; i < f.size(); ++i) {
      int64_t d = 0;
      if (!absl::SimpleAtoi(f[i], &d) || d <= 0 || d > kWeekMs) {
        return absl::InvalidArgumentError(
            FieldError(path, line_no, i + 1, absl::StrCat("d", i - 3),
                       absl::StrCat("not a positive integer of at most 168 h in ms: '", f[i], "'")));
      }
      if (online) week.up.emplace_back(start_ms + week.length_ms, start_ms + week.length_ms + d);
      week.length_ms += d;
      online = !online;
    }
    if (week.length_ms > kWeekMs + kToleranceMs) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": durations sum to ",
                                                     week.length_ms, " ms, over 168 h (",
                                                     kWeekMs, " ms)"));
    }
    std::vector<Week>& weeks = users[std::string(f[0])];
    if (weeks.empty() && users.size() > kMaxLanes) return TooManyLanes(path, users.size());
    weeks.push_back(std::move(week));
  }
  std::vector<Lane> lanes;
  lanes.reserve(users.size());
  int64_t origin = 0;
  bool have_origin = false;
  for (auto& [user, weeks] : users) {
    std::stable_sort(weeks.begin(), weeks.end(),
                     [](const Week& a, const Week& b) { return a.start_ms < b.start_ms; });
    for (size_t k = 0; k < weeks.size(); ++k) {
      const Week& w = weeks[k];
      if (!have_origin || w.start_ms < origin) origin = w.start_ms;
      have_origin = true;
      const bool last = k + 1 == weeks.size();
      if (!last && w.length_ms < kWeekMs - kToleranceMs) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", w.line, ": durations sum to ", w.length_ms, " ms, not 168 h (", kWeekMs,
            " ms); only a user's last week may be shorter"));
      }
      if (!last && w.start_ms + w.length_ms > weeks[k + 1].start_ms + kToleranceMs) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", weeks[k + 1].line, ": user '",
                                                       user, "' week starts inside the week of line ",
                                                       w.line));
      }
    }
  }
  for (const auto& [user, weeks] : users) {
    std::vector<std::pair<int64_t, int64_t>> up;
    for (const Week& w : weeks) up.insert(up.end(), w.up.begin(), w.up.end());
    lanes.push_back({user, ToSeconds(Join(std::move(up)), origin, 1e-3)});
  }
  return lanes;
}

absl::StatusOr<std::vector<Lane>> ReadFtaEventTrace(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  static constexpr const char* kNames[] = {
      "event_id",   "component_id",     "node_id",         "platform_id",     "node_name",
      "event_type", "event_start_time", "event_stop_time", "event_end_reason"};
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> nodes;  // node_id -> available
  int64_t origin = 0;
  bool have_origin = false;
  const std::vector<absl::string_view> lines = SplitLines(*text);
  bool first = true;
  for (size_t li = 0; li < lines.size(); ++li) {
    const size_t line_no = li + 1;
    const std::vector<absl::string_view> f = SplitFields(lines[li]);
    if (f.empty()) continue;
    int64_t probe = 0;
    if (first && !absl::SimpleAtoi(f[0], &probe)) {  // header
      first = false;
      continue;
    }
    first = false;
    if (f.size() < 9) {
      return absl::InvalidArgumentError(
          FieldError(path, line_no, f.size() + 1, kNames[f.size()], "missing"));
    }
    int64_t v[9] = {};
    for (size_t i : {0, 1, 2, 3, 5, 6, 7}) {
      if (!absl::SimpleAtoi(f[i], &v[i])) {
        return absl::InvalidArgumentError(FieldError(path, line_no, i + 1, kNames[i],
                                                     absl::StrCat("not an integer: '", f[i], "'")));
      }
    }
    if (v[5] != 0 && v[5] != 1) {
      return absl::InvalidArgumentError(
          FieldError(path, line_no, 6, kNames[5], absl::StrCat("not 0 or 1: '", f[5], "'")));
    }
    if (v[7] < v[6]) {
      return absl::InvalidArgumentError(FieldError(
          path, line_no, 8, kNames[7],
          absl::StrCat("before event_start_time: ", v[7], " < ", v[6])));
    }
    if (!have_origin || v[6] < origin) origin = v[6];
    have_origin = true;
    auto [it, inserted] = nodes.try_emplace(v[2]);
    if (inserted && nodes.size() > kMaxLanes) return TooManyLanes(path, nodes.size());
    if (v[5] == 1) it->second.emplace_back(v[6], v[7]);
  }
  std::vector<Lane> lanes;
  lanes.reserve(nodes.size());
  for (auto& [node, avail] : nodes) {
    lanes.push_back({absl::StrCat(node), ToSeconds(Join(std::move(avail)), origin, 1.0)});
  }
  return lanes;
}

const std::vector<WeibullModel>& KnownWeibullModels() {
  static const std::vector<WeibullModel> kModels = {
      {"nd07cpu", 0.45, 4.16, 0.51, 0.74},     {"microsoft99", 0.55, 35.30, 0.60, 9.34},
      {"overnet03", 0.85, 2.04, 0.44, 2.98},   {"skype06", 0.64, 10.86, 0.63, 9.48},
      {"g5k06", 0.48, 14.37, 0.35, 0.47},      {"lanl05", 0.48, 816.60, 0.58, 2.18},
  };
  return kModels;
}

absl::StatusOr<std::vector<Lane>> SampleWeibullLanes(const std::string& model, int64_t lanes,
                                                     double horizon_s, std::mt19937_64& rng) {
  const WeibullModel* m = nullptr;
  std::vector<std::string> names;
  for (const WeibullModel& k : KnownWeibullModels()) {
    names.emplace_back(k.name);
    if (model == k.name) m = &k;
  }
  if (m == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown availability model '", model,
                                                   "'; known: ", absl::StrJoin(names, ", ")));
  }
  if (!(horizon_s > 0) || !std::isfinite(horizon_s)) {
    return absl::InvalidArgumentError(
        absl::StrCat("horizon_s must be positive and finite, got ", horizon_s));
  }
  if (lanes < 0 || static_cast<uint64_t>(lanes) > kMaxLanes) {
    return absl::InvalidArgumentError(
        absl::StrCat("lanes must be in [0, ", kMaxLanes, "], got ", lanes));
  }
  constexpr double kHour = 3600.0;
  std::vector<Lane> out(static_cast<size_t>(lanes));
  for (int64_t i = 0; i < lanes; ++i) {
    Lane& lane = out[static_cast<size_t>(i)];
    lane.name = absl::StrCat(model, "-", i);
    // Up at time 0, a uniform fraction of the way into an up period.
    double t = 0;
    // Two statements: the order of the draws must not depend on the compiler.
    double up = DrawWeibull(rng, m->up_shape, m->up_scale_h * kHour);
    up *= DrawUnit(rng);
    while (t < horizon_s) {
      const double end = std::min(t + up, horizon_s);
      if (end > t) {
        if (!lane.up.empty() && lane.up.back().end_s >= t) {
          lane.up.back().end_s = end;  // a zero-length outage joins the periods
        } else {
          lane.up.push_back({t, end});
        }
      }
      t = end + DrawWeibull(rng, m->outage_shape, m->outage_scale_h * kHour);
      up = DrawWeibull(rng, m->up_shape, m->up_scale_h * kHour);
    }
  }
  return out;
}

double AvailableFraction(const std::vector<Lane>& lanes, double horizon_s) {
  if (lanes.empty() || !(horizon_s > 0)) return 0;
  double sum = 0;
  for (const Lane& lane : lanes) {
    double up = 0;
    for (const Interval& iv : lane.up) {
      const double s = std::max(iv.start_s, 0.0);
      const double e = std::min(iv.end_s, horizon_s);
      if (e > s) up += e - s;
    }
    sum += up / horizon_s;
  }
  return sum / static_cast<double>(lanes.size());
}

double LastUpEnd(const std::vector<Lane>& lanes) {
  double end = 0;
  for (const Lane& lane : lanes) {
    if (!lane.up.empty()) end = std::max(end, lane.up.back().end_s);
  }
  return end;
}

}  // namespace idlepool::sim
