// The job timeline SVG and HTML report (src/report) on synthetic JobTimeline protos.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "report/timeline_svg.h"

namespace idlepool::report {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;  // the job's submission, Unix ms

size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + needle.size())) {
    ++n;
  }
  return n;
}

v1::JobTimeline Job(int64_t finished_off_ms, int64_t now_off_ms) {
  v1::JobTimeline t;
  t.mutable_job()->set_job(7);
  t.mutable_job()->set_name("render");
  t.mutable_job()->set_state(finished_off_ms ? "succeeded" : "running");
  t.mutable_job()->set_submitted_ms(kT0);
  if (finished_off_ms) t.mutable_job()->set_finished_ms(kT0 + finished_off_ms);
  t.set_now_ms(kT0 + now_off_ms);
  return t;
}

v1::TimelineAttempt* Add(v1::JobTimeline& t, uint64_t id, uint32_t task, const std::string& worker,
                         const std::string& outcome, int64_t start_off, int64_t end_off) {
  auto* a = t.add_attempts();
  a->set_attempt(id);
  a->set_task(task);
  a->set_worker(worker);
  a->set_outcome(outcome);
  a->set_started_ms(kT0 + start_off);
  a->set_ended_ms(end_off ? kT0 + end_off : 0);
  return a;
}

void Event(v1::JobTimeline& t, const std::string& worker, int64_t off, const std::string& kind,
           const std::string& state = "", const std::string& cause = "",
           const std::string& reason = "") {
  auto* e = t.add_events();
  e->set_worker(worker);
  e->set_at_ms(kT0 + off);
  e->set_kind(kind);
  e->set_state(state);
  e->set_cause(cause);
  e->set_reason(reason);
}

// The opening tag of the first element carrying `marker` (e.g. data-attempt="3").
std::string TagWith(const std::string& svg, const std::string& marker) {
  const size_t at = svg.find(marker);
  if (at == std::string::npos) return "";
  const size_t open = svg.rfind('<', at);
  const size_t close = svg.find('>', at);
  return svg.substr(open, close - open + 1);
}

double Attr(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(tag.substr(at + key.size()));
}

// Tag balance: every element opened is closed in order (our output never puts '<' or '>' in
// attribute values or text, so a plain scan suffices).
bool Balanced(const std::string& xml, std::string* why) {
  std::vector<std::string> stack;
  size_t p = 0;
  while ((p = xml.find('<', p)) != std::string::npos) {
    const size_t q = xml.find('>', p);
    if (q == std::string::npos) return *why = "unterminated tag", false;
    const std::string tag = xml.substr(p + 1, q - p - 1);
    p = q + 1;
    if (tag.empty() || tag[0] == '!' || tag[0] == '?') continue;
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return *why = "stray </" + tag, false;
      stack.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;
    stack.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
  }
  if (!stack.empty()) return *why = "unclosed <" + stack.back(), false;
  return true;
}

// Well-formed XML: xmllint (Debian libxml2-utils, see scripts/bootstrap.sh) when installed, and
// the tag-balance check always.
void ExpectWellFormed(const std::string& svg) {
  std::string why;
  EXPECT_TRUE(Balanced(svg, &why)) << why;
  if (::access("/usr/bin/xmllint", X_OK) != 0) return;
  const std::string path = ::testing::TempDir() + "/timeline_svg_test." +
                           std::to_string(::getpid()) + ".svg";
  std::ofstream(path, std::ios::binary) << svg;
  const int rc = std::system(("/usr/bin/xmllint --noout " + path + " 2>" + path + ".err").c_str());
  std::ifstream err(path + ".err");
  std::string msg((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << "xmllint: " << msg.substr(0, 2000);
  std::remove(path.c_str());
  std::remove((path + ".err").c_str());
}

TEST(TimelineSvg, OneBarPerAttemptWithClassesAndDataAttributes) {
  v1::JobTimeline t = Job(100'000, 120'000);
  Add(t, 11, 0, "alpha", "succeeded", 1'000, 30'000);
  Add(t, 12, 1, "beta", "failed", 2'000, 40'000)->set_exit_code(3);
  Add(t, 13, 2, "alpha", "timed_out", 31'000, 60'000);
  Add(t, 14, 3, "gamma", "machine_fault", 5'000, 20'000);
  Add(t, 15, 4, "beta", "cancelled", 41'000, 90'000);
  Add(t, 16, 5, "gamma", "lost", 21'000, 80'000);
  const std::string svg = RenderTimelineSvg(t);
  EXPECT_EQ(Count(svg, "class=\"attempt "), 6u);
  EXPECT_EQ(Count(svg, "class=\"merged"), 0u);
  for (const char* outcome : {"succeeded", "failed", "timed_out", "machine_fault", "cancelled",
                              "lost"}) {
    EXPECT_EQ(Count(svg, std::string("class=\"attempt outcome-") + outcome + "\""), 1u) << outcome;
  }
  const std::string tag = TagWith(svg, "data-attempt=\"12\"");
  EXPECT_NE(tag.find("class=\"attempt outcome-failed\""), std::string::npos) << tag;
  EXPECT_NE(tag.find("data-task=\"1\""), std::string::npos) << tag;
  EXPECT_NE(tag.find("data-worker=\"beta\""), std::string::npos) << tag;
  // Its tooltip says task, attempt, worker, outcome, duration and exit code.
  const size_t title = svg.find("<title>", svg.find("data-attempt=\"12\""));
  const std::string tip = svg.substr(title, svg.find("</title>", title) - title);
  for (const char* want : {"task 1", "attempt 12", "beta", "failed", "38 s", "exit code 3"}) {
    EXPECT_NE(tip.find(want), std::string::npos) << want << " in " << tip;
  }
  // Attempts stopped from outside (here lost) have no exit code in their tooltip.
  const size_t lost_title = svg.find("<title>", svg.find("data-attempt=\"16\""));
  const std::string lost_tip =
      svg.substr(lost_title, svg.find("</title>", lost_title) - lost_title);
  EXPECT_EQ(lost_tip.find("exit code"), std::string::npos) << lost_tip;
  EXPECT_NE(svg.find("viewBox=\"0 0 1200 "), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);  // self-contained: no external references
  ExpectWellFormed(svg);
}

TEST(TimelineSvg, LanesInOrderOfFirstAttemptAndOverlapsInRows) {
  v1::JobTimeline t = Job(100'000, 100'000);
  Add(t, 1, 0, "zed", "succeeded", 1'000, 50'000);
  Add(t, 2, 1, "amy", "succeeded", 5'000, 50'000);
  Add(t, 3, 2, "zed", "succeeded", 2'000, 50'000);  // overlaps attempt 1 on zed
  const std::string svg = RenderTimelineSvg(t);
  EXPECT_LT(svg.find("class=\"lane\" data-worker=\"zed\""),
            svg.find("class=\"lane\" data-worker=\"amy\""));
  const double y1 = Attr(TagWith(svg, "data-attempt=\"1\""), "y");
  const double y3 = Attr(TagWith(svg, "data-attempt=\"3\""), "y");
  const double y2 = Attr(TagWith(svg, "data-attempt=\"2\""), "y");
  EXPECT_GT(y3, y1);  // a second row in zed's lane
  EXPECT_GT(y2, y3);  // amy's lane below zed's
}

TEST(TimelineSvg, RequeueArrowPerNextAttempt) {
  v1::JobTimeline t = Job(100'000, 100'000);
  Add(t, 1, 0, "a", "preempted", 1'000, 10'000)->set_next_attempt(3);
  Add(t, 2, 1, "b", "failed", 1'000, 12'000)->set_next_attempt(4);
  Add(t, 3, 0, "b", "succeeded", 12'000, 40'000);
  Add(t, 4, 1, "a", "succeeded", 13'000, 30'000);
  Add(t, 5, 2, "a", "lost", 31'000, 50'000)->set_next_attempt(99);  // not in the timeline
  const std::string svg = RenderTimelineSvg(t);
  EXPECT_EQ(Count(svg, "class=\"requeue\""), 2u);
  EXPECT_NE(svg.find("class=\"requeue\" data-from=\"1\" data-to=\"3\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"requeue\" data-from=\"2\" data-to=\"4\""), std::string::npos);
  // The arrow ends at the start of attempt 3's bar.
  const std::string path = TagWith(svg, "data-from=\"1\"");
  const double x3 = Attr(TagWith(svg, "data-attempt=\"3\""), "x");
  char want[32];
  std::snprintf(want, sizeof want, " %.1f,", x3);
  EXPECT_NE(path.find(want), std::string::npos) << path << " does not end at " << x3;
  ExpectWellFormed(svg);
}

TEST(TimelineSvg, SuspensionsFromOwnerEventsAndOfflinePeriods) {
  v1::JobTimeline t = Job(100'000, 100'000);
  Add(t, 1, 0, "laptop", "succeeded", 0, 90'000)->set_suspensions(1);
  Add(t, 2, 1, "desk", "succeeded", 0, 90'000);
  Event(t, "laptop", 10'000, "owner", "suspend", "owner_input", "owner active (idle 3 s < 60 s)");
  Event(t, "laptop", 30'000, "owner", "run", "none");
  Event(t, "desk", 40'000, "owner", "vacate", "battery", "on battery");
  Event(t, "desk", 50'000, "disconnected");
  Event(t, "desk", 55'000, "lost");
  Event(t, "desk", 70'000, "connected");
  Event(t, "desk", 71'000, "owner", "run");
  Event(t, "nobody", 20'000, "owner", "suspend", "lid");  // no attempts: no lane
  const std::string svg = RenderTimelineSvg(t);
  // Only state "suspend" is a suspension; a vacate (the owner took the machine back) is drawn
  // as unavailable, with its own fill and legend entry.
  EXPECT_EQ(Count(svg, "class=\"suspension\""), 1u);
  EXPECT_EQ(Count(svg, "class=\"unavailable\""), 1u);
  const std::string s = TagWith(svg, "class=\"suspension\" data-worker=\"laptop\"");
  EXPECT_NE(s.find("data-state=\"suspend\" data-cause=\"owner_input\""), std::string::npos) << s;
  // 20 s of a 100 s window 1024 px wide.
  EXPECT_NEAR(Attr(s, "width"), 1024 * 0.2, 0.2);
  EXPECT_NEAR(Attr(s, "x"), 160 + 1024 * 0.1, 0.2);
  EXPECT_NE(svg.find("owner active (idle 3 s &lt; 60 s)"), std::string::npos);
  // The vacate ends when the worker disconnects (10 s); then offline, disconnected then lost.
  EXPECT_EQ(TagWith(svg, "class=\"suspension\" data-worker=\"desk\""), "");
  const std::string v = TagWith(svg, "class=\"unavailable\" data-worker=\"desk\"");
  EXPECT_NE(v.find("data-state=\"vacate\" data-cause=\"battery\""), std::string::npos) << v;
  EXPECT_NE(v.find("fill=\"url(#idlepool-vacate)\""), std::string::npos) << v;
  EXPECT_EQ(v.find("idlepool-hatch"), std::string::npos) << v;
  EXPECT_NEAR(Attr(v, "width"), 1024 * 0.1, 0.2);
  EXPECT_NE(svg.find("<title>owner took the machine back: battery\ndesk, +40 s for 10 s\non "
                     "battery</title>"),
            std::string::npos);
  EXPECT_NE(svg.find(">taken back by owner</text>"), std::string::npos);  // legend
  EXPECT_NE(svg.find(">owner suspension</text>"), std::string::npos);
  EXPECT_EQ(Count(svg, "class=\"offline\""), 2u);
  const std::string lost =
      TagWith(svg, "class=\"offline\" data-worker=\"desk\" data-state=\"lost\"");
  EXPECT_NEAR(Attr(lost, "width"), 1024 * 0.15, 0.2) << lost;
  EXPECT_EQ(svg.find("nobody"), std::string::npos);
  ExpectWellFormed(svg);
}

TEST(TimelineSvg, OpenSuspensionRunsToTheEnd) {
  v1::JobTimeline t = Job(0, 100'000);
  Add(t, 1, 0, "w", "running", 0, 0);
  Event(t, "w", 60'000, "owner", "suspend", "owner_load");
  const std::string svg = RenderTimelineSvg(t);
  const std::string s = TagWith(svg, "class=\"suspension\"");
  EXPECT_NEAR(Attr(s, "width"), 1024 * 0.4, 0.2) << s;
}

TEST(TimelineSvg, PreemptionMarkerAtTheBarsEnd) {
  v1::JobTimeline t = Job(100'000, 100'000);
  Add(t, 1, 0, "a", "preempted", 0, 50'000)->set_message("vacated: on battery");
  Add(t, 2, 1, "a", "succeeded", 50'000, 70'000);
  const std::string svg = RenderTimelineSvg(t);
  EXPECT_EQ(Count(svg, "class=\"preemption\""), 1u);
  const std::string m = TagWith(svg, "class=\"preemption\"");
  EXPECT_NE(m.find("data-attempt=\"1\""), std::string::npos) << m;
  const std::string bar = TagWith(svg, "data-attempt=\"1\"");
  char end[32];
  std::snprintf(end, sizeof end, "%.1f", Attr(bar, "x") + Attr(bar, "width"));
  EXPECT_NE(m.find(std::string(" ") + end + ","), std::string::npos) << m << " vs " << end;
  EXPECT_NE(svg.find("preempted: vacated: on battery"), std::string::npos);
}

TEST(TimelineSvg, HostileStringsAreEscaped) {
  v1::JobTimeline t = Job(100'000, 100'000);
  const std::string evil = "<script>&\"'";
  auto* a = Add(t, 1, 0, evil, "failed", 0, 50'000);
  a->set_message("bad \x01 byte \xff\xfe and </title><script>alert(1)</script>");
  a->set_log_tail("</pre><script>x</script> \xed\xa0\x80");
  t.mutable_job()->set_name("]]><!-- x");
  Event(t, evil, 10'000, "owner", "suspend", "<b>", "\"reason\" & <more>");
  const std::string svg = RenderTimelineSvg(t);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_NE(svg.find("data-worker=\"&lt;script&gt;&amp;&quot;&#39;\""), std::string::npos);
  EXPECT_EQ(svg.find('\x01'), std::string::npos);
  EXPECT_EQ(svg.find('\xff'), std::string::npos);
  ExpectWellFormed(svg);
  const std::string html = RenderReportHtml(t);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("</pre><script"), std::string::npos);
  EXPECT_NE(html.find("&lt;/pre&gt;&lt;script&gt;x"), std::string::npos);
}

TEST(TimelineSvg, EscapeXmlKeepsValidUtf8AndReplacesTheRest) {
  EXPECT_EQ(EscapeXml("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(EscapeXml("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\t\n"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\t\n");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(EscapeXml(std::string("\x00", 1)), fffd);
  EXPECT_EQ(EscapeXml("\x1b[31m"), fffd + "[31m");
  EXPECT_EQ(EscapeXml("\xC0\xAF"), fffd + fffd);              // overlong
  EXPECT_EQ(EscapeXml("\xED\xA0\x80"), fffd + fffd + fffd);   // surrogate
  EXPECT_EQ(EscapeXml("\xEF\xBF\xBE"), fffd + fffd + fffd);   // U+FFFE
  EXPECT_EQ(EscapeXml("\xE2\x82"), fffd + fffd);              // cut short
}

TEST(TimelineSvg, RunningAttemptExtendsToNow) {
  v1::JobTimeline t = Job(0, 90'000);  // running; now is 90 s after submission
  Add(t, 1, 0, "w", "succeeded", 0, 30'000);
  Add(t, 2, 1, "w", "running", 30'000, 0);
  const std::string svg = RenderTimelineSvg(t);
  const std::string done = TagWith(svg, "data-attempt=\"1\"");
  const std::string running = TagWith(svg, "data-attempt=\"2\"");
  EXPECT_NE(running.find("outcome-running"), std::string::npos);
  EXPECT_NEAR(Attr(running, "width"), 2 * Attr(done, "width"), 0.2);
  EXPECT_NEAR(Attr(running, "x") + Attr(running, "width"), 160 + 1024, 0.2);
}

TEST(TimelineSvg, EmptyJobIsAValidDocument) {
  v1::JobTimeline t = Job(0, 5'000);
  const std::string svg = RenderTimelineSvg(t);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("no attempts"), std::string::npos);
  EXPECT_EQ(Count(svg, "class=\"attempt "), 0u);
  ExpectWellFormed(svg);
  v1::JobTimeline bare;  // not even a submission time
  ExpectWellFormed(RenderTimelineSvg(bare));
  const std::string html = RenderReportHtml(bare);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

// 20,000 attempts of 10 s on 40 workers x 4 slots over ~21 min: each is a few px wide.
v1::JobTimeline Big(int workers, int slots, int64_t attempt_ms) {
  v1::JobTimeline t = Job(0, 0);
  const int n = 20'000;
  int64_t end = 0;
  for (int i = 0; i < n; ++i) {
    const int lane = i % (workers * slots);
    const int64_t start = static_cast<int64_t>(i / (workers * slots)) * attempt_ms;
    const char* outcome = i % 97 == 0 ? "preempted" : i % 31 == 0 ? "failed" : "succeeded";
    auto* a = Add(t, static_cast<uint64_t>(i + 1), static_cast<uint32_t>(i),
                  "worker-" + std::to_string(lane / slots), outcome, start, start + attempt_ms);
    if (i % 97 == 0 && i + workers * slots < n) a->set_next_attempt(i + 1 + workers * slots);
    end = std::max(end, start + attempt_ms);
  }
  t.mutable_job()->set_finished_ms(kT0 + end);
  t.set_now_ms(kT0 + end);
  return t;
}

// Every attempt is drawn: alone, or counted in a merged block.
size_t AttemptsDrawn(const std::string& svg) {
  size_t n = Count(svg, "class=\"attempt ");
  for (size_t p = svg.find("class=\"merged "); p != std::string::npos;
       p = svg.find("class=\"merged ", p + 1)) {
    const size_t open = svg.rfind('<', p);
    n += static_cast<size_t>(Attr(svg.substr(open, svg.find('>', p) - open), "data-count"));
  }
  return n;
}

TEST(TimelineSvg, TwentyThousandAttemptsStaySmall) {
  const v1::JobTimeline t = Big(40, 4, 10'000);
  const std::string svg = RenderTimelineSvg(t);
  EXPECT_LT(svg.size(), 2u << 20) << "bytes";
  EXPECT_GT(Count(svg, "class=\"merged "), 0u);
  EXPECT_EQ(AttemptsDrawn(svg), 20'000u);
  EXPECT_GT(Count(svg, "class=\"preemption\""), 0u);
  ExpectWellFormed(svg);
}

TEST(TimelineSvg, TwentyThousandWideAttemptsOnManyLanesStaySmall) {
  // 2,000 workers with 10 attempts each: wide bars, so merging needs a wider threshold.
  const v1::JobTimeline t = Big(2'000, 1, 10'000);
  SvgOptions o;
  const std::string svg = RenderTimelineSvg(t, o);
  EXPECT_LT(svg.size(), 3u << 20) << "bytes";
  EXPECT_LE(Count(svg, "class=\"attempt ") + Count(svg, "class=\"merged "),
            static_cast<size_t>(o.max_bars));
  EXPECT_EQ(AttemptsDrawn(svg), 20'000u);
  ExpectWellFormed(svg);
}

// With IDLEPOOL_REPORT_SAMPLES=DIR set, writes sample pictures there to look at (not a check).
TEST(TimelineSvg, WritesSamplesWhenAsked) {
  const char* dir = std::getenv("IDLEPOOL_REPORT_SAMPLES");
  if (dir == nullptr) GTEST_SKIP() << "IDLEPOOL_REPORT_SAMPLES not set";
  v1::JobTimeline t = Job(0, 100'000);
  Add(t, 1, 0, "laptop", "preempted", 1'000, 30'000)->set_next_attempt(4);
  Add(t, 2, 1, "desk", "succeeded", 2'000, 40'000);
  Add(t, 3, 2, "desk", "failed", 3'000, 20'000)->set_next_attempt(5);
  Add(t, 4, 0, "desk", "succeeded", 40'000, 70'000);
  Add(t, 5, 2, "server-with-a-very-long-name-indeed", "timed_out", 21'000, 50'000);
  Add(t, 6, 3, "server-with-a-very-long-name-indeed", "running", 51'000, 0);
  Add(t, 7, 4, "laptop", "lost", 45'000, 60'000);
  Add(t, 8, 5, "desk", "machine_fault", 71'000, 75'000);
  Add(t, 9, 6, "desk", "cancelled", 76'000, 80'000);
  Event(t, "laptop", 10'000, "owner", "suspend", "owner_input", "owner active");
  Event(t, "laptop", 20'000, "owner", "run");
  Event(t, "laptop", 29'000, "owner", "vacate", "battery", "on battery");
  Event(t, "laptop", 35'000, "owner", "run");
  Event(t, "laptop", 60'000, "lost");
  Event(t, "laptop", 80'000, "connected");
  std::ofstream(std::string(dir) + "/small.svg") << RenderTimelineSvg(t);
  std::ofstream(std::string(dir) + "/small.html") << RenderReportHtml(t);
  std::ofstream(std::string(dir) + "/big.svg") << RenderTimelineSvg(Big(40, 4, 10'000));
  std::ofstream(std::string(dir) + "/wide.svg") << RenderTimelineSvg(Big(2'000, 1, 10'000));
}

TEST(ReportHtml, SummaryTimelineWorkersAndTasks) {
  v1::JobTimeline t = Job(100'000, 120'000);
  auto* j = t.mutable_job();
  j->set_tasks(2);
  j->set_succeeded(2);
  j->set_attempts(3);
  j->set_preemptions(1);
  j->set_lost_ms(9'000);
  j->mutable_transfer()->set_input_bytes(3 << 20);
  j->mutable_prediction()->set_makespan_s(80);
  j->mutable_prediction()->set_bottleneck("compute");
  auto* a = Add(t, 1, 0, "laptop", "preempted", 1'000, 10'000);
  a->set_next_attempt(3);
  a->set_log_tail("frame 1 of 10\n");
  Add(t, 2, 1, "desk", "succeeded", 1'000, 60'000)->set_log_tail("all done <ok>\n");
  Add(t, 3, 0, "desk", "succeeded", 60'000, 100'000);
  Event(t, "laptop", 9'000, "owner", "vacate", "battery", "on battery");
  const std::string html = RenderReportHtml(t);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* want : {"Job 7", "render", "<svg ", "class=\"attempt outcome-preempted\"",
                           "class=\"preemption\"", "class=\"requeue\"", "Makespan",
                           "1 min 40 s",
                           "1 min 20 s predicted, 1 min 40 s actual: prediction error -20.0% = "
                           "(predicted &#8722; actual) / actual",
                           "bottleneck compute",
                           "3.0 MiB", "Lost work</th><td>9 s",
                           "Report generated 2023-11-14 22:15:20 UTC",
                           "<details><summary>14 B</summary><pre>frame 1 of 10\n</pre></details>",
                           "all done &lt;ok&gt;", "href=\"#attempt-3\""}) {
    EXPECT_NE(html.find(want), std::string::npos) << want;
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no other URLs
  // The log budget: nothing fits, nothing is shown.
  ReportOptions small;
  small.max_log_bytes = 4;
  const std::string cut = RenderReportHtml(t, small);
  EXPECT_EQ(cut.find("<details>"), std::string::npos);
  EXPECT_NE(cut.find("left out (report size limit)"), std::string::npos);
}

// The text of the <td> of the Exit column in attempt `id`'s row (the 7th cell).
std::string ExitCell(const std::string& html, uint64_t id) {
  size_t at = html.find("id=\"attempt-" + std::to_string(id) + "\"");
  if (at == std::string::npos) return "<no row>";
  for (int cell = 0; cell < 7; ++cell) at = html.find("<td", at + 1);
  const size_t open = html.find('>', at) + 1;
  return html.substr(open, html.find("</td>", open) - open);
}

TEST(ReportHtml, FailedLogsOpenExitCodesAndPrinting) {
  v1::JobTimeline t = Job(100'000, 120'000);
  t.mutable_job()->set_state("failed");
  // A prediction just under 2 min shows as 2 min (rounded like the actual), with no error: the
  // job did not run to the end.
  t.mutable_job()->mutable_prediction()->set_makespan_s(119.9996);
  Add(t, 1, 0, "a", "failed", 0, 10'000)->set_exit_code(3);
  Add(t, 2, 1, "a", "timed_out", 0, 20'000)->set_exit_code(-9);
  Add(t, 3, 2, "a", "succeeded", 0, 30'000);
  Add(t, 4, 3, "a", "preempted", 0, 40'000)->set_exit_code(143);
  Add(t, 5, 4, "a", "lost", 0, 40'000)->set_exit_code(-1);
  Add(t, 6, 5, "a", "cancelled", 0, 40'000)->set_exit_code(-15);
  Add(t, 7, 6, "a", "machine_fault", 0, 40'000)->set_exit_code(1);
  for (auto& a : *t.mutable_attempts()) a.set_log_tail("log of " + std::to_string(a.attempt()));
  const std::string html = RenderReportHtml(t);
  EXPECT_NE(html.find("<details open><summary>8 B</summary><pre>log of 1</pre>"),
            std::string::npos);
  EXPECT_NE(html.find("<details open><summary>8 B</summary><pre>log of 2</pre>"),
            std::string::npos);
  EXPECT_NE(html.find("<details><summary>8 B</summary><pre>log of 3</pre>"), std::string::npos);
  EXPECT_NE(html.find("<details><summary>8 B</summary><pre>log of 4</pre>"), std::string::npos);
  // Printed, every tail shows.
  const size_t print = html.find("@media print{");
  ASSERT_NE(print, std::string::npos);
  EXPECT_NE(html.find("details::details-content{content-visibility:visible;display:block",
                      print),
            std::string::npos);
  // Exit codes only for attempts that exited on their own.
  EXPECT_EQ(ExitCell(html, 1), "3");
  EXPECT_EQ(ExitCell(html, 3), "0");
  for (uint64_t id : {2, 4, 5, 6, 7}) EXPECT_EQ(ExitCell(html, id), "") << id;
  EXPECT_NE(html.find("2 min predicted, 1 min 40 s actual; bottleneck"), std::string::npos);
  EXPECT_EQ(html.find("prediction error"), std::string::npos);
}

}  // namespace
}  // namespace idlepool::report
