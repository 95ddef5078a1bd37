// A service job's [service] table (issue 17): the job is a service, its tasks are replicas,
// long-running attempts that serve requests on the worker's loopback and are never "done".
//
// A plain value type; thread-compatible. Read from a job file by ParseJobToml and checked, with
// the rest of the spec, by Validate (spec.h): the rules below are enforced there, and every
// message names the key ("job spec: field 'service.max_concurrent': ..."). Defaults are the
// member initializers; docs/guide/job-spec.md ("Services") says where each comes from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace idlepool::spec {

// The most replicas a service may have. Each replica is a task (a row in the store, a lease in
// the core) and a route in the gateway, health-checked on its own; the pools idlepool is built
// for lend tens to hundreds of machines, so 1024 (at the default one replica per machine) is
// more than any of them holds, and a typo (replicas = 100000) is refused instead of creating a
// hundred thousand tasks.
inline constexpr uint32_t kMaxReplicas = 1024;
// At most this many replicas on one machine: a machine offers at most 64 GPUs
// (wire::kMaxGpus), and one replica per GPU is the most a machine usefully holds.
inline constexpr uint32_t kMaxReplicasPerMachine = 64;
// Requests one replica is given at a time.
inline constexpr uint32_t kMaxConcurrent = 4096;
// The longest drain a spec may ask for (one hour). The worker caps it again at its owner
// policy's grace: the owner comes first.
inline constexpr uint32_t kMaxDrainSeconds = 3600;
// `model` (the name OpenAI clients send) and `health` (a request path).
inline constexpr size_t kMaxModelBytes = 256;
inline constexpr size_t kMaxHealthBytes = 1024;

// The protocols a service may speak (`protocol`).
inline constexpr std::string_view kProtocolHttp = "http";      // any HTTP: /services/NAME/...
inline constexpr std::string_view kProtocolOpenAi = "openai";  // /v1/... routed by `model`

struct ServiceSpec {
  // The replicas to keep running. `replicas = N` sets both to N (a fixed count); min_replicas
  // and max_replicas, autoscaled between them (min may be 0: the first request waits while a
  // replica starts). 0 <= min <= max, 1 <= max <= kMaxReplicas. Default: one replica.
  uint32_t min_replicas = 1;
  uint32_t max_replicas = 1;
  // kProtocolHttp (the default: it assumes nothing of the engine) or kProtocolOpenAi.
  std::string protocol = std::string(kProtocolHttp);
  // openai: required, the name clients send as "model": 1 to kMaxModelBytes of A-Z a-z 0-9
  // . _ - / : ("org/model:tag"). http: must be empty.
  std::string model;
  // The path a replica must answer 200 on before it gets traffic: starts with '/', printable
  // ASCII without spaces or '#', at most kMaxHealthBytes.
  std::string health = "/health";
  // Requests a replica is given at once, 1..kMaxConcurrent. Default 4: llama-server's own
  // default (`--parallel -1`, auto) opens 4 slots, and a request beyond its slots waits inside
  // the engine, where the gateway can neither see it nor send it elsewhere. Set it to the
  // engine's parallel slots.
  uint32_t max_concurrent = 4;
  // What in-flight requests get when a replica must go (its owner came back, it is scaled
  // down, the service is stopped), 0..kMaxDrainSeconds. Default 30 s, Kubernetes' default
  // termination grace. The worker caps it at its owner policy's grace.
  uint32_t drain_seconds = 30;
  // Replicas of this service one machine may run at once, 1..kMaxReplicasPerMachine. Default 1:
  // one replica per machine unless asked otherwise (a second replica on a machine shares its
  // failure, its owner and its heat).
  uint32_t replicas_per_machine = 1;

  // A fixed count (`replicas = N`) rather than a range to autoscale in.
  bool Fixed() const { return min_replicas == max_replicas; }
  bool OpenAi() const { return protocol == kProtocolOpenAi; }
  bool operator==(const ServiceSpec&) const = default;
};

// What a replica's command gets besides its task (RenderCommand): the port the worker picked on
// its loopback for this replica ({port}, and $IDLEPOOL_PORT, which the worker sets). {replica}
// is the task's index.
struct ReplicaParams {
  uint16_t port = 0;
};

}  // namespace idlepool::spec
