#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_deb BUILD_DIR: the Debian package.  `cpack -G DEB` from the build's
# configuration makes urxe_<version>_<arch>.deb; its control fields name
# the package, the project's version and Depends on the runtime libraries
# (each a package installed here, none of them the system's libibverbs1:
# the libraries are private); its files are the installed layout under
# /usr.  Unpacked into a fresh root (dpkg-deb -x: no maintainer script
# runs on this host), its urxe runs as the ordinary user with the
# package's own libibverbs.so.1 loaded, and its demo passes.  As root with
# URXE_TEST_DEB_HOST=1 (and no urxe package already installed), a real
# `dpkg -i` on the host too, purged afterwards.  Skipped (77) without
# cpack or dpkg-deb.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
# shellcheck source=tests/integration/install_lib.sh
. "$HERE/install_lib.sh"
command -v cpack >/dev/null || skip "no cpack"
command -v dpkg-deb >/dev/null || skip "no dpkg-deb"
urxe_it_init "$@"

LIBDIR=$(cache_var CMAKE_INSTALL_LIBDIR)
VERSION=$(cache_var CMAKE_PROJECT_VERSION)
[ -e "$B/CPackConfig.cmake" ] || die "no $B/CPackConfig.cmake"

# The package directory in $WORK: nothing lands in the build directory.
T_LIMIT=300 capture cpack cpack -G DEB --config "$B/CPackConfig.cmake" -B "$WORK/deb"
expect_rc "cpack -G DEB" 0 cpack
DEB=$(find "$WORK/deb" -maxdepth 1 -name 'urxe_*.deb' | head -n 1)
[ -n "$DEB" ] || { show cpack; die "cpack made no urxe_*.deb"; }
note "package: ${DEB##*/} ($(stat -c %s "$DEB") bytes)"

field() { dpkg-deb -f "$DEB" "$1"; }
check "Package: urxe" [ "$(field Package)" = urxe ]
check "Version: $VERSION (project())" [ "$(field Version)" = "$VERSION" ]
check "Architecture: $(dpkg --print-architecture)" \
	[ "$(field Architecture)" = "$(dpkg --print-architecture)" ]
DEPS=$(field Depends)
note "Depends: $DEPS"
for p in libc6 libev4 libisal2 libmnl0; do
	check "Depends lists $p" grep -Eq "(^|, )$p( |,|$)" <<<"$DEPS"
done
check "Depends does not list libibverbs1 (urxe's library is its own)" \
	bash -c '! grep -q libibverbs1 <<<"$1"' _ "$DEPS"
# Every package Depends names exists: it is installed here (the build
# needed it).
for p in $(sed 's/([^)]*)//g; s/[|,]/ /g' <<<"$DEPS"); do
	check "Depends' $p is a Debian package installed here" \
		bash -c '[ "$(dpkg-query -W -f="\${Status}" "$1" 2>/dev/null)" = "install ok installed" ]' _ "$p"
done

# --- unpacked into a fresh root ------------------------------------------------

R=$WORK/root
mkdir "$R"
capture extract dpkg-deb -x "$DEB" "$R"
expect_rc "dpkg-deb -x into a fresh root" 0 extract
chmod 755 "$R"
check "the package holds only /usr" [ "$(ls -A "$R")" = usr ]
layout_check "package" "$R/usr" "$LIBDIR"
runpath_check "package" "$R/usr"
installed_run "package" "$R/usr/bin/urxe" "$R/usr/$LIBDIR/urxe"
installed_demo "package" "$R/usr/share/urxe/demo.sh"

# --- a real installation, on request --------------------------------------------

if [ "${URXE_TEST_DEB_HOST:-0}" = 1 ] && [ "$(id -u)" -eq 0 ]; then
	if [ "$(dpkg-query -W -f='${Status}' urxe 2>/dev/null)" = "install ok installed" ]; then
		note "URXE_TEST_DEB_HOST: a urxe package is installed already: left alone"
	else
		capture dpkg_i dpkg -i "$DEB"
		expect_rc "dpkg -i ${DEB##*/} on this host" 0 dpkg_i
		installed_run "dpkg -i" /usr/bin/urxe "/usr/$LIBDIR/urxe"
		capture dpkg_r dpkg -P urxe
		expect_rc "dpkg -P urxe" 0 dpkg_r
		check "removed: no /usr/bin/urxe" [ ! -e /usr/bin/urxe ]
	fi
fi

finish
