#include "serve/listen_address.h"

#include <boost/asio/ip/address.hpp>
#include <cstdlib>

namespace idlepool::serve {

std::optional<boost::asio::ip::tcp::endpoint> ParseListenAddress(const std::string& listen) {
  std::string host = listen, port;
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    if (close != std::string::npos && close + 1 < host.size() && host[close + 1] == ':') {
      port = host.substr(close + 2);
      host = host.substr(1, close - 1);
    }
  } else if (size_t colon = host.rfind(':'); colon != std::string::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (host == "localhost") host = "127.0.0.1";
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) return std::nullopt;
  boost::system::error_code ec;
  boost::asio::ip::address address = boost::asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return boost::asio::ip::tcp::endpoint(address, static_cast<uint16_t>(p));
}

}  // namespace idlepool::serve
