// Internal to src/trust: the CA's two files in the data dir and how they are read and written.
// Errors name the path and errno's text: kDataLoss when reading, kFailedPrecondition when
// writing.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace idlepool::trust {

struct CaFiles {
  std::string dir;
  std::string key_path;   // DIR/ca.key, 0600
  std::string cert_path;  // DIR/ca.pem, 0644
};
CaFiles CaFilesIn(const std::string& dir);

// Whether `path` exists (any error other than ENOENT is kDataLoss).
absl::StatusOr<bool> FileExists(const std::string& path);
absl::StatusOr<std::string> ReadCaFile(const std::string& path);
// Creates the dir (0700) if missing, then writes both files through temporary files, synced
// before they are renamed into place, so a crash leaves either no CA or a whole one (short of
// a crash between the two renames).
absl::Status WriteCaFiles(const CaFiles& files, const std::string& key_pem,
                          const std::string& cert_pem);

}  // namespace idlepool::trust
