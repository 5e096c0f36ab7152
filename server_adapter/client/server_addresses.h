#pragma once
// Where a RemoteConnection sends its requests: one server, a list of servers, or a DNS name that
// resolves to several (a Kubernetes headless Service). Every form becomes one gRPC channel with
// per-request round-robin balancing over the servers whose grpc.health.v1 status is SERVING
// (client-side health checking: a draining server leaves the rotation, a restarted one rejoins).

#include <string>
#include <vector>

namespace kaas::client::detail {

struct ChannelTarget {
  std::string target;    // what grpc::CreateCustomChannel is given
  std::string tls_name;  // server name TLS checks certificates against (lists only)
  size_t servers = 1;    // addresses named (a DNS name counts as one)
};

// "host:port", "host1:port,host2:port,..." (each resolved once, here, to its addresses) or a
// gRPC target with a scheme ("dns:///name:port", "ipv4:...", "unix:..."), re-resolved by gRPC.
// Throws kInvalidArgument naming the entry that is not host:port or does not resolve.
ChannelTarget channel_target(const std::string& servers);

// The channel's service config: round robin, health checked through grpc.health.v1 (service "").
const std::string& balanced_service_config();

}  // namespace kaas::client::detail
