// Session's generation of an answer: the stream of token events, or the full answer after the
// time its tokens would take; --crash-after and --hang-after; the client watched for leaving.
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_cat.hpp>

#include "fake_engine/session.h"

namespace fake_engine {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr size_t kReadAheadMax = 64 * 1024;  // pipelined bytes held before watching stops
constexpr size_t kWatchBytes = 1024;

const char* IdPrefix(Api api) {
  switch (api) {
    case Api::kChat:
      return "chatcmpl-";
    case Api::kCompletions:
      return "cmpl-";
    case Api::kEmbeddings:
      return "emb-";
  }
  return "";
}

}  // namespace

void Session::Generate(Ask ask) {
  const Options& o = engine_.options();
  ask_ = std::move(ask);
  sent_ = 0;
  generating_ = true;
  response_id_ = IdPrefix(ask_->api) + o.id + "-" + std::to_string(index_);
  if (o.verbose) {
    engine_.Log("request " + std::to_string(index_) + " " + std::string(parser_->get().target()) +
                (ask_->stream ? " stream" : "") + " tokens=" + std::to_string(ask_->tokens));
  }
  WatchClient();
  if (ask_->stream) {
    head_ = std::make_unique<http::response<http::empty_body>>(http::status::ok, version_);
    head_->set(http::field::server, "idlepool-fake-engine");
    head_->set(http::field::content_type, "text/event-stream");
    head_->set(http::field::cache_control, "no-cache");
    head_->set("X-Replica", o.id);
    head_->keep_alive(keep_alive_);
    head_->chunked(true);
    head_sr_ = std::make_unique<http::response_serializer<http::empty_body>>(*head_);
    http::async_write_header(
        socket_, *head_sr_,
        [self = shared_from_this()](error_code ec, size_t) { self->OnHeadWritten(ec); });
    return;
  }
  if (o.hang_after && static_cast<int64_t>(index_) > *o.hang_after) {
    if (o.verbose) engine_.Log("request " + std::to_string(index_) + " hangs (not streamed)");
    return;
  }
  int gaps = ask_->api == Api::kEmbeddings ? 0 : std::max(0, ask_->tokens - 1);
  timer_.expires_after(o.ttft + gaps * o.token_gap);
  timer_.async_wait([self = shared_from_this()](error_code ec) { self->OnTick(ec); });
}

void Session::OnHeadWritten(error_code ec) {
  if (closed_) return;
  if (ec) return ClientLeft("before the first token");
  if (StopHere()) return;
  timer_.expires_after(engine_.options().ttft);
  timer_.async_wait([self = shared_from_this()](error_code ec) { self->OnTick(ec); });
}

void Session::OnTick(error_code ec) {
  if (closed_ || ec) return;
  if (!ask_->stream) return WriteFull();
  out_ = TokenEvent(Who{engine_.options().model, engine_.options().id, response_id_}, *ask_, sent_);
  net::async_write(
      socket_, http::make_chunk(net::buffer(out_)),
      [self = shared_from_this()](error_code ec, size_t) { self->OnTokenWritten(ec); });
}

void Session::OnTokenWritten(error_code ec) {
  if (closed_) return;
  if (ec) return ClientLeft("mid-stream");
  ++sent_;
  if (StopHere()) return;
  if (sent_ < ask_->tokens) {
    timer_.expires_after(engine_.options().token_gap);
    timer_.async_wait([self = shared_from_this()](error_code ec) { self->OnTick(ec); });
    return;
  }
  out_ = EndEvents(Who{engine_.options().model, engine_.options().id, response_id_}, *ask_);
  net::async_write(
      socket_,
      boost::beast::buffers_cat(http::make_chunk(net::buffer(out_)), http::make_chunk_last()),
      [self = shared_from_this()](error_code ec, size_t) { self->Done(ec); });
}

bool Session::StopHere() {
  const Options& o = engine_.options();
  if (o.crash_after && sent_ >= *o.crash_after) {
    engine_.Crash("--crash-after " + std::to_string(*o.crash_after) + ": request " +
                  std::to_string(index_) + " after " + std::to_string(sent_) + " tokens");
  }
  if (o.hang_after && sent_ >= *o.hang_after) {
    if (o.verbose) {
      engine_.Log("request " + std::to_string(index_) + " hangs after " + std::to_string(sent_) +
                  " tokens");
    }
    return true;
  }
  return false;
}

void Session::WriteFull() {
  const Options& o = engine_.options();
  std::string body = FullBody(Who{o.model, o.id, response_id_}, *ask_, o.embedding_dim);
  res_ = std::make_unique<http::response<http::string_body>>(http::status::ok, version_,
                                                             std::move(body));
  res_->set(http::field::server, "idlepool-fake-engine");
  res_->set(http::field::content_type, "application/json");
  res_->set("X-Replica", o.id);
  res_->keep_alive(keep_alive_);
  res_->prepare_payload();
  sent_ = ask_->tokens;
  http::async_write(socket_, *res_,
                    [self = shared_from_this()](error_code ec, size_t) { self->Done(ec); });
}

void Session::Done(error_code ec) {
  if (closed_) return;
  if (ec) return ClientLeft("while its end was written");
  generating_ = false;
  engine_.stats().completed.fetch_add(1, std::memory_order_relaxed);
  engine_.stats().in_flight.fetch_sub(1, std::memory_order_relaxed);
  if (engine_.options().verbose) engine_.Log("request " + std::to_string(index_) + " completed");
  if (watching_) {  // OnWatch goes on to the next request once the read is cancelled
    error_code ignored;
    socket_.cancel(ignored);
    return;
  }
  Next();
}

void Session::WatchClient() {
  if (watching_ || buffer_.size() >= kReadAheadMax) return;
  watching_ = true;
  socket_.async_read_some(
      buffer_.prepare(kWatchBytes),
      [self = shared_from_this()](error_code ec, size_t bytes) { self->OnWatch(ec, bytes); });
}

void Session::OnWatch(error_code ec, size_t bytes) {
  watching_ = false;
  if (closed_) return;
  if (!ec) buffer_.commit(bytes);  // the start of a pipelined request, kept for ReadRequest
  if (generating_) {
    if (ec) return ClientLeft(ec == net::error::eof ? "client closed" : "client connection failed");
    return WatchClient();
  }
  if (ec && ec != net::error::operation_aborted) return Close();
  Next();
}

void Session::ClientLeft(const char* when) {
  if (generating_) {
    generating_ = false;
    engine_.stats().cancelled.fetch_add(1, std::memory_order_relaxed);
    engine_.stats().in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (engine_.options().verbose) {
      engine_.Log("request " + std::to_string(index_) + " cancelled (" + when + ") after " +
                  std::to_string(sent_) + " tokens");
    }
  }
  Close();
}

}  // namespace fake_engine
