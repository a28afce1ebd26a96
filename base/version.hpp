/// \file
/// stepcast's version and the git commit it was built from (`stepcast --version`). Compiled
/// from a file the build writes at every build (base/version.cmake), into its own library,
/// stepcast_version, that only the command and the Python module link.
#pragma once

namespace stepcast {

/// The project's version, e.g. "0.1.0".
const char* version();

/// The commit the build was made from: 12 hex digits, "-dirty" after them when tracked files
/// differed from it; "unknown" where the sources are not a git checkout.
const char* commit();

}  // namespace stepcast
