# cmake/packaging.cmake — Debian packages: `cpack --config BUILD/CPackConfig.cmake`
# makes one .deb per install() component:
#   featstore          (server) bin/featstore, bin/featstore-trainer, the systemd service
#                               (/lib/systemd/system/featstore.service, the conffile
#                               /etc/featstore/featstore.json, the featstore user: packaging/)
#   libfeatstore1      (lib)    libfeatstore.so.1 and its gRPC plugin libfeatstore-grpc.so.1
#   libfeatstore-dev   (dev)    headers, libfeatstore.so, featstore.pc
# A client-only build (FS_SERVER=OFF) packages the last two only. Only the
# components listed here are packaged: tests and benchmarks install nothing,
# and anything installed without a component is left out too.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME featstore)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "featstore developers <featstore@example.org>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)        # name_version_arch.deb
# cpack's DEB generator runs the install scripts with CMAKE_INSTALL_PREFIX=/usr
# (staged elsewhere): what the packaged featstore.pc says (test_deb checks it).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev)
if(FS_SERVER)
  list(PREPEND CPACK_COMPONENTS_ALL server)
endif()
# Depends: dpkg-shlibdeps for the libraries we link, plus one package on
# another of ours at the same version (CPACK_COMPONENT_*_DEPENDS).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# featstore-trainer links libfeatstore.so.1, which no installed package has
# yet: dpkg-shlibdeps finds it here (libfeatstore1 comes from SERVER_DEPENDS below).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/client-lib)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)   # libfeatstore1: a shlibs file, ldconfig in postinst/postrm
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=") # 1.x only grows: a later 1.x serves programs built on this one

# Descriptions: the first line is the package's summary (no
# CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it above every one).
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME featstore)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION science)
set(CPACK_COMPONENT_SERVER_DEPENDS lib)
# The service (packaging/): the unit, its example configuration (a
# conffile: an upgrade keeps the operator's edits) and the maintainer
# scripts that make the featstore user and group (adduser) and tell systemd.
# Their paths are absolute, so they are EXCLUDE_FROM_ALL: only a component
# install (cpack's, into its staging directory) puts them
# there, never a plain `cmake --install --prefix DIR`.
if(FS_SERVER)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/featstore.service DESTINATION /lib/systemd/system
          COMPONENT server EXCLUDE_FROM_ALL)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/featstore.json DESTINATION /etc/featstore
          COMPONENT server EXCLUDE_FROM_ALL)
  set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/conffiles
      ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm ${PROJECT_SOURCE_DIR}/packaging/postrm)
  set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_STRICT_PERMISSION ON)
  set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS adduser) # postinst; dpkg-shlibdeps adds the libraries'
endif()
set(CPACK_COMPONENT_SERVER_DESCRIPTION "GPU feature store for GNN training: server and tools
featstore serves a graph dataset's topology and feature tables to GNN
trainers (unix:// shared memory, grpc://), and imports, generates, plans
and propagates datasets. Includes the example trainer featstore-trainer.")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libfeatstore1)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIB_DESCRIPTION "featstore client library
libfeatstore.so.1, the library GNN trainers use to sample and gather from a
featstore server, and libfeatstore-grpc.so.1, which it loads for grpc://.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libfeatstore-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_COMPONENT_DEV_DESCRIPTION "featstore client library: development files
Headers (featstore/client.h, admin.h, types.h), the libfeatstore.so link and
the pkg-config file (pkg-config featstore) for building against libfeatstore.")

include(CPack)
