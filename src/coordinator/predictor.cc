#include "coordinator/predictor.h"

#include <algorithm>
#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "spec/profile_key.h"
#include "wire/wire.h"

namespace idlepool::coordinator {
namespace {

// Jobs without history wait for their first kPredictAfter successes (fewer for a smaller job,
// but never all of them: a prediction made once every task is done would predict nothing).
constexpr uint32_t kPredictAfter = 3;
constexpr auto kPredictEvery = std::chrono::milliseconds(500);
constexpr size_t kMaxCachedPredictions = 4096;

}  // namespace

std::string ProfileKeyOf(const v1::JobSpec& proto, const spec::JobSpec& spec) {
  std::vector<std::string> hashes;
  for (const auto& in : proto.inputs()) hashes.push_back(in.sha256());
  return spec::ProfileKeyOf(spec, std::move(hashes));
}

PlanJobFacts FactsOf(const v1::JobSpec& proto, const spec::JobSpec& spec, uint64_t tasks) {
  PlanJobFacts f;
  f.tasks = tasks;
  f.resources = spec.resources;
  for (const auto& in : proto.inputs()) f.input_bytes += static_cast<double>(in.size());
  return f;
}

std::string HistoryBasis(const std::vector<store::AttemptRecord>& samples, core::JobId own) {
  std::set<core::JobId> jobs;
  size_t mine = 0;
  for (const auto& a : samples) {
    jobs.insert(a.task.job);
    if (a.task.job == own) ++mine;
  }
  if (own != 0 && mine == samples.size()) {
    return absl::StrCat("this job's first ", mine, " attempts");
  }
  return absl::StrCat("history: ", samples.size(), " attempts of ", jobs.size(),
                      jobs.size() == 1 ? " job" : " jobs", " with this profile");
}

void Predictor::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Predictor::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Predictor::Await(core::JobId id, const v1::JobSpec& spec, uint64_t tasks) {
  auto shared = std::make_shared<const v1::JobSpec>(spec);
  std::lock_guard lock(mu_);
  awaiting_[id] = AwaitingPrediction{std::move(shared), tasks, false};
  dirty_.insert(id);
  cv_.notify_all();
}

void Predictor::JobsProgressed(const std::vector<core::JobId>& ids) {
  std::lock_guard lock(mu_);
  bool any = false;
  for (core::JobId id : ids) {
    if (awaiting_.count(id) != 0) any = dirty_.insert(id).second || any;
  }
  if (any) cv_.notify_all();
}

size_t Predictor::awaiting() const {
  std::lock_guard lock(mu_);
  return awaiting_.size();
}

std::vector<PlanWorker> Predictor::GatherPlanWorkers(const v1::JobSpec& proto,
                                                     const std::vector<std::string>& only,
                                                     std::string* unknown,
                                                     const std::optional<std::string>& user) {
  auto views =
      core_.Query<std::vector<core::WorkerView>>([this] { return core_.sched().Workers(); });
  std::vector<PlanWorker> out;
  std::set<std::string> wanted(only.begin(), only.end());
  for (const auto& v : views) {
    if (v.state != core::WorkerState::kConnected || !v.accepting) continue;
    if (!wanted.empty() && !wanted.count(v.worker)) continue;
    if (user && !core::LendsTo(v.accept_users, v.refuse_users, *user)) continue;
    PlanWorker w;
    w.name = v.worker;
    w.capacity = v.capacity;
    out.push_back(std::move(w));
  }
  if (unknown) {
    for (const auto& name : only) {
      bool found =
          std::any_of(out.begin(), out.end(), [&](const PlanWorker& w) { return w.name == name; });
      if (!found) {
        *unknown = name;
        break;
      }
    }
  }
  book_.FillPlanWorkers(clock_.Now(), out);
  std::lock_guard lock(tracker_.mu);
  for (PlanWorker& w : out) {
    w.holds_assets = std::all_of(
        proto.inputs().begin(), proto.inputs().end(),
        [&](const v1::Input& in) { return tracker_.tracker.IsHolder(w.name, in.sha256()); });
  }
  return out;
}

bool Predictor::PredictAndKeep(core::JobId id, const v1::JobSpec& proto, uint64_t tasks,
                               bool history_only) {
  spec::JobSpec spec = wire::FromProto(proto);
  const std::string key = ProfileKeyOf(proto, spec);
  auto samples = store_.ListSucceededAttempts({key, 0, kPlanSamples});
  if (!samples.ok()) {
    spdlog::warn("job {}: cannot read its profile: {}", id, samples.status().ToString());
    return false;
  }
  if (history_only) {  // a prediction made before the job ran: none of its own attempts
    std::erase_if(*samples, [id](const store::AttemptRecord& a) { return a.task.job == id; });
    if (samples->empty()) return false;
  }
  std::vector<PlanWorker> workers = GatherPlanWorkers(proto, {}, nullptr);
  auto p = coordinator::Predict(FactsOf(proto, spec, tasks), workers, *samples,
                                HistoryBasis(*samples, id), clock_.WallMs());
  if (!p.ok()) {
    if (!absl::IsFailedPrecondition(p.status())) {
      spdlog::warn("job {}: no prediction: {}", id, p.status().ToString());
    }
    return false;
  }
  if (absl::Status st = store_.PutJobPrediction(id, p->SerializeAsString()); !st.ok()) {
    spdlog::warn("job {}: cannot store its prediction: {}", id, st.ToString());
  }
  spdlog::info("job {}: predicted makespan {:.1f} s on {} workers ({}; single machine {:.1f} s)",
               id, p->makespan_s(), p->workers_size(), p->basis(), p->single_makespan_s());
  std::lock_guard lock(mu_);
  predictions_[id] = std::move(*p);
  return true;
}

bool Predictor::Try(core::JobId id, const AwaitingPrediction& job) {
  if (!job.history_tried) {
    const bool made = PredictAndKeep(id, *job.spec, job.tasks, true);
    std::lock_guard l(mu_);
    if (made) return true;
    if (auto it = awaiting_.find(id); it != awaiting_.end()) it->second.history_tried = true;
  }
  auto s =
      core_.Query<std::optional<core::JobSummary>>([this, id] { return core_.sched().Job(id); });
  bool done = !s || s->state != core::JobState::kRunning ||
              s->succeeded >= s->tasks;  // too late to predict
  if (!done && s->succeeded >= std::min<uint32_t>(kPredictAfter, s->tasks)) {
    PredictAndKeep(id, *job.spec, job.tasks, false);
    done = true;
  }
  return done;
}

// Each pass looks at the waiting jobs that changed since the last one (dirty_), at most every
// kPredictEvery: a burst of successes makes one pass.
void Predictor::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait(lock, [&] { return stop_ || !dirty_.empty(); });
    if (cv_.wait_for(lock, kPredictEvery, [&] { return stop_; })) return;
    std::vector<std::pair<core::JobId, AwaitingPrediction>> work;
    for (core::JobId id : dirty_) {
      if (auto it = awaiting_.find(id); it != awaiting_.end()) work.emplace_back(id, it->second);
    }
    dirty_.clear();
    lock.unlock();
    for (const auto& [id, job] : work) {
      if (Try(id, job)) {
        std::lock_guard l(mu_);
        awaiting_.erase(id);
      }
    }
    lock.lock();
  }
}

std::optional<v1::Prediction> Predictor::PredictionOf(core::JobId id) {
  {
    std::lock_guard lock(mu_);
    auto it = predictions_.find(id);
    if (it != predictions_.end()) return it->second;
  }
  std::optional<v1::Prediction> p;
  auto bytes = store_.GetJobPrediction(id);
  if (bytes.ok() && !bytes->empty()) {
    v1::Prediction parsed;
    if (parsed.ParseFromString(*bytes)) p = std::move(parsed);
  }
  std::lock_guard lock(mu_);
  // Cache only a prediction, or the absence of one for a job nobody will predict any more.
  if (predictions_.size() > kMaxCachedPredictions) predictions_.clear();  // a cache, bounded
  if (p || !awaiting_.count(id)) predictions_[id] = p;
  return p;
}

}  // namespace idlepool::coordinator
