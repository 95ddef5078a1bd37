// The dashboard's static files, compiled into the binary (no CDN, works offline): every file
// under src/dashboard/assets/ is embedded at build time by embed_assets.cmake. Add a file there
// and rebuild; nothing else to register. The HTTP server serves "index.html" at / and the
// others at /assets/PATH.
//
// Thread safety: read-only data; every function is safe from any thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace idlepool::dashboard {

struct Asset {
  std::string_view path;   // "index.html", "js/app.js"
  std::string_view bytes;
  std::string_view mime;   // Content-Type, with "; charset=utf-8" for text
  std::string_view etag;   // quoted: "\"0123456789abcdef\"" (from the file's SHA-256)
};

// The asset at `path` (relative, no leading '/'), or nullopt. Paths with "..", "//", a leading
// '/' or a '\\' never match.
std::optional<Asset> FindAsset(std::string_view path);

// Every embedded path, sorted.
std::vector<std::string_view> AssetPaths();

// The Content-Type for a file name by its extension (html, js, mjs, css, svg, json, png, ico,
// woff2, txt, map); application/octet-stream otherwise.
std::string_view MimeTypeFor(std::string_view path);

}  // namespace idlepool::dashboard
