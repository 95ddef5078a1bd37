#include "serve/gateway_parse.h"

#include <algorithm>
#include <cctype>

#include "nlohmann/json.hpp"
#include "serve/gateway_json.h"

namespace idlepool::serve {

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// `lower` is lower-case ASCII.
bool AsciiIEquals(std::string_view name, std::string_view lower) {
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
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
  TopLevelModel top = ScanTopLevelModel(body);
  switch (top.kind) {
    case TopLevelModel::Kind::kMalformed:
      m.error = "malformed JSON in the request body";
      return m;
    case TopLevelModel::Kind::kNotObject:
      m.error = "the request body is not a JSON object";
      return m;
    case TopLevelModel::Kind::kString:
      if (!top.model.empty()) {
        m.model = std::move(top.model);
        return m;
      }
      break;
    case TopLevelModel::Kind::kAbsent:
    case TopLevelModel::Kind::kNotString:
      break;
  }
  m.error = "you must provide a model parameter (a non-empty string)";
  m.param = "model";
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
  // Every header of every request and answer passes here: compare only with the dropped names
  // of its length, lower-casing ASCII without the locale.
  switch (name.size()) {
    case 2:
      return AsciiIEquals(name, "te");
    case 7:
      return AsciiIEquals(name, "trailer") || AsciiIEquals(name, "upgrade");
    case 10:
      return AsciiIEquals(name, "connection") || AsciiIEquals(name, "keep-alive");
    case 13:
      return AsciiIEquals(name, "authorization");
    case 14:
      return AsciiIEquals(name, "content-length");
    case 16:
      return AsciiIEquals(name, "proxy-connection");
    case 17:
      return AsciiIEquals(name, "transfer-encoding");
    case 18:
      return AsciiIEquals(name, "proxy-authenticate");
    case 19:
      return AsciiIEquals(name, "proxy-authorization");
    default:
      return false;
  }
}

}  // namespace idlepool::serve
