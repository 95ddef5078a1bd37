// TEMPORARY STUB (branch h2 only; see timeline_svg.h): an empty SVG that says so. Replaced by
// H3's renderer at the merge.
#include "report/timeline_svg.h"

namespace idlepool::report {

std::string RenderTimelineSvg(const v1::JobTimeline&, const SvgOptions& options) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(options.width_px) +
         "\" height=\"20\"><text x=\"4\" y=\"14\">timeline renderer not merged yet</text></svg>";
}

}  // namespace idlepool::report
