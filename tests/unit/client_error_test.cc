// cli/client_error.h: gRPC's and the pinned fetch's failures, as the texts they really are,
// said in one line with what failed and what to do. (Each also has an integration test with real
// processes, tests/integration/client_errors_test.sh, but the version mismatch: no older
// coordinator exists to run.)
#include "cli/client_error.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace idlepool::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAddr[] = "lab.example:7878";

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

TEST(ClientError, RefusedSaysNothingListensAndWhereTheAddressCameFrom) {
  const grpc::Status st(grpc::StatusCode::UNAVAILABLE,
                        "failed to connect to all addresses; last error: UNKNOWN: "
                        "ipv4:10.0.0.5:7878: Failed to connect to remote host: Connection refused");
  const absl::Status s = ExplainCall(st, kAddr, "list jobs");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Msg(s), AllOf(HasSubstr("cannot reach the coordinator at lab.example:7878"),
                            HasSubstr("connection refused"), HasSubstr("IDLEPOOL_COORDINATOR"),
                            Not(HasSubstr("failed to connect to all addresses"))));
  EXPECT_EQ(Msg(s).find('\n'), std::string::npos);
}

TEST(ClientError, UnresolvedNameNamesTheHost) {
  for (const char* raw :
       {"DNS resolution failed for nohost.invalid:7878: C-ares status is not ARES_SUCCESS "
        "qtype=A name=nohost.invalid is_balancer=0: Domain name not found",
        "DNS resolution failed for lab.example:7878: C-ares status is not ARES_SUCCESS qtype=AAAA "
        "name=lab.example is_balancer=0: Could not contact DNS servers"}) {
    const absl::Status s =
        ExplainCall(grpc::Status(grpc::StatusCode::UNAVAILABLE, raw), kAddr, "status");
    EXPECT_THAT(Msg(s),
                AllOf(HasSubstr("the name lab.example does not resolve"), Not(HasSubstr("C-ares"))))
        << raw;
  }
  const absl::Status f = ExplainConnect(
      absl::UnavailableError("cannot resolve lab.example: Name or service not known"), kAddr);
  EXPECT_THAT(Msg(f), HasSubstr("the name lab.example does not resolve"));
}

TEST(ClientError, NoAnswerInTime) {
  const absl::Status s = ExplainCall(
      grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"), kAddr, "status");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Msg(s), HasSubstr("did not answer in time"));
  const absl::Status f = ExplainConnect(
      absl::DeadlineExceededError("lab.example:7878: no answer within 10000 ms"), kAddr);
  EXPECT_THAT(Msg(f), HasSubstr("did not answer in time"));
}

TEST(ClientError, AnotherPoolsCertificateAndANameItDoesNotCover) {
  const absl::Status other = ExplainCall(
      grpc::Status(grpc::StatusCode::UNAVAILABLE,
                   "failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.5:7878: "
                   "Ssl handshake failed: SSL_ERROR_SSL: error:1000007d:SSL "
                   "routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"),
      kAddr, "status");
  EXPECT_THAT(Msg(other), HasSubstr("not signed by this pool's CA"));
  const absl::Status name =
      ExplainCall(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                               "Peer name lab.example is not in peer certificate"),
                  kAddr, "status");
  EXPECT_THAT(Msg(name),
              AllOf(HasSubstr("does not cover the name lab.example"), HasSubstr("--advertise")));
  const absl::Status pin = ExplainConnect(
      absl::PermissionDeniedError("lab.example:7878 is not the pool this token was made for: its "
                                  "CA is sha256:ab and the token pins sha256:cd"),
      kAddr);
  EXPECT_EQ(pin.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Msg(pin), AllOf(HasSubstr("nothing was sent"), HasSubstr("use a token of the pool")));
}

TEST(ClientError, RefusedTokenSaysHowToGetANewOne) {
  for (const char* why : {"unknown token 000000000000", "token ab12cd34ef56 was revoked",
                          "token ab12cd34ef56 expired at 2026-12-03 10:00:00 UTC"}) {
    const absl::Status s =
        ExplainCall(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why), kAddr, "status");
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
    EXPECT_THAT(Msg(s), AllOf(HasSubstr(why), HasSubstr("idlepool token create --role submit"),
                              HasSubstr("idlepool login lab.example:7878")));
  }
}

TEST(ClientError, RoleTooLowKeepsTheCoordinatorsWords) {
  const absl::Status s = ExplainCall(
      grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                   "/idlepool.v1.Jobs/SubmitJob is for submit or admin; read ci may not call it: "
                   "it needs role submit; ask the pool's admin for a token of role submit "
                   "(`idlepool token create --role submit`)"),
      kAddr, "submit");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Msg(s), AllOf(HasSubstr("submit: "), HasSubstr("needs role submit")));
}

TEST(ClientError, AnUnknownCallIsAVersionMismatch) {
  const absl::Status s = ExplainCall(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""), kAddr,
                                     "failed tasks of job 3");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Msg(s), AllOf(HasSubstr("failed tasks of job 3"),
                            HasSubstr("runs another idlepool version than this client"),
                            HasSubstr("run the same version on both")));
}

TEST(ClientError, OtherCodesKeepTheMessage) {
  const absl::Status s =
      ExplainCall(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such job"), kAddr, "job 12");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Msg(s), "job 12: no such job");
}

}  // namespace
}  // namespace idlepool::cli
