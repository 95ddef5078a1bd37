// `idlepool login`, `idlepool token create|list|revoke` and `idlepool workers revoke`: the
// pool's credentials (docs/guide/security.md). Administration goes through the coordinator's
// Unix socket DATA_DIR/admin.sock: whoever can reach the data dir is the admin.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/client_error.h"
#include "cli/command.h"
#include "cli/credentials.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "status_convert.h"
#include "text/units.h"
#include "trust.grpc.pb.h"
#include "trust/grpc_tls.h"
#include "trust/token.h"

namespace idlepool::cli {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<v1::Admin::Stub>> AdminStub(const std::string& data_dir) {
  if (data_dir.empty()) {
    return absl::InvalidArgumentError(
        "--data-dir (or IDLEPOOL_DATA_DIR): the coordinator's data dir, whose admin.sock "
        "administers the pool");
  }
  const fs::path sock = fs::path(data_dir) / "admin.sock";
  if (!fs::exists(sock)) {
    return absl::UnavailableError(
        absl::StrCat("no ", sock.string(),
                     ": is the coordinator running with this data dir (on this machine)?"));
  }
  return v1::Admin::NewStub(
      grpc::CreateChannel("unix:" + sock.string(), grpc::InsecureChannelCredentials()));
}

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(platform::DeadlineAfter(std::chrono::seconds(10)));
  return ctx;
}

std::string When(int64_t unix_s) {
  if (unix_s == 0) return "never";
  char buf[32];
  const time_t t = static_cast<time_t>(unix_s);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&t));
  return buf;
}

struct TokenFlags {
  std::string data_dir, role = "submit", ttl, name, user, id, rate;
  int64_t uses = -1;
  uint32_t concurrency = 0;
  bool json = false;
};

int CreateToken(const TokenFlags& f) {
  auto stub = AdminStub(f.data_dir);
  if (!stub.ok()) return Fail(stub.status());
  v1::CreateTokenRequest req;
  req.set_role(f.role);
  // A join token lasts an hour unless told otherwise; an access token until revoked.
  std::string ttl = f.ttl.empty() ? (f.role == "worker" ? "1h" : "0s") : f.ttl;
  auto d = text::ParseDuration(ttl);
  if (!d.ok())
    return Fail(absl::InvalidArgumentError(absl::StrCat("--ttl: ", d.status().message())));
  req.set_ttl_s(static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(*d).count()));
  req.set_uses(f.uses);
  req.set_name(f.name);
  req.set_user(f.user);
  if (!f.rate.empty()) {
    auto rate = text::ParseRate(f.rate);
    if (!rate.ok()) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--rate: ", rate.status().message())));
    }
    req.set_rate_per_s(*rate);
  }
  req.set_concurrency(f.concurrency);
  v1::CreateTokenReply reply;
  if (auto st = (*stub)->CreateToken(Ctx().get(), req, &reply); !st.ok()) {
    return Fail(wire::FromGrpc(st, "creating a token"));
  }
  std::printf("%s\n", reply.token().c_str());
  const std::string user = f.role == "worker" ? ""
                           : !f.user.empty()  ? f.user
                           : !f.name.empty()  ? f.name
                                              : reply.id();
  std::fprintf(stderr, "token %s (role %s%s, expires %s): shown once, only its hash is kept\n",
               reply.id().c_str(), f.role.c_str(),
               user.empty() ? "" : absl::StrCat(", user ", user).c_str(),
               When(reply.expires_unix_s()).c_str());
  return 0;
}

// "5/s x2": 5 requests a second, 2 at once; "-" when the key has no limit.
std::string LimitsText(const v1::TokenInfo& t) {
  std::string out;
  if (t.rate_per_s() > 0) out = absl::StrFormat("%g/s", t.rate_per_s());
  if (t.concurrency() > 0) absl::StrAppend(&out, out.empty() ? "" : " ", "x", t.concurrency());
  return out.empty() ? "-" : out;
}

int ListTokens(const TokenFlags& f) {
  auto stub = AdminStub(f.data_dir);
  if (!stub.ok()) return Fail(stub.status());
  v1::ListTokensReply reply;
  if (auto st = (*stub)->ListTokens(Ctx().get(), v1::ListTokensRequest(), &reply); !st.ok()) {
    return Fail(wire::FromGrpc(st, "listing tokens"));
  }
  std::printf("%-14s %-8s %-20s %-16s %-17s %-17s %6s %-14s %s\n", "ID", "ROLE", "NAME", "USER",
              "CREATED", "EXPIRES", "USES", "LIMITS", "STATE");
  for (const auto& t : reply.tokens()) {
    const std::string uses = t.uses_left() < 0 ? "-" : std::to_string(t.uses_left());
    std::printf("%-14s %-8s %-20s %-16s %-17s %-17s %6s %-14s %s\n", t.id().c_str(),
                t.role().c_str(), t.name().empty() ? "-" : t.name().c_str(),
                t.user().empty() ? "-" : t.user().c_str(), When(t.created_unix_s()).c_str(),
                When(t.expires_unix_s()).c_str(), uses.c_str(), LimitsText(t).c_str(),
                t.revoked() ? "revoked" : "live");
  }
  return 0;
}

int RevokeToken(const TokenFlags& f) {
  auto stub = AdminStub(f.data_dir);
  if (!stub.ok()) return Fail(stub.status());
  v1::RevokeTokenRequest req;
  req.set_id(f.id);
  v1::RevokeTokenReply reply;
  if (auto st = (*stub)->RevokeToken(Ctx().get(), req, &reply); !st.ok()) {
    return Fail(wire::FromGrpc(st, absl::StrCat("revoking token ", f.id)));
  }
  std::printf("token %s revoked\n", f.id.c_str());
  return 0;
}

struct LoginFlags {
  std::string address, token_file;
};

absl::StatusOr<std::string> LoginToken(const LoginFlags& f) {
  if (!f.token_file.empty()) {
    std::ifstream in(f.token_file);
    std::string line;
    if (!std::getline(in, line) || line.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--token-file ", f.token_file, " is empty"));
    }
    return line;
  }
  if (const char* env = std::getenv("IDLEPOOL_TOKEN"); env && *env) return std::string(env);
  return PromptSecret("access token: ");
}

int Login(const LoginFlags& f) {
  auto token = LoginToken(f);
  if (!token.ok()) return Fail(token.status());
  auto c = ResolveCredentials(f.address, *token);
  if (!c.ok()) return Fail(c.status());
  QuietGrpcLog();
  auto stub = v1::Join::NewStub(
      grpc::CreateChannel(c->coordinator, trust::CaOnlyChannelCredentials(c->ca_pem)));
  auto ctx = Ctx();
  ctx->AddMetadata("x-idlepool-token", c->token);
  v1::WhoAmIReply who;
  if (auto st = stub->WhoAmI(ctx.get(), v1::WhoAmIRequest(), &who); !st.ok()) {
    return Fail(ExplainCall(st, c->coordinator, absl::StrCat("logging in to ", c->coordinator)));
  }
  if (auto st = SaveLogin(SavedLogin{c->coordinator, c->token, c->ca_pem}); !st.ok()) {
    return Fail(st);
  }
  std::printf("logged in to %s as %s (%s); saved in %s\n", c->coordinator.c_str(),
              (who.user().empty() ? who.name() : who.user()).c_str(), who.role().c_str(),
              ConfigDir().c_str());
  return 0;
}

}  // namespace

void AddDataDirOption(CLI::App* sub, std::string& data_dir) {
  data_dir = EnvOr("IDLEPOOL_DATA_DIR", "");
  sub->add_option("--data-dir", data_dir,
                  "the coordinator's data dir (env IDLEPOOL_DATA_DIR); its admin.sock is used");
}

int RevokeWorker(const std::string& data_dir, const std::string& name) {
  auto stub = AdminStub(data_dir);
  if (!stub.ok()) return Fail(stub.status());
  v1::RevokeWorkerRequest req;
  req.set_name(name);
  v1::RevokeWorkerReply reply;
  if (auto st = (*stub)->RevokeWorker(Ctx().get(), req, &reply); !st.ok()) {
    return Fail(wire::FromGrpc(st, absl::StrCat("revoking worker ", name)));
  }
  std::printf("worker %s revoked%s\n", name.c_str(),
              reply.was_connected() ? "; its session was cut" : "");
  return 0;
}

int ResetWorker(const std::string& data_dir, const std::string& name) {
  auto stub = AdminStub(data_dir);
  if (!stub.ok()) return Fail(stub.status());
  v1::ResetWorkerRequest req;
  req.set_name(name);
  v1::ResetWorkerReply reply;
  if (auto st = (*stub)->ResetWorker(Ctx().get(), req, &reply); !st.ok()) {
    return Fail(wire::FromGrpc(st, absl::StrCat("resetting worker ", name)));
  }
  std::printf("worker %s reset%s\n", name.c_str(),
              reply.was_unhealthy() ? ": it takes work again" : " (it was healthy)");
  return 0;
}

int SetUser(const std::string& data_dir, const v1::SetUserRequest& req) {
  auto stub = AdminStub(data_dir);
  if (!stub.ok()) return Fail(stub.status());
  v1::SetUserReply reply;
  if (auto st = (*stub)->SetUser(Ctx().get(), req, &reply); !st.ok()) {
    return Fail(wire::FromGrpc(st, absl::StrCat("setting user ", req.user())));
  }
  const v1::UserSettings& s = reply.settings();
  auto limit = [](uint64_t v) { return v == 0 ? std::string("none") : std::to_string(v); };
  const std::string stored =
      s.max_stored_bytes() == 0
          ? std::string("none")
          : absl::StrFormat("%.2f GiB",
                            static_cast<double>(s.max_stored_bytes()) / (1024.0 * 1024 * 1024));
  std::printf("user %s: share %g, max slots %s, max gpus %s, max queued tasks %s, max stored %s\n",
              s.user().c_str(), s.share(), limit(s.max_slots()).c_str(),
              limit(s.max_gpus()).c_str(), limit(s.max_queued_tasks()).c_str(), stored.c_str());
  return 0;
}

Command AddLoginCommand(CLI::App& app, Common&) {
  auto f = std::make_shared<LoginFlags>();
  auto* login = app.add_subcommand(
      "login", "check an access token against a coordinator and keep it for later commands");
  login->add_option("address", f->address, "the coordinator, HOST:PORT")->required();
  login->add_option("--token-file", f->token_file,
                    "read the token from this file (else IDLEPOOL_TOKEN, else a prompt)");
  return {login, [f] { return Login(*f); }};
}

Command AddTokenCommand(CLI::App& app) {
  auto f = std::make_shared<TokenFlags>();
  auto* token = app.add_subcommand("token", "create, list and revoke the pool's tokens");
  token->require_subcommand(1);
  auto* create = token->add_subcommand("create", "print a new token (shown once)");
  create
      ->add_option("--role", f->role,
                   "worker (a join token), submit, operator (acts on everyone's jobs) or read")
      ->check(CLI::IsMember({"worker", "submit", "operator", "read"}))
      ->capture_default_str();
  create->add_option("--ttl", f->ttl, "lifetime, e.g. 1h, 7d (default: 1h for worker, else none)");
  create->add_option("--uses", f->uses, "join token: how many machines may join with it")
      ->check(CLI::PositiveNumber);
  create->add_option("--name", f->name, "join token: the worker's name; else a label");
  create->add_option("--user", f->user,
                     "access token: the user it acts for; its jobs are theirs (default: --name)");
  create->add_option("--rate", f->rate,
                     "access token: requests it may send through a gateway, e.g. 10/s, 30/m "
                     "(a burst of one second's worth; default: no limit)");
  create->add_option("--concurrency", f->concurrency,
                     "access token: requests it may have at once in a gateway (default: no limit)");
  AddDataDirOption(create, f->data_dir);
  auto* list = token->add_subcommand("list", "list tokens (never their secrets)");
  AddDataDirOption(list, f->data_dir);
  auto* revoke = token->add_subcommand("revoke", "refuse a token from now on");
  revoke->add_option("id", f->id, "the token's id (from `token list`)")->required();
  AddDataDirOption(revoke, f->data_dir);
  return {token, [f, create, list] {
            if (*create) return CreateToken(*f);
            if (*list) return ListTokens(*f);
            return RevokeToken(*f);
          }};
}

}  // namespace idlepool::cli
