// The server addresses a RemoteConnection accepts: one host:port, a list (resolved once, one
// address family), a target gRPC resolves itself; and which of them are health checked.

#include <gtest/gtest.h>

#include "kaas/client/server_addresses.h"
#include "kaas/common/error.h"

namespace kaas::client::detail {
namespace {

TEST(ServerAddresses, OneHostPortIsPassedOnAndNotHealthChecked) {
  const ChannelTarget t = channel_target("kaas.example.org:8001");
  EXPECT_EQ(t.target, "kaas.example.org:8001");
  EXPECT_FALSE(t.health_checked);  // may be a balancer in front of several servers
  const ChannelTarget ip = channel_target("127.0.0.1:8001");
  EXPECT_EQ(ip.target, "ipv4:127.0.0.1:8001");
  EXPECT_FALSE(ip.health_checked);
}

TEST(ServerAddresses, AListBecomesOneStaticTargetAndIsHealthChecked) {
  const ChannelTarget t = channel_target("127.0.0.1:8001,localhost:8002,127.0.0.2:8003");
  EXPECT_EQ(t.target.rfind("ipv4:127.0.0.1:8001,", 0), 0u) << t.target;
  EXPECT_NE(t.target.find("127.0.0.1:8002"), std::string::npos) << t.target;
  EXPECT_NE(t.target.find("127.0.0.2:8003"), std::string::npos) << t.target;
  EXPECT_EQ(t.servers, 3u);
  EXPECT_TRUE(t.health_checked);
  EXPECT_EQ(t.tls_name, "127.0.0.1");
  const ChannelTarget v6 = channel_target("[::1]:8001,[::1]:8002");
  EXPECT_EQ(v6.target, "ipv6:[::1]:8001,[::1]:8002");
}

TEST(ServerAddresses, SchemesAreGrpcsOwn) {
  const ChannelTarget dns = channel_target("dns:///kaas-headless.ns.svc:8001");
  EXPECT_EQ(dns.target, "dns:///kaas-headless.ns.svc:8001");
  EXPECT_TRUE(dns.health_checked);  // a headless Service: several servers
  EXPECT_FALSE(channel_target("unix:/run/kaas.sock").health_checked);
  EXPECT_TRUE(channel_target("ipv4:10.0.0.1:8001,10.0.0.2:8001").health_checked);
}

TEST(ServerAddresses, BadEntriesAreNamed) {
  const auto message = [](const std::string& servers) {
    try {
      channel_target(servers);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_NE(message("127.0.0.1:8001,").find("empty entry"), std::string::npos);
  EXPECT_NE(message("127.0.0.1:8001,nohost").find("'nohost'"), std::string::npos);
  EXPECT_NE(message("127.0.0.1:8001,h:port").find("not a number"), std::string::npos);
  EXPECT_NE(message("127.0.0.1:8001,[::1:8002").find("[ipv6]:port"), std::string::npos);
  EXPECT_NE(message("127.0.0.1:8001,[::1]:8002").find("address family"), std::string::npos);
}

}  // namespace
}  // namespace kaas::client::detail
