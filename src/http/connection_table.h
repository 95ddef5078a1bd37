// The HTTPS server's live connections and who gives way at the cap (ConnectionLimits::
// max_connections). A connection is either waiting for bytes from its client (the TLS
// handshake, a request being read, idle between requests) or busy (a request being handled: an
// answer being computed or written, an event stream). At the cap a new connection takes the
// slot of the one that has been waiting longest, whose wait is ended by `kick` (the server
// shuts its socket down, so the thread serving it returns at once); when every slot is busy the
// new connection is refused. So slow or idle clients, however many, cannot keep a prompt one
// out: it only ever displaces them.
//
// Times are passed in. Thread-safe: one mutex; `kick` is called with it held and must not block
// or call back (shutdown(2) does neither).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "core/types.h"

namespace idlepool::http {

class ConnectionTable {
 public:
  using Kick = std::function<void(int fd)>;
  ConnectionTable(size_t max_connections, Kick kick);

  // At accept: an id (> 0) for connection `fd`, now waiting; 0 when it is refused (every slot
  // busy, or Stop was called): the caller closes it.
  uint64_t Admit(int fd, core::MonoTime now);
  // A request's head was read: it is being handled and is not kicked.
  void SetBusy(uint64_t id);
  // Waiting for its client again (between requests, or draining a refused request). False when
  // it was kicked or the table is stopping: the connection should end.
  bool SetWaiting(uint64_t id, core::MonoTime now);
  // The connection ended; call before closing its fd.
  void Remove(uint64_t id);
  // Refuses new connections from now on and kicks every waiting one; busy ones are kicked when
  // they next wait.
  void Stop();

  struct Counts {
    size_t live = 0;  // admitted and not kicked or removed
    size_t busy = 0;
    uint64_t admitted = 0;
    uint64_t kicked = 0;   // gave way to a newer connection (or to Stop)
    uint64_t refused = 0;  // closed at accept: every slot busy
  };
  Counts counts() const;

 private:
  struct Entry {
    int fd = -1;
    bool busy = false;
    bool kicked = false;
    core::MonoTime since;  // when its current wait began
  };
  bool KickLongestWaiting();  // mu_ held

  const size_t max_;
  const Kick kick_;
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> entries_;  // by id: admission order
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  Counts counts_;
};

}  // namespace idlepool::http
