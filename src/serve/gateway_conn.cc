#include "serve/gateway_conn.h"

#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/read.hpp>

#include "serve/gateway_exchange.h"
#include "serve/gateway_parse.h"

namespace idlepool::serve {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

std::string_view View(boost::beast::string_view s) { return {s.data(), s.size()}; }

}  // namespace

namespace {

GatewayStream MakeStream(net::ip::tcp::socket socket, Gateway::Impl& g) {
  if (!g.https_ctx) return GatewayStream(GatewayStream::Tcp(std::move(socket)));
  return GatewayStream(GatewayStream::Tcp(std::move(socket)), *g.https_ctx);
}

}  // namespace

ClientConn::ClientConn(net::ip::tcp::socket socket, Gateway::Impl& gateway)
    : stream_(MakeStream(std::move(socket), gateway)),
      g_(gateway),
      timer_(stream_.get_executor()) {}

void ClientConn::Start() {
  g_.metrics.Accepted();
  ArmIdle();  // request_timeout: the handshake and the first request's head
  if (!stream_.tls()) return ReadRequest();
  stream_.tls()->async_handshake(net::ssl::stream_base::server,
                                 [self = shared_from_this()](error_code ec) {
                                   if (self->closed_) return;
                                   if (ec) return self->Close();
                                   self->ReadRequest();
                                 });
}

void ClientConn::ArmIdle() {
  idle_at_ = Gateway::Impl::Now() +
             Micros(authenticated_ ? g_.options.idle_timeout : g_.options.request_timeout);
  WakeAt(*idle_at_);
}

void ClientConn::WakeAt(Time at) {
  if (closed_ || (timer_pending_ && timer_at_ <= at)) return;
  timer_pending_ = true;
  timer_at_ = at;
  uint64_t generation = ++timer_generation_;  // a wait replaced here ends aborted, or is ignored
  timer_.expires_after(std::max(Micros(0), at - Gateway::Impl::Now()));
  timer_.async_wait([self = shared_from_this(), generation](error_code ec) {
    if (ec || generation != self->timer_generation_) return;
    self->timer_pending_ = false;
    self->OnTimer();
  });
}

void ClientConn::OnTimer() {
  if (closed_) return;
  Time now = Gateway::Impl::Now();
  if (exchange_) {
    std::shared_ptr<Exchange> x = exchange_;
    if (std::optional<Time> next = x->OnDeadline(now)) WakeAt(*next);
    return;  // an exchange that ends calls Finish, which sets the idle deadline again
  }
  if (!idle_at_) return;
  if (now >= *idle_at_) return Close();
  WakeAt(*idle_at_);
}

void ClientConn::ReadRequest() {
  if (closed_) return;
  parser_.emplace();
  parser_->body_limit(g_.options.body_bytes_max);
  parser_->header_limit(64 * 1024);
  if (authenticated_) ArmIdle();  // else the deadline set at Start holds
  http::async_read_header(
      stream_.direct(), buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->OnHeader(ec); });
}

void ClientConn::OnHeader(error_code ec) {
  if (closed_) return;
  if (ec) return OnRequest(ec);
  if (!KeyChecksOut()) return;
  authenticated_ = true;
  ArmIdle();  // the body, within idle_timeout
  const auto& req = parser_->get();
  // A declared body over the limit is refused before it is sent (curl and the OpenAI clients
  // wait for "100 Continue" on large bodies), so the client reads the 413 instead of a reset.
  boost::optional<uint64_t> length = parser_->content_length();
  if (length && *length > g_.options.body_bytes_max) return OnRequest(http::error::body_limit);
  auto expect = req.find(http::field::expect);
  if (expect != req.end() && boost::beast::iequals(expect->value(), "100-continue")) {
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    return stream_.async_write_direct(net::buffer(kContinue),
                                      [self = shared_from_this()](error_code ec, size_t) {
                                        if (ec) return self->Close();
                                        self->ReadBody();
                                      });
  }
  ReadBody();
}

void ClientConn::ReadBody() {
  // A small body usually came in the head's read: parse what the buffer holds first, rather than
  // through a read operation that would find it there and post its completion.
  error_code ec;
  while (buffer_.size() > 0 && !parser_->is_done()) {
    size_t n = parser_->put(buffer_.data(), ec);
    buffer_.consume(n);
    if (ec || n == 0) break;
  }
  if (ec == http::error::need_more) ec = {};
  if (ec || parser_->is_done()) return OnRequest(ec);
  http::async_read(stream_.direct(), buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, size_t) { self->OnRequest(ec); });
}

void ClientConn::OnRequest(error_code ec) {
  if (closed_) return;
  idle_at_.reset();
  received_ = Gateway::Impl::Now();
  if (ec == http::error::body_limit) {
    keep_alive_ = false;
    return AnswerError(413, "the request body is over the gateway's limit", "");
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return Close();
  if (ec && ec.category() != make_error_code(http::error::bad_target).category()) return Close();
  if (ec) {
    keep_alive_ = false;
    return AnswerError(400, "not an HTTP request: " + ec.message(), "");
  }
  keep_alive_ = parser_->get().keep_alive();
  http10_ = parser_->get().version() < 11;
  Handle();
}

bool ClientConn::KeyChecksOut() {
  const auto& req = parser_->get();
  auto auth = req.find(http::field::authorization);
  std::optional<std::string_view> key;
  if (auth != req.end()) key = BearerToken(View(auth->value()));
  grant_.reset();
  if (key && g_.options.authenticate) grant_ = g_.options.authenticate(*key);
  if (grant_) return true;
  idle_at_.reset();
  keep_alive_ = false;
  http10_ = req.version() < 11;
  lingering_ = true;
  Answer(401,
         ErrorJson(key ? "the API key is not valid" : "no API key (Authorization: Bearer)",
                   "authentication_error", "invalid_api_key"),
         "WWW-Authenticate: Bearer\r\n", "");
  return false;
}

void ClientConn::Linger() {
  error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  buffer_.clear();
  idle_at_ = Gateway::Impl::Now() + Micros(std::chrono::milliseconds(kLingerMs));
  WakeAt(*idle_at_);
  Discard();
}

void ClientConn::Discard() {
  stream_.async_read_some_direct(net::buffer(piece_),
                                 [self = shared_from_this()](error_code ec, size_t) {
                                   if (self->closed_) return;
                                   if (ec) return self->Close();
                                   self->Discard();
                                 });
}

void ClientConn::Handle() {
  const auto& req = parser_->get();
  std::string_view target = View(req.target());
  Route route = ParseRoute(View(req.method_string()), target);
  switch (route.kind) {
    case RouteKind::kModels:
      return Answer(200, ModelsJson(g_.OpenAIModels()), "", "");
    case RouteKind::kOpenAI:
      return HandleOpenAI(route.upstream_target);
    case RouteKind::kPassThrough:
      return HandlePassThrough(route.service, route.upstream_target);
    case RouteKind::kBadMethod:
      return AnswerError(405, "method not allowed: " + std::string(View(req.method_string())), "");
    case RouteKind::kNotFound:
      break;
  }
  AnswerError(404, "no such route: " + std::string(target.substr(0, 200)), "");
}

void ClientConn::HandleOpenAI(const std::string& target) {
  ModelOf m = ParseModel(parser_->get().body());
  if (!m.error.empty()) return AnswerError(400, m.error, "", m.param);
  std::optional<std::string> service = g_.ServiceForModel(m.model);
  if (!service) {
    std::string list;
    for (const std::string& model : g_.OpenAIModels()) list += (list.empty() ? "" : ", ") + model;
    return AnswerError(404,
                       "the model '" + m.model.substr(0, 200) +
                           "' does not exist; models: " + (list.empty() ? "(none)" : list),
                       "", "model");
  }
  Proxy(*service, target);
}

void ClientConn::HandlePassThrough(const std::string& service, const std::string& target) {
  if (!g_.IsHttpService(service)) {
    return AnswerError(404, "no http service named '" + service.substr(0, 200) + "'", "");
  }
  Proxy(service, target);
}

void ClientConn::Proxy(const std::string& service, const std::string& target) {
  const Admission admission = g_.limits.Admit(grant_->key_id, grant_->limit, received_);
  if (!admission.admitted) return RefuseOverLimit(admission, service);
  KeyHold hold = admission.counted ? KeyHold(&g_.limits, grant_->key_id) : KeyHold();
  auto& req = parser_->get();
  UpstreamRequest up;
  up.method = std::string(View(req.method_string()));
  up.target = target;
  up.headers.reserve(256);
  for (const auto& field : req) {
    std::string_view name = View(field.name_string());
    if (IsDroppedHeader(name) || field.name() == http::field::host) continue;
    up.headers.append(name).append(": ").append(View(field.value())).append("\r\n");
  }
  up.body = std::move(req.body());
  up.client_keep_alive = keep_alive_;
  up.client_http10 = http10_;
  exchange_ = std::make_shared<Exchange>(g_, shared_from_this(), service, std::move(up), received_,
                                         Caller{grant_->user, std::move(hold)});
  // A client that already sent (part of) its next request is read again after this answer:
  // watching it now would leave that request in the buffer under a read that may never end.
  if (buffer_.size() == 0) Watch();
  g_.Submit(exchange_);
}

// Over the key's limit: 429 before any replica is touched, with when to try again.
void ClientConn::RefuseOverLimit(const Admission& admission, const std::string& service) {
  g_.served.Refused(grant_->user);
  const int64_t micros = admission.retry_after.count();
  const int64_t seconds = std::max<int64_t>(1, (micros + 999'999) / 1'000'000);
  const std::string why = std::string(admission.why) == "concurrency"
                              ? "this API key has its limit of requests at once in flight"
                              : "this API key is over its limit of requests per second";
  Answer(429,
         ErrorJson(why + "; retry after " + std::to_string(seconds) + " s", "rate_limit_error",
                   "rate_limit_exceeded"),
         "Retry-After: " + std::to_string(seconds) + "\r\n", service);
}

void ClientConn::Watch() {
  if (watching_ || closed_) return;
  watching_ = true;
  stream_.async_read_some_direct(
      buffer_.prepare(4096),
      [self = shared_from_this()](error_code ec, size_t n) { self->OnWatch(ec, n); });
}

void ClientConn::OnWatch(error_code ec, size_t bytes) {
  watching_ = false;
  if (closed_) return;
  if (ec) {
    if (exchange_) {
      std::shared_ptr<Exchange> x = std::move(exchange_);
      x->ClientGone();
    }
    return Close();
  }
  buffer_.commit(bytes);
  if (!exchange_) ReadRequest();  // the next request began while we watched
  // Else a pipelined request waits in buffer_ until this exchange ends.
}

void ClientConn::Finish(bool keep_alive) {
  exchange_.reset();
  if (!keep_alive || !keep_alive_ || closed_) return Close();
  if (watching_) return ArmIdle();  // the pending read sees the next request (or the end)
  ReadRequest();
}

void ClientConn::AnswerError(int status, const std::string& message, const std::string& service,
                             const std::string& param) {
  Answer(status, ErrorJson(message, ErrorTypeFor(status), "", param), "", service);
}

void ClientConn::Answer(int status, const std::string& body, const std::string& extra_headers,
                        const std::string& service) {
  if (closed_) return;
  g_.metrics.Answer(service, status);
  out_ = (http10_ ? "HTTP/1.0 " : "HTTP/1.1 ") + std::to_string(status) + " " +
         std::string(View(http::obsolete_reason(static_cast<http::status>(status)))) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n" + extra_headers + (keep_alive_ ? "" : "Connection: close\r\n") + "\r\n" + body;
  stream_.async_write_direct(net::buffer(out_), [self = shared_from_this()](error_code ec, size_t) {
    if (ec) return self->Close();
    if (self->lingering_) return self->Linger();
    self->Finish(self->keep_alive_);
  });
}

void ClientConn::Close() {
  if (closed_) return;
  closed_ = true;
  exchange_.reset();  // breaks the conn <-> exchange cycle
  g_.metrics.Closed();
  timer_.cancel();
  error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  stream_.socket().close(ignored);
}

}  // namespace idlepool::serve
