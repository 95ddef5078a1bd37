#include "worker/blob_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "blob/blob.h"

namespace idlepool::worker {
namespace fs = std::filesystem;

namespace {
constexpr uint64_t kSaveEveryHits = 32;
}  // namespace

BlobCache::BlobCache(std::string root, uint64_t cap_bytes)
    : root_(root), cap_(cap_bytes), store_(std::move(root)) {}

BlobCache::~BlobCache() {
  std::lock_guard lock(mu_);
  if (unsaved_hits_ > 0) SaveIndex();
}

absl::Status BlobCache::Init(int64_t now_unix_ms) {
  if (absl::Status st = store_.Init(now_unix_ms); !st.ok()) return st;
  std::lock_guard lock(mu_);
  Rebuild();
  return absl::OkStatus();
}

bool BlobCache::LoadIndex() {
  std::ifstream in(fs::path(root_) / "index");
  if (!in) return false;
  std::string line;
  std::map<std::string, Entry> loaded;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string sha;
    Entry e;
    if (!(fields >> sha >> e.size >> e.last_use) || !blob::IsSha256Hex(sha)) return false;
    loaded[sha] = e;
  }
  entries_ = std::move(loaded);
  return true;
}

void BlobCache::Rebuild() {
  // The index gives the order of use; the directory is the truth about what is held.
  std::map<std::string, Entry> indexed;
  if (LoadIndex()) indexed = entries_;
  entries_.clear();
  bytes_ = 0;
  use_clock_ = 0;
  std::error_code ec;
  for (fs::directory_iterator top(root_, ec), end; !ec && top != end; top.increment(ec)) {
    const std::string dir = top->path().filename().string();
    if (dir.size() != 2 || !top->is_directory()) continue;
    std::error_code ec2;
    for (fs::directory_iterator it(top->path(), ec2); !ec2 && it != end; it.increment(ec2)) {
      const std::string name = it->path().filename().string();
      struct stat st;
      if (::lstat(it->path().c_str(), &st) != 0) continue;
      if (name.find(".part.") != std::string::npos) {
        ::unlink(it->path().c_str());  // a download of an older worker version: cannot resume
        continue;
      }
      if (!blob::IsSha256Hex(name) || !S_ISREG(st.st_mode)) continue;
      Entry e;
      e.size = static_cast<uint64_t>(st.st_size);
      auto known = indexed.find(name);
      if (known != indexed.end()) e.last_use = known->second.last_use;
      use_clock_ = std::max(use_clock_, e.last_use);
      bytes_ += e.size;
      entries_[name] = e;
    }
  }
  SaveIndex();
}

void BlobCache::SaveIndex() {
  std::string text;
  for (const auto& [sha, e] : entries_) {
    absl::StrAppend(&text, sha, " ", e.size, " ", e.last_use, "\n");
  }
  const fs::path path = fs::path(root_) / "index";
  const fs::path tmp = fs::path(root_) / "index.tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return;  // the index is an optimisation: a stale one only reorders evictions
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  unsaved_hits_ = 0;
}

void BlobCache::RemoveLocked(const std::string& sha256) {
  auto it = entries_.find(sha256);
  if (it == entries_.end()) return;
  (void)store_.Remove(sha256);
  bytes_ -= std::min(bytes_, it->second.size);
  entries_.erase(it);
  changes_.add_removed(sha256);
}

void BlobCache::EvictFor(uint64_t incoming) {
  bool evicted = false;
  while (bytes_ + incoming > cap_) {
    const std::string* victim = nullptr;
    uint64_t oldest = 0;
    for (const auto& [sha, e] : entries_) {
      if (e.pins > 0 || pending_pins_.count(sha)) continue;
      if (!victim || e.last_use < oldest) {  // ties: the first in name order
        victim = &sha;
        oldest = e.last_use;
      }
    }
    if (!victim) break;  // only pinned blobs left: the cap is exceeded while they are in use
    const std::string sha = *victim;
    RemoveLocked(sha);
    evicted = true;
  }
  if (evicted) SaveIndex();
}

absl::StatusOr<BlobCache::Pin> BlobCache::Acquire(const std::string& sha256, uint64_t size,
                                                  const Fetch& fetch) {
  if (!blob::IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(absl::StrCat("not a SHA-256 hex digest: '",
                                                   sha256.substr(0, 80), "'"));
  }
  Pin pin;
  pin.sha256_ = sha256;
  pin.path_ = store_.PathOf(sha256);
  bool found = false, verify = false;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(sha256);
    if (it != entries_.end()) {
      found = true;
      ++it->second.pins;
      pin.cache_ = this;  // from here the Pin unpins
      struct stat st;
      const bool same_size = ::stat(pin.path_.c_str(), &st) == 0 &&
                             static_cast<uint64_t>(st.st_size) == it->second.size;
      verify = !it->second.verified || !same_size;
    }
  }
  if (found) {
    bool good = true;
    if (verify) {
      absl::StatusOr<blob::FileDigest> d = blob::HashFile(pin.path_, /*follow_symlinks=*/false);
      good = d.ok() && d->sha256 == sha256;
    }
    std::lock_guard lock(mu_);
    auto it = entries_.find(sha256);
    if (good && it != entries_.end()) {
      it->second.verified = true;
      it->second.last_use = ++use_clock_;
      ++hits_;
      if (++unsaved_hits_ >= kSaveEveryHits) SaveIndex();
      pin.hit_ = true;
      return pin;
    }
    // Corrupt (or removed meanwhile): evict and fetch it again.
    pin.cache_ = nullptr;
    if (it != entries_.end()) {
      --it->second.pins;
      RemoveLocked(sha256);
      SaveIndex();
    }
  }
  {
    std::lock_guard lock(mu_);
    ++misses_;
    ++pending_pins_[sha256];
    EvictFor(size);
  }
  absl::StatusOr<uint64_t> fetched = fetch(store_);
  std::lock_guard lock(mu_);
  if (--pending_pins_[sha256] == 0) pending_pins_.erase(sha256);
  if (!fetched.ok()) return fetched.status();
  struct stat st;
  if (::stat(pin.path_.c_str(), &st) != 0) {
    return absl::DataLossError(
        absl::StrCat("blob ", sha256, " is not in the cache after its fetch"));
  }
  ::chmod(pin.path_.c_str(), 0444);
  Entry& e = entries_[sha256];
  if (e.pins == 0 && !e.verified) {  // new here (a concurrent fetch of it may have added it)
    e.size = static_cast<uint64_t>(st.st_size);
    bytes_ += e.size;
    changes_.add_added()->set_sha256(sha256);
    changes_.mutable_added(changes_.added_size() - 1)->set_size(e.size);
  }
  e.verified = true;  // the fetch checked its hash before publishing it
  e.last_use = ++use_clock_;
  ++e.pins;
  pin.cache_ = this;
  pin.fetched_ = *fetched;
  SaveIndex();
  return pin;
}

void BlobCache::Unpin(const std::string& sha256) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(sha256);
  if (it != entries_.end() && it->second.pins > 0) --it->second.pins;
}

BlobCache::Pin::Pin(Pin&& o) noexcept
    : cache_(o.cache_), sha256_(std::move(o.sha256_)), path_(std::move(o.path_)), hit_(o.hit_),
      fetched_(o.fetched_) {
  o.cache_ = nullptr;
}

BlobCache::Pin& BlobCache::Pin::operator=(Pin&& o) noexcept {
  if (this != &o) {
    if (cache_) cache_->Unpin(sha256_);
    cache_ = o.cache_;
    sha256_ = std::move(o.sha256_);
    path_ = std::move(o.path_);
    hit_ = o.hit_;
    fetched_ = o.fetched_;
    o.cache_ = nullptr;
  }
  return *this;
}

BlobCache::Pin::~Pin() {
  if (cache_) cache_->Unpin(sha256_);
}

std::vector<v1::CachedBlob> BlobCache::Contents(size_t max) const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<uint64_t, const std::string*>> order;
  for (const auto& [sha, e] : entries_) order.emplace_back(e.last_use, &sha);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<v1::CachedBlob> out;
  for (const auto& [use, sha] : order) {
    if (out.size() >= max) break;
    v1::CachedBlob b;
    b.set_sha256(*sha);
    b.set_size(entries_.at(*sha).size);
    out.push_back(std::move(b));
  }
  return out;
}

v1::CacheChange BlobCache::TakeChanges() {
  std::lock_guard lock(mu_);
  v1::CacheChange out;
  out.Swap(&changes_);
  return out;
}

CacheStats BlobCache::stats() const {
  std::lock_guard lock(mu_);
  return CacheStats{bytes_, entries_.size(), hits_, misses_};
}

}  // namespace idlepool::worker
