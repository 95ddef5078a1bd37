// One proxied request of the gateway: from the router's pick to the client's last byte. It takes
// an upstream connection (an idle one of the replica, else a new one within connect_timeout),
// sends the request, and forwards the answer as it arrives: the head together with the first
// piece of the body (so that an engine that fails before its first token is still retried
// elsewhere), then each piece at once (a server-sent event stream chunk by chunk). Deadlines:
// connect, first byte, then the gap between pieces (GatewayOptions), kept here and watched by
// the client connection's timer (ClientConn::WakeAt); one that passes closes the upstream
// connection and fails the attempt with beast's timeout error.
//
// Failures. Before anything reached the client (connect refused or reset, an upstream 5xx, a
// deadline): the attempt is retried through the router (a reused idle connection that the replica
// had closed is first retried once on a fresh connection, uncharged). After: the replica is
// charged, and the client gets the end of a server-sent event stream with an error event, or a
// cut connection (a truncated chunked or sized body, which clients report as an error): never a
// silent short success. The client leaving closes the upstream connection at once (the engine
// sees its request cancelled).
//
// Lifetime: shared; held by Gateway::Impl::open while the router knows it, by its pending
// operations, and by its ClientConn. Every handler runs on the io thread and checks the
// attempt it belongs to, so late completions of an abandoned attempt do nothing.
#pragma once

#include <array>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/gateway_impl.h"

namespace idlepool::serve {

// What the replica is asked: built from the client's request once.
struct UpstreamRequest {
  std::string method;
  std::string target;
  std::string headers;  // "Name: value\r\n" lines, minus hop-by-hop, Host and Authorization
  std::string body;
  bool client_keep_alive = true;
  bool client_http10 = false;
};

// Whom the request is for: its key's user (what it is accounted to) and the key's admission,
// released when the exchange ends.
struct Caller {
  std::string user;
  KeyHold hold;
};

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(Gateway::Impl& gateway, std::shared_ptr<ClientConn> conn, std::string service,
           UpstreamRequest request, Time received, Caller caller);

  void set_id(RequestId id) { id_ = id; }
  RequestId id() const { return id_; }
  ReplicaId replica() const { return replica_; }
  const std::string& service() const { return service_; }

  // The router gave it `replica` (routed, dequeued or retried).
  void SendTo(ReplicaId replica);
  // Answered with an error before anything reached the client; the router has ended it (or
  // never knew it). retry_after > 0 adds Retry-After.
  void Refuse(int status, const std::string& message, std::chrono::seconds retry_after);
  // Its replica was removed while it ran: retried if nothing reached the client, else cut.
  void Orphaned();
  // The client connection closed or failed.
  void ClientGone();
  // The connection's timer fired at `now`: fails the attempt if its deadline passed. Returns
  // the deadline still to watch, if any.
  std::optional<Time> OnDeadline(Time now);

 private:
  using error_code = boost::system::error_code;

  void Connect();
  void WriteRequest();
  void ReadHead();
  void OnHead(error_code ec);
  void ReadBody();
  void OnBody(error_code ec);
  void Forward(size_t bytes, bool last);
  void Complete();
  // The attempt failed: before anything reached the client (retry) or after (cut).
  // `ec`: the upstream error, when there is one (a closed idle connection is retried fresh).
  void Failed(const std::string& what, error_code ec = {});
  void Cut(const std::string& what);
  void WriteCutEvent();
  void CloseUpstream();
  void AppendClientHead(std::string& out) const;
  bool Stale(uint64_t attempt) const { return attempt != attempt_ || done_; }
  // The attempt must reach its next step within `d`; `what` names the step for the error.
  void Deadline(std::chrono::milliseconds d, const char* what);

  Gateway::Impl& g_;
  std::shared_ptr<ClientConn> conn_;
  std::string service_;
  UpstreamRequest request_;
  Time received_;
  Caller caller_;
  UsageTail tail_;  // the end of the answer's body: its reported tokens
  RequestId id_ = 0;
  ReplicaId replica_ = 0;
  uint64_t attempt_ = 0;
  std::shared_ptr<UpstreamPool::Stream> up_;  // handlers hold it too (a copy)
  bool reused_ = false;                       // up_ came idle from the pool
  std::optional<Time> deadline_;              // of the current step of the attempt
  const char* deadline_what_ = "";
  bool answer_began_ = false;  // a byte of the replica's answer arrived in this attempt
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
  bool head_sent_ = false;
  bool chunked_ = false;  // to the client
  bool sse_ = false;
  bool keep_client_ = true;
  bool done_ = false;
  bool writing_ = false;  // a write to the client is pending
  bool cut_ = false;      // an error event waits for that write to end
  std::string cut_message_;
  std::string out_;  // what the pending write to the client sends
};

}  // namespace idlepool::serve
