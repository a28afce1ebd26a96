/// \file
/// The files of the HTML report, embedded in the command at build time by
/// report/web/embed.cmake (a generated source in the build tree): the page template
/// (report/web/page.html), its script (report/web/page.js) and the charting library
/// (Apache ECharts' dist/echarts.min.js, installed from the npm registry by .ci/setup's
/// `npm ci` in report/web/). A build made before that install has no library: `--html` then
/// refuses with a message naming the setup step.
#pragma once

#include <string>
#include <string_view>

namespace stepcast::cli::assets {

std::string page_template();
std::string page_script();
/// The library's minified script; empty when the build did not find it.
std::string chart_library();
/// "Apache ECharts 6.1.0", or empty when the build did not find the library.
std::string_view chart_library_name();

}  // namespace stepcast::cli::assets
