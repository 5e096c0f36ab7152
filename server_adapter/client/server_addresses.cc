#include "kaas/client/server_addresses.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <memory>

#include "kaas/common/error.h"

namespace kaas::client::detail {

namespace {

struct HostPort {
  std::string host, port;
};

HostPort split_host_port(const std::string& entry, const std::string& list) {
  const auto bad = [&](const std::string& why) {
    std::string text = "server address '";
    text.append(entry).append("' in '").append(list).append("': ").append(why);
    return Error(ErrorCode::kInvalidArgument, text);
  };
  if (entry.empty()) throw bad("empty entry");
  HostPort hp;
  if (entry.front() == '[') {  // [v6]:port
    const size_t close = entry.find(']');
    if (close == std::string::npos || close + 1 >= entry.size() || entry[close + 1] != ':')
      throw bad("expected [ipv6]:port");
    hp.host = entry.substr(1, close - 1);
    hp.port = entry.substr(close + 2);
  } else {
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0) throw bad("expected host:port");
    hp.host = entry.substr(0, colon);
    hp.port = entry.substr(colon + 1);
  }
  if (hp.port.empty() || hp.port.find_first_not_of("0123456789") != std::string::npos)
    throw bad("the port is not a number");
  return hp;
}

// The addresses of one host:port as gRPC's ipv4:/ipv6: URI entries.
std::vector<std::pair<int, std::string>> resolve(const HostPort& hp, const std::string& entry) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &found);
  if (rc != 0) {
    std::string text = "server address '";
    text.append(entry).append("' does not resolve: ").append(gai_strerror(rc));
    throw Error(ErrorCode::kInvalidArgument, text);
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
  std::vector<std::pair<int, std::string>> out;
  for (const addrinfo* a = found; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr, text,
                sizeof text);
      out.emplace_back(AF_INET, std::string(text).append(":").append(hp.port));
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr, text,
                sizeof text);
      out.emplace_back(AF_INET6, std::string("[").append(text).append("]:").append(hp.port));
    }
  }
  return out;
}

}  // namespace

ChannelTarget channel_target(const std::string& servers) {
  if (servers.empty()) throw Error(ErrorCode::kInvalidArgument, "server address is empty");
  ChannelTarget t;
  // One server, or a target gRPC resolves itself (a DNS name may give several addresses).
  const bool has_scheme = [&] {
    for (const char* scheme : {"dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:"})
      if (servers.rfind(scheme, 0) == 0) return true;
    return false;
  }();
  if (has_scheme) {
    t.target = servers;
    t.health_checked = servers.rfind("dns:", 0) == 0 || servers.find(',') != std::string::npos;
    return t;
  }
  // A single host name stays a DNS target (several addresses, re-resolved when they fail).
  // IP literals and lists get a static address list: no re-resolution, which in this gRPC
  // restarts a pending connection attempt each time, so a returning server is never reached
  // while calls keep failing.
  const bool one = servers.find(',') == std::string::npos;
  if (one) {
    const HostPort hp = split_host_port(servers, servers);
    in_addr v4{};
    in6_addr v6{};
    if (inet_pton(AF_INET, hp.host.c_str(), &v4) != 1 &&
        inet_pton(AF_INET6, hp.host.c_str(), &v6) != 1) {
      t.target = servers;
      return t;
    }
  }
  // A list: gRPC's ipv4:/ipv6: targets take several addresses but one family, so each entry is
  // resolved here; an entry with both families contributes those of the list's family.
  std::vector<std::vector<std::pair<int, std::string>>> entries;
  size_t begin = 0;
  while (begin <= servers.size()) {
    const size_t end = std::min(servers.find(',', begin), servers.size());
    const std::string entry = servers.substr(begin, end - begin);
    const HostPort hp = split_host_port(entry, servers);
    if (t.tls_name.empty()) t.tls_name = hp.host;
    entries.push_back(resolve(hp, entry));
    begin = end + 1;
  }
  t.servers = entries.size();
  t.health_checked = entries.size() > 1;
  for (const int family : {AF_INET, AF_INET6}) {
    std::string list;
    bool every_entry = true;
    for (const auto& addresses : entries) {
      bool any = false;
      for (const auto& [f, address] : addresses) {
        if (f != family) continue;
        list.append(list.empty() ? "" : ",").append(address);
        any = true;
      }
      every_entry = every_entry && any;
    }
    if (every_entry) {
      t.target = std::string(family == AF_INET ? "ipv4:" : "ipv6:").append(list);
      return t;
    }
  }
  std::string mixed = "server addresses '";
  mixed.append(servers).append(
      "': mix IPv4-only and IPv6-only servers (one list must share an address family)");
  throw Error(ErrorCode::kInvalidArgument, mixed);
}

const std::string& balanced_service_config(bool health_checked) {
  static const std::string checked =
      R"({"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": ""}})";
  static const std::string unchecked = R"({"loadBalancingConfig": [{"round_robin": {}}]})";
  return health_checked ? checked : unchecked;
}

}  // namespace kaas::client::detail
