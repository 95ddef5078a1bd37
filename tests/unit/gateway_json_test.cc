// The gateway's one-pass JSON check (src/serve/gateway_json.h) against nlohmann::json::parse,
// the reference it must agree with: hand-picked edge cases, then seeded random edits of real
// request bodies (the seed and the input are printed on a disagreement).
#include "serve/gateway_json.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace idlepool::serve {
namespace {

using Kind = TopLevelModel::Kind;

TopLevelModel Reference(const std::string& body) {
  TopLevelModel r;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return r;
  if (!j.is_object()) {
    r.kind = Kind::kNotObject;
    return r;
  }
  auto it = j.find("model");
  if (it == j.end()) {
    r.kind = Kind::kAbsent;
  } else if (!it->is_string()) {
    r.kind = Kind::kNotString;
  } else {
    r.kind = Kind::kString;
    r.model = it->get<std::string>();
  }
  return r;
}

void ExpectAgrees(const std::string& body, const std::string& how) {
  TopLevelModel want = Reference(body);
  TopLevelModel got = ScanTopLevelModel(body);
  EXPECT_EQ(static_cast<int>(got.kind), static_cast<int>(want.kind))
      << how << ": " << ::testing::PrintToString(body);
  EXPECT_EQ(got.model, want.model) << how << ": " << ::testing::PrintToString(body);
}

TEST(GatewayJson, EdgeCasesAgreeWithNlohmann) {
  const std::vector<std::string> cases = {
      "",
      " ",
      "{}",
      "[]",
      "{",
      "}",
      "[",
      "{\"model\":\"m1\"}",
      " {\"model\" : \"m1\" } \n",
      "{\"model\":\"m1\"} x",
      "{\"model\":\"m1\"}{}",
      "{\"model\":\"m1\",}",
      "{,}",
      "[1,]",
      "{\"a\":1 \"b\":2}",
      "{\"model\":\"\"}",
      "{\"model\":null}",
      "{\"model\":[\"m1\"]}",
      "{\"model\":{\"model\":\"x\"}}",
      "{\"x\":{\"model\":\"y\"}}",
      "[{\"model\":\"x\"}]",
      "{\"model\":\"a\",\"model\":\"b\"}",
      "{\"model\":\"a\",\"model\":1}",
      "{\"mod\\u0065l\":\"m\\u00e9\\ud83d\\ude00\\n\\\"\\\\\\/\\b\\f\\r\\t\"}",
      "{\"model\":\"\\ud83d\"}",
      "{\"model\":\"\\ude00\"}",
      "{\"model\":\"\\ud83d\\u0041\"}",
      "{\"model\":\"\\u00\"}",
      "{\"model\":\"\\x\"}",
      "{\"model\":\"a\tb\"}",
      "{\"model\":\"\\u0000\"}",
      "\xEF\xBB\xBF{\"model\":\"bom\"}",
      "\xEF\xBB{}",
      "\xEF{}",
      "{\"model\":\"\xC3\xA9\"}",
      "{\"model\":\"\xC0\x80\"}",
      "{\"model\":\"\xED\xA0\x80\"}",
      "{\"model\":\"\xF4\x90\x80\x80\"}",
      "{\"model\":\"\xF0\x9F\x98\x80\"}",
      "{\"model\":\"\xE2\x82\"}",
      "{\"model\":\"\xFF\"}",
      "{\"n\":-0}",
      "{\"n\":01}",
      "{\"n\":1.}",
      "{\"n\":.5}",
      "{\"n\":1e}",
      "{\"n\":1e+5}",
      "{\"n\":-1.5E-3}",
      "{\"n\":1e999}",
      "{\"n\":-1e999}",
      "{\"n\":1e-999}",
      "{\"n\":+1}",
      "{\"n\":-}",
      "{\"n\":123456789012345678901234567890}",
      "{\"n\":" + std::string(320, '9') + "}",
      "{\"n\":" + std::string(300, '9') + "}",
      "{\"t\":true,\"f\":false,\"z\":null}",
      "{\"t\":tru}",
      "{\"t\":True}",
      "{\"t\":nul}",
      "true",
      "\"model\"",
      "3",
      "null",
      std::string("{\"model\":\"m\"}\0", 14),
      std::string(10000, '[') + std::string(10000, ']'),
      std::string(10000, '[') + std::string(9999, ']'),
      "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + ",\"model\":\"deep\"}",
      "{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8}",
  };
  for (const std::string& body : cases) ExpectAgrees(body, "case");
}

TEST(GatewayJson, SeededEditsOfRequestBodiesAgreeWithNlohmann) {
  const std::vector<std::string> seeds = {
      R"({"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":8})",
      R"({"model":"llama-3\u002d8b","stream":true,"temperature":0.7,"stop":["\n\n"],"n":1})",
      R"({"input":["a","b"],"model":"emb","encoding_format":"float","dimensions":-12e-1})",
      "{\"model\":\"caf\xC3\xA9\",\"prompt\":\"\xF0\x9F\x98\x80 \\ud83d\\ude00\",\"x\":null}",
  };
  const std::string alphabet =
      "{}[]\",:\\/u0123456789abefnrtlsE+-. \t\n\xC3\xA9\xED\xF0\x80\xBF\x01";
  const uint64_t seed = 20261202;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20000; ++i) {
    std::string body = seeds[rng() % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      size_t at = rng() % body.size();
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 4) {
        case 0:
          body.erase(at, 1);
          break;
        case 1:
          body.insert(body.begin() + static_cast<long>(at), c);
          break;
        case 2:
          body[at] = c;
          break;
        default:
          body.insert(at, body.substr(at, rng() % 8));
          break;
      }
    }
    ExpectAgrees(body, "seed " + std::to_string(seed) + " variation " + std::to_string(i));
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace idlepool::serve
