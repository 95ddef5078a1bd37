#include "blob/peer_server.h"

#include "absl/strings/str_cat.h"
#include "gate/grpc_port.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "status_convert.h"
#include "text/host_port.h"
#include "trust/ca.h"
#include "trust/revocations.h"

namespace idlepool::blob {

namespace {

// Why the caller may not read here, or nullopt. Its certificate was verified against the pool CA
// by TLS (a client certificate is required on this port); it must also be a worker's (its one OU
// "worker" exactly: not a gateway's whose name says "OU=worker", nor the coordinator's) and not
// revoked.
std::optional<std::string> Refusal(const grpc::ServerContext* ctx,
                                   const trust::RevocationList* revocations) {
  auto ac = ctx->auth_context();
  if (!ac || !ac->IsPeerAuthenticated()) return "no verified certificate";
  auto pems = ac->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pems.empty()) return "no verified certificate";
  auto cert = trust::InspectCertificate(std::string(pems.front().data(), pems.front().size()));
  if (!cert.ok()) return "an unreadable certificate";
  if (revocations != nullptr) return revocations->Refusal(*cert, "worker");
  if (cert->role != "worker") return "not a worker's certificate";
  return std::nullopt;
}

}  // namespace

class PeerServer::Service final : public v1::Peer::Service {
 public:
  Service(BlobStore& store, const PeerServerOptions& o)
      : store_(store), max_(o.max_concurrent), revocations_(o.revocations) {}

  grpc::Status GetChunk(grpc::ServerContext* ctx, const v1::GetChunkRequest* req,
                        v1::ChunkData* reply) override {
    Slot slot(this);
    if (auto st = Admit(ctx, slot); !st.ok()) return st;
    absl::StatusOr<std::string> data = store_.ReadChunk(req->sha256(), req->index());
    if (!data.ok()) return wire::ToGrpc(data.status());
    served_ += data->size();
    reply->set_sha256(req->sha256());
    reply->set_index(req->index());
    reply->set_data(std::move(*data));
    return grpc::Status::OK;
  }

  grpc::Status HaveChunks(grpc::ServerContext* ctx, const v1::HaveChunksRequest* req,
                          v1::HaveChunksReply* reply) override {
    Slot slot(this);
    if (auto st = Admit(ctx, slot); !st.ok()) return st;
    absl::StatusOr<BlobStore::Holdings> h = store_.HoldingsOf(req->sha256());
    if (!h.ok()) return wire::ToGrpc(h.status());
    reply->set_complete(h->complete);
    reply->set_bitmap(std::move(h->bitmap));
    return grpc::Status::OK;
  }

  uint64_t served() const { return served_; }

 private:
  // Counts a call in flight for its lifetime.
  struct Slot {
    explicit Slot(Service* s) : s(s) { s->active_.fetch_add(1); }
    ~Slot() { s->active_.fetch_sub(1); }
    Service* s;
  };

  grpc::Status Admit(grpc::ServerContext* ctx, const Slot&) const {
    if (std::optional<std::string> why = Refusal(ctx, revocations_.get())) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("the peer port serves only workers of this pool: ", *why));
    }
    if (active_.load() > max_) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("serving ", max_, " calls already; ask another peer"));
    }
    return grpc::Status::OK;
  }

  BlobStore& store_;
  const int max_;
  const std::shared_ptr<const trust::RevocationList> revocations_;
  std::atomic<int> active_{0};
  std::atomic<uint64_t> served_{0};
};

absl::StatusOr<std::unique_ptr<PeerServer>> PeerServer::Start(BlobStore& store,
                                                              const PeerServerOptions& options) {
  if (!options.credentials) {
    return absl::InvalidArgumentError("the peer service needs the worker's TLS credentials");
  }
  auto listen = text::SplitHostPort(options.listen);
  if (!listen.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer listen address ", listen.status().message()));
  }
  std::unique_ptr<PeerServer> s(new PeerServer());
  s->host_ = listen->host;
  s->service_ = std::make_unique<Service>(store, options);
  grpc::ServerBuilder builder;
  gate::GrpcPortOptions port_options;
  port_options.listener.name = "peer port";
  port_options.listener.limits.max_connections = options.max_connections;
  port_options.listener.limits.max_per_peer = options.max_connections_per_address;
  port_options.max_idle = std::chrono::milliseconds(60000);  // a peer reconnects when it needs
  auto port = gate::GrpcPort::Add(builder, options.listen, options.credentials, port_options);
  if (!port.ok()) return port.status();
  s->grpc_port_ = std::move(*port);
  builder.RegisterService(s->service_.get());
  builder.SetMaxReceiveMessageSize(64 << 10);  // requests are tiny
  // Bounds the threads a flood of calls can take; calls past max_concurrent are refused early.
  grpc::ResourceQuota quota("idlepool-peer");
  quota.SetMaxThreads(std::max(4, options.max_concurrent * 2));
  builder.SetResourceQuota(quota);
  s->server_ = builder.BuildAndStart();
  if (!s->server_) return absl::UnavailableError(absl::StrCat("cannot serve on ", options.listen));
  s->port_ = s->grpc_port_->port();
  s->grpc_port_->Start();
  return s;
}

PeerServer::~PeerServer() { Shutdown(); }

int PeerServer::port() const { return port_; }

std::string PeerServer::address() const { return text::JoinHostPort(host_, port_); }

uint64_t PeerServer::bytes_served() const { return service_ ? service_->served() : 0; }

void PeerServer::Shutdown() {
  if (grpc_port_) grpc_port_->Stop();
  if (server_) {
    server_->Shutdown(platform::DeadlineAfter(std::chrono::seconds(1)));
    server_->Wait();
    server_.reset();
  }
}

}  // namespace idlepool::blob
