// New upstream connections: the stream for a replica, and the way into a worker tunnel.
#include "serve/gateway_upstream.h"

#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

#include "serve/tunnel_tls.h"
#include "serve/tunnel_wire.h"

namespace idlepool::serve {

namespace net = boost::asio;
using error_code = boost::system::error_code;

std::shared_ptr<GatewayStream> NewUpstream(Gateway::Impl& g, ReplicaId id) {
  if (!g.pool.Endpoint(id)) return nullptr;
  GatewayStream::Tcp tcp(g.io->get_executor());
  if (g.pool.Tunnel(id) == nullptr) return std::make_shared<GatewayStream>(std::move(tcp));
  if (!g.tunnel_ctx) return nullptr;
  return std::make_shared<GatewayStream>(std::move(tcp), *g.tunnel_ctx);
}

namespace {

// The state of one tunnel entry while its operations run.
struct Entry {
  std::shared_ptr<GatewayStream> up;
  std::string out, in;
  std::function<void(error_code, std::string)> done;
};

void ReadAnswer(const std::shared_ptr<Entry>& e) {
  net::async_read_until(
      *e->up, net::dynamic_buffer(e->in, kTunnelAnswerMax), "\r\n\r\n",
      [e](error_code ec, size_t n) {
        if (ec) return e->done(ec, "reading the tunnel's answer: " + ec.message());
        std::optional<int> status = ParseTunnelAnswer(std::string_view(e->in).substr(0, n));
        if (status == 200 && n == e->in.size()) return e->done({}, std::string());
        std::string what = status ? "the tunnel answered " + std::to_string(*status)
                                  : std::string("the tunnel's answer is not HTTP");
        e->done(make_error_code(net::error::connection_refused), what);
      });
}

}  // namespace

void EnterTunnel(const std::shared_ptr<GatewayStream>& up, const TunnelRoute& route,
                 std::function<void(error_code, std::string)> done) {
  auto e = std::make_shared<Entry>(Entry{up, TunnelPreface(route.attempt), {}, std::move(done)});
  up->tls()->set_verify_callback(ExpectWorker{route.worker});
  up->tls()->async_handshake(net::ssl::stream_base::client, [e](error_code ec) {
    if (ec) return e->done(ec, "the tunnel's TLS handshake: " + ec.message());
    net::async_write(*e->up, net::buffer(e->out), [e](error_code ec, size_t) {
      if (ec) return e->done(ec, "sending the tunnel's preface: " + ec.message());
      ReadAnswer(e);
    });
  });
}

}  // namespace idlepool::serve
