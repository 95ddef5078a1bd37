// The health probe of one starting replica (internal to gateway*.cc): `GET <path>` on a new
// connection (through the replica's worker tunnel when it has one) every health_interval until
// one answers 200, then Gateway::Impl::SetReady. Each probe is bounded: connect_timeout for the
// whole exchange, 16 KiB of head and 64 KiB of body (a health answer is a few bytes). Any other
// answer, or any failure, waits for the next interval.
//
// Lifetime: shared, held by Gateway::Impl::probes and by its pending operations. Stop (the
// replica removed or ready) closes its connection and cancels its timer, and every handler
// checks it, so nothing of a probe acts after its replica is gone. Io thread only.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>
#include <optional>
#include <string>

#include "serve/gateway_impl.h"
#include "serve/gateway_stream.h"

namespace idlepool::serve {

class HealthProbe : public std::enable_shared_from_this<HealthProbe> {
 public:
  HealthProbe(Gateway::Impl& gateway, ReplicaId id, std::string path);
  void Start();  // the first probe at once
  void Stop();

 private:
  using error_code = boost::system::error_code;
  void Probe();
  void Send();
  void OnAnswer(error_code ec);
  void Again();  // the next probe after health_interval
  void CloseUpstream();

  Gateway::Impl& g_;
  ReplicaId id_;
  std::string path_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<GatewayStream> up_;
  std::string out_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> parser_;
  bool stopped_ = false;
};

}  // namespace idlepool::serve
