// "host:port" ("[v6]:port"; "localhost" is 127.0.0.1) as an endpoint to listen on, for the
// gateway and the worker tunnel. Pure.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>

namespace idlepool::serve {

// nullopt when it is not an IP address and a port 0..65535.
std::optional<boost::asio::ip::tcp::endpoint> ParseListenAddress(const std::string& listen);

}  // namespace idlepool::serve
