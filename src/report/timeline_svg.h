// TEMPORARY STUB (branch h2 only): helper H3 writes the real src/report/timeline_svg.{h,cc} and
// library idlepool_report in parallel. This file exists so the HTTP server's
// /api/v1/jobs/N/timeline.svg builds before H3's branch is merged. At the merge, take H3's
// src/report/ entirely and delete timeline_svg_stub.cc.
#pragma once

#include <string>

#include "idlepool.pb.h"

namespace idlepool::report {

struct SvgOptions {
  int width_px = 1200;
};

[[nodiscard]] std::string RenderTimelineSvg(const v1::JobTimeline& timeline,
                                            const SvgOptions& options = {});

}  // namespace idlepool::report
