// Exchange, the client side: the answer's head and body forwarded piece by piece as they arrive,
// the end of an answer, and a stream cut after its first byte.
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <cstdio>

#include "serve/gateway_conn.h"
#include "serve/gateway_exchange.h"
#include "serve/gateway_parse.h"

namespace idlepool::serve {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

std::string_view View(boost::beast::string_view s) { return {s.data(), s.size()}; }

void AppendChunk(std::string& out, std::string_view data) {
  char size[24];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out.append(size, n).append(data).append("\r\n");
}

}  // namespace

void Exchange::ReadBody() {
  auto& body = parser_->get().body();
  body.data = conn_->piece().data();
  body.size = conn_->piece().size();
  // What the last read brought past the head (often the whole answer) is parsed at once, not
  // through a read operation that would find it in the buffer and post its completion.
  if (buffer_.size() > 0) {
    error_code ec;
    while (buffer_.size() > 0 && !parser_->is_done() && body.size > 0) {
      size_t n = parser_->put(buffer_.data(), ec);
      buffer_.consume(n);
      if (ec || n == 0) break;
    }
    if (ec == http::error::need_more || ec == http::error::need_buffer) ec = {};
    if (ec) return Failed("reading the answer's body: " + ec.message());
    size_t got = conn_->piece().size() - body.size;
    if (got > 0 || parser_->is_done()) return Forward(got, parser_->is_done());
  }
  if (head_sent_) {
    Deadline(g_.options.gap_timeout, "reading the answer's body");
  } else {
    Deadline(g_.options.first_byte_timeout, "reading the answer's body");
  }
  http::async_read_some(up_->direct(), buffer_, *parser_,
                        [self = shared_from_this(), a = attempt_, up = up_](error_code ec, size_t) {
                          if (self->Stale(a)) return;
                          self->OnBody(ec);
                        });
}

void Exchange::OnBody(error_code ec) {
  if (ec == http::error::need_buffer) ec = {};
  if (ec) return Failed("reading the answer's body: " + ec.message());
  size_t got = conn_->piece().size() - parser_->get().body().size;
  if (got == 0 && !parser_->is_done()) return ReadBody();
  Forward(got, parser_->is_done());
}

void Exchange::AppendClientHead(std::string& head) const {
  const auto& res = parser_->get();
  head.append(request_.client_http10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  head.append(std::to_string(res.result_int())).append(" ").append(View(res.reason()));
  head.append("\r\n");
  for (const auto& field : res) {
    std::string_view name = View(field.name_string());
    if (IsDroppedHeader(name)) continue;
    head.append(name).append(": ").append(View(field.value())).append("\r\n");
  }
  if (chunked_) {
    head.append("Transfer-Encoding: chunked\r\n");
  } else if (parser_->content_length()) {
    head.append("Content-Length: ").append(std::to_string(*parser_->content_length()));
    head.append("\r\n");
  } else if (parser_->is_done()) {
    head.append("Content-Length: 0\r\n");
  }
  if (!keep_client_) head.append("Connection: close\r\n");
  head.append("\r\n");
}

void Exchange::Forward(size_t bytes, bool last) {
  out_.clear();
  if (!head_sent_) {
    out_.reserve(512 + bytes);
    AppendClientHead(out_);
    head_sent_ = true;
    const Time now = Gateway::Impl::Now();
    const int status = parser_->get().result_int();
    g_.metrics.FirstByte(service_, replica_, status, now, now - received_);
    g_.metrics.Answer(service_, status);
  }
  std::string_view data(conn_->piece().data(), bytes);
  tail_.Add(data);
  if (chunked_) {
    if (bytes > 0) AppendChunk(out_, data);
    if (last) out_ += "0\r\n\r\n";
  } else {
    out_.append(data);
  }
  writing_ = true;
  deadline_.reset();  // a slow client is not the replica's gap; ReadBody sets the next one
  conn_->stream().async_write_direct(
      net::buffer(out_), [self = shared_from_this(), a = attempt_, last](error_code ec, size_t) {
        self->writing_ = false;
        if (self->cut_) return self->WriteCutEvent();
        if (self->Stale(a)) return;
        if (ec) return self->ClientGone();
        if (last) return self->Complete();
        self->ReadBody();
      });
}

void Exchange::Complete() {
  done_ = true;
  if (parser_->keep_alive() && up_) {
    g_.pool.Give(replica_, std::move(up_));
  } else {
    CloseUpstream();
  }
  g_.metrics.Done(service_, Gateway::Impl::Now() - received_);
  const TunnelRoute* tunnel = g_.pool.Tunnel(replica_);
  g_.served.Served(caller_.user, tunnel ? tunnel->worker : "", tail_.Tokens());
  g_.Finish(*this, Outcome::kOk);
  conn_->Finish(keep_client_);
}

// After the first byte: the replica is charged, and the client learns the answer is incomplete.
void Exchange::Cut(const std::string& what) {
  done_ = true;
  CloseUpstream();
  g_.metrics.StreamBroken(service_);
  g_.metrics.Done(service_, Gateway::Impl::Now() - received_);
  g_.Finish(*this, Outcome::kUpstreamError);
  if (!(sse_ && chunked_)) return conn_->Close();  // a truncated body: clients see an error
  cut_ = true;
  cut_message_ = "the replica failed mid-answer: " + what;
  if (!writing_) WriteCutEvent();  // else after the pending write of the previous piece
}

void Exchange::WriteCutEvent() {
  cut_ = false;
  out_.clear();
  AppendChunk(out_, SseErrorEvent(cut_message_));
  out_ += "0\r\n\r\n";
  conn_->stream().async_write_direct(
      net::buffer(out_), [self = shared_from_this()](error_code, size_t) { self->conn_->Close(); });
}

}  // namespace idlepool::serve
