#include "coordinator/collector.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <future>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "idlepool.pb.h"
#include "spdlog/spdlog.h"

namespace idlepool::coordinator {
namespace {

constexpr int64_t kTotalsMaxAgeMs = 10000;

}  // namespace

int FaultKillAtFromEnv() {
  const char* v = std::getenv("IDLEPOOL_FAULT_GC_KILL_AT");
  int n = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &n) || n < 0) return 0;
  if (n > 0) spdlog::warn("fault injection: SIGKILL before collection step {}", n);
  return n;
}

Collector::Collector(store::Store& store, blob::BlobStore& blobs, CoreLoop& core,
                     const platform::Clock& clock, CollectorOptions options)
    : store_(store), blobs_(blobs), core_(core), clock_(clock), options_(options) {}

std::vector<std::string> Collector::SpecInputs(const std::string& spec) {
  v1::JobSpec proto;
  std::vector<std::string> out;
  if (!proto.ParseFromString(spec)) return out;
  for (const auto& in : proto.inputs()) out.push_back(in.sha256());
  return out;
}

void Collector::Step(const char* what) {
  const int n = ++steps_;
  if (options_.kill_at != n) return;
  spdlog::warn("fault injection: SIGKILL before collection step {} ({})", n, what);
  spdlog::default_logger()->flush();
  ::kill(::getpid(), SIGKILL);
}

void Collector::Cancel(core::JobId job) {
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  core_.PostItem(
      CoreItem{core::Event(core::JobCancelled{job}), nullptr, [done] { done->set_value(); }});
  fut.wait();
}

std::string Collector::Dependents(core::JobId job) {
  // A stored spec's `after` holds the ids its names resolved to at submit (job_after.h).
  auto ids = core_.Query<std::vector<core::JobId>>([this, job] {
    std::vector<core::JobId> out;
    const std::string id = absl::StrCat(job);
    for (const auto& [other, info] : core_.jobs()) {
      const std::optional<core::JobSummary> s = core_.sched().Job(other);
      if (!s || s->state != core::JobState::kRunning) continue;  // finished: it needs nothing
      for (const std::string& a : info.spec.after()) {
        if (a == id) {
          out.push_back(other);
          break;
        }
      }
    }
    return out;
  });
  std::vector<std::string> names;
  for (core::JobId id : ids) names.push_back(absl::StrCat("job ", id));
  return absl::StrJoin(names, ", ");
}

absl::Status Collector::DeleteRows(core::JobId job, std::map<std::string, int64_t>& released) {
  absl::StatusOr<store::JobRecord> header = store_.GetJobHeader(job);
  if (!header.ok()) return header.status();
  if (std::string after = Dependents(job); !after.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job, " cannot be deleted: ", after,
                     " runs after it and has not finished (cancel or delete it first)"));
  }
  Step("delete the job's rows");
  absl::StatusOr<std::set<std::string>> named = store_.DeleteJob(job, SpecInputs);
  if (!named.ok()) return named.status();
  for (const std::string& sha : *named) {
    int64_t& before = released[sha];
    before = std::max(before, header->finished_ms);
  }
  Step("forget the job in the core");
  const bool forgotten = core_.Query<bool>([this, job] {
    core_.jobs().erase(job);
    return core_.sched().ForgetJob(job);
  });
  if (!forgotten) spdlog::warn("job {} deleted, but the core still runs one of its attempts", job);
  Step("remove the job's logs");
  if (on_deleted_) on_deleted_(job);
  spdlog::info("job {} '{}' deleted ({} blobs named)", job, header->name, named->size());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<blob::BlobFile>> Collector::Sweep(
    const std::map<std::string, int64_t>& released, bool dry_run) {
  Step("mark");
  absl::StatusOr<std::set<std::string>> referenced = store_.ReferencedBlobs(SpecInputs);
  if (!referenced.ok()) return referenced.status();
  const int64_t now = clock_.WallMs();
  std::vector<blob::BlobFile> on_disk = blobs_.List();
  blob::MarkInput in{now, options_.grace, released};
  std::vector<blob::BlobFile> victims = blob::Unreferenced(on_disk, *referenced, in);
  if (dry_run) return victims;
  std::vector<blob::BlobFile> removed;
  for (const blob::BlobFile& b : victims) {
    Step("remove a blob");
    if (absl::Status st = blobs_.Remove(b.sha256); !st.ok()) {
      spdlog::warn("gc: {}", std::string(st.message()));
      continue;
    }
    removed.push_back(b);
  }
  std::lock_guard lock(totals_mu_);
  totals_at_ms_ = 0;  // recount at the next read
  return removed;
}

absl::StatusOr<DeleteResult> Collector::DeleteJob(core::JobId job, bool cancel) {
  auto state =
      core_.Query<std::optional<core::JobState>>([this, job]() -> std::optional<core::JobState> {
        auto s = core_.sched().Job(job);
        if (!s) return std::nullopt;
        return s->state;
      });
  if (!state) return absl::NotFoundError(absl::StrCat("no job ", job));
  if (*state == core::JobState::kRunning) {
    if (!cancel) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job, " is running or waiting: `idlepool delete ", job,
                       " --cancel` cancels it first, or wait until it finished"));
    }
    Cancel(job);
  }
  std::lock_guard one(collect_mu_);
  std::unique_lock lock(guard_);
  std::map<std::string, int64_t> released;
  if (absl::Status st = DeleteRows(job, released); !st.ok()) return st;
  absl::StatusOr<std::vector<blob::BlobFile>> removed = Sweep(released, /*dry_run=*/false);
  if (!removed.ok()) return removed.status();
  DeleteResult out;
  for (const blob::BlobFile& b : *removed) {
    ++out.blobs_removed;
    out.bytes_freed += b.size;
  }
  spdlog::info("job {}: {} blobs removed, {} bytes freed", job, out.blobs_removed, out.bytes_freed);
  return out;
}

absl::StatusOr<GcResult> Collector::Collect(bool dry_run, std::chrono::milliseconds keep_finished) {
  if (keep_finished.count() == 0) keep_finished = options_.keep_finished;
  GcResult out;
  out.dry_run = dry_run;
  std::lock_guard one(collect_mu_);
  std::unique_lock lock(guard_);
  std::map<std::string, int64_t> released;
  if (keep_finished.count() > 0) {
    absl::StatusOr<std::vector<store::JobRecord>> jobs = store_.ListJobs();
    if (!jobs.ok()) return jobs.status();
    const int64_t before = clock_.WallMs() - keep_finished.count();
    for (const store::JobRecord& j : *jobs) {
      if (j.state == core::JobState::kRunning || j.finished_ms <= 0 || j.finished_ms >= before) {
        continue;
      }
      if (!dry_run) {
        if (absl::Status st = DeleteRows(j.id, released); !st.ok()) {
          spdlog::warn("gc: job {} kept: {}", j.id, std::string(st.message()));
          continue;
        }
      }
      out.jobs.push_back(j.id);
    }
    // Usage by day goes with the jobs of its age (whole days older than keep_finished).
    if (!dry_run) {
      if (absl::Status st = store_.TrimUsage(before / 86'400'000); !st.ok()) {
        spdlog::warn("gc: usage by day kept: {}", std::string(st.message()));
      }
    }
  }
  absl::StatusOr<std::vector<blob::BlobFile>> blobs = Sweep(released, dry_run);
  if (!blobs.ok()) return blobs.status();
  out.blobs = std::move(*blobs);
  for (const blob::BlobFile& b : out.blobs) out.bytes += b.size;
  if (!dry_run && (!out.jobs.empty() || !out.blobs.empty())) {
    spdlog::info("gc: {} finished jobs deleted, {} blobs removed, {} bytes freed", out.jobs.size(),
                 out.blobs.size(), out.bytes);
  }
  return out;
}

BlobTotals Collector::Totals() {
  std::lock_guard lock(totals_mu_);
  const int64_t now = clock_.WallMs();
  if (totals_at_ms_ != 0 && now - totals_at_ms_ < kTotalsMaxAgeMs && now >= totals_at_ms_) {
    return totals_;
  }
  BlobTotals t;
  for (const blob::BlobFile& b : blobs_.List()) {
    ++t.count;
    t.bytes += b.size;
  }
  totals_ = t;
  totals_at_ms_ = now;
  return t;
}

void Collector::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Collector::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Collector::Loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, options_.every, [&] { return stop_; })) {
    lock.unlock();
    absl::StatusOr<GcResult> r = Collect(/*dry_run=*/false, options_.keep_finished);
    if (!r.ok()) spdlog::warn("gc: {}", std::string(r.status().message()));
    lock.lock();
  }
}

}  // namespace idlepool::coordinator
