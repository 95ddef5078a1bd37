// idlepool: one binary for the coordinator, the worker and every client subcommand. Each
// subcommand lives in its own file (cli/command.h lists them); main parses the command line,
// sets up logging, reads the token file and runs the subcommand that was given.
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/log_format.h"
#include "platform/gpu_probe.h"
#include "platform/process.h"
#include "sandbox/agent.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace {

const char* kVersion = IDLEPOOL_VERSION;

std::vector<idlepool::cli::Command> AddCommands(CLI::App& app, idlepool::cli::Common& common) {
  using namespace idlepool::cli;
  return {AddCoordinatorCommand(app, common), AddWorkerCommand(app, common),
          AddSubmitCommand(app, common),      AddStatusCommand(app, common),
          AddWaitCommand(app, common),        AddFetchCommand(app, common),
          AddWorkersCommand(app, common),     AddCancelCommand(app, common),
          AddScaleCommand(app, common),       AddServicesCommand(app, common),
          AddGatewayCommand(app, common),     AddFailuresCommand(app, common),
          AddLogsCommand(app, common),        AddFramesCommand(app),
          AddProfileCommand(app, common),     AddReportCommand(app, common),
          AddTimelineCommand(app, common),    AddRunCommand(app),
          AddPlanCommand(app, common),        AddSimCommand(app),
          AddLoginCommand(app, common),       AddTokenCommand(app),
          AddDeleteCommand(app, common),      AddGcCommand(app),
          AddUsersCommand(app, common),       AddPriorityCommand(app, common),
          AddUsageCommand(app, common)};
}

void SetUpLogging(const idlepool::cli::Common& common) {
  spdlog::set_level(spdlog::level::from_str(common.log_level));
  spdlog::set_default_logger(spdlog::stderr_color_mt("idlepool"));
  if (common.log_format == "json") spdlog::set_formatter(idlepool::cli::MakeJsonLogFormatter());
  spdlog::set_level(spdlog::level::from_str(common.log_level));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == idlepool::platform::kGpuProbeSubcommand) {
    idlepool::platform::GpuProbeMain(argc, argv);  // the worker's discovery child; exits
  }
  if (argc > 1 && std::string_view(argv[1]) == idlepool::sandbox::kAgentSubcommand) {
    idlepool::sandbox::AgentMain();  // a slot's sandbox agent, started by the worker; exits
  }
  idlepool::platform::IgnoreSigpipe();
  CLI::App app{"idlepool: pool the idle machines of an office, lab or home for embarrassingly "
               "parallel work"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  // Options of the app itself (--log-level, --log-format) may come after the subcommand too:
  // subcommands created below inherit this and pass options they do not know up to the app.
  app.fallthrough();
  idlepool::cli::Common common;
  common.coordinator = idlepool::cli::EnvOr("IDLEPOOL_COORDINATOR", "");
  common.token = idlepool::cli::EnvOr("IDLEPOOL_TOKEN", "");
  app.add_option("--log-level", common.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_option("--log-format", common.log_format,
                 "text, or json: one JSON object per line (ts, level, logger, thread, msg)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  const std::vector<idlepool::cli::Command> commands = AddCommands(app, common);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every command-line error is bad input: exit 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  SetUpLogging(common);
  if (!common.token_file.empty()) {
    std::ifstream in(common.token_file);
    std::getline(in, common.token);
  }
  for (const auto& c : commands) {
    if (*c.sub) return c.run();
  }
  return 0;
}
