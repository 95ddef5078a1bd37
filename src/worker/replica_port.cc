#include "worker/replica_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace idlepool::worker {

absl::StatusOr<uint16_t> PickReplicaPort() {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot pick a port: ", std::strerror(errno)));
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int err = errno;
    ::close(s);
    return absl::ResourceExhaustedError(absl::StrCat("cannot pick a port: ", std::strerror(err)));
  }
  ::close(s);
  return ntohs(a.sin_port);
}

}  // namespace idlepool::worker
