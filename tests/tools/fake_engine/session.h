// One client connection of idlepool-fake-engine: HTTP/1.1 requests read one after another
// (keep-alive), each answered in full, or streamed as server-sent events token by token.
// While an answer is being generated the connection is read too, so a client that leaves
// (EOF, reset, a failed write) is noticed at once, between tokens as well, and counted as
// cancelled. Every handler runs on the connection's strand; the session owns itself through
// the shared_ptrs its pending operations hold, and ends when the connection closes.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fake_engine/engine.h"
#include "fake_engine/openai.h"

namespace fake_engine {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(boost::asio::ip::tcp::socket socket, Engine& engine);
  ~Session();
  void Start() { ReadRequest(); }

 private:
  using error_code = boost::system::error_code;

  void ReadRequest();
  void OnRequest(error_code ec);
  void Route();
  void Inference(Api api);
  // Answers the request in full (status, body), then reads the next one or closes.
  void Reply(int status, std::string body);
  void Refuse(int status, std::string body);  // an inference request answered with an error
  void ReplyFixed();
  void Next();
  void Close();

  // Generating an answer: a timer before each token, the client watched for leaving.
  void Generate(Ask ask);
  void WatchClient();
  void OnWatch(error_code ec, size_t bytes);
  void OnHeadWritten(error_code ec);
  void OnTick(error_code ec);
  void OnTokenWritten(error_code ec);
  void WriteFull();
  void Done(error_code ec);  // the answer's last byte written (or not)
  void ClientLeft(const char* when);
  bool StopHere();  // --crash-after / --hang-after reached after sent_ tokens

  boost::asio::ip::tcp::socket socket_;
  Engine& engine_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer timer_;

  // The request being answered.
  bool keep_alive_ = true;
  unsigned version_ = 11;
  uint64_t index_ = 0;  // its number among the engine's inference requests, from 1
  std::optional<Ask> ask_;
  std::string response_id_;
  int sent_ = 0;             // tokens written so far
  bool generating_ = false;  // in flight: from Generate until answered in full or left
  bool watching_ = false;    // a read of the client is pending
  bool closed_ = false;
  std::string out_;  // what the pending write sends
  std::unique_ptr<boost::beast::http::response<boost::beast::http::empty_body>> head_;
  std::unique_ptr<boost::beast::http::response_serializer<boost::beast::http::empty_body>> head_sr_;
  std::unique_ptr<boost::beast::http::response<boost::beast::http::string_body>> res_;
};

}  // namespace fake_engine
