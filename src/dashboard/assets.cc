#include "dashboard/assets.h"

#include <algorithm>
#include <cstring>

#include "dashboard/assets_table.h"

namespace idlepool::dashboard {

std::string_view MimeTypeFor(std::string_view path) {
  const size_t dot = path.rfind('.');
  const std::string_view ext = dot == std::string_view::npos ? "" : path.substr(dot + 1);
  if (ext == "html" || ext == "htm") return "text/html; charset=utf-8";
  if (ext == "js" || ext == "mjs") return "text/javascript; charset=utf-8";
  if (ext == "css") return "text/css; charset=utf-8";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "json" || ext == "map") return "application/json";
  if (ext == "png") return "image/png";
  if (ext == "ico") return "image/x-icon";
  if (ext == "woff2") return "font/woff2";
  if (ext == "txt") return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

std::optional<Asset> FindAsset(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find("..") != std::string_view::npos ||
      path.find("//") != std::string_view::npos || path.find('\\') != std::string_view::npos) {
    return std::nullopt;
  }
  const EmbeddedFile* begin = kEmbeddedFiles;
  const EmbeddedFile* end = kEmbeddedFiles + kEmbeddedFileCount;
  const EmbeddedFile* it = std::lower_bound(
      begin, end, path, [](const EmbeddedFile& f, std::string_view p) { return f.path < p; });
  if (it == end || it->path != path) return std::nullopt;
  return Asset{it->path, std::string_view(it->data, it->size), MimeTypeFor(path), it->etag};
}

std::vector<std::string_view> AssetPaths() {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < kEmbeddedFileCount; ++i) out.push_back(kEmbeddedFiles[i].path);
  return out;
}

}  // namespace idlepool::dashboard
