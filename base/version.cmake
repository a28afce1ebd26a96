# Writes OUT, the definitions of base/version.hpp: VERSION and the commit of the checkout at
# SOURCE_DIR (git rev-parse; "-dirty" when tracked files differ from it; "unknown" where there
# is no git checkout or no git). Run at every build; the file is rewritten only when its text
# changes, so an unchanged commit rebuilds nothing.
# cmake -DSOURCE_DIR=... -DOUT=... -DVERSION=... -P base/version.cmake
set(commit "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND head)
    set(commit "${head}")
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0 AND changes)
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(text "// Written by base/version.cmake at build time; do not edit.\n#include \"base/version.hpp\"\n\nnamespace stepcast {\n\nconst char* version() { return \"${VERSION}\"; }\n\nconst char* commit() { return \"${commit}\"; }\n\n}  // namespace stepcast\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
