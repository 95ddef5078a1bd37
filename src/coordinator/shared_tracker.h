// The peer-to-peer tracker (tracker.h) as the coordinator shares it: fed on the core thread
// (hellos, cache changes, closes), asked by the Blobs service's LocateBlob and FetchChunk
// handlers and by the predictor. Lock `mu` around every use of `tracker`.
#pragma once

#include <mutex>

#include "absl/base/thread_annotations.h"
#include "coordinator/tracker.h"

namespace idlepool::coordinator {

struct SharedTracker {
  std::mutex mu;
  Tracker tracker ABSL_GUARDED_BY(mu);
};

}  // namespace idlepool::coordinator
