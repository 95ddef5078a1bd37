// What the coordinator takes from a worker (coordinator/worker_input.h): its name, and the Peer
// address it announces, completed from its session's address when it names no host.
#include "coordinator/worker_input.h"

#include <string>

#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

TEST(WorkerName, AVisibleNameIsAccepted) {
  EXPECT_EQ(WorkerNameProblem("wa"), "");
  EXPECT_EQ(WorkerNameProblem("render box \u00E9t\u00E9"), "");
  EXPECT_EQ(WorkerNameProblem(std::string(kMaxWorkerNameBytes, 'w')), "");
}

TEST(WorkerName, ANameThatShowsLikeAnotherIsRefusedNamingTheCharacter) {
  // Shown as "wa" on every screen: the message escapes it so the reader sees why.
  EXPECT_EQ(WorkerNameProblem("wa\u200B"),
            "worker name \"wa\\u200b\": U+200B (zero width space) is not allowed");
  EXPECT_EQ(WorkerNameProblem("w\u202Eab"),
            "worker name \"w\\u202eab\": U+202E (right-to-left override) is not allowed");
  EXPECT_EQ(WorkerNameProblem("evil\x1b]0;x\a"),
            "worker name \"evil\\u001b]0;x\\u0007\": U+001B (control character) is not allowed");
  EXPECT_EQ(WorkerNameProblem(""), "worker name of 0 bytes: a name has 1 to 256 bytes");
  EXPECT_EQ(WorkerNameProblem(std::string(kMaxWorkerNameBytes + 1, 'w')),
            "worker name of 257 bytes: a name has 1 to 256 bytes");
}

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
