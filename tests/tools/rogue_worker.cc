// idlepool-rogue-worker: a worker that holds a real credential and misbehaves, for the attack
// tests (bench/attacks/). It joins the pool like a worker (a join token the first time, its
// identity kept in --dir) and opens a WorkerSession.Session stream, then, by --mode:
//   hello-bomb    says Hello listing --held unknown held attempts, and waits for the answer;
//   report-flood  says Hello, then sends bogus AttemptReports (unknown attempts, a --log-bytes
//                 log tail each; a heartbeat every 64) as fast as the stream takes them and
//                 never reads (--read: reads them), for --seconds;
//   stall         says Hello offering --cpus slots, heartbeats as told in Welcome and ignores every
//                 assignment (never runs, never reports), for --seconds or until SIGTERM;
//   log-flood     says Hello, heartbeats, and floods its first assignment's attempt with
//                 LogChunks for --seconds, as fast as the stream takes them: each round an empty
//                 chunk at a rising offset, then a one-byte chunk after a gap; then reports the
//                 attempt failed and leaves.
// It prints one line saying what it sent and how the session ended (the status the coordinator
// gave), and exits 0 unless it could not join or connect.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "platform/process.h"
#include "platform/random.h"
#include "wire/wire.h"
#include "worker/identity.h"

namespace v1 = idlepool::v1;
using idlepool::platform::SleepFor;
using std::chrono::milliseconds;

namespace {

struct Flags {
  std::string coordinator, token_file, name = "rogue", dir, mode;
  uint64_t held = 5000000;
  uint32_t cpus = 4;
  int seconds = 10;
  size_t log_bytes = 4096;
  bool read = false;
};

// The session's call: SIGINT or SIGTERM cancels it, so the tool still prints its line.
std::atomic<grpc::ClientContext*> g_call{nullptr};

v1::WorkerMessage Hello(const Flags& f, uint64_t held) {
  v1::WorkerMessage m;
  v1::Hello* h = m.mutable_hello();
  h->set_protocol_version(idlepool::wire::kProtocolVersion);
  h->set_worker(f.name);
  h->set_boot_id(idlepool::platform::RandomHex(8));
  h->set_hostname("rogue");
  h->mutable_capacity()->set_cpus(f.cpus);
  h->mutable_capacity()->set_memory_mb(1024);
  h->mutable_held_attempts()->Reserve(static_cast<int>(held));
  for (uint64_t i = 0; i < held; ++i) h->add_held_attempts((uint64_t{1} << 40) + i);
  return m;
}

std::string Ended(grpc::Status st) {
  return st.ok() ? "OK" : absl::StrCat(st.error_code(), " ", st.error_message());
}

// Cancels the call after `seconds` unless `done` first (a Write blocked on flow control too);
// sets `fired` when it did.
std::thread Deadline(grpc::ClientContext& ctx, int seconds, std::atomic<bool>& done,
                     std::atomic<bool>* fired = nullptr) {
  return std::thread([&ctx, seconds, &done, fired] {
    for (int i = 0; i < seconds * 20 && !done.load(); ++i) SleepFor(milliseconds(50));
    if (done.load()) return;
    if (fired) *fired = true;
    ctx.TryCancel();
  });
}

void HelloBomb(const Flags& f, v1::WorkerSession::Stub& stub) {
  grpc::ClientContext ctx;
  auto stream = stub.Session(&ctx);
  std::atomic<bool> done{false};
  std::thread deadline = Deadline(ctx, f.seconds, done);
  const bool wrote = stream->Write(Hello(f, f.held));
  v1::CoordinatorMessage msg;
  uint64_t kills = 0;
  bool welcomed = false;
  while (stream->Read(&msg)) {
    welcomed = welcomed || msg.has_welcome();
    if (msg.has_kill()) ++kills;
    if (welcomed && kills >= f.held) {
      ctx.TryCancel();  // the coordinator took it all: enough
      break;
    }
  }
  done = true;
  deadline.join();
  std::cout << "hello-bomb: held " << f.held << " wrote " << wrote << " welcomed " << welcomed
            << " kills " << kills << " ended " << Ended(stream->Finish()) << "\n";
}

void ReportFlood(const Flags& f, v1::WorkerSession::Stub& stub) {
  grpc::ClientContext ctx;
  auto stream = stub.Session(&ctx);
  std::atomic<bool> done{false}, fired{false};
  std::thread deadline = Deadline(ctx, f.seconds, done, &fired);
  stream->Write(Hello(f, 0));
  uint64_t got = 0;
  std::thread reader([&] {  // --read: drains the coordinator's answers (a flood it can answer)
    v1::CoordinatorMessage msg;
    while (f.read && stream->Read(&msg)) ++got;
  });
  v1::WorkerMessage m;
  v1::AttemptReport* r = m.mutable_report();
  r->set_result(v1::AttemptReport::FAILED);
  r->set_exit_code(1);
  r->set_message(std::string(1024, 'm'));
  r->set_log_tail(std::string(f.log_bytes, 'l'));
  v1::WorkerMessage hb;  // interleaved, so the lease never runs out
  hb.mutable_heartbeat();
  uint64_t sent = 0;
  for (uint64_t id = uint64_t{1} << 41;; ++id) {
    r->set_attempt(id);
    if (!stream->Write(m)) break;  // cut by the coordinator, or our deadline
    if (++sent % 64 == 0 && !stream->Write(hb)) break;
  }
  done = true;
  deadline.join();
  ctx.TryCancel();  // then what is left unread is drained: Finish waits for it
  reader.join();
  for (v1::CoordinatorMessage msg; stream->Read(&msg);) {
  }
  std::cout << "report-flood: sent " << sent << " reports, read " << got
            << " answers, cut by coordinator " << !fired.load() << " ended "
            << Ended(stream->Finish()) << "\n";
}

void Stall(const Flags& f, v1::WorkerSession::Stub& stub) {
  grpc::ClientContext ctx;
  g_call = &ctx;
  auto stream = stub.Session(&ctx);
  std::atomic<bool> done{false};
  std::atomic<uint32_t> period_ms{1000};
  std::thread deadline = Deadline(ctx, f.seconds, done);
  stream->Write(Hello(f, 0));
  std::thread heartbeat([&] {
    v1::WorkerMessage hb;
    hb.mutable_heartbeat();
    while (!done.load()) {
      SleepFor(milliseconds(period_ms.load()));
      if (!done.load() && !stream->Write(hb)) break;
    }
  });
  v1::CoordinatorMessage msg;
  uint64_t assigned = 0, killed = 0;
  while (stream->Read(&msg)) {
    if (msg.has_welcome()) period_ms = std::max<uint32_t>(100, msg.welcome().heartbeat_ms());
    if (msg.has_assign()) ++assigned;  // taken, never run, never reported
    if (msg.has_kill()) ++killed;
  }
  done = true;
  heartbeat.join();
  deadline.join();
  std::cout << "stall: assigned " << assigned << " killed " << killed << " ended "
            << Ended(stream->Finish()) << "\n";
}

void LogFlood(const Flags& f, v1::WorkerSession::Stub& stub) {
  grpc::ClientContext ctx;
  g_call = &ctx;
  auto stream = stub.Session(&ctx);
  std::atomic<bool> done{false};
  stream->Write(Hello(f, 0));
  v1::CoordinatorMessage msg;
  uint64_t attempt = 0;
  while (attempt == 0 && stream->Read(&msg)) {
    if (msg.has_assign()) attempt = msg.assign().attempt();
  }
  std::thread reader([&] {  // answers are read, so only the chunks' cost shows
    for (v1::CoordinatorMessage m; stream->Read(&m);) {
    }
  });
  std::thread deadline = Deadline(ctx, f.seconds + 30, done);
  const int64_t end_ns = idlepool::platform::SteadyNanos() + int64_t{f.seconds} * 1000000000;
  v1::WorkerMessage hb;
  hb.mutable_heartbeat();
  v1::WorkerMessage chunk;
  chunk.mutable_log()->set_attempt(attempt);
  uint64_t sent = 0, offset = 0;
  while (attempt != 0 && idlepool::platform::SteadyNanos() < end_ns) {
    chunk.mutable_log()->set_offset(offset += 3);
    chunk.mutable_log()->set_data("");
    if (!stream->Write(chunk)) break;
    chunk.mutable_log()->set_offset(offset += 2);
    chunk.mutable_log()->set_data("x");
    if (!stream->Write(chunk)) break;
    sent += 2;
    if (sent % 256 == 0 && !stream->Write(hb)) break;
  }
  v1::WorkerMessage report;
  report.mutable_report()->set_attempt(attempt);
  report.mutable_report()->set_result(v1::AttemptReport::FAILED);
  report.mutable_report()->set_exit_code(1);
  report.mutable_report()->set_message("rogue log flood");
  const bool reported = attempt != 0 && stream->Write(report);
  v1::WorkerMessage leaving;
  leaving.mutable_leaving();
  stream->Write(leaving);
  stream->WritesDone();
  done = true;
  deadline.join();
  reader.join();
  std::cout << "log-flood: attempt " << attempt << " sent " << sent << " chunks, reported "
            << reported << " ended " << Ended(stream->Finish()) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"a misbehaving worker for the attack tests"};
  app.add_option("--coordinator", f.coordinator, "host:port")->required();
  app.add_option("--token-file", f.token_file, "join token (first run)");
  app.add_option("--name", f.name, "worker name");
  app.add_option("--dir", f.dir, "where its identity is kept")->required();
  app.add_option("--mode", f.mode, "hello-bomb, report-flood, stall or log-flood")
      ->required()
      ->check(CLI::IsMember({"hello-bomb", "report-flood", "stall", "log-flood"}));
  app.add_option("--held", f.held, "hello-bomb: held attempts listed");
  app.add_option("--cpus", f.cpus, "slots offered");
  app.add_option("--seconds", f.seconds, "how long the attack lasts at most");
  app.add_option("--log-bytes", f.log_bytes, "report-flood: log tail bytes per report");
  app.add_flag("--read", f.read, "report-flood: read the answers (else never read)");
  CLI11_PARSE(app, argc, argv);
  idlepool::platform::BlockTerminationSignals();  // before gRPC starts its threads
  std::thread([] {
    idlepool::platform::WaitForTerminationSignal();
    if (grpc::ClientContext* call = g_call.load()) call->TryCancel();
  }).detach();

  auto loaded = idlepool::worker::LoadIdentity(f.dir);
  if (!loaded.ok()) return std::cerr << loaded.status() << "\n", 2;
  std::optional<idlepool::worker::Identity> id = *loaded;
  if (!id) {
    std::ifstream in(f.token_file);
    std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto joined = idlepool::worker::Join(
        f.coordinator, std::string(absl::StripAsciiWhitespace(token)), f.name, f.dir);
    if (!joined.ok()) return std::cerr << "join: " << joined.status() << "\n", 2;
    id = *joined;
  }
  f.name = id->name;
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(256 << 20);
  if (!f.read) {
    // A reader that never reads also keeps its receive window shut: no BDP probing (which grows
    // the window with the link's speed, so a fast machine's client swallows every answer and the
    // coordinator's queue never fills) and HTTP/2's initial 64 KiB. The answers then wait in the
    // coordinator, as they would for the most hostile worker, on any machine.
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 10);
  }
  auto channel = grpc::CreateCustomChannel(
      f.coordinator, idlepool::trust::WorkerChannelCredentials(id->tls), args);
  auto stub = v1::WorkerSession::NewStub(channel);
  if (f.mode == "hello-bomb") HelloBomb(f, *stub);
  if (f.mode == "report-flood") ReportFlood(f, *stub);
  if (f.mode == "stall") Stall(f, *stub);
  if (f.mode == "log-flood") LogFlood(f, *stub);
  return 0;
}
