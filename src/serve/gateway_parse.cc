#include "serve/gateway_parse.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "nlohmann/json.hpp"

namespace idlepool::serve {

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

constexpr std::string_view kServices = "/services/";

}  // namespace

Route ParseRoute(std::string_view method, std::string_view target) {
  Route r;
  std::string_view path = target.substr(0, target.find('?'));
  if (path == "/v1/models") {
    r.kind = method == "GET" ? RouteKind::kModels : RouteKind::kBadMethod;
    return r;
  }
  if (path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/embeddings") {
    r.kind = method == "POST" ? RouteKind::kOpenAI : RouteKind::kBadMethod;
    r.upstream_target = std::string(target);
    return r;
  }
  if (target.substr(0, kServices.size()) == kServices) {
    std::string_view rest = target.substr(kServices.size());
    size_t end = rest.find_first_of("/?");
    std::string_view name = rest.substr(0, end);
    if (name.empty()) return r;
    r.kind = RouteKind::kPassThrough;
    r.service = std::string(name);
    std::string_view tail = end == std::string_view::npos ? "" : rest.substr(end);
    r.upstream_target =
        tail.empty() || tail[0] == '?' ? "/" + std::string(tail) : std::string(tail);
    return r;
  }
  return r;
}

ModelOf ParseModel(std::string_view body) {
  ModelOf m;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    m.error = "malformed JSON in the request body";
    return m;
  }
  if (!j.is_object()) {
    m.error = "the request body is not a JSON object";
    return m;
  }
  auto it = j.find("model");
  if (it == j.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    m.error = "you must provide a model parameter (a non-empty string)";
    m.param = "model";
    return m;
  }
  m.model = it->get<std::string>();
  return m;
}

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() ||
      !IEquals(authorization.substr(0, kScheme.size()), kScheme) ||
      authorization[kScheme.size()] != ' ') {
    return std::nullopt;
  }
  std::string_view key = authorization.substr(kScheme.size());
  key.remove_prefix(std::min(key.find_first_not_of(' '), key.size()));
  while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
  if (key.empty()) return std::nullopt;
  return key;
}

std::string ErrorJson(std::string_view message, std::string_view type, std::string_view code,
                      std::string_view param) {
  nlohmann::json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!code.empty()) e["code"] = code;
  if (!param.empty()) e["param"] = param;
  return nlohmann::json{{"error", e}}.dump(-1, ' ', false,
                                           nlohmann::json::error_handler_t::replace);
}

const char* ErrorTypeFor(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 404:
    case 400:
    case 405:
    case 413:
      return "invalid_request_error";
    case 429:
      return "rate_limit_error";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string ModelsJson(const std::vector<std::string>& models) {
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& m : models) {
    data.push_back({{"id", m}, {"object", "model"}, {"created", 0}, {"owned_by", "idlepool"}});
  }
  return nlohmann::json{{"object", "list"}, {"data", data}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string SseErrorEvent(std::string_view message) {
  return "data: " + ErrorJson(message, "server_error", "upstream_broken") + "\n\n";
}

bool IsDroppedHeader(std::string_view name) {
  static constexpr std::array<std::string_view, 10> kDropped = {"connection",
                                                                "keep-alive",
                                                                "proxy-connection",
                                                                "proxy-authenticate",
                                                                "proxy-authorization",
                                                                "te",
                                                                "trailer",
                                                                "transfer-encoding",
                                                                "upgrade",
                                                                "content-length"};
  if (IEquals(name, "authorization")) return true;
  return std::any_of(kDropped.begin(), kDropped.end(),
                     [&](std::string_view d) { return IEquals(name, d); });
}

}  // namespace idlepool::serve
