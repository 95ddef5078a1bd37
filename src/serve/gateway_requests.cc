// Gateway::Impl's request glue, on the io thread: the router's decisions (route, queue, retry,
// expire, finish) carried out on exchanges, and the one timer the router asks for.
#include "serve/gateway_exchange.h"
#include "serve/gateway_impl.h"

namespace idlepool::serve {

void Gateway::Impl::Submit(const std::shared_ptr<Exchange>& x) {
  SubmitResult r = router.Submit(x->service(), Now());
  switch (r.kind) {
    case SubmitKind::kUnknownService:
      return x->Refuse(404, "the service " + x->service() + " is gone", {});
    case SubmitKind::kRejected:
      return x->Refuse(503, "the queue of " + x->service() + " is full", r.retry_after);
    case SubmitKind::kQueued:
      x->set_id(r.request);
      open[r.request] = x;
      return ArmTimer();
    case SubmitKind::kRouted:
      x->set_id(r.request);
      open[r.request] = x;
      return x->SendTo(r.replica);
  }
}

void Gateway::Impl::Retry(const std::shared_ptr<Exchange>& x) {
  ReplicaId failed_on = x->replica();
  RetryResult r = router.Retry(x->id(), Now());
  std::vector<serve::Dispatch> dispatched(r.dispatched.begin(), r.dispatched.end());
  if (!r.status.ok() || r.kind == RetryKind::kFailed) {
    open.erase(x->id());
    x->Refuse(502, "the request failed on every replica tried", {});
  } else if (r.kind == RetryKind::kRouted) {
    x->SendTo(r.replica);
  } else {
    ArmTimer();
  }
  Dispatch(dispatched);
  CheckDrained(failed_on);
}

void Gateway::Impl::Finish(Exchange& x, Outcome outcome) {
  auto it = open.find(x.id());
  if (it == open.end()) return;
  std::shared_ptr<Exchange> keep = std::move(it->second);
  open.erase(it);
  FinishResult r = router.Finish(x.id(), outcome, Now());
  std::vector<serve::Dispatch> dispatched(r.dispatched.begin(), r.dispatched.end());
  Dispatch(dispatched);
  if (x.replica() != 0) CheckDrained(x.replica());
  ArmTimer();  // an upstream error may have ejected a replica: its return is a deadline
}

void Gateway::Impl::Dispatch(std::span<const serve::Dispatch> dispatched) {
  std::vector<serve::Dispatch> copy(dispatched.begin(), dispatched.end());
  for (const serve::Dispatch& d : copy) {
    auto it = open.find(d.request);
    if (it != open.end()) it->second->SendTo(d.replica);
  }
}

void Gateway::Impl::EndUnanswered(std::span<const RequestId> ids, const char* why) {
  std::vector<RequestId> copy(ids.begin(), ids.end());
  for (RequestId id : copy) {
    auto it = open.find(id);
    if (it == open.end()) continue;
    std::shared_ptr<Exchange> x = std::move(it->second);
    open.erase(it);
    x->Refuse(503, why, std::chrono::seconds(1));
  }
}

void Gateway::Impl::ArmTimer() {
  std::optional<Time> next = router.NextDeadline();
  if (!next || (timer_at && *timer_at <= *next)) return;
  timer_at = next;
  Micros wait = std::max(Micros(0), *next - Now());
  timer.expires_after(wait);
  timer.async_wait([this](boost::system::error_code ec) {
    if (ec) return;  // re-armed (cancelled) or stopping
    timer_at.reset();
    OnTimer();
  });
}

void Gateway::Impl::OnTimer() {
  ExpireResult r = router.Expire(Now());
  std::vector<RequestId> expired(r.expired.begin(), r.expired.end());
  std::vector<serve::Dispatch> dispatched(r.dispatched.begin(), r.dispatched.end());
  EndUnanswered(expired, "no replica was free before the queue deadline");
  Dispatch(dispatched);
  ArmTimer();
}

std::vector<std::string> Gateway::Impl::OpenAIModels() const {
  std::vector<std::string> models;
  for (const auto& [model, service] : model_services) models.push_back(model);
  return models;
}

std::optional<std::string> Gateway::Impl::ServiceForModel(const std::string& model) const {
  auto it = model_services.find(model);
  if (it == model_services.end()) return std::nullopt;
  return it->second;
}

bool Gateway::Impl::IsHttpService(const std::string& name) const {
  auto it = services.find(name);
  return it != services.end() && it->second.protocol == Protocol::kHttp;
}

}  // namespace idlepool::serve
