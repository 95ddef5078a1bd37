// The gateway's state on its io thread (internal to gateway*.cc): the router, the upstream pool,
// the services and their models, the open requests by router id, drain watchers, metrics and the
// router's timer, the TLS contexts and the health probes; the glue between the router's decisions
// and the exchanges that carry them out. Everything here is touched on the io thread only.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "serve/gated_acceptor.h"
#include "serve/gateway.h"
#include "serve/gateway_metrics.h"
#include "serve/gateway_pool.h"
#include "serve/router.h"

namespace idlepool::serve {

class Exchange;
class ClientConn;
class HealthProbe;

class Gateway::Impl {
 public:
  explicit Impl(GatewayOptions options);
  ~Impl();

  // The router's clock: monotonic microseconds (platform::SteadyNanos).
  static Time Now();

  // Requests (io thread). Submit routes, queues or answers (404, 503) the exchange.
  void Submit(const std::shared_ptr<Exchange>& x);
  // The attempt on x's replica failed before anything reached the client: another replica, the
  // queue, or 502 when the retry budget is spent.
  void Retry(const std::shared_ptr<Exchange>& x);
  // x ended (ok, an upstream error after its first byte, or its client left).
  void Finish(Exchange& x, Outcome outcome);
  std::vector<std::string> OpenAIModels() const;
  // The service for a model (kOpenAI) or a name (kHttp); nullopt when none.
  std::optional<std::string> ServiceForModel(const std::string& model) const;
  bool IsHttpService(const std::string& name) const;

  // Control, on the io thread (gateway_control.cc).
  Status AddService(const ServiceSpec& spec);
  Status RemoveService(const std::string& name);
  Status AddReplica(const std::string& service, ReplicaId id, const std::string& host,
                    uint16_t port, uint32_t capacity, std::optional<TunnelRoute> tunnel);
  Status SetReady(ReplicaId id);
  Status Drain(ReplicaId id, std::function<void()> drained);
  Status Remove(ReplicaId id);
  Status SetWeight(ReplicaId id, double weight);
  // Runs fn on the io thread and returns its result; kFailedPrecondition when not running.
  Status Call(std::function<Status()> fn);

  void Accept();
  void Dispatch(std::span<const serve::Dispatch> dispatched);
  void ArmTimer();
  void OnTimer();
  void CheckDrained(ReplicaId id);
  void StopProbe(ReplicaId id);
  // Ends requests the router ended without an answer (queue deadline, service removed): 503.
  void EndUnanswered(std::span<const RequestId> ids, const char* why);
  void Orphans(std::span<const RequestId> ids);

  GatewayOptions options;
  // Before io: exchanges, destroyed with io's handlers, release their keys into it.
  KeyLimits limits;
  ServedUsage served;
  std::unique_ptr<boost::asio::io_context> io;
  Router router;
  UpstreamPool pool;
  GatewayMetrics metrics;
  struct ServiceInfo {
    Protocol protocol;
    std::string model;
    std::string health;  // "" or the probe's path
  };
  std::map<std::string, ServiceInfo> services;                    // by name
  std::map<std::string, std::string> model_services;              // model -> service (openai)
  std::unordered_map<RequestId, std::shared_ptr<Exchange>> open;  // routed or queued
  std::unordered_map<ReplicaId, std::function<void()>> drain_watchers;
  std::unordered_map<ReplicaId, std::shared_ptr<HealthProbe>> probes;  // starting replicas
  // Built at Start: null when the options have no such certificate.
  std::shared_ptr<boost::asio::ssl::context> https_ctx;   // the client listener
  std::shared_ptr<boost::asio::ssl::context> tunnel_ctx;  // upstreams through worker tunnels
  std::unique_ptr<GatedAcceptor> front;  // admits client connections (gated_acceptor.h)
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  boost::asio::steady_timer timer;
  std::optional<Time> timer_at;
  std::thread thread;
  std::atomic<bool> running{false};
  uint16_t port = 0;
};

}  // namespace idlepool::serve
