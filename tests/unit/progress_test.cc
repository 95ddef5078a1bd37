// Terminal progress (cli/progress.h): bar segments and widths, ETA, job blocks at every width,
// worker activity, ASCII vs Unicode, NO_COLOR, terminal probing and the live display's escapes.
#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace idlepool::cli {
namespace {

v1::JobStatus Job(uint32_t tasks, uint32_t succeeded, uint32_t failed, uint32_t running) {
  v1::JobStatus s;
  s.set_job(12);
  s.set_name("render");
  s.set_state("running");
  s.set_tasks(tasks);
  s.set_succeeded(succeeded);
  s.set_failed(failed);
  s.set_running(running);
  s.set_pending(tasks - succeeded - failed - running);
  s.set_submitted_ms(1'000'000);
  return s;
}

TermStyle Ascii(int width = 80) { return TermStyle{width, /*unicode=*/false, /*color=*/false}; }
TermStyle Fancy(int width = 80) { return TermStyle{width, /*unicode=*/true, /*color=*/true}; }

std::vector<std::string> Lines(const std::string& block) {
  std::vector<std::string> out;
  std::stringstream in(block);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

TEST(ProgressBar, SegmentsInOrderAndExactWidth) {
  // 5 succeeded, 1 failed, 2 running, 2 pending of 10, on 10 columns: one column per task.
  EXPECT_EQ(ProgressBar(Job(10, 5, 1, 2), 10, Ascii()), "#####x==--");
  // 20 columns: two per task.
  EXPECT_EQ(ProgressBar(Job(10, 5, 1, 2), 20, Ascii()), "##########xx====----");
}

TEST(ProgressBar, LargestRemainderFillsEveryColumn) {
  // 1/3 each of succeeded, running, pending on 10 columns: 3+3+3 and the leftover to the first.
  const std::string bar = ProgressBar(Job(3, 1, 0, 1), 10, Ascii());
  EXPECT_EQ(bar, "####===---");
  for (int cols = 10; cols < 200; cols += 7) {
    EXPECT_EQ(VisibleWidth(ProgressBar(Job(7, 2, 1, 3), cols, Ascii())), cols) << cols;
    EXPECT_EQ(VisibleWidth(ProgressBar(Job(7, 2, 1, 3), cols, Fancy())), cols) << cols;
  }
}

TEST(ProgressBar, ZeroTasksIsAllPending) {
  EXPECT_EQ(ProgressBar(Job(0, 0, 0, 0), 12, Ascii()), std::string(12, '-'));
}

TEST(ProgressBar, OneFailureInAMillionStillShows) {
  const auto s = Job(1'000'000, 600'000, 1, 1);
  const std::string bar = ProgressBar(s, 30, Ascii());
  EXPECT_EQ(bar.size(), 30u);
  EXPECT_EQ(Count(bar, "x"), 1u);
  EXPECT_EQ(Count(bar, "="), 1u);
  // 0.6 * 30 = 18 and 12 (with the leftover column): the two single columns come from the
  // widest segment.
  EXPECT_EQ(Count(bar, "#"), 16u);
  EXPECT_EQ(Count(bar, "-"), 12u);
}

TEST(ProgressBar, AllFailed) {
  EXPECT_EQ(ProgressBar(Job(8, 0, 8, 0), 16, Ascii()), std::string(16, 'x'));
}

TEST(ProgressBar, UnicodeAndAsciiGlyphs) {
  const auto s = Job(4, 1, 1, 1);
  const std::string u = ProgressBar(s, 8, TermStyle{80, true, false});
  EXPECT_EQ(u, "██✗✗▒▒░░");
  const std::string a = ProgressBar(s, 8, Ascii());
  EXPECT_EQ(a, "##xx==--");
  for (unsigned char c : a) EXPECT_LT(c, 0x80);
}

TEST(ProgressBar, ColorOnlyWhenAsked) {
  const auto s = Job(4, 1, 1, 1);
  const std::string c = ProgressBar(s, 8, Fancy());
  EXPECT_NE(c.find("\x1b[32m"), std::string::npos);  // succeeded green
  EXPECT_NE(c.find("\x1b[31m"), std::string::npos);  // failed red
  EXPECT_EQ(VisibleWidth(c), 8);
  EXPECT_EQ(ProgressBar(s, 8, TermStyle{80, true, false}).find('\x1b'), std::string::npos);
}

TEST(JobBlock, EveryLineFitsEveryWidth) {
  std::vector<v1::JobStatus> jobs = {Job(0, 0, 0, 0), Job(10, 3, 1, 2),
                                     Job(1'000'000, 999'999, 0, 1), Job(1'000'000, 0, 1'000'000, 0)};
  jobs[1].set_name(std::string(300, 'n'));  // a long name is cut, not wrapped
  jobs[2].set_preemptions(123456789);
  jobs[2].set_suspensions(987654321);
  jobs[2].set_attempts(4'000'000'000ULL);
  for (const auto& s : jobs) {
    for (int width : {40, 41, 60, 80, 132, 300}) {
      for (const auto& style : {Ascii(width), Fancy(width), TermStyle{width, true, false}}) {
        const auto lines = Lines(JobBlock(s, 2'000'000, style));
        ASSERT_EQ(lines.size(), 3u);
        for (const auto& l : lines) EXPECT_LE(VisibleWidth(l), width) << "[" << l << "]";
        if (!style.color) {
          EXPECT_EQ(JobBlock(s, 2'000'000, style).find('\x1b'), std::string::npos);
        }
      }
    }
  }
}

TEST(JobBlock, BelowTheMinimumWidthUsesTheMinimum) {
  const auto lines = Lines(JobBlock(Job(10, 3, 1, 2), 2'000'000, Ascii(10)));
  EXPECT_EQ(VisibleWidth(lines[1]), kMinWidth);  // the bar line fills the width
}

TEST(JobBlock, CountsPercentAndParts) {
  auto s = Job(1000, 400, 12, 8);
  s.set_preemptions(2);
  s.set_suspensions(5);
  s.set_attempts(430);
  const std::string b = JobBlock(s, 2'000'000, Ascii(120));
  const auto lines = Lines(b);
  EXPECT_EQ(lines[0].rfind("job 12  render  running  ETA ", 0), 0u) << lines[0];
  EXPECT_NE(lines[1].find("]   412/1000  41%"), std::string::npos) << lines[1];
  EXPECT_EQ(VisibleWidth(lines[1]), 120);
  EXPECT_EQ(lines[2],
            "  400 succeeded, 12 failed, 8 running, 580 pending, 2 preemptions, 5 suspensions, "
            "430 attempts");
  // Narrow: the least important parts are dropped whole.
  const auto narrow = Lines(JobBlock(s, 2'000'000, Ascii(40)));
  EXPECT_EQ(narrow[2], "  400 succeeded, 12 failed, 8 running");
  // No failures: no "0 failed".
  EXPECT_EQ(Lines(JobBlock(Job(10, 3, 0, 2), 2'000'000, Ascii(120)))[2],
            "  3 succeeded, 2 running, 5 pending, 0 preemptions, 0 suspensions, 0 attempts");
}

TEST(JobBlock, ANonZeroFailedCountIsNeverDropped) {
  // The review's case: a failed job at 40 columns lost "21 failed" while "0 running" stayed.
  auto s = Job(1'000'000, 999'979, 21, 0);
  s.set_state("failed");
  s.set_finished_ms(s.submitted_ms() + 60'000);
  const auto lines = Lines(JobBlock(s, 9'000'000, Ascii(40)));
  EXPECT_EQ(lines[2], "  999979 succeeded, 21 failed, 0 running") << lines[2];
  // Even when the parts before it are wide, the failed count stays and lesser parts go.
  auto t = Job(4'000'000'000u, 3'000'000'000u, 1'234'567, 0);
  t.set_fits_no_worker(true);
  for (const auto& style : {Ascii(40), Fancy(40)}) {
    const auto l = Lines(JobBlock(t, 9'000'000, style));
    EXPECT_NE(l[2].find("1234567 failed"), std::string::npos) << l[2];
    EXPECT_NE(l[2].find("no worker fits a task"), std::string::npos) << l[2];
    EXPECT_EQ(l[2].find("succeeded"), std::string::npos) << l[2];
    EXPECT_LE(VisibleWidth(l[2]), 40);
  }
}

TEST(JobBlock, AJobWaitingForTheHostNetworkSaysSoAndKeepsIt) {
  auto s = Job(4'000'000'000u, 3'000'000'000u, 0, 0);
  s.set_host_network_refused(2);
  for (const auto& style : {Ascii(40), Fancy(40)}) {
    const auto l = Lines(JobBlock(s, 9'000'000, style));
    EXPECT_NE(l[2].find("no worker allows host network"), std::string::npos) << l[2];
    EXPECT_LE(VisibleWidth(l[2]), 40);
  }
  s.set_host_network_refused(0);
  EXPECT_EQ(JobBlock(s, 9'000'000, Ascii(200)).find("host network"), std::string::npos);
}

TEST(JobBlock, FinishedShowsDurationAndHundredPercent) {
  auto s = Job(8, 0, 8, 0);
  s.set_state("failed");
  s.set_finished_ms(s.submitted_ms() + 125'000);
  const auto lines = Lines(JobBlock(s, 9'000'000, Ascii()));
  EXPECT_EQ(lines[0], "job 12  render  failed  in 2m05s");
  EXPECT_NE(lines[1].find("8/8 100%"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("[xxxx"), std::string::npos) << lines[1];
}

TEST(Eta, RateOnceARoundFinishedElseThePrediction) {
  auto s = Job(100, 25, 0, 4);  // submitted at 1,000 s; 25 finished >= a round (4 running)
  EXPECT_EQ(EstimateEta(s, 1'000'000).kind, Eta::Kind::kUnknown);  // no time elapsed
  // Rate: 25 done in 50 s, 75 left -> 150 s; with or without a prediction.
  Eta e = EstimateEta(s, 1'050'000);
  EXPECT_EQ(e.kind, Eta::Kind::kRate);
  EXPECT_DOUBLE_EQ(e.seconds, 150);
  s.mutable_prediction()->set_makespan_s(300);
  EXPECT_EQ(EstimateEta(s, 1'050'000).kind, Eta::Kind::kRate);
  EXPECT_NE(JobBlock(s, 1'050'000, Ascii()).find("ETA 2m30s\n"), std::string::npos);
  // Not running: no ETA.
  s.set_state("succeeded");
  EXPECT_EQ(EstimateEta(s, 1'050'000).kind, Eta::Kind::kUnknown);
}

TEST(Eta, PredictionUntilARoundFinishedThenOverdue) {
  auto s = Job(100, 0, 0, 8);
  // Nothing finished, no prediction.
  EXPECT_EQ(EstimateEta(s, 1'050'000).kind, Eta::Kind::kUnknown);
  s.mutable_prediction()->set_makespan_s(300);  // predicted end at 1,300 s
  Eta e = EstimateEta(s, 1'050'000);
  EXPECT_EQ(e.kind, Eta::Kind::kPredicted);
  EXPECT_DOUBLE_EQ(e.seconds, 250);
  EXPECT_NE(JobBlock(s, 1'050'000, Ascii()).find("ETA 4m10s (predicted)"), std::string::npos);
  // 7 finished: fewer than a round (8 running; 10% is 10): still the prediction.
  s.set_succeeded(7);
  EXPECT_EQ(EstimateEta(s, 1'050'000).kind, Eta::Kind::kPredicted);
  // Past the predicted end before a round finished: overdue, not a made-up number that grows
  // with every second nothing finishes.
  e = EstimateEta(s, 1'400'000);
  EXPECT_EQ(e.kind, Eta::Kind::kOverdue);
  EXPECT_DOUBLE_EQ(e.seconds, 100);
  EXPECT_NE(JobBlock(s, 1'400'000, Ascii()).find("ETA overdue (predicted 5m00s)"),
            std::string::npos);
  // A round finished: the rate (8 in 400 s, 92 left -> 4600 s).
  s.set_succeeded(8);
  e = EstimateEta(s, 1'400'000);
  EXPECT_EQ(e.kind, Eta::Kind::kRate);
  EXPECT_DOUBLE_EQ(e.seconds, 4600);
  // The round is the tasks running, at most 10% of the tasks: 5000 running of 20000 -> 2000.
  auto big = Job(20'000, 1'999, 0, 5'000);
  big.mutable_prediction()->set_makespan_s(1e6);
  EXPECT_EQ(EstimateEta(big, 1'100'000).kind, Eta::Kind::kPredicted);
  big.set_succeeded(2'000);
  EXPECT_EQ(EstimateEta(big, 1'100'000).kind, Eta::Kind::kRate);
  // 1000 running of 20000: a round is 1000.
  big.set_running(1'000);
  big.set_succeeded(999);
  EXPECT_EQ(EstimateEta(big, 1'100'000).kind, Eta::Kind::kPredicted);
  big.set_succeeded(1'000);
  EXPECT_EQ(EstimateEta(big, 1'100'000).kind, Eta::Kind::kRate);
  // An infinite prediction is no prediction: the rate as soon as anything finished.
  s.set_succeeded(1);
  s.mutable_prediction()->set_makespan_s(std::numeric_limits<double>::infinity());
  e = EstimateEta(s, 1'050'000);
  EXPECT_EQ(e.kind, Eta::Kind::kRate);
  EXPECT_DOUBLE_EQ(e.seconds, 99 * 50);
}

TEST(Eta, LostWorkPushesThePredictionBack) {
  // The review's case: 6 tasks of 20 s on 6 slots, predicted 20 s; at 14 s all six were
  // preempted and restarted. The prediction alone says 6 s; 84 s of work were lost (none
  // expected), spread over the 6 running tasks: 14 s more, so 20 s.
  auto s = Job(6, 0, 0, 6);
  s.mutable_prediction()->set_makespan_s(20);
  s.set_lost_ms(84'000);
  Eta e = EstimateEta(s, 1'014'000);
  EXPECT_EQ(e.kind, Eta::Kind::kPredicted);
  EXPECT_DOUBLE_EQ(e.seconds, 20);
  // Loss the prediction expected does not move it.
  s.mutable_prediction()->set_lost_work_s(84);
  EXPECT_DOUBLE_EQ(EstimateEta(s, 1'014'000).seconds, 6);
}

TEST(ShortDurationTest, Formats) {
  EXPECT_EQ(ShortDuration(0), "0s");
  EXPECT_EQ(ShortDuration(42.4), "42s");
  EXPECT_EQ(ShortDuration(545), "9m05s");
  EXPECT_EQ(ShortDuration(2 * 3600 + 10 * 60), "2h10m");
  EXPECT_EQ(ShortDuration(3 * 86400 + 4 * 3600 + 5), "3d4h");
  EXPECT_EQ(ShortDuration(-3), "0s");
}

v1::WorkerInfo Worker(const std::string& name, const std::string& state, uint32_t busy = 0,
                      uint32_t slots = 4) {
  v1::WorkerInfo w;
  w.set_worker(name);
  w.set_state(state);
  w.set_slots_busy(busy);
  w.set_attempts_running(busy);
  w.mutable_capacity()->set_cpus(slots);
  w.set_accepting(true);
  w.set_owner_state("run");
  return w;
}

TEST(Workers, ActivityFromTheCoordinatorOrDerived) {
  auto w = Worker("a", "connected", 2);
  EXPECT_EQ(ActivityOf(w), "running");
  w.set_activity("on_battery");
  EXPECT_EQ(ActivityOf(w), "on_battery");  // the coordinator's word wins
  EXPECT_EQ(ActivityOf(Worker("b", "connected")), "idle");
  auto s = Worker("c", "connected", 1);
  s.set_owner_state("suspend");
  EXPECT_EQ(ActivityOf(s), "suspended");
  auto n = Worker("d", "connected");
  n.set_accepting(false);
  EXPECT_EQ(ActivityOf(n), "suspended");
  EXPECT_EQ(ActivityOf(Worker("e", "lost", 1)), "lost");
  EXPECT_EQ(ActivityOf(Worker("f", "left")), "left");
}

TEST(Workers, SummaryInFixedOrder) {
  v1::ListWorkersReply r;
  EXPECT_EQ(WorkerSummary(r, Ascii()), "workers: none\n");
  *r.add_workers() = Worker("l1", "lost");
  *r.add_workers() = Worker("i1", "connected");
  *r.add_workers() = Worker("r1", "connected", 1);
  *r.add_workers() = Worker("r2", "connected", 3);
  auto hot = Worker("h1", "connected");
  hot.set_activity("lid_closed");
  *r.add_workers() = hot;
  auto odd = Worker("z1", "connected");
  odd.set_activity("zzz_new_word");
  *r.add_workers() = odd;
  EXPECT_EQ(WorkerSummary(r, Ascii()),
            "workers: 2 running, 1 idle, 1 lid closed, 1 lost, 1 zzz new word\n");
  EXPECT_EQ(WorkerSummary(r, TermStyle{80, true, false}),
            "workers: 2 running · 1 idle · 1 lid closed · 1 lost · 1 zzz new word\n");
  const std::string colored = WorkerSummary(r, Fancy());
  EXPECT_NE(colored.find("\x1b[32m2 running"), std::string::npos);
  EXPECT_LE(VisibleWidth(Lines(WorkerSummary(r, Fancy(40)))[0]), 40);
}

TEST(Workers, OneLinePerWorkerThatIsThere) {
  v1::ListWorkersReply r;
  *r.add_workers() = Worker("desk", "connected", 3, 8);
  *r.add_workers() = Worker("gone", "left");
  *r.add_workers() = Worker(std::string(100, 'w'), "lost", 0, 2);
  const auto lines = Lines(WorkerLines(r, Ascii()));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("desk"), std::string::npos);
  EXPECT_NE(lines[0].find("running"), std::string::npos);
  EXPECT_NE(lines[0].find("3/8 slots busy"), std::string::npos);
  EXPECT_NE(lines[1].find("lost"), std::string::npos);
  EXPECT_NE(lines[1].find("0/2 slots busy"), std::string::npos);
  for (int width : {40, 80}) {
    for (const auto& l : Lines(WorkerLines(r, Fancy(width)))) EXPECT_LE(VisibleWidth(l), width);
  }
}

TEST(Width, FitWidthKeepsEscapesAndResets) {
  EXPECT_EQ(FitWidth("abcdef", 3), "abc");
  EXPECT_EQ(FitWidth("abc", 3), "abc");
  EXPECT_EQ(FitWidth("ééé", 2), "éé");
  const std::string cut = FitWidth("\x1b[31mred text\x1b[0m tail", 3);
  EXPECT_EQ(cut, "\x1b[31mred\x1b[0m");
  EXPECT_EQ(VisibleWidth("\x1b[31mred\x1b[0m █"), 5);
}

TEST(Terminal, PipeIsPlainAndEnvironmentSetsTheStyle) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::setenv("TERM", "xterm", 1);
  ::setenv("COLUMNS", "120", 1);
  ::setenv("LC_ALL", "en_US.UTF-8", 1);
  ::unsetenv("NO_COLOR");
  Terminal t = TerminalFor(fds[1]);
  EXPECT_FALSE(t.fancy);  // not a terminal
  EXPECT_EQ(t.style.width, 120);
  EXPECT_TRUE(t.style.unicode);
  EXPECT_TRUE(t.style.color);
  ::setenv("COLUMNS", "12", 1);
  ::setenv("LC_ALL", "C", 1);
  ::setenv("NO_COLOR", "1", 1);
  t = TerminalFor(fds[1]);
  EXPECT_EQ(t.style.width, kMinWidth);
  EXPECT_FALSE(t.style.unicode);
  EXPECT_FALSE(t.style.color);
  ::setenv("NO_COLOR", "", 1);  // empty: colours stay on (no-color.org)
  ::unsetenv("COLUMNS");
  t = TerminalFor(fds[1]);
  EXPECT_TRUE(t.style.color);
  EXPECT_EQ(t.style.width, 80);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(LiveDisplayTest, RedrawsInPlaceAndShowsTheCursorAtTheEnd) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = ::open_memstream(&buf, &size);
  ASSERT_NE(f, nullptr);
  {
    LiveDisplay d(f);
    d.Draw("one\ntwo\nthree\n");
    d.Draw("uno\ndos\n");
    d.Finish();
  }
  std::fclose(f);
  const std::string out(buf, size);
  std::free(buf);
  EXPECT_EQ(out,
            "\x1b[?25l\rone\x1b[K\ntwo\x1b[K\nthree\x1b[K\n\x1b[J"  // hide the cursor, draw
            "\x1b[3A\runo\x1b[K\ndos\x1b[K\n\x1b[J"                // up 3, overwrite, clear below
            "\x1b[?25h");                                          // the cursor back
}

}  // namespace
}  // namespace idlepool::cli
