#include "serve/gateway_pool.h"

namespace idlepool::serve {

namespace {

void CloseQuietly(UpstreamPool::Stream& s) {
  boost::system::error_code ignored;
  s.socket().close(ignored);
}

}  // namespace

void UpstreamPool::AddReplica(ReplicaId id, boost::asio::ip::tcp::endpoint at,
                              std::optional<TunnelRoute> tunnel) {
  std::string host = at.address().to_string();
  if (at.address().is_v6()) host = "[" + host + "]";
  replicas_[id] = Replica{at, host + ":" + std::to_string(at.port()), std::move(tunnel), {}};
}

const std::string* UpstreamPool::HostHeader(ReplicaId id) const {
  auto it = replicas_.find(id);
  return it == replicas_.end() ? nullptr : &it->second.host_header;
}

void UpstreamPool::RemoveReplica(ReplicaId id) {
  auto it = replicas_.find(id);
  if (it == replicas_.end()) return;
  for (auto& s : it->second.idle) CloseQuietly(*s);
  replicas_.erase(it);
}

std::optional<boost::asio::ip::tcp::endpoint> UpstreamPool::Endpoint(ReplicaId id) const {
  auto it = replicas_.find(id);
  if (it == replicas_.end()) return std::nullopt;
  return it->second.at;
}

const TunnelRoute* UpstreamPool::Tunnel(ReplicaId id) const {
  auto it = replicas_.find(id);
  if (it == replicas_.end() || !it->second.tunnel) return nullptr;
  return &*it->second.tunnel;
}

std::shared_ptr<UpstreamPool::Stream> UpstreamPool::Take(ReplicaId id) {
  auto it = replicas_.find(id);
  if (it == replicas_.end() || it->second.idle.empty()) return nullptr;
  std::shared_ptr<Stream> s = std::move(it->second.idle.back());
  it->second.idle.pop_back();
  return s;
}

void UpstreamPool::Give(ReplicaId id, std::shared_ptr<Stream> stream) {
  auto it = replicas_.find(id);
  if (it == replicas_.end() || it->second.idle.size() >= idle_max_ || !stream->socket().is_open()) {
    CloseQuietly(*stream);
    return;
  }
  stream->expires_never();
  it->second.idle.push_back(std::move(stream));
}

size_t UpstreamPool::IdleCount(ReplicaId id) const {
  auto it = replicas_.find(id);
  return it == replicas_.end() ? 0 : it->second.idle.size();
}

void UpstreamPool::CloseAll() {
  for (auto& [id, r] : replicas_) {
    for (auto& s : r.idle) CloseQuietly(*s);
    r.idle.clear();
  }
}

}  // namespace idlepool::serve
