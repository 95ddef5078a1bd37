// The subcommands of `idlepool`: each Add*Command registers one subcommand (its options and
// help) on the app and returns how to run it; main parses the command line once and runs the
// subcommand that was given. A runner owns its parsed options (captured); `common` (the
// coordinator address, the token, logging) is main's and outlives every runner.
//
// Exit codes of every runner: 0 success, 1 a failure (a job failed, the coordinator is
// unreachable...), 2 bad input (the command line, a job spec, a policy file).
// Single-threaded: main builds, parses and runs on its own thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "cli/client.h"

namespace idlepool::cli {

// What every client subcommand shares; filled from the environment, then the command line.
struct Common {
  std::string coordinator;  // host:port (IDLEPOOL_COORDINATOR, --coordinator; else the login's)
  std::string token;        // an access token (IDLEPOOL_TOKEN, --token, --token-file)
  std::string token_file;   // read into `token` after parsing, when given
  std::string ca_pem;       // the pool CA, once NeedCredentials checked it (credentials.h)
  std::string log_level = "info";
  std::string log_format = "text";
};

struct Command {
  CLI::App* sub = nullptr;   // the registered subcommand (true once it was given)
  std::function<int()> run;  // runs it after parsing; returns the exit code
};

// --coordinator, --token, --token-file on `sub`, stored in `common`.
void AddClientOptions(CLI::App* sub, Common& common);
// Resolves the coordinator, the token and the pinned CA (credentials.h) into `common`; 0, or
// the exit code after saying what is wrong (2 bad or missing token, 1 unreachable).
[[nodiscard]] int NeedCredentials(Common& common);
PoolClient MakeClient(const Common& common);

// --data-dir (env IDLEPOOL_DATA_DIR) of an administration command: it talks to the coordinator
// over DATA_DIR/admin.sock (trust_commands.cc).
void AddDataDirOption(CLI::App* sub, std::string& data_dir);
// `idlepool workers revoke NAME`.
int RevokeWorker(const std::string& data_dir, const std::string& name);
// `idlepool workers reset NAME` over DATA_DIR/admin.sock: clears its failures (unhealthy, held
// off).
int ResetWorker(const std::string& data_dir, const std::string& name);
// `idlepool users set NAME ...` over DATA_DIR/admin.sock: prints the user's settings as they are.
int SetUser(const std::string& data_dir, const v1::SetUserRequest& req);

// Prints the error; returns 2 for kInvalidArgument (bad input), else 1.
int Fail(const absl::Status& st);
// Prints the error of a job spec or policy file; returns 2.
int BadSpec(const absl::Status& st);
std::string Plural(uint64_t n, const char* word);  // "1 task", "3 tasks"
// For a server (coordinator, worker), first thing: raises the descriptor limit to the hard one
// (platform/fd_limit.h) and logs it, with a warning when it stays low; the limit it started
// with (what its children get).
uint64_t RaiseDescriptorLimit(const char* who);
std::string EnvOr(const char* name, const std::string& fallback);

// In the order `idlepool --help` lists them.
Command AddCoordinatorCommand(CLI::App& app, Common& common);  // coordinator_command.cc
Command AddWorkerCommand(CLI::App& app, Common& common);       // worker_command.cc
Command AddSubmitCommand(CLI::App& app, Common& common);       // job_commands.cc
Command AddStatusCommand(CLI::App& app, Common& common);       // job_commands.cc
Command AddWaitCommand(CLI::App& app, Common& common);         // job_commands.cc
Command AddFetchCommand(CLI::App& app, Common& common);        // job_commands.cc
Command AddWorkersCommand(CLI::App& app, Common& common);      // workers_command.cc
Command AddCancelCommand(CLI::App& app, Common& common);       // job_commands.cc
Command AddScaleCommand(CLI::App& app, Common& common);        // service_commands.cc
Command AddServicesCommand(CLI::App& app, Common& common);     // service_commands.cc
Command AddGatewayCommand(CLI::App& app, Common& common);      // gateway_command.cc
Command AddFailuresCommand(CLI::App& app, Common& common);     // failure_commands.cc
Command AddLogsCommand(CLI::App& app, Common& common);         // logs_command.cc
Command AddFramesCommand(CLI::App& app);                       // job_commands.cc
Command AddProfileCommand(CLI::App& app, Common& common);      // analysis_commands.cc
Command AddReportCommand(CLI::App& app, Common& common);       // analysis_commands.cc
Command AddTimelineCommand(CLI::App& app, Common& common);     // analysis_commands.cc
Command AddUsersCommand(CLI::App& app, Common& common);        // users_command.cc
Command AddPriorityCommand(CLI::App& app, Common& common);     // users_command.cc
Command AddUsageCommand(CLI::App& app, Common& common);        // users_command.cc
Command AddRunCommand(CLI::App& app);                          // run_command.cc
Command AddPlanCommand(CLI::App& app, Common& common);         // analysis_commands.cc
Command AddSimCommand(CLI::App& app);                          // analysis_commands.cc
Command AddLoginCommand(CLI::App& app, Common& common);        // trust_commands.cc
Command AddTokenCommand(CLI::App& app);                        // trust_commands.cc
Command AddDeleteCommand(CLI::App& app, Common& common);       // gc_commands.cc
Command AddGcCommand(CLI::App& app);                           // gc_commands.cc

}  // namespace idlepool::cli
