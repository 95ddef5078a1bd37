#include "blob/blob.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <atomic>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "blob/file_util.h"

namespace idlepool::blob {
namespace fs = std::filesystem;

namespace internal {

absl::Status ErrnoStatus(const std::string& what, int err) {
  std::string msg = absl::StrCat(what, ": ", std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  if (err == ENOENT) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

absl::StatusOr<size_t> PreadFull(int fd, void* buf, size_t n, uint64_t offset,
                                 const std::string& path) {
  size_t got = 0;
  char* p = static_cast<char*>(buf);
  while (got < n) {
    ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("cannot read ", path), errno);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

absl::Status PwriteFull(int fd, std::string_view data, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::pwrite(fd, data.data() + done, data.size() - done,
                         static_cast<off_t>(offset + done));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("cannot write ", path), errno);
    }
    done += static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

void FsyncParentDir(const std::string& path) {
  int dir = ::open(fs::path(path).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

absl::Status WriteFileAtomic(const std::string& path, std::string_view bytes) {
  static std::atomic<uint64_t> seq{0};
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", seq++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(absl::StrCat("cannot create ", tmp), errno);
  absl::Status st = PwriteFull(fd, bytes, 0, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = ErrnoStatus(absl::StrCat("fsync ", tmp), errno);
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = ErrnoStatus(absl::StrCat("cannot rename to ", path), errno);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  FsyncParentDir(path);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) {
  absl::StatusOr<int> fd = OpenRegularFile(path, /*follow_symlinks=*/false);
  if (!fd.ok()) return fd.status();
  struct stat st;
  if (::fstat(*fd, &st) != 0 || static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(*fd);
    return absl::OutOfRangeError(absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  absl::StatusOr<size_t> n = PreadFull(*fd, out.data(), out.size(), 0, path);
  ::close(*fd);
  if (!n.ok()) return n.status();
  out.resize(*n);
  return out;
}

}  // namespace internal
using internal::ErrnoStatus;

bool IsSha256Hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}
Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }
void Sha256::Update(const void* data, size_t n) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n);
}
std::string Sha256::RawDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
  return std::string(reinterpret_cast<const char*>(md), len);
}
std::string Sha256::HexDigest() { return ToHex(RawDigest()); }

std::string ToHex(std::string_view raw) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string PseudoRandomBytes(size_t n) {
  std::string out;
  out.reserve(n + 32);
  for (uint64_t i = 0; out.size() < n; ++i) {
    Sha256 h;
    h.Update(&i, sizeof i);
    out += h.RawDigest();
  }
  out.resize(n);
  return out;
}

absl::StatusOr<int> internal::OpenRegularFile(const std::string& path, bool follow_symlinks) {
  int fd = ::open(path.c_str(),
                  O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_symlinks ? 0 : O_NOFOLLOW));
  if (fd < 0) return ErrnoStatus(absl::StrCat("cannot open ", path), errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  }
  return fd;
}

absl::StatusOr<FileDigest> HashFile(const std::string& path, bool follow_symlinks) {
  absl::StatusOr<int> opened = internal::OpenRegularFile(path, follow_symlinks);
  if (!opened.ok()) return opened.status();
  absl::StatusOr<FileDigest> d = HashFd(*opened, path);
  ::close(*opened);
  return d;
}

absl::StatusOr<FileDigest> HashFd(int fd, const std::string& name) {
  Sha256 h;
  FileDigest d;
  std::string buf(kChunkBytes, '\0');
  while (true) {
    absl::StatusOr<size_t> n = internal::PreadFull(fd, buf.data(), buf.size(), d.size, name);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    h.Update(buf.data(), *n);
    d.size += *n;
  }
  d.sha256 = h.HexDigest();
  return d;
}

BlobDir::BlobDir(std::string root) : root_(std::move(root)) {}

absl::Status BlobDir::Init() {
  std::error_code ec;
  // Partial uploads of an earlier run can never complete: their senders retry from scratch.
  fs::remove_all(fs::path(root_) / "tmp", ec);
  // Nor can partial downloads (DownloadBlob's DEST.part.PID.N next to their destination) of a
  // process that was killed mid-transfer.
  for (fs::recursive_directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() > 1) continue;
    const std::string name = it->path().filename().string();
    std::error_code ec2;
    if (name.find(".part.") != std::string::npos && it->is_regular_file(ec2)) {
      fs::remove(it->path(), ec2);
    }
  }
  fs::create_directories(fs::path(root_) / "tmp", ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", root_, ": ", ec.message()));
  return absl::OkStatus();
}

std::string BlobDir::PathOf(const std::string& sha256) const {
  return absl::StrCat(root_, "/", sha256.substr(0, 2), "/", sha256);
}

bool BlobDir::Has(const std::string& sha256) const {
  if (!IsSha256Hex(sha256)) return false;
  struct stat st;
  return ::stat(PathOf(sha256).c_str(), &st) == 0;
}

absl::StatusOr<std::unique_ptr<BlobDir::Writer>> BlobDir::NewWriter(const std::string& sha256,
                                                                    uint64_t size) {
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(absl::StrCat("not a SHA-256 hex digest: '", sha256, "'"));
  }
  std::unique_ptr<Writer> w(new Writer());
  w->sha256_ = sha256;
  w->expected_size_ = size;
  w->final_path_ = PathOf(sha256);
  static std::atomic<uint64_t> seq{0};
  w->temp_path_ = absl::StrCat(root_, "/tmp/", sha256, ".", ::getpid(), ".", seq++);
  w->fd_ = ::open(w->temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) return ErrnoStatus(absl::StrCat("cannot create ", w->temp_path_), errno);
  return w;
}

BlobDir::Writer::~Writer() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
  }
}

absl::Status BlobDir::Writer::Append(const void* data, size_t n) {
  if (written_ + n > expected_size_) {
    return absl::DataLossError(absl::StrCat("blob ", sha256_, ": more than the announced ",
                                            expected_size_, " bytes"));
  }
  const char* p = static_cast<const char*>(data);
  size_t left = n;
  while (left > 0) {
    ssize_t w = ::write(fd_, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("cannot write ", temp_path_), errno);
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  hash_.Update(data, n);
  written_ += n;
  return absl::OkStatus();
}

absl::Status BlobDir::Writer::Commit() {
  if (written_ != expected_size_) {
    return absl::DataLossError(absl::StrCat("blob ", sha256_, ": got ", written_,
                                            " bytes, expected ", expected_size_));
  }
  std::string got = hash_.HexDigest();
  if (got != sha256_) {
    return absl::DataLossError(
        absl::StrCat("blob ", sha256_, ": content hashes to ", got, " (corrupted in transit)"));
  }
  if (::fsync(fd_) != 0) return ErrnoStatus(absl::StrCat("fsync ", temp_path_), errno);
  ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  fs::create_directories(fs::path(final_path_).parent_path(), ec);
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_path_.c_str());
    return ErrnoStatus(absl::StrCat("cannot publish ", final_path_), err);
  }
  // The rename is durable only once its directory is: a blob acknowledged to a worker must
  // survive a power cut.
  int dir = ::open(fs::path(final_path_).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

absl::Status CloneOrCopy(const std::string& src, const std::string& dst) {
  std::error_code ec;
  fs::create_directories(fs::path(dst).parent_path(), ec);
  int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return ErrnoStatus(absl::StrCat("cannot open ", src), errno);
  int out = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    int err = errno;
    ::close(in);
    return ErrnoStatus(absl::StrCat("cannot create ", dst), err);
  }
  absl::Status st;
  // A reflink shares blocks copy-on-write (btrfs, XFS): instant, and a task writing its copy
  // cannot touch the cache. Elsewhere the kernel copies (copy_file_range).
  if (::ioctl(out, FICLONE, in) != 0) {
    while (true) {
      ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        st = ErrnoStatus(absl::StrCat("cannot copy ", src, " to ", dst), errno);
        break;
      }
    }
  }
  ::close(in);
  ::close(out);
  return st;
}

}  // namespace idlepool::blob
