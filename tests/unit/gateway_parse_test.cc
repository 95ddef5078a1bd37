// The gateway's pure texts (src/serve/gateway_parse.h, gateway_metrics.h): routes, the model of a
// body, bearer keys, error bodies, dropped headers, the Prometheus rendering.
#include "serve/gateway_parse.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "serve/gateway_metrics.h"

namespace idlepool::serve {
namespace {

TEST(GatewayParse, Routes) {
  EXPECT_EQ(ParseRoute("GET", "/v1/models").kind, RouteKind::kModels);
  EXPECT_EQ(ParseRoute("POST", "/v1/models").kind, RouteKind::kBadMethod);
  Route chat = ParseRoute("POST", "/v1/chat/completions?x=1");
  EXPECT_EQ(chat.kind, RouteKind::kOpenAI);
  EXPECT_EQ(chat.upstream_target, "/v1/chat/completions?x=1");
  EXPECT_EQ(ParseRoute("GET", "/v1/embeddings").kind, RouteKind::kBadMethod);
  Route pass = ParseRoute("PUT", "/services/ocr/pages/3?lang=en");
  EXPECT_EQ(pass.kind, RouteKind::kPassThrough);
  EXPECT_EQ(pass.service, "ocr");
  EXPECT_EQ(pass.upstream_target, "/pages/3?lang=en");
  EXPECT_EQ(ParseRoute("GET", "/services/ocr").upstream_target, "/");
  EXPECT_EQ(ParseRoute("GET", "/services/ocr?q").upstream_target, "/?q");
  EXPECT_EQ(ParseRoute("GET", "/services/").kind, RouteKind::kNotFound);
  EXPECT_EQ(ParseRoute("GET", "/").kind, RouteKind::kNotFound);
}

TEST(GatewayParse, ModelOfABody) {
  EXPECT_EQ(ParseModel(R"({"model":"m1","messages":[]})").model, "m1");
  EXPECT_NE(ParseModel(R"({"model":)").error.find("malformed JSON"), std::string::npos);
  EXPECT_EQ(ParseModel(R"({"input":"x"})").param, "model");
  EXPECT_EQ(ParseModel(R"({"model":3})").param, "model");
  EXPECT_EQ(ParseModel(R"({"model":""})").param, "model");
  EXPECT_FALSE(ParseModel(R"(["model"])").error.empty());
  EXPECT_FALSE(ParseModel("").error.empty());
  // Only the top level's `model` counts, the last of duplicates, escapes decoded; the whole
  // body must be JSON even past the field.
  EXPECT_EQ(ParseModel(R"({"messages":[{"model":"x"}],"model":"m\u0031"})").model, "m1");
  EXPECT_EQ(ParseModel(R"({"meta":{"model":"x"}})").param, "model");
  EXPECT_EQ(ParseModel(R"({"model":"a","model":"b"})").model, "b");
  EXPECT_EQ(ParseModel(R"({"model":"a","model":{"b":1}})").param, "model");
  EXPECT_EQ(ParseModel(R"({"model":["m1"]})").param, "model");
  EXPECT_NE(ParseModel(R"({"model":"m1"} x)").error.find("malformed JSON"), std::string::npos);
  EXPECT_NE(ParseModel(R"({"model":"m1",)").error.find("malformed JSON"), std::string::npos);
  EXPECT_EQ(ParseModel(R"("model")").error, "the request body is not a JSON object");
}

TEST(GatewayParse, BearerKeys) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer   abc "), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer "), std::nullopt);
  EXPECT_EQ(BearerToken("Bearerabc"), std::nullopt);
  EXPECT_EQ(BearerToken(""), std::nullopt);
}

TEST(GatewayParse, ErrorBodiesAndEvents) {
  auto e =
      nlohmann::json::parse(ErrorJson("no \"such\" model", "invalid_request_error", "", "model"));
  EXPECT_EQ(e["error"]["message"], "no \"such\" model");
  EXPECT_EQ(e["error"]["param"], "model");
  EXPECT_TRUE(e["error"]["code"].is_null());
  std::string ev = SseErrorEvent("cut");
  ASSERT_EQ(ev.substr(0, 6), "data: ");
  ASSERT_EQ(ev.substr(ev.size() - 2), "\n\n");
  EXPECT_EQ(nlohmann::json::parse(ev.substr(6))["error"]["code"], "upstream_broken");
  EXPECT_EQ(nlohmann::json::parse(ModelsJson({"a", "b"}))["data"][1]["id"], "b");
  EXPECT_STREQ(ErrorTypeFor(401), "authentication_error");
  EXPECT_STREQ(ErrorTypeFor(503), "server_error");
}

TEST(GatewayParse, DroppedHeaders) {
  for (const char* h : {"Connection", "keep-alive", "Transfer-Encoding", "TE", "Upgrade",
                        "Authorization", "Content-Length", "Proxy-Authorization", "CONNECTION",
                        "proxy-connection", "Trailer", "Proxy-Authenticate"}) {
    EXPECT_TRUE(IsDroppedHeader(h)) << h;
  }
  for (const char* h : {"Content-Type", "Accept", "X-Request-Id", "Cache-Control", "Tx", "T",
                        "Connectionx", "", "content-lengtH2"}) {
    EXPECT_FALSE(IsDroppedHeader(h)) << h;
  }
}

TEST(GatewayMetrics, PrometheusText) {
  GatewayMetrics m;
  m.Answer("llm", 200);
  m.Answer("llm", 200);
  m.Answer("", 401);
  m.FirstByte("llm", 7, 200, Time{std::chrono::seconds(1)}, std::chrono::milliseconds(3));
  m.Done("llm", std::chrono::milliseconds(40));
  RouterSnapshot r;
  ServiceSnapshot s;
  s.name = "llm";
  s.queue_length = 2;
  s.retries = 1;
  ReplicaSnapshot rep;
  rep.id = 7;
  rep.in_flight = 1;
  s.replicas.push_back(rep);
  r.services.push_back(s);
  std::string text = RenderPrometheus(m.Snapshot(r, Time{std::chrono::seconds(1)}));
  EXPECT_NE(text.find("idlepool_serve_requests_total{service=\"llm\",code=\"200\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("idlepool_serve_requests_total{service=\"\",code=\"401\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("idlepool_serve_ttfb_seconds_count{service=\"llm\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("idlepool_serve_in_flight{service=\"llm\",replica=\"7\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("idlepool_serve_queue_length{service=\"llm\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("idlepool_serve_retries_total{service=\"llm\"} 1\n"), std::string::npos);
  auto j = nlohmann::json::parse(RenderJson(m.Snapshot(r, Time{std::chrono::seconds(1)})));
  EXPECT_EQ(j["services"][0]["replicas"][0]["in_flight"], 1);
  EXPECT_EQ(j["services"][0]["answers"]["200"], 2);
}

// Time to first token: 2xx answers only, per added service and replica, over the recent window.
TEST(GatewayMetrics, TimeToFirstTokenJson) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  GatewayMetrics m;
  m.ServiceAdded("llm");
  m.ReplicaAdded(7);
  m.ReplicaAdded(8);
  const Time t0{seconds(100)};
  m.FirstByte("llm", 7, 200, t0, milliseconds(4));
  m.FirstByte("llm", 7, 200, t0, milliseconds(10));
  m.FirstByte("llm", 8, 200, t0, milliseconds(2));
  m.FirstByte("llm", 8, 503, t0, milliseconds(1));  // an error's first byte is no token
  m.FirstByte("llm", 9, 200, t0, milliseconds(1));  // a replica never added: the service's only
  RouterSnapshot r;
  ServiceSnapshot s;
  s.name = "llm";
  for (ReplicaId id : {7, 8}) {
    ReplicaSnapshot rep;
    rep.id = id;
    s.replicas.push_back(rep);
  }
  r.services.push_back(s);
  auto j = nlohmann::json::parse(RenderJson(m.Snapshot(r, t0 + seconds(1))));
  const auto& svc = j["services"][0];
  EXPECT_EQ(svc["ttft_answers"], 4);
  EXPECT_EQ(svc["ttft_p50_ms"], 2.0);  // of 1, 2, 4, 10
  EXPECT_EQ(svc["ttft_p95_ms"], 10.0);
  EXPECT_EQ(svc["replicas"][0]["ttft_answers"], 2);
  EXPECT_EQ(svc["replicas"][0]["ttft_p50_ms"], 4.0);
  EXPECT_EQ(svc["replicas"][0]["ttft_p95_ms"], 10.0);
  EXPECT_EQ(svc["replicas"][1]["ttft_answers"], 1);
  EXPECT_EQ(svc["replicas"][1]["ttft_p50_ms"], 2.0);
  // The time to first byte histogram still counts every answer's first byte.
  EXPECT_NE(RenderPrometheus(m.Snapshot(r, t0))
                .find("idlepool_serve_ttfb_seconds_count{service=\"llm\"} 5\n"),
            std::string::npos);
  // A window later, nothing recent; a removed replica is forgotten.
  m.ReplicaRemoved(8);
  j = nlohmann::json::parse(RenderJson(m.Snapshot(r, t0 + seconds(61))));
  EXPECT_EQ(j["services"][0]["ttft_answers"], 0);
  EXPECT_EQ(j["services"][0]["ttft_p50_ms"], 0.0);
  EXPECT_EQ(j["services"][0]["replicas"][0]["ttft_answers"], 0);
  m.FirstByte("llm", 8, 200, t0 + seconds(62), milliseconds(3));
  j = nlohmann::json::parse(RenderJson(m.Snapshot(r, t0 + seconds(62))));
  EXPECT_EQ(j["services"][0]["ttft_answers"], 1);
  EXPECT_EQ(j["services"][0]["replicas"][1]["ttft_answers"], 0);
}

}  // namespace
}  // namespace idlepool::serve
