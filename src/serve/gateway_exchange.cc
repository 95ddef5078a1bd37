// Exchange, the upstream side: connection, request, the answer's head, retries.
#include "serve/gateway_exchange.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

#include "serve/gateway_conn.h"
#include "serve/gateway_parse.h"
#include "serve/gateway_upstream.h"
#include "spdlog/spdlog.h"

namespace idlepool::serve {

namespace net = boost::asio;
namespace http = boost::beast::http;

Exchange::Exchange(Gateway::Impl& gateway, std::shared_ptr<ClientConn> conn, std::string service,
                   UpstreamRequest request, Time received, Caller caller)
    : g_(gateway),
      conn_(std::move(conn)),
      service_(std::move(service)),
      request_(std::move(request)),
      received_(received),
      caller_(std::move(caller)) {}

void Exchange::SendTo(ReplicaId replica) {
  if (done_) return;
  CloseUpstream();
  ++attempt_;
  replica_ = replica;
  answer_began_ = false;
  if (!g_.pool.Endpoint(replica)) return Failed("the replica has no address");
  up_ = g_.pool.Take(replica);
  reused_ = up_ != nullptr;
  if (reused_) return WriteRequest();
  Connect();
}

// A new connection: TCP, and through the replica's worker tunnel when it has one.
void Exchange::Connect() {
  up_ = NewUpstream(g_, replica_);
  reused_ = false;
  if (!up_) return Failed("the replica is gone or its tunnel has no certificate");
  Deadline(g_.options.connect_timeout, "connect");
  ConnectUpstream(g_, replica_, up_,
                  [self = shared_from_this(), a = attempt_](error_code ec, std::string what) {
                    if (self->Stale(a)) return;
                    if (ec) return self->Failed(what, ec);
                    self->WriteRequest();
                  });
}

void Exchange::WriteRequest() {
  const std::string* host = g_.pool.HostHeader(replica_);
  if (host == nullptr) return Failed("the replica has no address");
  out_.clear();
  out_.reserve(request_.method.size() + request_.target.size() + host->size() +
               request_.headers.size() + 64);
  out_.append(request_.method).append(" ").append(request_.target);
  out_.append(" HTTP/1.1\r\nHost: ").append(*host).append("\r\n").append(request_.headers);
  if (!request_.body.empty() || request_.method == "POST" || request_.method == "PUT" ||
      request_.method == "PATCH") {
    out_.append("Content-Length: ").append(std::to_string(request_.body.size())).append("\r\n");
  }
  out_.append("\r\n");
  // Through a tunnel (TLS) the head and the body go as one buffer (a copy of the body): a
  // two-buffer write of a body over 16 KiB through Beast 1.74's ssl_stream sent the head and
  // then stalled (cause not found; gateway_tunnel_test's ALargeRequestBodyGoesThroughTheTunnel).
  if (up_->tls() && !request_.body.empty()) out_.append(request_.body);
  std::array<net::const_buffer, 2> bufs = {
      net::buffer(out_), net::buffer(up_->tls() ? std::string_view() : request_.body)};
  Deadline(g_.options.first_byte_timeout, "sending the request");
  net::async_write(up_->direct(), bufs,
                   [self = shared_from_this(), a = attempt_, up = up_](error_code ec, size_t) {
                     if (self->Stale(a)) return;
                     if (ec) return self->Failed("sending the request: " + ec.message(), ec);
                     self->ReadHead();
                   });
}

void Exchange::ReadHead() {
  deadline_what_ = "reading the answer";  // the first byte's deadline runs on
  buffer_.clear();
  parser_.emplace();
  parser_->body_limit(
      UINT64_MAX);  // not boost::none: Boost 1.74 compares a length with it as "over"
  parser_->skip(request_.method == "HEAD");
  http::async_read_header(
      up_->direct(), buffer_, *parser_,
      [self = shared_from_this(), a = attempt_, up = up_](error_code ec, size_t) {
        if (self->Stale(a)) return;
        self->OnHead(ec);
      });
}

void Exchange::OnHead(error_code ec) {
  if (ec) {
    if (buffer_.size() > 0) answer_began_ = true;
    return Failed("reading the answer: " + ec.message(), ec);
  }
  answer_began_ = true;
  const auto& res = parser_->get();
  if (res.result_int() >= 500)
    return Failed("the replica answered " + std::to_string(res.result_int()));
  auto type = res.find(http::field::content_type);
  sse_ = type != res.end() && type->value().starts_with("text/event-stream");
  keep_client_ = request_.client_keep_alive;
  if (request_.client_http10) {
    chunked_ = false;
    if (!parser_->content_length()) keep_client_ = false;  // the close ends the body
  } else {
    chunked_ = !parser_->content_length() && !parser_->is_done();
  }
  if (parser_->is_done()) return Forward(0, true);
  ReadBody();
}

void Exchange::Deadline(std::chrono::milliseconds d, const char* what) {
  deadline_ = Gateway::Impl::Now() + Micros(d);
  deadline_what_ = what;
  conn_->WakeAt(*deadline_);
}

std::optional<Time> Exchange::OnDeadline(Time now) {
  if (done_ || !up_ || !deadline_) return std::nullopt;
  if (now < *deadline_) return deadline_;
  error_code timeout = boost::beast::error::timeout;
  ++attempt_;  // the pending operations of this attempt end aborted: stale
  Failed(std::string(deadline_what_) + ": " + timeout.message(), timeout);
  return done_ || !deadline_ ? std::nullopt : deadline_;  // a retry may have set a new one
}

void Exchange::Failed(const std::string& what, error_code ec) {
  if (done_) return;
  spdlog::debug("gateway: request {} on replica {}: {}", id_, replica_, what);
  if (head_sent_) return Cut(what);
  // Only a connection the replica closed while it sat idle (end of stream, reset, broken pipe)
  // earns a fresh one: a deadline that ran out is the replica's doing, retried elsewhere (else a
  // hung replica would cost each request two first-byte deadlines).
  const bool closed = ec == http::error::end_of_stream || ec == net::error::eof ||
                      ec == net::error::connection_reset || ec == net::error::broken_pipe ||
                      ec == net::ssl::error::stream_truncated;
  bool stale_idle = reused_ && !answer_began_ && closed;
  CloseUpstream();
  if (stale_idle) {  // the replica closed an idle connection: once more, fresh, uncharged
    ++attempt_;
    return Connect();
  }
  g_.Retry(shared_from_this());
}

void Exchange::Orphaned() {
  if (done_) return;
  if (head_sent_) return Cut("the replica went away");
  CloseUpstream();
  ++attempt_;
  g_.Retry(shared_from_this());
}

void Exchange::Refuse(int status, const std::string& message, std::chrono::seconds retry_after) {
  if (done_) return;
  done_ = true;
  CloseUpstream();
  std::string extra;
  if (retry_after.count() > 0)
    extra = "Retry-After: " + std::to_string(retry_after.count()) + "\r\n";
  conn_->Answer(status, ErrorJson(message, ErrorTypeFor(status)), extra, service_);
}

void Exchange::ClientGone() {
  if (done_) return;
  done_ = true;
  CloseUpstream();  // the engine sees its client leave: the request is cancelled there
  if (id_ != 0) g_.Finish(*this, Outcome::kClientGone);
}

void Exchange::CloseUpstream() {
  deadline_.reset();
  if (!up_) return;
  error_code ignored;
  up_->socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  up_->socket().close(ignored);
  up_.reset();  // pending operations hold their own reference until their handlers ran
}

}  // namespace idlepool::serve
