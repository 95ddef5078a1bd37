#include "fake_engine/session.h"

#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_cat.hpp>

namespace fake_engine {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

std::string_view PathOf(boost::beast::string_view target) {
  std::string_view t(target.data(), target.size());
  return t.substr(0, t.find('?'));
}

}  // namespace

Session::Session(net::ip::tcp::socket socket, Engine& engine)
    : socket_(std::move(socket)), engine_(engine), timer_(socket_.get_executor()) {
  engine_.stats().connections.fetch_add(1, std::memory_order_relaxed);
}

Session::~Session() { engine_.stats().connections.fetch_sub(1, std::memory_order_relaxed); }

void Session::ReadRequest() {
  parser_.emplace();
  parser_->body_limit(engine_.options().body_bytes_max);
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, size_t) { self->OnRequest(ec); });
}

void Session::OnRequest(error_code ec) {
  if (closed_) return;
  if (ec == http::error::body_limit) {
    keep_alive_ = false;
    return Reply(413, ErrorBody("the request body is too large", "invalid_request_error", "", 413));
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return Close();
  if (ec && ec.category() != make_error_code(http::error::bad_target).category()) return Close();
  if (ec) {  // bytes that are not an HTTP request
    keep_alive_ = false;
    return Reply(400, ErrorBody(ec.message(), "invalid_request_error", "", 400));
  }
  keep_alive_ = parser_->get().keep_alive();
  version_ = parser_->get().version();
  Route();
}

void Session::Route() {
  const auto& req = parser_->get();
  std::string_view path = PathOf(req.target());
  bool get = req.method() == http::verb::get;
  bool post = req.method() == http::verb::post;
  if (engine_.options().fixed && post) return ReplyFixed();
  if (path == "/health" && get) {
    bool loading = engine_.loading();
    return Reply(loading ? 503 : 200, HealthBody(loading));
  }
  if (path == "/stats" && get) return Reply(200, engine_.StatsJson());
  if (path == "/v1/models" && get) {
    if (engine_.loading()) return Reply(503, HealthBody(true));
    return Reply(200, ModelsBody(engine_.options().model));
  }
  if (path == "/v1/chat/completions" && post) return Inference(Api::kChat);
  if (path == "/v1/completions" && post) return Inference(Api::kCompletions);
  if (path == "/v1/embeddings" && post) return Inference(Api::kEmbeddings);
  bool known = path == "/health" || path == "/stats" || path == "/v1/models" ||
               path == "/v1/chat/completions" || path == "/v1/completions" ||
               path == "/v1/embeddings";
  int status = known ? 405 : 404;
  std::string what = known ? "method not allowed: " : "no such route: ";
  Reply(status, ErrorBody(what + std::string(req.method_string()) + " " + std::string(path),
                          "invalid_request_error", "", status));
}

void Session::Inference(Api api) {
  Stats& stats = engine_.stats();
  const Options& o = engine_.options();
  index_ = engine_.Arrived();
  stats.in_flight.fetch_add(1, std::memory_order_relaxed);
  if (engine_.loading()) return Refuse(503, HealthBody(true));
  Parsed parsed = ParseAsk(api, parser_->get().body(), o.tokens);
  if (!parsed.ask) return Refuse(parsed.refusal.status, parsed.refusal.body);
  if (o.status != 0) {
    return Refuse(o.status,
                  ErrorBody("--status " + std::to_string(o.status), "server_error", "", o.status));
  }
  if (o.error_rate > 0 && Draw(o.seed, index_) < o.error_rate) {
    return Refuse(500, ErrorBody("--error-rate drew this request", "server_error", "", 500));
  }
  if (!parsed.ask->stream && o.crash_after && static_cast<int64_t>(index_) > *o.crash_after) {
    engine_.Crash("--crash-after " + std::to_string(*o.crash_after) + ": request " +
                  std::to_string(index_) + " (not streamed)");
  }
  Generate(std::move(*parsed.ask));
}

void Session::Refuse(int status, std::string body) {
  engine_.stats().errors.fetch_add(1, std::memory_order_relaxed);
  engine_.stats().in_flight.fetch_sub(1, std::memory_order_relaxed);
  if (engine_.options().verbose) {
    engine_.Log("request " + std::to_string(index_) + " refused " + std::to_string(status));
  }
  Reply(status, std::move(body));
}

void Session::Reply(int status, std::string body) {
  res_ = std::make_unique<http::response<http::string_body>>(static_cast<http::status>(status),
                                                             version_, std::move(body));
  res_->set(http::field::server, "idlepool-fake-engine");
  res_->set(http::field::content_type, "application/json");
  res_->set("X-Replica", engine_.options().id);
  res_->keep_alive(keep_alive_);
  res_->prepare_payload();
  http::async_write(socket_, *res_, [self = shared_from_this()](error_code ec, size_t) {
    if (self->closed_) return;
    if (ec) return self->Close();
    self->Next();
  });
}

void Session::ReplyFixed() {
  engine_.Arrived();
  const std::string& bytes = engine_.FixedResponse(keep_alive_);
  net::async_write(socket_, net::buffer(bytes), [self = shared_from_this()](error_code ec, size_t) {
    if (self->closed_) return;
    if (ec) {
      self->engine_.stats().cancelled.fetch_add(1, std::memory_order_relaxed);
      return self->Close();
    }
    self->engine_.stats().completed.fetch_add(1, std::memory_order_relaxed);
    self->Next();
  });
}

void Session::Next() {
  if (!keep_alive_) return Close();
  ReadRequest();
}

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  timer_.cancel();
  socket_.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  socket_.close(ignored);
}

}  // namespace fake_engine
