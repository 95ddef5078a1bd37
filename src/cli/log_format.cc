#include "cli/log_format.h"

#include <chrono>
#include <ctime>
#include <string>

#include "nlohmann/json.hpp"
#include "spdlog/details/log_msg.h"

namespace idlepool::cli {
namespace {

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since_epoch = msg.time.time_since_epoch();
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - secs);
    const std::time_t t = static_cast<std::time_t>(secs.count());
    std::tm utc{};
    gmtime_r(&t, &utc);
    char ts[40];
    const size_t n = std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &utc);
    std::snprintf(ts + n, sizeof ts - n, ".%03dZ", static_cast<int>(ms.count()));
    nlohmann::json j;
    j["ts"] = ts;
    const auto level = spdlog::level::to_string_view(msg.level);
    j["level"] = std::string(level.data(), level.size());
    j["logger"] = std::string(msg.logger_name.data(), msg.logger_name.size());
    j["thread"] = msg.thread_id;
    j["msg"] = std::string(msg.payload.data(), msg.payload.size());
    // Invalid UTF-8 in a message (a task's path, a peer's error) is replaced, never thrown on.
    const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(line.data(), line.data() + line.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLogFormatter>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter() {
  return std::make_unique<JsonLogFormatter>();
}

}  // namespace idlepool::cli
