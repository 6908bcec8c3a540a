# SPDX-License-Identifier: BSD-2-Clause
# Installation and the Debian package.
#
#   bin/urxe                        the CLI
#   <libdir>/urxe/libibverbs.so.1   the drop-in libraries, in a directory of
#   <libdir>/urxe/librdmacm.so.1    their own: nothing but `urxe run` (or an
#                                   explicit LD_LIBRARY_PATH) puts them in
#                                   front of the system's rdma-core
#   share/man/man1/urxe.1, share/man/man5/urxe-devices.conf.5
#   share/doc/urxe/                 README, docs/*.md, docs/tutorial, examples, demo.sh
#   share/doc/urxe/examples/        the tutorial's sources, their Makefile
#   share/bash-completion/completions/urxe   (when tools/ has it)
#
# Tests and benchmarks are never installed.  `cpack -G DEB` in the build
# directory packages the same files under /usr (docs/urxe.md, "Installed
# layout").
include(GNUInstallDirs)

set(URXE_PRIVATE_LIBDIR ${CMAKE_INSTALL_LIBDIR}/urxe)

# Where `urxe run` finds the installed libraries: relative to the binary,
# so that `cmake --install --prefix P` (which picks the prefix after the
# build) and a package relocated to /usr both work.
file(RELATIVE_PATH URXE_LIBDIR_FROM_BIN
  ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_PREFIX}/${URXE_PRIVATE_LIBDIR})
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR} OR IS_ABSOLUTE ${CMAKE_INSTALL_BINDIR})
  message(WARNING "An absolute CMAKE_INSTALL_LIBDIR or BINDIR: `urxe run` "
    "finds the libraries only when installed under ${CMAKE_INSTALL_PREFIX}")
endif()
target_compile_definitions(urxe PRIVATE
  URXE_LIBDIR_FROM_BIN="${URXE_LIBDIR_FROM_BIN}")

install(TARGETS urxe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Only what a program loads: the sonames and their files, no link-time
# libibverbs.so (nothing should link against the private copy).
install(TARGETS ibverbs rdmacm
  LIBRARY DESTINATION ${URXE_PRIVATE_LIBDIR} NAMELINK_SKIP)
# librdmacm.so.1 needs urxe's libibverbs.so.1, its neighbour, never the
# system's: $ORIGIN replaces the build tree's runpath.
set_target_properties(rdmacm PROPERTIES INSTALL_RPATH "$ORIGIN")

install(FILES docs/man/urxe.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES docs/man/urxe-devices.conf.5
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB URXE_DOCS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${URXE_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
# The tutorial, with its pictures: it reads the installed examples.
install(DIRECTORY docs/tutorial DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
  FILES_MATCHING PATTERN "*.md" PATTERN "*.svg")
install(DIRECTORY examples/ci DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
  USE_SOURCE_PERMISSIONS)
# The tutorial's programs as documentation: sources and a Makefile.
file(GLOB URXE_EXAMPLE_SOURCES ${PROJECT_SOURCE_DIR}/examples/*.c)
install(FILES ${URXE_EXAMPLE_SOURCES} examples/common.h examples/Makefile
  examples/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(PROGRAMS tests/integration/demo.sh
  DESTINATION ${CMAKE_INSTALL_DATADIR}/urxe)
# The completion comes with the CLI's newer commands; until then, none.
if(EXISTS ${PROJECT_SOURCE_DIR}/tools/urxe.bash-completion)
  install(FILES tools/urxe.bash-completion
    DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
    RENAME urxe)
endif()

# --- cpack -G DEB ------------------------------------------------------------
set(CPACK_PACKAGE_NAME urxe)
set(CPACK_PACKAGE_VENDOR urxe)
set(URXE_PACKAGE_CONTACT "urxe developers <urxe@invalid>" CACHE STRING
  "The Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT ${URXE_PACKAGE_CONTACT})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "software RoCE v2 RDMA device in user space")
# (CPack puts the summary first and indents these lines.)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "A drop-in libibverbs.so.1 (and librdmacm.so.1): unmodified verbs programs
started with `urxe run -- PROGRAM` find a RoCE v2 device, rxe0, on
loopback, with no kernel module and no root.  The libraries live in a
private directory and never replace the system's rdma-core.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Depends from the ELF files (libc6, libev4, libisal2, libmnl0); the
# libraries' own libibverbs.so.1 resolves inside the package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
  ${CMAKE_BINARY_DIR}/lib)
# libpcap is dlopen()ed by the packet backend alone; the verbs tools run
# the demo.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libpcap0.8, ibverbs-utils")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "rdmacm-utils, perftest")
# /usr/lib/urxe is not searched by the loader: the ldconfig that CPack's
# postinst runs (it sees a library under /usr/lib) finds nothing of ours.
include(CPack)
