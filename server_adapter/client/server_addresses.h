#pragma once
// Where a RemoteConnection sends its requests: one server, a list of servers, or a DNS name that
// resolves to several (a Kubernetes headless Service). Every form becomes one gRPC channel with
// per-request round-robin balancing. A list or a dns:/// target is health checked through
// grpc.health.v1 (a draining server leaves the rotation, a restarted one rejoins); a single
// host:port is not, since it may be a balancer whose health-check stream reaches one server of
// many (a draining one would make the whole balancer look unhealthy).

#include <string>
#include <vector>

namespace kaas::client::detail {

struct ChannelTarget {
  std::string target;           // what grpc::CreateCustomChannel is given
  std::string tls_name;         // server name TLS checks certificates against (lists only)
  size_t servers = 1;           // addresses named (a DNS name counts as one)
  bool health_checked = false;  // a list or dns:///: balance over SERVING servers only
};

// "host:port", "host1:port,host2:port,..." (each resolved once, here, to its addresses) or a
// gRPC target with a scheme ("dns:///name:port", "ipv4:...", "unix:..."), re-resolved by gRPC.
// Throws kInvalidArgument naming the entry that is not host:port or does not resolve.
ChannelTarget channel_target(const std::string& servers);

// The channel's service config: round robin, health checked through grpc.health.v1 (service "")
// when `health_checked`.
const std::string& balanced_service_config(bool health_checked);

}  // namespace kaas::client::detail
