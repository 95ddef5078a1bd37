// idlepool-abandon-uploads: starts N uploads (Blobs.PutBlob) of distinct made-up blobs that each
// declare DECLARED MiB, sends K chunks of each (1 MiB of zeros; their hashes are honest, the
// blob's own hash is made up, so none could ever complete) and half-closes: the coordinator
// keeps each as a partial upload, abandoned. The chunks sent are the last K (the upload
// "resumes" at offset DECLARED - K MiB), so each partial is a sparse file of DECLARED MiB
// holding K: a coordinator that checks only the bytes still to come sees K MiB per upload. What a
// client that cuts its uploads midway leaves on the coordinator's disk
// (tests/integration/disk_reserve_test.sh, bench/attacks/disk_fill.sh).
//
// Credentials as every client command: IDLEPOOL_COORDINATOR and IDLEPOOL_TOKEN, or the saved
// login. Prints one JSON line: {"abandoned":A,"refused":R,"other":O,"first_refusal":"...",
// "first_other":"..."}; refused counts RESOURCE_EXHAUSTED answers. Exit 0 unless it could not
// connect at all (2) or its flags are wrong (1).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "blob/blob.h"
#include "cli/credentials.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "platform/clock.h"
#include "trust/grpc_tls.h"

namespace {

constexpr size_t kChunk = 1 << 20;

struct Flags {
  int count = 10;
  uint64_t declared_mib = 1024;
  uint64_t send_chunks = 1;
  std::string seed = "0";
};

// The first message's manifest: every chunk hashed as 1 MiB of zeros, a made-up blob hash.
idlepool::v1::BlobChunk FirstMessage(const Flags& f, int i, const std::string& zero_hash) {
  idlepool::v1::BlobChunk m;
  idlepool::blob::Sha256 h;
  const std::string name = "idlepool-abandon-uploads:" + f.seed + ":" + std::to_string(i);
  h.Update(name.data(), name.size());
  m.set_sha256(h.HexDigest());
  m.set_size(f.declared_mib * kChunk);
  for (uint64_t c = 0; c < f.declared_mib; ++c) m.add_chunk_sha256(zero_hash);
  m.set_offset((f.declared_mib - std::min(f.send_chunks, f.declared_mib)) * kChunk);
  return m;
}

int Run(const Flags& f) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  auto creds =
      idlepool::cli::ResolveCredentials(env("IDLEPOOL_COORDINATOR"), env("IDLEPOOL_TOKEN"));
  if (!creds.ok()) {
    std::fprintf(stderr, "abandon-uploads: %s\n", creds.status().ToString().c_str());
    return 2;
  }
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(128 << 20);
  auto channel = grpc::CreateCustomChannel(
      creds->coordinator, idlepool::trust::CaOnlyChannelCredentials(creds->ca_pem), args);
  auto stub = idlepool::v1::Blobs::NewStub(channel);
  const std::string zeros(kChunk, '\0');
  idlepool::blob::Sha256 zh;
  zh.Update(zeros.data(), zeros.size());
  const std::string zero_hash = zh.RawDigest();
  nlohmann::json out = {{"abandoned", 0}, {"refused", 0}, {"other", 0}};
  for (int i = 0; i < f.count; ++i) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("x-idlepool-token", creds->token);
    ctx.set_deadline(idlepool::platform::DeadlineAfter(std::chrono::seconds(60)));
    idlepool::v1::PutBlobReply reply;
    auto writer = stub->PutBlob(&ctx, &reply);
    idlepool::v1::BlobChunk m = FirstMessage(f, i, zero_hash);
    for (uint64_t c = 0; c < f.send_chunks && c < f.declared_mib; ++c) {
      if (c > 0) m = idlepool::v1::BlobChunk();
      m.set_data(zeros);
      if (!writer->Write(m)) break;  // refused: Finish says why
    }
    writer->WritesDone();
    const grpc::Status st = writer->Finish();
    const std::string msg = st.error_message();
    if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      out["abandoned"] = out["abandoned"].get<int>() + 1;
    } else if (st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      out["refused"] = out["refused"].get<int>() + 1;
      if (!out.contains("first_refusal")) out["first_refusal"] = msg;
    } else {
      out["other"] = out["other"].get<int>() + 1;
      if (!out.contains("first_other"))
        out["first_other"] = std::to_string(st.error_code()) + " " + msg;
      if (st.error_code() == grpc::StatusCode::UNAVAILABLE && i == 0) {
        std::printf("%s\n", out.dump().c_str());
        return 2;
      }
    }
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"leave abandoned partial uploads on an idlepool coordinator"};
  Flags f;
  app.add_option("--count", f.count, "uploads to start and abandon")->check(CLI::Range(1, 100000));
  app.add_option("--declared-mib", f.declared_mib, "size each upload declares, MiB")
      ->check(CLI::Range(uint64_t{1}, uint64_t{65536}));
  app.add_option("--send-chunks", f.send_chunks, "1 MiB chunks sent before abandoning");
  app.add_option("--seed", f.seed, "makes the blobs distinct from another run's");
  CLI11_PARSE(app, argc, argv);
  return Run(f);
}
