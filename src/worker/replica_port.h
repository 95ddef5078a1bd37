// The port a service replica listens on ({port} in its command, IDLEPOOL_PORT in its
// environment; issue 17). The worker picks one that is free on its own loopback right now: a
// sandboxed replica (network "none") has a loopback of its own where every port is free, and
// its worker reaches it through the sandbox's agent (SlotSandbox::ConnectLoopback); one that
// shares the worker's network must not collide with what already listens there.
//
// Thread safety: any thread. Limits: the port is free when picked, not reserved: a process that
// binds it before the replica does makes the replica fail to listen (it exits, and its restart
// picks another).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace idlepool::worker {

// A port free on 127.0.0.1 now (the kernel's choice from its ephemeral range). Errors:
// kResourceExhausted when no socket can be made or bound (out of descriptors or ports).
[[nodiscard]] absl::StatusOr<uint16_t> PickReplicaPort();

}  // namespace idlepool::worker
