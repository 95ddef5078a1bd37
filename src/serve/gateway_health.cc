#include "serve/gateway_health.h"

#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

#include "serve/gateway_upstream.h"
#include "spdlog/spdlog.h"

namespace idlepool::serve {

namespace net = boost::asio;
namespace http = boost::beast::http;

HealthProbe::HealthProbe(Gateway::Impl& gateway, ReplicaId id, std::string path)
    : g_(gateway), id_(id), path_(std::move(path)), timer_(*gateway.io) {}

void HealthProbe::Start() { Probe(); }

void HealthProbe::Stop() {
  stopped_ = true;
  timer_.cancel();
  CloseUpstream();
}

void HealthProbe::CloseUpstream() {
  if (!up_) return;
  error_code ignored;
  up_->socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  up_->socket().close(ignored);
  up_.reset();
}

void HealthProbe::Probe() {
  if (stopped_) return;
  up_ = NewUpstream(g_, id_);
  if (!up_) return Again();
  up_->expires_after(g_.options.connect_timeout);
  ConnectUpstream(g_, id_, up_, [self = shared_from_this()](error_code ec, std::string what) {
    if (self->stopped_) return;
    if (ec) {
      spdlog::debug("gateway: health of replica {}: {}", self->id_, what);
      return self->Again();
    }
    self->Send();
  });
}

void HealthProbe::Send() {
  net::ip::tcp::endpoint at = *g_.pool.Endpoint(id_);
  out_ = "GET " + path_ + " HTTP/1.1\r\nHost: " + at.address().to_string() + ":" +
         std::to_string(at.port()) + "\r\nConnection: close\r\n\r\n";
  net::async_write(*up_, net::buffer(out_), [self = shared_from_this()](error_code ec, size_t) {
    if (self->stopped_) return;
    if (ec) return self->Again();
    self->buffer_.clear();
    self->parser_.emplace();
    self->parser_->header_limit(16 * 1024);
    self->parser_->body_limit(64 * 1024);
    http::async_read(*self->up_, self->buffer_, *self->parser_,
                     [self](error_code ec, size_t) { self->OnAnswer(ec); });
  });
}

void HealthProbe::OnAnswer(error_code ec) {
  if (stopped_) return;
  int status = ec ? 0 : parser_->get().result_int();
  parser_.reset();
  if (status != 200) {
    spdlog::debug("gateway: health of replica {}: {}", id_,
                  ec ? ec.message() : "answered " + std::to_string(status));
    return Again();
  }
  Stop();
  spdlog::info("gateway: replica {} is healthy", id_);
  (void)g_.SetReady(id_);  // ends this probe's entry too
}

void HealthProbe::Again() {
  CloseUpstream();
  if (stopped_) return;
  timer_.expires_after(g_.options.health_interval);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->Probe();
  });
}

}  // namespace idlepool::serve
