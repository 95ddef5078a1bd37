#include "coordinator/serve_mount.h"

#include <boost/system/system_error.hpp>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "serve/gateway.h"
#include "spdlog/spdlog.h"
#include "text/host_port.h"
#include "trust/ca.h"

namespace idlepool::coordinator {

// Keys that checked out recently (see kKeyCacheMs). At most kMax remembered; when full, the
// table starts over (a flood of distinct good keys only costs store reads).
class ServeMount::Keys {
 public:
  Keys(const Authorizer& authz, const platform::Clock& clock) : authz_(authz), clock_(clock) {}

  std::optional<serve::KeyGrant> Check(std::string_view key) {
    const int64_t now = clock_.WallMs();
    std::lock_guard lock(mu_);
    auto it = good_.find(std::string(key));
    if (it != good_.end() && it->second.until > now) return it->second.grant;
    auto p = authz_.TokenPrincipal(key);
    if (!p.ok() || (p->role != trust::Role::kSubmit && p->role != trust::Role::kOperator)) {
      return std::nullopt;
    }
    if (good_.size() >= kMax) good_.clear();
    serve::KeyGrant grant{p->token_id, p->user,
                          serve::KeyLimit{p->limit.rate_per_s, p->limit.concurrency}};
    good_[std::string(key)] = Good{now + kKeyCacheMs, grant};
    return grant;
  }

 private:
  static constexpr size_t kMax = 4096;
  const Authorizer& authz_;
  const platform::Clock& clock_;
  std::mutex mu_;
  struct Good {
    int64_t until = 0;  // trusted until (wall ms)
    serve::KeyGrant grant;
  };
  std::map<std::string, Good> good_;  // by key
};

absl::StatusOr<std::unique_ptr<ServeMount>> ServeMount::Start(const std::string& listen,
                                                              const ServerIdentity& identity,
                                                              const Authorizer& authz,
                                                              const platform::Clock& clock,
                                                              ServeBridge& bridge) {
  auto hp = text::SplitHostPort(listen);
  if (!hp.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--serve-listen: ", hp.status().message()));
  }
  // The gateway's own client certificate for the workers' tunnels: made at every start, never
  // written anywhere.
  auto key = trust::NewPrivateKeyPem();
  if (!key.ok()) return key.status();
  auto pub = trust::PublicKeyPemOf(*key);
  if (!pub.ok()) return pub.status();
  auto cert =
      identity.ca->IssueGateway(*pub, "idlepool coordinator gateway", clock.WallMs() / 1000);
  if (!cert.ok()) return cert.status();

  std::unique_ptr<ServeMount> m(new ServeMount());
  m->keys_ = std::make_unique<Keys>(authz, clock);
  serve::GatewayOptions o;
  o.listen = listen;
  o.authenticate = [keys = m->keys_.get()](std::string_view k) { return keys->Check(k); };
  o.tls_cert_chain_pem = identity.tls.cert_pem + identity.tls.ca_pem;
  o.tls_key_pem = identity.tls.key_pem;
  o.tunnel_tls = serve::TunnelTls{cert->cert_pem, *key, identity.tls.ca_pem};
  m->gateway_ = std::make_unique<serve::Gateway>(std::move(o));
  try {
    m->gateway_->Start();
  } catch (const boost::system::system_error& e) {
    return absl::UnavailableError(absl::StrCat("--serve-listen ", listen, ": ", e.what()));
  }
  m->url_ = absl::StrCat("https://", text::JoinHostPort(AdvertisedHost(identity.names, hp->host),
                                                        m->gateway_->port()));
  m->bridge_ = &bridge;
  bridge.Attach(m->gateway_.get(), m->url_);
  return m;
}

ServeMount::~ServeMount() { Stop(); }

void ServeMount::Stop() {
  if (bridge_) bridge_->Attach(nullptr, "");
  bridge_ = nullptr;
  if (gateway_) gateway_->Stop();
}

std::string ServeMount::PrometheusText() { return gateway_ ? gateway_->PrometheusText() : ""; }

}  // namespace idlepool::coordinator
