// Gateway: the io thread, the listener and the control calls posted onto it.
#include "serve/gateway.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <future>

#include "platform/clock.h"
#include "serve/gateway_conn.h"
#include "serve/gateway_health.h"
#include "serve/gateway_impl.h"
#include "serve/listen_address.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"

namespace idlepool::serve {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// host:port ([v6]:port) -> endpoint; throws system_error (invalid_argument) when malformed.
tcp::endpoint ParseListen(const std::string& listen) {
  std::optional<tcp::endpoint> at = ParseListenAddress(listen);
  if (!at) {
    throw boost::system::system_error(make_error_code(boost::system::errc::invalid_argument),
                                      "listen address '" + listen + "' is not HOST:PORT");
  }
  return *at;
}

// A context built from the options' PEM, or system_error (invalid_argument) saying what is wrong.
std::shared_ptr<net::ssl::context> ContextOrThrow(
    absl::StatusOr<std::shared_ptr<net::ssl::context>> ctx, const char* what) {
  if (ctx.ok()) return *std::move(ctx);
  throw boost::system::system_error(make_error_code(boost::system::errc::invalid_argument),
                                    std::string(what) + ": " + std::string(ctx.status().message()));
}

}  // namespace

Gateway::Impl::Impl(GatewayOptions o)
    : options(std::move(o)),
      // One thread runs every handler and every socket operation (Call posts onto it): the
      // scheduler keeps its lock for posts from other threads, the per-socket lock goes.
      io(std::make_unique<net::io_context>(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO)),
      router(RouterConfig{.seed = options.seed}),
      pool(options.upstream_idle_max),
      timer(*io) {}

Gateway::Impl::~Impl() {
  // Handlers still queued in io hold connections and exchanges; they touch nothing of this
  // object when destroyed, but the open requests are dropped first so none outlives the pool.
  open.clear();
  drain_watchers.clear();
  for (auto& [id, probe] : probes) probe->Stop();
  probes.clear();
  pool.CloseAll();
}

Time Gateway::Impl::Now() { return Time{Micros{platform::SteadyNanos() / 1000}}; }

void Gateway::Impl::Accept() {
  front->Start(*io, [this](tcp::socket socket) {
    boost::system::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    std::make_shared<ClientConn>(std::move(socket), *this)->Start();
  });
}

Status Gateway::Impl::Call(std::function<Status()> fn) {
  if (!running.load()) return {Code::kFailedPrecondition, "the gateway is not running"};
  if (io->get_executor().running_in_this_thread()) return fn();
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
  net::post(*io, [&] { done.set_value(fn()); });
  // Stop() may come in between: io.stop() drops the posted call, so wait with a bound.
  while (result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (!running.load()) return {Code::kFailedPrecondition, "the gateway stopped"};
  }
  return result.get();
}

Gateway::Gateway(GatewayOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Gateway::~Gateway() { Stop(); }

void Gateway::Start() {
  Impl& g = *impl_;
  tcp::endpoint at = ParseListen(g.options.listen);
  if (!g.options.tls_cert_chain_pem.empty() || !g.options.tls_key_pem.empty()) {
    g.https_ctx = ContextOrThrow(
        HttpsServerContext(g.options.tls_cert_chain_pem, g.options.tls_key_pem), "gateway HTTPS");
  }
  if (!g.options.tunnel_tls.empty()) {
    g.tunnel_ctx = ContextOrThrow(TunnelClientContext(g.options.tunnel_tls), "gateway tunnel TLS");
  }
  gate::ListenerOptions gate_options;
  gate_options.name = "gateway";
  gate_options.limits.max_connections = g.options.max_connections;
  gate_options.limits.max_per_peer = g.options.max_connections_per_address;
  auto front =
      GatedAcceptor::Open(text::JoinHostPort(at.address().to_string(), at.port()), gate_options);
  if (!front.ok()) {
    throw boost::system::system_error(make_error_code(boost::system::errc::address_in_use),
                                      std::string(front.status().message()));
  }
  g.front = *std::move(front);
  g.port = static_cast<uint16_t>(g.front->port());
  spdlog::info("gateway: accepting on {}:{} ({}, router seed {})", at.address().to_string(), g.port,
               g.https_ctx ? "HTTPS" : "HTTP", g.options.seed);
  g.work.emplace(g.io->get_executor());  // io runs until Stop, connections or not
  g.Accept();
  g.running = true;
  g.thread = std::thread([&g] {
    for (;;) {
      try {
        g.io->run();
        return;
      } catch (const std::exception& e) {  // a handler's bug must not end the endpoint
        spdlog::error("gateway: io thread: {} (continues)", e.what());
      }
    }
  });
}

void Gateway::Stop() {
  Impl& g = *impl_;
  if (!g.thread.joinable()) return;
  g.front->Stop();  // nothing more is posted to io
  net::post(*g.io, [&g] { g.timer.cancel(); });
  g.running = false;
  g.io->stop();
  g.thread.join();
}

uint16_t Gateway::port() const { return impl_->port; }

Status Gateway::AddService(const ServiceSpec& spec) {
  return impl_->Call([&] { return impl_->AddService(spec); });
}
Status Gateway::RemoveService(std::string_view name) {
  return impl_->Call([&] { return impl_->RemoveService(std::string(name)); });
}
Status Gateway::AddReplica(std::string_view service, ReplicaId id, std::string_view host,
                           uint16_t port, uint32_t capacity, std::optional<TunnelRoute> tunnel) {
  return impl_->Call([&] {
    return impl_->AddReplica(std::string(service), id, std::string(host), port, capacity,
                             std::move(tunnel));
  });
}
Status Gateway::SetReady(ReplicaId id) {
  return impl_->Call([&] { return impl_->SetReady(id); });
}
Status Gateway::Drain(ReplicaId id, std::function<void()> drained) {
  return impl_->Call([&] { return impl_->Drain(id, std::move(drained)); });
}
Status Gateway::Remove(ReplicaId id) {
  return impl_->Call([&] { return impl_->Remove(id); });
}
Status Gateway::SetWeight(ReplicaId id, double weight) {
  return impl_->Call([&] { return impl_->SetWeight(id, weight); });
}

std::vector<ServedCount> Gateway::TakeServed() {
  std::vector<ServedCount> out;
  (void)impl_->Call([&] {
    out = impl_->served.Take();
    return Status{};
  });
  return out;
}

std::string Gateway::PrometheusText() {
  std::string out;
  (void)impl_->Call([&] {
    out = RenderPrometheus(impl_->metrics.Snapshot(impl_->router.Snapshot(), Impl::Now()));
    out += RenderServedPrometheus(impl_->served.totals());
    return Status{};
  });
  return out;
}

std::string Gateway::SnapshotJson() {
  std::string out;
  (void)impl_->Call([&] {
    out = RenderJson(impl_->metrics.Snapshot(impl_->router.Snapshot(), Impl::Now()));
    return Status{};
  });
  return out;
}

}  // namespace idlepool::serve
