// Pieces of the HTTP server that need no socket: the embedded dashboard assets, --http address
// parsing, and the change feed that event streams wait on.
#include <thread>

#include "dashboard/assets.h"
#include "gtest/gtest.h"
#include "http/http_server.h"

namespace idlepool {
namespace {

TEST(DashboardAssets, IndexIsEmbeddedWithItsType) {
  auto a = dashboard::FindAsset("index.html");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->mime, "text/html; charset=utf-8");
  EXPECT_NE(a->bytes.find("<html"), std::string_view::npos);
  ASSERT_EQ(a->etag.size(), 18u);  // 16 hex digits, quoted
  EXPECT_EQ(a->etag.front(), '"');
}

TEST(DashboardAssets, EveryFileUnderAssetsIsFoundByItsPath) {
  auto paths = dashboard::AssetPaths();
  ASSERT_FALSE(paths.empty());
  EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));
  for (auto p : paths) {
    auto a = dashboard::FindAsset(p);
    ASSERT_TRUE(a.has_value()) << p;
    EXPECT_EQ(a->path, p);
  }
  EXPECT_TRUE(dashboard::FindAsset("app.js").has_value());
}

TEST(DashboardAssets, TraversalAndUnknownPathsAreNotFound) {
  for (const char* p : {"", "/index.html", "../index.html", "a/../index.html", "x//y",
                        "nope.js", "index.htm", "index.html\\"}) {
    EXPECT_FALSE(dashboard::FindAsset(p).has_value()) << p;
  }
}

TEST(DashboardAssets, MimeTypes) {
  EXPECT_EQ(dashboard::MimeTypeFor("a/b.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(dashboard::MimeTypeFor("s.css"), "text/css; charset=utf-8");
  EXPECT_EQ(dashboard::MimeTypeFor("i.svg"), "image/svg+xml");
  EXPECT_EQ(dashboard::MimeTypeFor("f.woff2"), "font/woff2");
  EXPECT_EQ(dashboard::MimeTypeFor("noext"), "application/octet-stream");
}

TEST(HttpAddress, HostPortOrPort) {
  using P = std::pair<std::string, int>;
  EXPECT_EQ(*http::ParseAddress("7879"), P("127.0.0.1", 7879));
  EXPECT_EQ(*http::ParseAddress("0.0.0.0:0"), P("0.0.0.0", 0));
  EXPECT_EQ(*http::ParseAddress("[::1]:8080"), P("::1", 8080));
  EXPECT_EQ(*http::ParseAddress("localhost:80"), P("localhost", 80));
  for (const char* bad : {"", ":80", "host:", "host:65536", "host:-1", "::1:80", "a b:1", "x:8o"}) {
    EXPECT_FALSE(http::ParseAddress(bad).ok()) << bad;
  }
}

TEST(ChangeFeed, WaitReturnsOnBumpAndOnClose) {
  http::ChangeFeed feed;
  const uint64_t v0 = feed.version();
  // Already moved: no wait.
  feed.Bump();
  EXPECT_EQ(feed.WaitChange(v0, std::chrono::hours(1)), v0 + 1);
  std::thread t([&] { feed.Bump(); });
  EXPECT_GE(feed.WaitChange(v0 + 1, std::chrono::hours(1)), v0 + 2);  // returns on the bump
  t.join();
  std::thread c([&] { feed.Close(); });
  EXPECT_TRUE(feed.WaitClosed(std::chrono::hours(1)));
  c.join();
  EXPECT_TRUE(feed.closed());
  EXPECT_EQ(feed.WaitChange(feed.version(), std::chrono::hours(1)), feed.version());
}

}  // namespace
}  // namespace idlepool
