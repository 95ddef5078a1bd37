#include "blob/collect.h"

namespace idlepool::blob {

std::vector<BlobFile> Unreferenced(const std::vector<BlobFile>& on_disk,
                                   const std::set<std::string>& referenced, const MarkInput& in) {
  std::vector<BlobFile> out;
  for (const BlobFile& b : on_disk) {
    if (referenced.count(b.sha256) > 0) continue;
    const bool old = b.last_touch_ms <= in.now_ms && in.now_ms - b.last_touch_ms > in.grace.count();
    auto r = in.released.find(b.sha256);
    const bool released = r != in.released.end() && b.last_touch_ms <= r->second;
    if (old || released) out.push_back(b);
  }
  return out;
}

}  // namespace idlepool::blob
