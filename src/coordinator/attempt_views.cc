#include "coordinator/attempt_views.h"

#include <algorithm>
#include <utility>

#include "text/utf8.h"

namespace idlepool::coordinator {

void ToProto(const core::Transfer& t, v1::Transfer* o) {
  o->set_input_bytes(t.input_bytes);
  o->set_cached_bytes(t.cached_bytes);
  o->set_coordinator_bytes(t.coordinator_bytes);
  o->set_peer_bytes(t.peer_bytes);
  o->set_output_bytes(t.output_bytes);
  o->set_cache_hits(static_cast<uint32_t>(std::min<uint64_t>(t.cache_hits, UINT32_MAX)));
  o->set_cache_misses(static_cast<uint32_t>(std::min<uint64_t>(t.cache_misses, UINT32_MAX)));
}

void ToProto(const core::AttemptTiming& a, v1::AttemptTiming* t) {
  t->set_stage_ms(a.stage_ms);
  t->set_run_ms(a.run_ms);
  t->set_upload_ms(a.upload_ms);
  t->set_resumed(a.resumed);
}

std::string WithoutLogTail(const std::string& message, const std::string& log_tail) {
  std::string out = message;
  const std::string suffix = "\n" + log_tail;
  if (!log_tail.empty() && out.size() >= suffix.size() &&
      out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0) {
    out.resize(out.size() - suffix.size());
  }
  return out;
}

void FillFailedTask(const store::AttemptRecord& a, v1::FailedTask* out) {
  out->set_index(a.task.index);
  out->set_attempt(a.attempt);
  out->set_exit_code(a.exit_code);
  out->set_outcome(core::ToString(a.outcome));
  out->set_worker(a.worker);
  out->set_message(text::TruncateUtf8(WithoutLogTail(a.message, a.log_tail), kFailureReasonBytes));
}

void FillTimelineAttempt(const store::AttemptRecord& a, uint64_t next, bool with_log_tail,
                         v1::TimelineAttempt* t) {
  t->set_attempt(a.attempt);
  t->set_task(a.task.index);
  t->set_worker(a.worker);
  t->set_outcome(core::ToString(a.outcome));
  t->set_started_ms(a.started_ms);
  t->set_ended_ms(a.ended_ms);
  t->set_exit_code(a.exit_code);
  // The stored message carries the log tail after it; here it has its own field.
  t->set_message(WithoutLogTail(a.message, a.log_tail));
  if (with_log_tail) t->set_log_tail(a.log_tail);
  t->set_suspensions(a.suspensions);
  t->set_lost_ms(static_cast<uint64_t>(std::max<int64_t>(a.lost_ms, 0)));
  ToProto(a.transfer, t->mutable_transfer());
  ToProto(a.timing, t->mutable_timing());
  t->set_next_attempt(next);
}

}  // namespace idlepool::coordinator
