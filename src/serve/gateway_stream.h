// A gateway connection's transport, chosen when it is made: plain TCP (beast::tcp_stream) or
// TLS over it (beast::ssl_stream): a client of an HTTPS listener, or an upstream reached through
// a worker tunnel. It offers what Beast's and Asio's algorithms need (get_executor,
// async_read_some, async_write_some: through the tcp_stream, so its expires_after deadlines
// apply) and, for the client side, reads and writes that bypass tcp_stream's deadline machinery
// on the plain path (the connection has its own idle timer), exactly what the gateway did before
// TLS existed. No allocation per operation beyond the handlers' own.
//
// Lifetime: owned by its connection (or shared with pending operations); io thread only.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <utility>
#include <variant>

namespace idlepool::serve {

class GatewayStream {
 public:
  using Tcp = boost::beast::tcp_stream;
  using Tls = boost::beast::ssl_stream<Tcp>;
  using executor_type = Tcp::executor_type;

  explicit GatewayStream(Tcp tcp) : s_(std::in_place_index<0>, std::move(tcp)) {}
  GatewayStream(Tcp tcp, boost::asio::ssl::context& ctx)
      : s_(std::in_place_index<1>, std::move(tcp), ctx) {}
  GatewayStream(const GatewayStream&) = delete;  // direct_ refers to this object
  GatewayStream& operator=(const GatewayStream&) = delete;

  // This stream for Beast's and Asio's algorithms through the *_direct operations below: no
  // tcp_stream deadline and no tcp_stream operation wrapped around the socket's on the plain
  // path, for callers that keep their own deadlines (the gateway's connection timer).
  class Direct {
   public:
    using executor_type = Tcp::executor_type;
    explicit Direct(GatewayStream& s) : s_(s) {}
    executor_type get_executor() { return s_.get_executor(); }
    template <class Buffers, class Handler>
    void async_read_some(const Buffers& buffers, Handler&& handler) {
      s_.async_read_some_direct(buffers, std::forward<Handler>(handler));
    }
    template <class Buffers, class Handler>
    void async_write_some(const Buffers& buffers, Handler&& handler) {
      s_.async_write_some_direct(buffers, std::forward<Handler>(handler));
    }

   private:
    GatewayStream& s_;
  };
  Direct& direct() { return direct_; }

  executor_type get_executor() { return tcp().get_executor(); }
  Tcp& tcp() { return s_.index() == 0 ? std::get<0>(s_) : std::get<1>(s_).next_layer(); }
  boost::asio::ip::tcp::socket& socket() { return tcp().socket(); }
  Tls* tls() { return std::get_if<1>(&s_); }
  void expires_after(boost::asio::steady_timer::duration d) { tcp().expires_after(d); }
  void expires_never() { tcp().expires_never(); }

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (Tcp* t = std::get_if<0>(&s_))
      return t->async_read_some(buffers, std::forward<Handler>(handler));
    std::get<1>(s_).async_read_some(buffers, std::forward<Handler>(handler));
  }
  template <class Buffers, class Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    if (Tcp* t = std::get_if<0>(&s_))
      return t->async_write_some(buffers, std::forward<Handler>(handler));
    std::get<1>(s_).async_write_some(buffers, std::forward<Handler>(handler));
  }

  // Client side, no deadline: a read of the raw socket (plain) or of the TLS stream.
  template <class Buffers, class Handler>
  void async_read_some_direct(const Buffers& buffers, Handler&& handler) {
    if (Tcp* t = std::get_if<0>(&s_)) {
      return t->socket().async_read_some(buffers, std::forward<Handler>(handler));
    }
    std::get<1>(s_).async_read_some(buffers, std::forward<Handler>(handler));
  }
  // No deadline: some of `buffers` to the raw socket (plain) or the TLS stream.
  template <class Buffers, class Handler>
  void async_write_some_direct(const Buffers& buffers, Handler&& handler) {
    if (Tcp* t = std::get_if<0>(&s_)) {
      return t->socket().async_write_some(buffers, std::forward<Handler>(handler));
    }
    std::get<1>(s_).async_write_some(buffers, std::forward<Handler>(handler));
  }
  // Client side, no deadline: all of `buffers` (net::async_write) to the raw socket or the TLS.
  template <class Buffers, class Handler>
  void async_write_direct(const Buffers& buffers, Handler&& handler) {
    if (Tcp* t = std::get_if<0>(&s_)) {
      return boost::asio::async_write(t->socket(), buffers, std::forward<Handler>(handler));
    }
    boost::asio::async_write(std::get<1>(s_), buffers, std::forward<Handler>(handler));
  }

 private:
  std::variant<Tcp, Tls> s_;
  Direct direct_{*this};
};

}  // namespace idlepool::serve
