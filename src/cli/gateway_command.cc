// `idlepool gateway --coordinator HOST:PORT --listen ADDR --tls-cert F --tls-key F` (issue 17,
// point 2): the coordinator's gateway as a process of its own, so several can stand behind DNS
// or a load balancer while one coordinator holds the state. It watches the coordinator
// (Jobs.WatchGateway, with the access token of role submit it runs with), which pushes the
// services and replicas whenever they change and certifies this process for the workers'
// tunnels; clients' bearer keys are checked with the coordinator (KeyCheck below). When the
// coordinator is unreachable it keeps routing to the replicas it knows, with the keys it checked
// in the last 10 minutes, and watches again with a backoff (1 s doubling to 10 s).
//
// HTTPS with the certificate and key given (PEM files: the names clients use). The pool's CA
// does not issue them: a certificate it signed for any name could stand in for the coordinator
// towards the workers.
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/gateway_sync.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "platform/process.h"
#include "serve/gateway.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"
#include "trust.grpc.pb.h"
#include "trust/ca.h"
#include "trust/grpc_tls.h"
#include "trust/token.h"

namespace idlepool::cli {
namespace {

struct GatewayFlags {
  std::string listen;
  std::string tls_cert, tls_key;
  std::string name = "gateway";
};

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path);
  std::stringstream s;
  if (!in || !(s << in.rdbuf())) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": cannot be read"));
  }
  return s.str();
}

// Clients' keys, checked with the coordinator (Join.WhoAmI: role submit or operator; the key's
// user and limits come with the answer). A good key is trusted for kFreshMs without asking again.
// While the coordinator cannot be reached (its answer does not come within 2 s), a key that checked
// out within kStaleMs is still taken, and nothing is asked for kUnreachableMs, so the gateway
// routes on without waiting. At most kLookupsPerSecond keys are looked up (a flood of made-up keys
// cannot make the gateway wait on the coordinator for each: past the budget an unknown key is
// refused).
class KeyCheck {
 public:
  explicit KeyCheck(std::shared_ptr<grpc::Channel> channel)
      : stub_(v1::Join::NewStub(std::move(channel))) {}
  std::optional<serve::KeyGrant> operator()(std::string_view key) {
    const int64_t now = platform::SteadyNanos() / 1'000'000;
    std::lock_guard lock(mu_);
    auto it = good_.find(std::string(key));
    const bool known = it != good_.end();
    if (known && now - it->second.at < kFreshMs) return it->second.grant;
    if (now < unreachable_until_) return Stale(it, known, now);
    if (!trust::ParseToken(key).ok()) return std::nullopt;  // not even shaped like a token
    if (now - window_start_ >= 1000) {
      window_start_ = now;
      lookups_ = 0;
    }
    if (++lookups_ > kLookupsPerSecond) return std::nullopt;
    grpc::ClientContext ctx;
    ctx.set_deadline(platform::DeadlineAfter(std::chrono::seconds(2)));
    ctx.AddMetadata("x-idlepool-token", std::string(key));
    v1::WhoAmIReply who;
    const grpc::Status st = stub_->WhoAmI(&ctx, v1::WhoAmIRequest(), &who);
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
        st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      unreachable_until_ = now + kUnreachableMs;
      return Stale(it, known, now);
    }
    if (!st.ok() || (who.role() != "submit" && who.role() != "operator")) {
      if (known) good_.erase(it);
      return std::nullopt;
    }
    if (good_.size() >= 4096) good_.clear();
    serve::KeyGrant grant{who.token_id(), who.user().empty() ? who.name() : who.user(),
                          serve::KeyLimit{who.rate_per_s(), who.concurrency()}};
    good_[std::string(key)] = Good{now, grant};
    return grant;
  }

 private:
  static constexpr int kLookupsPerSecond = 50;
  static constexpr int64_t kFreshMs = 5000;
  static constexpr int64_t kStaleMs = 600'000;
  static constexpr int64_t kUnreachableMs = 5000;
  std::unique_ptr<v1::Join::Stub> stub_;
  std::mutex mu_;
  struct Good {
    int64_t at = 0;  // when it last checked out (steady ms)
    serve::KeyGrant grant;
  };
  using Goods = std::map<std::string, Good>;
  static std::optional<serve::KeyGrant> Stale(Goods::iterator it, bool known, int64_t now) {
    if (known && now - it->second.at < kStaleMs) return it->second.grant;
    return std::nullopt;
  }
  Goods good_;  // by key
  int64_t unreachable_until_ = 0;
  int64_t window_start_ = 0;
  int lookups_ = 0;
};

// The process: its files and keys, the watch of the coordinator, the gateway once the first
// state (with its tunnel certificate) arrived. Run on the main thread; Stop from the signal
// thread.
class GatewayProcess {
 public:
  GatewayProcess(const GatewayFlags& f, const Common& common) : f_(f), common_(common) {}

  absl::Status Init() {
    auto cert = ReadFile(f_.tls_cert, "--tls-cert");
    if (!cert.ok()) return cert.status();
    auto key = ReadFile(f_.tls_key, "--tls-key");
    if (!key.ok()) return key.status();
    auto tunnel_key = trust::NewPrivateKeyPem();
    if (!tunnel_key.ok()) return tunnel_key.status();
    auto tunnel_pub = trust::PublicKeyPemOf(*tunnel_key);
    if (!tunnel_pub.ok()) return tunnel_pub.status();
    cert_ = *cert;
    key_ = *key;
    tunnel_key_ = *tunnel_key;
    tunnel_pub_ = *tunnel_pub;
    auto channel =
        grpc::CreateChannel(common_.coordinator, trust::CaOnlyChannelCredentials(common_.ca_pem));
    jobs_ = v1::Jobs::NewStub(channel);
    keys_ = std::make_shared<KeyCheck>(channel);
    return absl::OkStatus();
  }

  // Watches until stopped; exit code.
  int Run() {
    std::chrono::milliseconds backoff{1000};
    while (!stop_) {
      const grpc::Status st = WatchOnce(backoff);
      if (stop_) break;
      if (!gateway_ && (st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
                        st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
                        st.error_code() == grpc::StatusCode::INVALID_ARGUMENT)) {
        std::fprintf(stderr, "idlepool: gateway: %s\n", st.error_message().c_str());
        return 2;
      }
      spdlog::warn(
          "gateway: the coordinator's watch ended ({}); again in {} ms, routing on to "
          "the replicas known",
          st.error_message(), backoff.count());
      platform::SleepFor(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(10000));
    }
    if (gateway_) gateway_->Stop();
    return 0;
  }

  void Stop() {
    stop_ = true;
    std::lock_guard lock(ctx_mu_);
    if (live_) live_->TryCancel();
  }

 private:
  // One watch stream, until it ends; every state goes to the gateway (started at the first).
  grpc::Status WatchOnce(std::chrono::milliseconds& backoff) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("x-idlepool-token", common_.token);
    {
      std::lock_guard lock(ctx_mu_);
      if (stop_) return grpc::Status::CANCELLED;
      live_ = &ctx;
    }
    v1::WatchGatewayRequest req;
    req.set_name(f_.name);
    if (!gateway_) req.set_public_key_pem(tunnel_pub_);
    auto reader = jobs_->WatchGateway(&ctx, req);
    v1::GatewayState state;
    while (!stop_ && reader->Read(&state)) {
      backoff = std::chrono::milliseconds(1000);
      if (!gateway_) StartGateway(state);
      sync_->Apply(state);
    }
    {
      std::lock_guard lock(ctx_mu_);
      live_ = nullptr;
    }
    return reader->Finish();
  }

  void StartGateway(const v1::GatewayState& first) {
    serve::GatewayOptions o;
    o.listen = f_.listen;
    o.authenticate = [keys = keys_](std::string_view k) { return (*keys)(k); };
    o.tls_cert_chain_pem = cert_;
    o.tls_key_pem = key_;
    o.tunnel_tls = serve::TunnelTls{first.certificate_pem(), tunnel_key_, first.ca_pem()};
    gateway_ = std::make_unique<serve::Gateway>(std::move(o));
    try {
      gateway_->Start();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "idlepool: gateway: --listen %s: %s\n", f_.listen.c_str(), e.what());
      std::_Exit(1);
    }
    sync_ = std::make_unique<GatewaySync>(*gateway_);
    auto hp = text::SplitHostPort(f_.listen);
    std::printf("idlepool gateway serving on %s (https; coordinator %s)\n",
                text::JoinHostPort(hp.ok() ? hp->host : "", gateway_->port()).c_str(),
                common_.coordinator.c_str());
    std::fflush(stdout);
  }

  const GatewayFlags& f_;
  const Common& common_;
  std::string cert_, key_, tunnel_key_, tunnel_pub_;
  std::unique_ptr<v1::Jobs::Stub> jobs_;
  std::shared_ptr<KeyCheck> keys_;
  std::unique_ptr<serve::Gateway> gateway_;
  std::unique_ptr<GatewaySync> sync_;
  std::atomic<bool> stop_{false};
  std::mutex ctx_mu_;
  grpc::ClientContext* live_ = nullptr;
};

int RunGateway(const GatewayFlags& f, Common& common) {
  if (auto hp = text::SplitHostPort(f.listen); !hp.ok()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--listen: ", hp.status().message())));
  }
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  GatewayProcess p(f, common);
  if (absl::Status st = p.Init(); !st.ok()) return Fail(st);
  platform::BlockTerminationSignals();
  std::thread waiter([&p] {
    const int sig = platform::WaitForTerminationSignal();
    spdlog::info("signal {}: stopping the gateway", sig);
    p.Stop();
  });
  const int rc = p.Run();
  if (rc != 0) std::_Exit(rc);  // the waiter waits for a signal that will not come
  waiter.join();
  return 0;
}

}  // namespace

Command AddGatewayCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<GatewayFlags>();
  auto* cmd = app.add_subcommand(
      "gateway",
      "serve the pool's services from this process (the coordinator's gateway, on its own)");
  AddClientOptions(cmd, common);
  cmd->add_option("--listen", f->listen, "HOST:PORT to serve HTTPS on (port 0: a free one)")
      ->required();
  cmd->add_option("--tls-cert", f->tls_cert,
                  "this gateway's certificate chain (PEM) for the names clients use")
      ->required();
  cmd->add_option("--tls-key", f->tls_key, "its private key (PEM)")->required();
  cmd->add_option("--name", f->name, "this gateway's name (its tunnel certificate, the logs)")
      ->capture_default_str();
  return {cmd, [f, &common] { return RunGateway(*f, common); }};
}

}  // namespace idlepool::cli
