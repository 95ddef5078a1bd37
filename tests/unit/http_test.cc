// Pieces of the HTTP server that need no socket: the embedded dashboard assets, --http address
// parsing, the change feed that event streams wait on, the Host/Origin/credential checks, the
// session table and the connection table's admissions. (https_server_test.cc: the real server.)
#include <set>
#include <thread>
#include <vector>

#include "dashboard/assets.h"
#include "gtest/gtest.h"
#include "http/connection_table.h"
#include "http/http_server.h"
#include "http/request_checks.h"
#include "http/sessions.h"

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

using http::HostAllowList;

TEST(HostCheck, NameAndPortMustBeAllowed) {
  const HostAllowList allowed{{"localhost", "127.0.0.1", "::1", "Coord.LAN", "tunnel:9000"}, 7879};
  for (const char* ok : {"localhost:7879", "127.0.0.1:7879", "[::1]:7879", "coord.lan:7879",
                         "COORD.LAN.:7879", "tunnel:9000"}) {
    EXPECT_TRUE(http::HostAllowed(ok, allowed)) << ok;
  }
  for (const char* bad :
       {"", "evil.example:7879", "localhost:7880", "localhost", "tunnel:7879", "127.0.0.1:7879:1",
        "::1:7879", "[::1]", "localhost:", "localhost:x", "local host:7879", "localhost:7879/",
        "user@localhost:7879", "127.0.0.1.evil.example:7879", "localhost:007879"}) {
    EXPECT_FALSE(http::HostAllowed(bad, allowed)) << bad;
  }
  // Port 443 may be left out, as browsers do.
  EXPECT_TRUE(http::HostAllowed("coord.lan", HostAllowList{{"coord.lan"}, 443}));
}

TEST(OriginCheck, HttpsAndAnAllowedHostOnly) {
  const HostAllowList allowed{{"localhost", "127.0.0.1"}, 7879};
  EXPECT_TRUE(http::OriginAllowed("https://127.0.0.1:7879", allowed));
  EXPECT_TRUE(http::OriginAllowed("https://localhost:7879", allowed));
  for (const char* bad :
       {"null", "", "http://127.0.0.1:7879", "https://evil.example:7879", "https://127.0.0.1:7880",
        "https://127.0.0.1:7879/", "https://127.0.0.1:7879/x", "wss://127.0.0.1:7879",
        "https://127.0.0.1"}) {
    EXPECT_FALSE(http::OriginAllowed(bad, allowed)) << bad;
  }
}

TEST(HostCheck, DefaultAllowedHosts) {
  using V = std::vector<std::string>;
  EXPECT_EQ(http::DefaultAllowedHosts("127.0.0.1"), (V{"127.0.0.1", "::1", "localhost"}));
  EXPECT_EQ(http::DefaultAllowedHosts("coord.lan"), (V{"coord.lan"}));
  EXPECT_EQ(http::DefaultAllowedHosts("192.168.1.5"), (V{"192.168.1.5"}));
  // A wildcard: loopback names plus this machine's name and addresses.
  const V any = http::DefaultAllowedHosts("0.0.0.0");
  for (const char* h : {"localhost", "127.0.0.1", "::1"}) {
    EXPECT_NE(std::find(any.begin(), any.end(), h), any.end()) << h;
  }
}

TEST(Credentials, BearerTokenAndCookie) {
  EXPECT_EQ(http::BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(http::BearerToken("bearer  abc "), "abc");
  EXPECT_EQ(http::BearerToken("Basic abc"), "");
  EXPECT_EQ(http::BearerToken("Bearer "), "");
  EXPECT_EQ(http::BearerToken(""), "");
  EXPECT_EQ(http::CookieValue("a=1; idlepool_session=xyz; b=2", "idlepool_session"), "xyz");
  EXPECT_EQ(http::CookieValue("idlepool_session=xyz", "idlepool_session"), "xyz");
  EXPECT_EQ(http::CookieValue("xidlepool_session=xyz", "idlepool_session"), "");
  EXPECT_EQ(http::CookieValue("", "idlepool_session"), "");
  EXPECT_TRUE(http::SameSecret("abc", "abc"));
  EXPECT_FALSE(http::SameSecret("abc", "abd"));
  EXPECT_FALSE(http::SameSecret("abc", "abcd"));
  EXPECT_FALSE(http::SameSecret("", "a"));
}

core::MonoTime At(int64_t ms) { return core::MonoTime(core::Millis(ms)); }

trust::Principal Reader(const std::string& name, const std::string& token_id = "") {
  return trust::Principal{trust::Role::kRead, name, token_id};
}

TEST(Sessions, RandomIdsThatFindTheirPrincipal) {
  http::SessionTable t({std::chrono::hours(12), 16});
  const http::Session a = t.Create(Reader("ann"), At(0));
  const http::Session b = t.Create(Reader("bob"), At(0));
  EXPECT_EQ(a.id.size(), 43u);  // 256 bits of base64url
  EXPECT_EQ(a.csrf.size(), 43u);
  EXPECT_EQ(
      a.id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
      std::string::npos);
  EXPECT_NE(a.id, b.id);
  EXPECT_NE(a.id, a.csrf);
  auto found = t.Find(a.id, At(1));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->principal.name, "ann");
  EXPECT_EQ(found->csrf, a.csrf);
  EXPECT_FALSE(t.Find("nope", At(1)).has_value());
  EXPECT_FALSE(t.Find(a.id.substr(1), At(1)).has_value());
  EXPECT_TRUE(t.Remove(a.id));
  EXPECT_FALSE(t.Find(a.id, At(2)).has_value());
  EXPECT_TRUE(t.Find(b.id, At(2)).has_value());
}

TEST(Sessions, IdleTimeoutCountsFromLastUse) {
  http::SessionTable t({std::chrono::milliseconds(1000), 16});
  const http::Session s = t.Create(Reader("ann"), At(0));
  EXPECT_TRUE(t.Find(s.id, At(999)).has_value());  // used: the timeout restarts
  EXPECT_TRUE(t.Find(s.id, At(1998)).has_value());
  EXPECT_FALSE(t.Find(s.id, At(2998)).has_value());  // 1000 ms unused
  EXPECT_EQ(t.size(), 0u);
}

TEST(Sessions, AtTheCapTheLeastRecentlyUsedGoes) {
  http::SessionTable t({std::chrono::hours(12), 2});
  const http::Session a = t.Create(Reader("a"), At(0));
  const http::Session b = t.Create(Reader("b"), At(1));
  EXPECT_TRUE(t.Find(a.id, At(2)).has_value());  // a is now the more recent
  const http::Session c = t.Create(Reader("c"), At(3));
  EXPECT_EQ(t.size(), 2u);
  EXPECT_TRUE(t.Find(a.id, At(4)).has_value());
  EXPECT_FALSE(t.Find(b.id, At(4)).has_value());
  EXPECT_TRUE(t.Find(c.id, At(4)).has_value());
}

TEST(Sessions, RevokingATokenEndsItsSessions) {
  http::SessionTable t({std::chrono::hours(12), 16});
  const http::Session a1 = t.Create(Reader("a", "tok-a"), At(0));
  const http::Session a2 = t.Create(Reader("a", "tok-a"), At(0));
  const http::Session b = t.Create(Reader("b", "tok-b"), At(0));
  const http::Session pool = t.Create(Reader("pool token"), At(0));
  EXPECT_EQ(t.RemoveToken("tok-a"), 2u);
  EXPECT_EQ(t.RemoveToken(""), 0u);  // an empty id names no token
  EXPECT_FALSE(t.Find(a1.id, At(1)).has_value());
  EXPECT_FALSE(t.Find(a2.id, At(1)).has_value());
  EXPECT_TRUE(t.Find(b.id, At(1)).has_value());
  EXPECT_TRUE(t.Find(pool.id, At(1)).has_value());
}

TEST(ConnectionTable, AtTheCapTheLongestWaitingIsKicked) {
  std::vector<int> kicked;
  http::ConnectionTable t(3, [&](int fd) { kicked.push_back(fd); });
  const uint64_t a = t.Admit(10, At(0));
  const uint64_t b = t.Admit(11, At(1));
  const uint64_t c = t.Admit(12, At(2));
  ASSERT_TRUE(a && b && c);
  t.SetBusy(a);                         // handling a request: never kicked
  EXPECT_TRUE(t.SetWaiting(b, At(5)));  // b answered and waits again, since 5
  const uint64_t d = t.Admit(13, At(6));
  EXPECT_NE(d, 0u);
  EXPECT_EQ(kicked, (std::vector<int>{12}));  // c has waited since 2
  EXPECT_FALSE(t.SetWaiting(c, At(7)));       // its thread learns it was kicked
  t.Remove(c);
  t.SetBusy(b);
  t.SetBusy(d);
  EXPECT_EQ(t.Admit(14, At(8)), 0u);  // every slot busy: refused
  const auto n = t.counts();
  EXPECT_EQ(n.live, 3u);
  EXPECT_EQ(n.busy, 3u);
  EXPECT_EQ(n.admitted, 4u);
  EXPECT_EQ(n.kicked, 1u);
  EXPECT_EQ(n.refused, 1u);
}

TEST(ConnectionTable, StopKicksTheWaitingAndRefusesNewOnes) {
  std::vector<int> kicked;
  http::ConnectionTable t(8, [&](int fd) { kicked.push_back(fd); });
  const uint64_t a = t.Admit(10, At(0));
  const uint64_t b = t.Admit(11, At(0));
  t.SetBusy(b);
  t.Stop();
  EXPECT_EQ(kicked, (std::vector<int>{10}));
  EXPECT_EQ(t.Admit(12, At(1)), 0u);
  EXPECT_FALSE(t.SetWaiting(b, At(2)));  // its answer is written: now it ends too
  EXPECT_EQ(kicked, (std::vector<int>{10, 11}));
  t.Remove(a);
  t.Remove(b);
  EXPECT_EQ(t.counts().live, 0u);
}

}  // namespace
}  // namespace idlepool
