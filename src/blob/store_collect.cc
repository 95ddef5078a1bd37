// BlobStore's side of collection (store.h, "Collection"): the listing of complete blobs and
// their last touch, and the touch that restarts a blob's grace (collect.h).
#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <system_error>

#include "blob/blob.h"
#include "blob/store.h"

namespace idlepool::blob {
namespace fs = std::filesystem;

std::vector<BlobFile> BlobStore::List() const {
  std::vector<BlobFile> out;
  std::error_code ec;
  for (fs::directory_iterator dir(root_, ec), end; !ec && dir != end; dir.increment(ec)) {
    const std::string prefix = dir->path().filename().string();
    if (prefix.size() != 2 || !dir->is_directory()) continue;  // tmp/, partial/, pool files
    std::error_code ec2;
    for (fs::directory_iterator it(dir->path(), ec2); !ec2 && it != end; it.increment(ec2)) {
      const std::string name = it->path().filename().string();
      if (!IsSha256Hex(name) || name.compare(0, 2, prefix) != 0) continue;  // manifests
      struct stat st;
      if (::stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      out.push_back(
          BlobFile{name, static_cast<uint64_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000});
    }
  }
  return out;
}

void BlobStore::Touch(const std::string& sha256) const {
  if (!IsSha256Hex(sha256)) return;
  // Times omitted: both now. A blob removed meanwhile stays removed (ENOENT ignored).
  ::utimensat(AT_FDCWD, PathOf(sha256).c_str(), nullptr, 0);
}

}  // namespace idlepool::blob
