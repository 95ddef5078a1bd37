// The gateway's pure request and answer texts (issue 17, point 2): which route a request takes,
// the `model` of an OpenAI body, the bearer token, the OpenAI-style error bodies, the model list,
// the server-sent event that ends a broken stream, and the hop-by-hop headers a proxy drops.
//
// Pure functions over strings: no I/O, no state; safe from any thread. nlohmann-json inside.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idlepool::serve {

enum class RouteKind {
  kModels,       // GET /v1/models
  kOpenAI,       // POST /v1/chat/completions, /v1/completions, /v1/embeddings: by `model`
  kPassThrough,  // /services/NAME/...: any method, to the http service NAME
  kNotFound,     // no such route (404)
  kBadMethod,    // a known OpenAI path with the wrong method (405)
};
struct Route {
  RouteKind kind = RouteKind::kNotFound;
  std::string service;          // kPassThrough: NAME
  std::string upstream_target;  // what the replica is asked for (path and query)
};
// `target` is the request line's target (path and query). "/services/NAME" alone goes to "/".
Route ParseRoute(std::string_view method, std::string_view target);

// The `model` of an OpenAI request body, or why there is none: `error` says "malformed JSON
// ..." or names the field (param "model"); `model` is set when `error` is empty.
struct ModelOf {
  std::string model;
  std::string error;
  std::string param;  // "model" when the field is missing or not a string
};
ModelOf ParseModel(std::string_view body);

// "Bearer KEY" (scheme case-insensitive, one or more spaces) -> KEY; nullopt otherwise.
std::optional<std::string_view> BearerToken(std::string_view authorization);

// {"error":{"message":...,"type":...,"param":...|null,"code":...|null}}: the shape OpenAI
// clients parse. `code` empty -> null; `param` empty -> null.
std::string ErrorJson(std::string_view message, std::string_view type, std::string_view code = "",
                      std::string_view param = "");
// The OpenAI error type for an HTTP status (400/404/413 invalid_request_error, 401
// authentication_error, 5xx server_error...).
const char* ErrorTypeFor(int status);

// GET /v1/models: {"object":"list","data":[{"id":MODEL,"object":"model","owned_by":"idlepool"}]}
std::string ModelsJson(const std::vector<std::string>& models);

// The event that ends a stream broken after its first byte: "data: {"error":{...}}\n\n".
std::string SseErrorEvent(std::string_view message);

// Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade (RFC 9110 7.6.1),
// plus the framing the gateway sets itself (Content-Length) and Authorization (the gateway's
// key, never the replica's business). Case-insensitive.
bool IsDroppedHeader(std::string_view name);

}  // namespace idlepool::serve
