#include "coordinator/user_book.h"

#include <cmath>
#include <future>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/ordering_usage.h"
#include "spdlog/spdlog.h"
#include "text/names.h"

namespace idlepool::coordinator {

namespace {

// Bytes as the quota is set (`--max-stored GiB`): "1.50 GiB".
std::string GiB(uint64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

store::UserRow RowOf(const v1::UserSettings& s) {
  return store::UserRow{
      s.user(), s.share(), s.max_slots(), s.max_gpus(), s.max_queued_tasks(), s.max_stored_bytes()};
}

v1::UserSettings SettingsOfRow(const store::UserRow& r) {
  v1::UserSettings s;
  s.set_user(r.user);
  s.set_share(r.share);
  s.set_max_slots(r.max_slots);
  s.set_max_gpus(r.max_gpus);
  s.set_max_queued_tasks(r.max_queued_tasks);
  s.set_max_stored_bytes(r.max_stored_bytes);
  return s;
}

core::UserSet EventOf(const v1::UserSettings& s) {
  return core::UserSet{s.user(), s.share(), core::Quota{s.max_slots(), s.max_gpus()}};
}

}  // namespace

absl::Status UserBook::Load(core::RestoredState& state) {
  absl::StatusOr<store::UsersState> loaded = store_.LoadUsers();
  if (!loaded.ok()) return loaded.status();
  std::lock_guard lock(mu_);
  for (const store::UserRow& r : loaded->users) {
    users_[r.user] = SettingsOfRow(r);
    state.users.push_back(EventOf(users_[r.user]));
  }
  const core::Millis down{std::max<int64_t>(clock_.WallMs() - loaded->balances_as_of_ms, 0)};
  const core::UsageRule sane = core::SaneRule(usage_);
  for (const store::UsageBalance& b : loaded->balances) {
    state.usage.push_back(core::RestoredUsage{b.user,
                                              core::Decayed(b.slot_s, 0, down, sane.half_life),
                                              core::Decayed(b.gpu_s, 0, down, sane.half_life)});
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::UserSettings> UserBook::Set(const v1::SetUserRequest& req) {
  if (!text::IsUserName(req.user())) {
    return absl::InvalidArgumentError(
        absl::StrCat("user '", text::VisibleText(req.user().substr(0, 80)),
                     "' is not a user name: 1 to 64 ASCII letters, digits and . _ - @"));
  }
  if (req.has_share() && !(std::isfinite(req.share()) && req.share() >= core::kMinShare &&
                           req.share() <= core::kMaxShare)) {
    return absl::InvalidArgumentError(absl::StrCat("--share must be a number between ",
                                                   core::kMinShare, " and ", core::kMaxShare,
                                                   ", got ", req.share()));
  }
  std::lock_guard lock(mu_);
  v1::UserSettings next = users_.count(req.user()) ? users_[req.user()] : v1::UserSettings();
  next.set_user(req.user());
  if (next.share() == 0) next.set_share(1.0);
  if (req.has_share()) next.set_share(req.share());
  if (req.has_max_slots()) next.set_max_slots(req.max_slots());
  if (req.has_max_gpus()) next.set_max_gpus(req.max_gpus());
  if (req.has_max_queued_tasks()) next.set_max_queued_tasks(req.max_queued_tasks());
  if (req.has_max_stored_bytes()) next.set_max_stored_bytes(req.max_stored_bytes());
  if (absl::Status st = store_.PutUser(RowOf(next)); !st.ok()) return st;
  users_[req.user()] = next;
  core_.Post(core::Event(EventOf(next)));
  spdlog::info("user {}: share {}, max slots {}, max gpus {}, max queued tasks {}, max stored {}",
               next.user(), next.share(), next.max_slots(), next.max_gpus(),
               next.max_queued_tasks(), next.max_stored_bytes());
  return next;
}

v1::UserSettings UserBook::SettingsOf(const std::string& user) const {
  std::lock_guard lock(mu_);
  auto it = users_.find(user);
  if (it != users_.end()) return it->second;
  v1::UserSettings s;
  s.set_user(user);
  s.set_share(1.0);
  return s;
}

absl::StatusOr<uint64_t> UserBook::StoredBytesOf(const std::string& user) {
  absl::StatusOr<std::vector<store::JobRecord>> jobs = store_.ListJobs();
  if (!jobs.ok()) return jobs.status();
  uint64_t bytes = 0;
  for (const store::JobRecord& j : *jobs) {
    if (j.sched.user != user) continue;
    bytes += j.input_bytes;
    absl::StatusOr<store::TaskInputTotals> own = store_.GetTaskInputTotals(j.id);
    if (own.ok()) bytes += own->bytes;
    absl::StatusOr<std::vector<store::TaskOutput>> outs = store_.ListOutputs(j.id);
    if (!outs.ok()) continue;
    for (const store::TaskOutput& o : *outs) bytes += o.file.size;
  }
  return bytes;
}

absl::Status UserBook::CheckSubmit(const std::string& user, uint64_t tasks, uint64_t bytes) {
  const v1::UserSettings s = SettingsOf(user);
  const std::string who = user.empty() ? std::string("(no user)") : user;
  if (s.max_queued_tasks() > 0) {
    const uint64_t queued = core_.Query<uint64_t>([this, &user] {
      for (const core::UserView& v : core_.sched().Users(clock_.Now())) {
        if (v.settings.user == user) return v.queued_tasks;
      }
      return uint64_t{0};
    });
    if (queued + tasks > s.max_queued_tasks()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "user ", who, " has ", queued, " tasks queued and this job adds ", tasks,
          ": past the quota max_queued_tasks = ", s.max_queued_tasks(),
          "; wait for some to finish, cancel some, or ask the pool's admin (`idlepool users "
          "set ",
          who, " --max-queued-tasks N`)"));
    }
  }
  if (s.max_stored_bytes() > 0) {
    absl::StatusOr<uint64_t> stored = StoredBytesOf(user);
    if (!stored.ok()) return stored.status();
    if (*stored + bytes > s.max_stored_bytes()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "user ", who, " keeps ", GiB(*stored), " of inputs and outputs and this job adds ",
          GiB(bytes), ": past the quota max_stored = ", GiB(s.max_stored_bytes()),
          "; delete finished jobs (`idlepool delete JOB`) or ask the pool's admin (`idlepool "
          "users set ",
          who, " --max-stored GiB`)"));
    }
  }
  return absl::OkStatus();
}

void UserBook::List(v1::ListUsersReply* reply) {
  const core::MonoTime now = clock_.Now();
  const std::vector<core::UserView> views =
      core_.Query<std::vector<core::UserView>>([this, now] { return core_.sched().Users(now); });
  for (const core::UserView& v : views) {
    v1::UserStanding* out = reply->add_users();
    *out->mutable_settings() = SettingsOf(v.settings.user);
    out->set_usage_slot_s(v.usage.slot_s);
    out->set_usage_gpu_s(v.usage.gpu_s);
    out->set_slots(v.usage.slots);
    out->set_gpus(v.usage.gpus);
    out->set_queued_tasks(v.queued_tasks);
    if (v.starving_since) out->set_starving_ms((now - *v.starving_since).count());
    // Counted only for a user with that quota: it reads every job's outputs.
    if (out->settings().max_stored_bytes() > 0) {
      if (absl::StatusOr<uint64_t> b = StoredBytesOf(v.settings.user); b.ok()) {
        out->set_stored_bytes(*b);
      }
    }
  }
  reply->set_half_life_s(core::SaneRule(usage_).half_life.count() / 1000);
  reply->set_fair_preemption_after_s(preemption_.after ? preemption_.after->count() / 1000 : -1);
}

}  // namespace idlepool::coordinator
