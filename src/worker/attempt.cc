#include "worker/attempt.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace idlepool::worker {

void TransferFigures::Staged(uint64_t size, bool hit, uint64_t from_coordinator,
                             uint64_t from_peers) {
  input_bytes += size;
  coordinator_bytes += from_coordinator;
  peer_bytes += from_peers;
  if (hit) {
    cached_bytes += size;
    ++cache_hits;
  } else {
    ++cache_misses;
  }
}

void TransferFigures::ToProto(v1::Transfer* t) const {
  t->set_input_bytes(input_bytes);
  t->set_cached_bytes(cached_bytes);
  t->set_coordinator_bytes(coordinator_bytes);
  t->set_peer_bytes(peer_bytes);
  t->set_output_bytes(output_bytes);
  t->set_cache_hits(cache_hits);
  t->set_cache_misses(cache_misses);
}

void EndFrozenSpan(Attempt& a, core::MonoTime now) {
  if (!a.frozen) return;
  a.frozen = false;
  a.frozen_spans.emplace_back(a.frozen_since, now);
}

bool Vacate(Attempt& a, std::chrono::milliseconds grace, const std::string& reason,
            core::MonoTime now) {
  std::lock_guard lock(a.mu);
  // A filed attempt has finished its work: it is delivered, never vacated.
  if (a.finished || a.killed || a.filed) return false;
  if (a.vacating) {
    if (a.process) a.process->Terminate(grace);  // a shorter grace (sleep) takes effect
    return true;
  }
  a.vacating = true;
  a.vacate_reason = reason;
  a.vacate_at = now;
  EndFrozenSpan(a, a.vacate_at);
  if (a.process) a.process->Terminate(grace);
  spdlog::info("attempt {}: {} (grace {} ms)", a.id, reason, grace.count());
  return true;
}

void FillTiming(Attempt& a, bool with_upload, core::MonoTime now, v1::AttemptTiming* t) {
  core::MonoTime assigned, started, exited, frozen_since;
  bool frozen;
  std::vector<Span> spans;
  {
    std::lock_guard lock(a.mu);
    assigned = a.assigned;
    started = a.started;
    exited = a.exited;
    frozen = a.frozen;
    frozen_since = a.frozen_since;
    spans = a.frozen_spans;
  }
  auto ms = [](core::MonoTime from, core::MonoTime to) {
    return static_cast<uint64_t>(std::max<int64_t>((to - from).count(), 0));
  };
  t->set_resumed(a.assignment.checkpoint_size() > 0);
  if (assigned == core::MonoTime{}) return;  // filed by an earlier run: nothing measured here
  if (started == core::MonoTime{}) {
    t->set_stage_ms(ms(assigned, now));
    return;
  }
  const core::MonoTime end = exited == core::MonoTime{} ? now : exited;
  if (frozen) spans.emplace_back(frozen_since, end);
  int64_t frozen_ms = 0;
  for (const auto& [b, e] : spans) {
    const core::MonoTime lo = std::max(b, started), hi = std::min(e, end);
    if (hi > lo) frozen_ms += (hi - lo).count();
  }
  t->set_stage_ms(ms(assigned, started));
  t->set_run_ms(ms(started, end) - std::min<uint64_t>(ms(started, end), frozen_ms));
  if (with_upload) t->set_upload_ms(ms(end, now));
}

}  // namespace idlepool::worker
