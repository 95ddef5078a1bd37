// What the coordinator takes from a worker (coordinator/worker_input.h): the Peer address a
// worker announces, completed from its session's address when it names no host.
#include "coordinator/worker_input.h"

#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

TEST(PeerAddress, AnAnnouncedHostIsKeptAsItIs) {
  EXPECT_EQ(PeerAddress("laptop.local:7000", "ipv4:10.0.0.5:41000"), "laptop.local:7000");
  EXPECT_EQ(PeerAddress("10.0.0.9:7000", "ipv4:10.0.0.5:41000"), "10.0.0.9:7000");
  EXPECT_EQ(PeerAddress("[::1]:7000", "ipv6:[::1]:41000"), "[::1]:7000");
}

TEST(PeerAddress, AWildcardOrMissingHostBecomesTheSessionsAddress) {
  EXPECT_EQ(PeerAddress("0.0.0.0:7000", "ipv4:10.0.0.5:41000"), "10.0.0.5:7000");
  EXPECT_EQ(PeerAddress(":7000", "ipv4:10.0.0.5:41000"), "10.0.0.5:7000");
  EXPECT_EQ(PeerAddress("[::]:7000", "ipv6:[fe80::1]:41000"), "[fe80::1]:7000");
  EXPECT_EQ(PeerAddress("0.0.0.0:7000", "unix:/tmp/sock"), "");
}

TEST(PeerAddress, WhatCannotBeDialedIsDropped) {
  EXPECT_EQ(PeerAddress("", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("7000", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("host:", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("host:0", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("host:65536", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("host:7x", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("unix:/tmp/peer:7000", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("a b:7000", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("user@host:7000", "ipv4:10.0.0.5:41000"), "");
  EXPECT_EQ(PeerAddress("::1:7000", "ipv4:10.0.0.5:41000"), "");  // IPv6 must be bracketed
  EXPECT_EQ(PeerAddress(std::string(260, 'h') + ":7000", "ipv4:10.0.0.5:41000"), "");
}

}  // namespace
}  // namespace idlepool::coordinator
