#include "blob/space.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace idlepool::blob {
namespace {

std::string Mib(uint64_t bytes) {
  return absl::StrCat(bytes >> 20, ".", ((bytes & ((1 << 20) - 1)) * 10) >> 20, " MiB");
}

}  // namespace

uint64_t ReserveBytes(const DiskReading& disk) {
  return std::max(kMinReserveBytes, disk.total_bytes / kReserveDivisor);
}

uint64_t ReserveInodes(const DiskReading& disk) {
  return std::max(kMinReserveInodes, disk.total_inodes / 100);
}

absl::Status CheckRoom(const std::string& dir, const DiskReading& disk, const RoomRequest& req) {
  const uint64_t reserve = ReserveBytes(disk);
  const uint64_t kept = reserve * std::max<uint64_t>(req.reserve_multiple, 1);
  const uint64_t needed = kept + req.promised_bytes + req.bytes;
  // Overflow-safe: each term is at most a few disks' size or a 64 GiB blob.
  if (disk.free_bytes < needed) {
    const std::string why =
        kept == reserve
            ? absl::StrCat(Mib(reserve), " kept for the coordinator's own store")
            : absl::StrCat(Mib(kept), " kept free before a new job is accepted (",
                           req.reserve_multiple, " x the ", Mib(reserve),
                           " reserve: the store and the outputs of running jobs); free space "
                           "with `idlepool delete JOB` or `idlepool gc`");
    return absl::ResourceExhaustedError(absl::StrCat(
        req.what, " refused: the disk of ", dir, " is nearly full: ", Mib(disk.free_bytes),
        " free, ", Mib(req.promised_bytes), " promised to ", req.partials, " partial uploads, ",
        Mib(req.bytes), " wanted, ", why));
  }
  if (disk.total_inodes > 0 && disk.free_inodes < ReserveInodes(disk) + 2) {
    return absl::ResourceExhaustedError(absl::StrCat(
        req.what, " refused: the disk of ", dir, " is out of inodes: ", disk.free_inodes, " free, ",
        ReserveInodes(disk), " kept for the coordinator's own store"));
  }
  return absl::OkStatus();
}

absl::Status CheckWrite(const std::string& dir, const DiskReading& disk, const std::string& what,
                        uint64_t bytes) {
  const uint64_t reserve = ReserveBytes(disk);
  if (disk.free_bytes >= reserve + bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " stopped: the disk of ", dir, " is nearly full: ", Mib(disk.free_bytes), " free, ",
      Mib(bytes), " to write, ", Mib(reserve), " kept for the coordinator's own store"));
}

std::vector<std::string> AbandonedPartials(const std::vector<PartialState>& partials,
                                           int64_t now_ms, std::chrono::milliseconds idle_limit) {
  std::vector<std::string> out;
  for (const PartialState& p : partials) {
    if (now_ms - p.last_write_ms > idle_limit.count()) out.push_back(p.sha256);
  }
  return out;
}

}  // namespace idlepool::blob
