#include "cli/timeline_command.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <string>

namespace idlepool::cli {

int RunTimeline(PoolClient& client, const TimelineOptions& o) {
  auto t = client.GetJobTimeline(o.job, o.max_attempts);
  if (!t.ok()) {
    std::fprintf(stderr, "idlepool: %s\n", std::string(t.status().message()).c_str());
    return 1;
  }
  if (o.json) {
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    std::string out;
    auto st = google::protobuf::util::MessageToJsonString(*t, &out, options);
    if (!st.ok()) {
      std::fprintf(stderr, "idlepool: cannot print the timeline as JSON: %s\n",
                   std::string(st.message()).c_str());
      return 1;
    }
    std::printf("%s\n", out.c_str());
    return 0;
  }
  const int64_t t0 = t->job().submitted_ms();
  auto at = [&](int64_t ms) { return static_cast<double>(ms - t0) / 1000.0; };
  std::printf("job %llu '%s'%s %s: %d attempts, %d worker events%s\n",
              static_cast<unsigned long long>(t->job().job()), t->job().name().c_str(),
              t->job().user().empty() ? "" : (" of user " + t->job().user()).c_str(),
              t->job().state().c_str(), t->attempts_size(), t->events_size(),
              t->truncated() ? " (truncated: the newest kept)" : "");
  for (const auto& a : t->attempts()) {
    char end[32] = "";
    if (a.ended_ms() > 0) std::snprintf(end, sizeof end, "%.1f", at(a.ended_ms()));
    const std::string next =
        a.next_attempt() != 0 ? " -> attempt " + std::to_string(a.next_attempt()) : "";
    std::printf("attempt %llu task %u on %s: %s %.1f..%s s%s\n",
                static_cast<unsigned long long>(a.attempt()), a.task(), a.worker().c_str(),
                a.outcome().c_str(), at(a.started_ms()), end, next.c_str());
  }
  for (const auto& e : t->events()) {
    std::printf("%.1f s %s %s %s %s %s\n", at(e.at_ms()), e.worker().c_str(), e.kind().c_str(),
                e.state().c_str(), e.cause().c_str(), e.reason().c_str());
  }
  return 0;
}

}  // namespace idlepool::cli
