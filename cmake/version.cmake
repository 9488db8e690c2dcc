# version.cmake — project(VERSION) is featstore's one version; the places that
# cannot read it at build time get it from here at configure time.
#
# - The Python package: `pip install ./client-lib/python` must work without
#   CMake, so featstore/_version.py is written here into the source tree and
#   committed (pyproject.toml and __init__.py read it). Written only when its
#   text changes; tests/checks/test_docs.py fails while it differs from the version
#   or from the committed file (a bump must commit it).
# - The public header: client.h's FS_VERSION_MAJOR/MINOR/PATCH are what a
#   program was compiled against, so they must equal the library's version;
#   a header that disagrees stops the configure, naming the lines to write.
# - Everything compiled gets PROJECT_VERSION as a definition where it needs it
#   (cli/, server/, client-lib/, tests/fuzz/make_seeds.c).
file(CONFIGURE OUTPUT ${PROJECT_SOURCE_DIR}/client-lib/python/featstore/_version.py
     CONTENT [=["""featstore's release (written by cmake/version.cmake from project(VERSION) in CMakeLists.txt)."""
__version__ = "@PROJECT_VERSION@"
]=] @ONLY)

file(STRINGS ${PROJECT_SOURCE_DIR}/include/featstore/client.h fs_header_version
     REGEX "^#define FS_VERSION_(MAJOR|MINOR|PATCH) ")
set(fs_want_version "#define FS_VERSION_MAJOR ${PROJECT_VERSION_MAJOR};#define FS_VERSION_MINOR \
${PROJECT_VERSION_MINOR};#define FS_VERSION_PATCH ${PROJECT_VERSION_PATCH}")
if(NOT fs_header_version STREQUAL fs_want_version)
  string(REPLACE ";" "\n  " fs_want_lines "${fs_want_version}")
  message(FATAL_ERROR "include/featstore/client.h's FS_VERSION_* are not project(VERSION) "
                      "${PROJECT_VERSION}: make them\n  ${fs_want_lines}")
endif()
