#include "spec/profile_key.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>

namespace idlepool::spec {
namespace {

// Appends `v` as 8 bytes, little-endian: fixed width, so no field can run into the next.
void AppendU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void AppendField(std::string& out, const std::string& s) {
  AppendU64(out, s.size());
  out += s;
}

}  // namespace

std::string ProfileKey(const std::vector<std::string>& command, const core::Resources& resources,
                       std::vector<std::string> input_sha256, uint32_t frames_per_task) {
  std::sort(input_sha256.begin(), input_sha256.end());
  std::string m = "idlepool.profile.v1";
  AppendU64(m, command.size());
  for (const auto& a : command) AppendField(m, a);
  AppendU64(m, resources.cpus);
  AppendU64(m, resources.gpus);
  AppendU64(m, resources.memory_mb);
  AppendU64(m, input_sha256.size());
  for (const auto& h : input_sha256) AppendField(m, h);
  if (frames_per_task > 0) AppendU64(m, frames_per_task);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(m.data(), m.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

}  // namespace idlepool::spec

namespace idlepool::spec {

std::string ProfileKeyOf(const JobSpec& spec, std::vector<std::string> input_sha256) {
  return ProfileKey(spec.command, spec.resources, std::move(input_sha256),
                    spec.kind == TaskKind::kFrames ? spec.chunk : 0);
}

}  // namespace idlepool::spec
