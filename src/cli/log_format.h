// `--log-format json`: one JSON object per log line, for machine reading (log shippers, jq):
//   {"ts":"2026-11-30T02:40:01.123Z","level":"info","logger":"idlepool","thread":1234,"msg":"..."}
// ts is the record's own time (spdlog's, UTC, milliseconds); msg is the message text, escaped
// by nlohmann::json (any bytes that are not valid UTF-8 are replaced, so every line parses).
//
// Thread safety: spdlog calls a sink's formatter under the sink's lock; the formatter keeps no
// state. Errors: none (a formatting failure would be spdlog's own error handler's).
#pragma once

#include <memory>

#include "spdlog/formatter.h"

namespace idlepool::cli {

std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter();

}  // namespace idlepool::cli
