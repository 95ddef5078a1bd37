#include "worker/session.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/defaults.h"
#include "platform/clock.h"
#include "spdlog/spdlog.h"
#include "wire/wire.h"

namespace idlepool::worker {
namespace {

using std::chrono::milliseconds;

constexpr const char* kTokenKey = "x-idlepool-token";

}  // namespace

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "worker";
  return buf;
}

Session::Session(SessionConfig config, StopSignal& stop, SessionHandler& handler)
    : config_(std::move(config)),
      stop_(stop),
      handler_(handler),
      heartbeat_(config_.heartbeat.value_or(core::kDefaultHeartbeat)) {}

void Session::Connect(bool probe) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(128 << 20);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Reconnect quickly after a coordinator restart: gRPC's defaults (1 s initial, 20 s minimum
  // connect backoff, up to 120 s) would keep a worker away well past the lease timeout after a
  // coordinator restart, and its attempts would be lost instead of re-adopted.
  // gRPC reads GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the least time one connection attempt gets
  // (TCP and TLS handshakes): 100 ms would cut a TLS handshake over a slow link or on a loaded
  // machine every time. Attempts still start 100 ms to 1 s apart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  channel_ = grpc::CreateCustomChannel(config_.coordinator, config_.credentials, args);
  session_ = v1::WorkerSession::NewStub(channel_);
  blobs_ = v1::Blobs::NewStub(channel_);
  if (!probe) return;
  // Its own connection (a local subchannel pool), so probe bytes never queue in front of the
  // session's heartbeats.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  probes_ = v1::Probes::NewStub(
      grpc::CreateCustomChannel(config_.coordinator, config_.credentials, args));
}

absl::Status Session::Serve() {
  milliseconds backoff{100};
  while (!stop_.stopping()) {
    bool welcomed = false;
    grpc::Status st = RunOnce(&welcomed);
    if (st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        st.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      return absl::PermissionDeniedError(absl::StrCat(
          "coordinator ", config_.coordinator, " refused this worker: ", st.error_message()));
    }
    RenewIfDue();
    if (st.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return absl::FailedPreconditionError(
          absl::StrCat("coordinator ", config_.coordinator,
                       " does not serve this worker's protocol (version ", wire::kProtocolVersion,
                       "): run the same idlepool version on the coordinator and every worker"));
    }
    if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        st.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      return absl::FailedPreconditionError(absl::StrCat(
          "coordinator ", config_.coordinator, " refused this worker: ", st.error_message()));
    }
    if (stop_.stopping()) break;
    if (welcomed) backoff = milliseconds(100);
    // Refused at hello (its name is taken by a live worker): that will not change soon.
    if (!welcomed && refused_) backoff = milliseconds(5000);
    refused_ = false;
    spdlog::warn("session with {} ended ({}); reconnecting in {} ms", config_.coordinator,
                 st.ok() ? "closed" : st.error_message(), backoff.count());
    Pause(backoff);
    // At most 1 s between tries: a coordinator restart must find its workers back well within
    // the lease timeout, so their running attempts are re-adopted rather than re-run.
    backoff = std::min(backoff * 2, milliseconds(1000));
  }
  return absl::OkStatus();
}

void Session::Pause(milliseconds d) {
  constexpr milliseconds kSlice{100};
  const int64_t slices = std::max<int64_t>(1, d / kSlice);
  for (int64_t i = 0; i < slices && !stop_.stopping(); ++i) {
    const auto until = platform::DeadlineAfter(kSlice);
    // Returns at each change of state (IDLE, CONNECTING, READY...), so ask again until the
    // slice is over; GetState(true) starts a connection attempt when the channel is idle.
    while (!stop_.stopping() && channel_->WaitForStateChange(channel_->GetState(true), until)) {
    }
  }
}

void Session::RenewIfDue() {
  if (!config_.renewal_due || !config_.renew || !config_.renewal_due()) return;
  if (auto st = config_.renew(); !st.ok()) {
    spdlog::warn("renewing this worker's certificate failed (will retry): {}",
                 std::string(st.message()));
  } else {
    spdlog::info("renewed this worker's certificate");
  }
}

v1::WorkerMessage Session::Hello() {
  v1::WorkerMessage m;
  auto* hello = m.mutable_hello();
  hello->set_protocol_version(wire::kProtocolVersion);
  hello->set_version(IDLEPOOL_VERSION);
  hello->set_worker(config_.name);
  hello->set_boot_id(config_.boot_id);
  hello->set_hostname(HostName());
  handler_.FillHello(hello);
  return m;
}

bool Session::Open(Stream* stream, grpc::ClientContext* ctx, const v1::WorkerMessage& hello) {
  std::lock_guard lock(mu_);
  if (stop_.stopping()) return false;
  stream_ = stream;
  ctx_ = ctx;
  stream_->Write(hello);
  std::vector<v1::WorkerMessage> then;
  handler_.AfterHello(&then);
  for (const auto& m : then) stream_->Write(m);
  return true;
}

grpc::Status Session::RunOnce(bool* welcomed) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  auto stream = session_->Session(ctx.get());
  if (!Open(stream.get(), ctx.get(), Hello())) return grpc::Status::CANCELLED;
  {
    std::lock_guard lock(hb_mu_);
    session_over_ = false;
    hb_changed_ = false;
  }
  std::thread heartbeat([this] { Heartbeats(); });
  v1::CoordinatorMessage msg;
  while (stream->Read(&msg)) Dispatch(msg, welcomed);
  {
    std::lock_guard lock(hb_mu_);
    session_over_ = true;
    hb_cv_.notify_all();
  }
  heartbeat.join();
  {
    std::lock_guard lock(mu_);
    stream_ = nullptr;
    ctx_ = nullptr;
  }
  stream_cv_.notify_all();
  return stream->Finish();
}

void Session::Heartbeats() {
  v1::WorkerMessage hb;
  hb.mutable_heartbeat();
  std::unique_lock lock(hb_mu_);
  while (!session_over_) {
    hb_cv_.wait_for(lock, heartbeat_.load(), [&] { return session_over_ || hb_changed_; });
    if (session_over_) break;
    hb_changed_ = false;
    std::lock_guard slock(mu_);
    // A certificate due for renewal: end this session; Serve renews before the next one.
    if (config_.renewal_due && config_.renewal_due()) {
      if (ctx_) ctx_->TryCancel();
      break;
    }
    if (stream_ && !stream_->Write(hb)) break;
  }
}

void Session::Dispatch(const v1::CoordinatorMessage& msg, bool* welcomed) {
  if (msg.has_welcome()) {
    *welcomed = true;
    Welcomed(msg.welcome());
  } else if (msg.has_assign()) {
    handler_.OnAssign(msg.assign());
  } else if (msg.has_kill()) {
    handler_.OnKill(msg.kill());
  } else if (msg.has_ack()) {
    handler_.OnAck(msg.ack());
  } else if (msg.has_revocations()) {
    handler_.OnRevocations(msg.revocations());
  } else if (msg.has_refused()) {
    spdlog::error("coordinator refused this worker: {}", msg.refused().reason());
    refused_ = true;
  }
}

void Session::Welcomed(const v1::Welcome& welcome) {
  spdlog::info("worker {} joined {} (boot {}), {} slots", config_.name, config_.coordinator,
               config_.boot_id.substr(0, 8), config_.slots);
  // The coordinator's heartbeat unless this worker was given its own; at least three per lease
  // either way: a worker slower than its lease would be lost while healthy.
  const Heartbeat hb = HeartbeatFor(config_.heartbeat, welcome);
  if (hb.capped_from) {
    spdlog::warn("heartbeat {} ms is too slow for the coordinator's {} ms lease; using {} ms",
                 hb.capped_from->count(), welcome.lease_timeout_ms(), hb.period.count());
  }
  const milliseconds beat = hb.period;
  if (beat != heartbeat_.load()) {
    heartbeat_ = beat;
    std::lock_guard lock(hb_mu_);
    hb_changed_ = true;
    hb_cv_.notify_all();
  }
  if (welcome.has_revocations()) handler_.OnRevocations(welcome.revocations());
  handler_.OnWelcome();
}

void Session::Send(const v1::WorkerMessage& m) {
  std::lock_guard lock(mu_);
  if (stream_) stream_->Write(m);  // if the session is down, the next Hello resends reports
}

void Session::Leave(const v1::WorkerMessage& leaving) {
  std::unique_lock lock(mu_);
  if (stream_) {
    stream_->Write(leaving);
    stream_->WritesDone();
    stream_cv_.wait_for(lock, std::chrono::seconds(2), [&] { return stream_ == nullptr; });
  }
  if (ctx_) ctx_->TryCancel();
}

Heartbeat HeartbeatFor(std::optional<milliseconds> own, const v1::Welcome& welcome) {
  Heartbeat hb;
  hb.period = own.value_or(welcome.heartbeat_ms() > 0 ? milliseconds(welcome.heartbeat_ms())
                                                      : core::kDefaultHeartbeat);
  const milliseconds lease(welcome.lease_timeout_ms());
  if (lease.count() > 0 && hb.period > lease / 3) {
    hb.capped_from = hb.period;
    hb.period = lease / 3;
  }
  return hb;
}

}  // namespace idlepool::worker
