// idlepool-cert-probe: presents a certificate to a worker's ports, for the trust tests
// (tests/integration/peer_role_test.sh, revocation_test.sh). One line on stdout says what came
// back; exit 0 unless the probe itself could not run (a missing file, a bad flag: exit 2).
//   peer          --peer HOST:PORT --cert --key --ca: Peer.HaveChunks over mTLS (the worker SAN
//                 as target name); prints "peer: OK", "peer: NOT_FOUND ...", "peer:
//                 PERMISSION_DENIED ...".
//   tunnel        --tunnel HOST:PORT --cert --key --ca --worker NAME --attempt N: TLS 1.3 with the
//                 certificate, the worker's certificate expected, then CONNECT N; prints
//                 "tunnel: HTTP/1.1 404 ..." (the first answer line) or "tunnel: closed: ...".
//   gateway-cert  --coordinator HOST:PORT --token-file F --ca --name NAME --out DIR: the
//                 certificate Jobs.WatchGateway issues to that token's holder, as DIR/gateway.pem
//                 and DIR/gateway.key; prints "gateway-cert: DIR".
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "serve/tunnel_tls.h"
#include "trust/ca.h"
#include "trust/grpc_tls.h"

namespace v1 = idlepool::v1;
namespace net = boost::asio;

namespace {

struct Flags {
  std::string peer, tunnel, coordinator, cert, key, ca, worker, token_file, name = "probe", out;
  uint64_t attempt = 1;
};

std::string Read(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cert-probe: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    default:
      return "OTHER";
  }
}

int Peer(const Flags& f) {
  idlepool::trust::TlsIdentity id{Read(f.key), Read(f.cert), Read(f.ca)};
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(idlepool::trust::kWorkerSanName);
  auto channel =
      grpc::CreateCustomChannel(f.peer, idlepool::trust::WorkerChannelCredentials(id), args);
  auto stub = v1::Peer::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::HaveChunksRequest req;
  req.set_sha256(std::string(64, '0'));
  v1::HaveChunksReply reply;
  grpc::Status st = stub->HaveChunks(&ctx, req, &reply);
  std::printf("peer: %s %s\n", CodeName(st.error_code()), st.error_message().c_str());
  return 0;
}

int Tunnel(const Flags& f) {
  auto ctx = idlepool::serve::TunnelClientContext(
      idlepool::serve::TunnelTls{Read(f.cert), Read(f.key), Read(f.ca)});
  if (!ctx.ok()) {
    std::fprintf(stderr, "cert-probe: %s\n", ctx.status().ToString().c_str());
    return 2;
  }
  net::io_context io;
  net::ssl::stream<net::ip::tcp::socket> tls(io, **ctx);
  tls.set_verify_callback(idlepool::serve::ExpectWorker{f.worker});
  boost::system::error_code ec;
  const auto colon = f.tunnel.rfind(':');
  net::ip::tcp::resolver resolver(io);
  auto at = resolver.resolve(f.tunnel.substr(0, colon), f.tunnel.substr(colon + 1), ec);
  if (!ec) net::connect(tls.lowest_layer(), at, ec);
  if (!ec) tls.handshake(net::ssl::stream_base::client, ec);
  const std::string preface = "CONNECT " + std::to_string(f.attempt) + " HTTP/1.1\r\n\r\n";
  if (!ec) net::write(tls, net::buffer(preface), ec);
  std::string answer;
  if (!ec) net::read_until(tls, net::dynamic_buffer(answer), "\r\n", ec);
  if (answer.find("\r\n") != std::string::npos) {
    std::printf("tunnel: %s\n", answer.substr(0, answer.find("\r\n")).c_str());
  } else {
    std::printf("tunnel: closed: %s\n", ec.message().c_str());
  }
  return 0;
}

int GatewayCert(const Flags& f) {
  std::string token = Read(f.token_file);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  absl::StatusOr<std::string> key = idlepool::trust::NewPrivateKeyPem();
  absl::StatusOr<std::string> pub =
      key.ok() ? idlepool::trust::PublicKeyPemOf(*key) : absl::StatusOr<std::string>(key.status());
  if (!pub.ok()) {
    std::fprintf(stderr, "cert-probe: %s\n", pub.status().ToString().c_str());
    return 2;
  }
  auto channel =
      grpc::CreateChannel(f.coordinator, idlepool::trust::CaOnlyChannelCredentials(Read(f.ca)));
  auto stub = v1::Jobs::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.AddMetadata("x-idlepool-token", token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::WatchGatewayRequest req;
  req.set_name(f.name);
  req.set_public_key_pem(*pub);
  auto reader = stub->WatchGateway(&ctx, req);
  v1::GatewayState state;
  if (!reader->Read(&state) || state.certificate_pem().empty()) {
    ctx.TryCancel();
    grpc::Status st = reader->Finish();
    std::printf("gateway-cert: refused: %s %s\n", CodeName(st.error_code()),
                st.error_message().c_str());
    return 0;
  }
  ctx.TryCancel();
  std::ofstream(f.out + "/gateway.pem") << state.certificate_pem();
  std::ofstream(f.out + "/gateway.key") << *key;
  std::printf("gateway-cert: %s\n", f.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Presents a certificate to a worker's peer or tunnel port"};
  app.require_subcommand(1);
  Flags f;
  auto* peer = app.add_subcommand("peer", "Peer.HaveChunks with a certificate");
  peer->add_option("--peer", f.peer)->required();
  auto* tunnel = app.add_subcommand("tunnel", "a tunnel CONNECT with a certificate");
  tunnel->add_option("--tunnel", f.tunnel)->required();
  tunnel->add_option("--worker", f.worker)->required();
  tunnel->add_option("--attempt", f.attempt);
  for (CLI::App* c : {peer, tunnel}) {
    c->add_option("--cert", f.cert)->required();
    c->add_option("--key", f.key)->required();
    c->add_option("--ca", f.ca)->required();
  }
  auto* gw = app.add_subcommand("gateway-cert", "a gateway certificate from Jobs.WatchGateway");
  gw->add_option("--coordinator", f.coordinator)->required();
  gw->add_option("--token-file", f.token_file)->required();
  gw->add_option("--ca", f.ca)->required();
  gw->add_option("--name", f.name);
  gw->add_option("--out", f.out)->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*peer) return Peer(f);
  if (*tunnel) return Tunnel(f);
  return GatewayCert(f);
}
