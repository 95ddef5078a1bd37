#include "gate/grpc_port.h"

namespace idlepool::gate {

absl::StatusOr<std::unique_ptr<GrpcPort>> GrpcPort::Add(
    grpc::ServerBuilder& builder, const std::string& address,
    std::shared_ptr<grpc::ServerCredentials> credentials, const GrpcPortOptions& options) {
  auto listener = Listener::Open(address, options.listener);
  if (!listener.ok()) return listener.status();
  std::unique_ptr<GrpcPort> p(new GrpcPort());
  p->listener_ = std::move(*listener);
  p->acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      std::move(credentials));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(options.handshake_timeout.count()));
  if (options.max_idle.count() > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               static_cast<int>(options.max_idle.count()));
  }
  return p;
}

GrpcPort::~GrpcPort() { Stop(); }

void GrpcPort::Start() {
  listener_->Start([acceptor = acceptor_.get()](int listen_fd, int fd) {
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters c;
    c.listener_fd = listen_fd;
    c.fd = fd;
    acceptor->HandleNewConnection(&c);
  });
}

void GrpcPort::Stop() {
  if (listener_) listener_->Stop();
}

}  // namespace idlepool::gate
