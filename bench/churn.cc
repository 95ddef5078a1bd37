// Churn of names and pending jobs against a running coordinator (issue 21, point 6): the load
// that once made an idle coordinator spend a whole core on what it had ever seen.
//
//   churn workers --coordinator HOST:PORT --join-token-file F --dir D --names N [--prefix P]
//     joins N worker names (each one a key and a certificate, kept under D/NAME; a name already
//     there comes back with it), and for each: opens a session, says hello, waits for the
//     welcome, says it is leaving and closes.
//     The coordinator is left with N departed workers (and N rows in its store).
//   churn jobs --coordinator HOST:PORT --ca CA.pem --jobs N   (IDLEPOOL_TOKEN: a submit token)
//     submits N one-task jobs that no worker can fit (4,096 CPUs each): they stay pending.
//
// Prints one line of figures to stdout. Threads: --threads sessions at once (default 4).
// Exit code 0, or 1 on the first error (printed). Never a timed test.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "idlepool.grpc.pb.h"
#include "trust/grpc_tls.h"
#include "wire/wire.h"
#include "worker/identity.h"

namespace {

using idlepool::v1::CoordinatorMessage;
using idlepool::v1::WorkerMessage;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// One name: join, hello, welcome, leaving, close. "" or what went wrong.
std::string OneWorker(const std::string& coordinator, const std::string& token,
                      const std::string& name, const std::string& dir) {
  // A name that joined in an earlier run comes back with its identity (a returning worker).
  auto kept = idlepool::worker::LoadIdentity(dir + "/" + name);
  if (!kept.ok()) return absl::StrCat(name, ": identity: ", kept.status().ToString());
  auto id = *kept ? absl::StatusOr<idlepool::worker::Identity>(**kept)
                  : idlepool::worker::Join(coordinator, token, name, dir + "/" + name);
  if (!id.ok()) return absl::StrCat(name, ": join: ", id.status().ToString());
  auto channel =
      grpc::CreateChannel(coordinator, idlepool::trust::WorkerChannelCredentials(id->tls));
  auto stub = idlepool::v1::WorkerSession::NewStub(channel);
  grpc::ClientContext ctx;
  auto stream = stub->Session(&ctx);
  WorkerMessage hello;
  auto* h = hello.mutable_hello();
  h->set_protocol_version(idlepool::wire::kProtocolVersion);
  h->set_worker(name);
  h->set_boot_id(name + "-boot");
  h->set_hostname("churn");
  h->mutable_capacity()->set_cpus(1);
  h->mutable_capacity()->set_memory_mb(1024);
  if (!stream->Write(hello)) return absl::StrCat(name, ": hello not sent");
  CoordinatorMessage m;
  bool welcomed = false;
  while (!welcomed && stream->Read(&m)) welcomed = m.has_welcome();
  if (welcomed) {
    WorkerMessage leaving;
    leaving.mutable_leaving();
    stream->Write(leaving);
  }
  stream->WritesDone();
  grpc::Status st = stream->Finish();
  if (!welcomed) return absl::StrCat(name, ": no welcome (", st.error_message(), ")");
  return "";
}

int Workers(const std::string& coordinator, const std::string& token_file, const std::string& dir,
            const std::string& prefix, int names, int threads) {
  const std::string token = ReadFile(token_file);
  std::atomic<int> next{0}, done{0};
  std::mutex mu;
  std::string first_error;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < names; i = next++) {
        std::string err = OneWorker(coordinator, token, absl::StrCat(prefix, i), dir);
        std::lock_guard lock(mu);
        if (!err.empty() && first_error.empty()) first_error = err;
        if (err.empty()) ++done;
        if (!first_error.empty()) next = names;  // stop early
      }
    });
  }
  for (auto& th : pool) th.join();
  if (!first_error.empty()) {
    std::fprintf(stderr, "churn: %s\n", first_error.c_str());
    return 1;
  }
  std::printf("churn workers: %d names joined, said hello and left\n", done.load());
  return 0;
}

int Jobs(const std::string& coordinator, const std::string& ca_file, int jobs) {
  const char* token = std::getenv("IDLEPOOL_TOKEN");
  if (token == nullptr || *token == '\0') {
    std::fprintf(stderr, "churn: set IDLEPOOL_TOKEN to a submit token\n");
    return 1;
  }
  grpc::ChannelArguments args;
  auto channel = grpc::CreateCustomChannel(
      coordinator, idlepool::trust::CaOnlyChannelCredentials(ReadFile(ca_file) + "\n"), args);
  auto stub = idlepool::v1::Jobs::NewStub(channel);
  for (int i = 0; i < jobs; ++i) {
    idlepool::v1::SubmitJobRequest req;
    auto* spec = req.mutable_spec();
    spec->set_name(absl::StrCat("never-fits-", i));
    spec->add_command("true");
    spec->add_outputs("out.txt");
    spec->mutable_resources()->set_cpus(4096);
    spec->mutable_resources()->set_memory_mb(64);
    spec->set_max_attempts(1);
    spec->set_count(1);
    grpc::ClientContext ctx;
    ctx.AddMetadata("x-idlepool-token", token);
    idlepool::v1::SubmitJobReply reply;
    grpc::Status st = stub->SubmitJob(&ctx, req, &reply);
    if (!st.ok()) {
      std::fprintf(stderr, "churn: submit %d: %s\n", i, st.error_message().c_str());
      return 1;
    }
  }
  std::printf("churn jobs: %d pending jobs submitted\n", jobs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"churn: many worker names, or many pending jobs, against a coordinator"};
  std::string coordinator, token_file, dir, prefix = "churn-", ca;
  int names = 100, jobs = 100, threads = 4;
  auto* w = app.add_subcommand("workers", "join N names; each says hello and leaves");
  w->add_option("--coordinator", coordinator)->required();
  w->add_option("--join-token-file", token_file)->required();
  w->add_option("--dir", dir, "where each name keeps its key and certificate")->required();
  w->add_option("--names", names)->check(CLI::Range(1, 1000000));
  w->add_option("--prefix", prefix);
  w->add_option("--threads", threads)->check(CLI::Range(1, 64));
  auto* j = app.add_subcommand("jobs", "submit N one-task jobs no worker fits");
  j->add_option("--coordinator", coordinator)->required();
  j->add_option("--ca", ca, "the pool CA (DATA_DIR/ca.pem)")->required();
  j->add_option("--jobs", jobs)->check(CLI::Range(1, 1000000));
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  if (w->parsed()) return Workers(coordinator, token_file, dir, prefix, names, threads);
  return Jobs(coordinator, ca, jobs);
}
