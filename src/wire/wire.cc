#include "wire/wire.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace idlepool::wire {

v1::Resources ToProto(const core::Resources& r) {
  v1::Resources p;
  p.set_cpus(r.cpus);
  p.set_gpus(r.gpus);
  p.set_memory_mb(r.memory_mb);
  p.set_gpu_memory_mb(r.gpu_memory_mb);
  p.set_gpu_api(r.gpu_api);
  return p;
}

core::Resources FromProto(const v1::Resources& p) {
  return core::Resources{p.cpus(), p.gpus(), p.memory_mb(), p.gpu_memory_mb(), p.gpu_api()};
}

std::string GpusProblem(const google::protobuf::RepeatedPtrField<v1::GpuDevice>& gpus) {
  if (gpus.size() > kMaxGpus) {
    return absl::StrCat("Hello.gpus lists ", gpus.size(), " devices, at most ", kMaxGpus);
  }
  std::set<uint32_t> seen;
  for (const v1::GpuDevice& g : gpus) {
    const std::string which = absl::StrCat("Hello.gpus: device ", g.index());
    if (!seen.insert(g.index()).second) return absl::StrCat(which, " is listed twice");
    if (g.memory_mb() > kMaxGpuMemoryMb) {
      return absl::StrCat(which, ": memory_mb ", g.memory_mb(), " is over ", kMaxGpuMemoryMb);
    }
    if (g.apis_size() > 8) return absl::StrCat(which, ": more than 8 apis");
    for (const std::string& api : g.apis()) {
      if (api.empty() || api.size() > 16) return absl::StrCat(which, ": an api of 1 to 16 bytes");
    }
    if (g.name().size() > 256 || g.vendor().size() > 256 || g.uuid().size() > 256 ||
        g.cuda_id().size() > 256 || g.opencl_id().size() > 256 || g.unavailable().size() > 32) {
      return absl::StrCat(which, ": a name, vendor, uuid or id over 256 bytes");
    }
  }
  return "";
}

std::vector<core::GpuDevice> GpusFromProto(
    const google::protobuf::RepeatedPtrField<v1::GpuDevice>& gpus) {
  std::vector<core::GpuDevice> out;
  for (const v1::GpuDevice& g : gpus) {
    out.push_back(core::GpuDevice{g.index(),
                                  g.memory_mb(),
                                  {g.apis().begin(), g.apis().end()},
                                  /*held=*/!g.unavailable().empty()});
  }
  return out;
}

v1::ServiceSpec ToProto(const spec::ServiceSpec& s) {
  v1::ServiceSpec p;
  p.set_min_replicas(s.min_replicas);
  p.set_max_replicas(s.max_replicas);
  p.set_protocol(s.protocol);
  p.set_model(s.model);
  p.set_health(s.health);
  p.set_max_concurrent(s.max_concurrent);
  p.set_drain_seconds(s.drain_seconds);
  p.set_replicas_per_machine(s.replicas_per_machine);
  return p;
}

spec::ServiceSpec FromProto(const v1::ServiceSpec& p) {
  spec::ServiceSpec s;
  s.min_replicas = p.min_replicas();
  s.max_replicas = p.max_replicas();
  s.protocol = p.protocol();
  s.model = p.model();
  s.health = p.health();
  s.max_concurrent = p.max_concurrent();
  s.drain_seconds = p.drain_seconds();
  s.replicas_per_machine = p.replicas_per_machine();
  return s;
}

v1::JobSpec ToProto(const spec::JobSpec& s) {
  v1::JobSpec p;
  p.set_name(s.name);
  for (const auto& a : s.command) p.add_command(a);
  switch (s.kind) {
    case spec::TaskKind::kFrames:
      p.mutable_frames()->set_spec(s.frames);
      p.mutable_frames()->set_chunk(s.chunk);
      break;
    case spec::TaskKind::kItems:
      for (const auto& i : s.items) p.mutable_items()->add_items(i);
      break;
    case spec::TaskKind::kCount:
      if (!s.service.has_value()) p.set_count(s.count);  // a service's tasks are its replicas
      break;
  }
  for (const auto& in : s.inputs) p.add_inputs()->set_path(in.path);
  for (const auto& o : s.outputs) p.add_outputs(o);
  for (const auto& t : s.task_inputs) p.add_task_inputs(t);
  p.set_allow_empty_outputs(s.allow_empty_outputs);
  *p.mutable_resources() = ToProto(s.resources);
  p.set_host_network(s.resources.host_network);  // not a field of v1::Resources
  p.set_max_attempts(s.max_attempts);
  p.set_timeout_s(s.timeout_s);
  if (s.service.has_value()) *p.mutable_service() = ToProto(*s.service);
  for (const auto& a : s.after) p.add_after(a);
  p.mutable_retry()->set_backoff_s(s.backoff_s);
  p.mutable_retry()->set_max_backoff_s(s.max_backoff_s);
  p.mutable_retry()->set_set(true);
  p.mutable_retry()->set_hold_off_after(s.hold_off_after);
  p.set_priority(s.priority);
  for (const auto& e : s.env) {
    v1::EnvVar* v = p.add_env();
    v->set_name(e.name);
    v->set_value(e.value);
  }
  return p;
}

spec::JobSpec FromProto(const v1::JobSpec& p) {
  spec::JobSpec s;
  s.name = p.name();
  s.command.assign(p.command().begin(), p.command().end());
  switch (p.tasks_case()) {
    case v1::JobSpec::kFrames:
      s.kind = spec::TaskKind::kFrames;
      s.frames = p.frames().spec();
      s.chunk = p.frames().chunk();
      break;
    case v1::JobSpec::kItems:
      s.kind = spec::TaskKind::kItems;
      s.items.assign(p.items().items().begin(), p.items().items().end());
      break;
    default:
      s.kind = spec::TaskKind::kCount;
      s.count = p.count();
      break;
  }
  for (const auto& in : p.inputs()) s.inputs.push_back(spec::Input{"", in.path()});
  s.outputs.assign(p.outputs().begin(), p.outputs().end());
  s.task_inputs.assign(p.task_inputs().begin(), p.task_inputs().end());
  s.allow_empty_outputs = p.allow_empty_outputs();
  s.resources = FromProto(p.resources());
  s.resources.host_network = p.host_network();
  s.max_attempts = p.max_attempts();
  s.timeout_s = p.timeout_s();
  if (p.has_service()) s.service = FromProto(p.service());
  s.after.assign(p.after().begin(), p.after().end());
  if (p.retry().set()) {  // else the defaults (a client from before issue 18)
    s.backoff_s = p.retry().backoff_s();
    s.max_backoff_s = p.retry().max_backoff_s();
    if (p.retry().hold_off_after() != 0) s.hold_off_after = p.retry().hold_off_after();
  }
  s.env = EnvFromProto(p.env());
  s.priority = p.priority();
  return s;
}

std::vector<spec::EnvVar> EnvFromProto(const google::protobuf::RepeatedPtrField<v1::EnvVar>& env) {
  std::vector<spec::EnvVar> out;
  out.reserve(env.size());
  for (const auto& v : env) out.push_back(spec::EnvVar{v.name(), v.value()});
  return out;
}

v1::TaskParams ToProto(const spec::TaskParams& t) {
  v1::TaskParams p;
  p.set_index(t.index);
  for (int64_t f : t.chunk.frames) p.add_frames(f);
  p.set_frame_start(t.chunk.start);
  p.set_frame_end(t.chunk.end);
  p.set_frame_step(t.chunk.step);
  p.set_item(t.item);
  return p;
}

spec::TaskParams FromProto(const v1::TaskParams& p) {
  spec::TaskParams t;
  t.index = p.index();
  t.chunk.frames.assign(p.frames().begin(), p.frames().end());
  t.chunk.start = p.frame_start();
  t.chunk.end = p.frame_end();
  t.chunk.step = p.frame_step();
  t.item = p.item();
  return t;
}

v1::Assignment ToAssignment(const v1::JobSpec& spec, uint64_t job, const spec::TaskParams& task,
                            uint64_t attempt, const std::vector<uint32_t>& gpus) {
  v1::Assignment as;
  as.set_attempt(attempt);
  as.set_job(job);
  as.set_job_name(spec.name());
  *as.mutable_task() = ToProto(task);
  *as.mutable_command() = spec.command();
  *as.mutable_inputs() = spec.inputs();
  *as.mutable_outputs() = spec.outputs();
  as.set_allow_empty_outputs(spec.allow_empty_outputs());
  as.set_host_network(spec.host_network());
  *as.mutable_resources() = spec.resources();
  as.set_timeout_s(spec.timeout_s());
  if (spec.has_service()) *as.mutable_service() = spec.service();
  for (uint32_t g : gpus) as.add_gpus(g);
  *as.mutable_env() = spec.env();
  return as;
}

v1::Kill ToKill(uint64_t attempt, core::KillReason reason) {
  v1::Kill k;
  k.set_attempt(attempt);
  switch (reason) {
    case core::KillReason::kCancelled:
      k.set_code(v1::KILL_REASON_CANCELLED);
      k.set_reason("cancelled");
      break;
    case core::KillReason::kTimedOut:
      k.set_code(v1::KILL_REASON_TIMED_OUT);
      k.set_reason("timed out");
      break;
    case core::KillReason::kSuperseded:
      k.set_code(v1::KILL_REASON_SUPERSEDED);
      k.set_reason("superseded: another attempt of the task succeeded");
      break;
    case core::KillReason::kObsolete:
      k.set_code(v1::KILL_REASON_OBSOLETE);
      k.set_reason("obsolete: its result can no longer be used");
      break;
    case core::KillReason::kFairShare:
      k.set_code(v1::KILL_REASON_FAIR_SHARE);
      k.set_reason("vacated for fair share: another user is below half of its share");
      break;
    case core::KillReason::kStale:
      k.set_code(v1::KILL_REASON_STALE);
      k.set_reason("stale attempt");
      break;
  }
  return k;
}

bool KeepsFinishedOutputs(v1::KillReason code) {
  return code == v1::KILL_REASON_STALE || code == v1::KILL_REASON_UNSPECIFIED;
}

}  // namespace idlepool::wire
