// Sender: how a unit sends a message to the coordinator on the current session.
//
// The session (session.h) implements it; units receive a Sender rather than the session, so
// they can be tested with a recording fake. Any thread. A message sent while no session is up
// is dropped: whatever must survive (reports, the owner state) is resent after each Hello.
#pragma once

#include <functional>

#include "idlepool.pb.h"

namespace idlepool::worker {

using Sender = std::function<void(const v1::WorkerMessage&)>;

}  // namespace idlepool::worker
