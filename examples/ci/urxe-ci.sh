#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# urxe-ci.sh: the work behind the CI recipes of this directory (the GitHub
# Actions workflow and the Dockerfile call it; docs/ci.md explains them).
# On Debian 12:
#
#   urxe-ci.sh packages             (root) what building urxe and running
#                                   verbs programs need, from Debian
#   urxe-ci.sh install SRC PREFIX   build urxe from SRC (in a temporary
#                                   directory) and install it under PREFIX
#   urxe-ci.sh deb SRC OUTDIR       build urxe's Debian package into OUTDIR
#   urxe-ci.sh install-deb DIR      (root) apt-get install DIR/urxe_*.deb
#   urxe-ci.sh test PREFIX CMD...   run CMD (your verbs test) with urxe's
#                                   rxe0: as this user, or, run as root, as
#                                   the ordinary user URXE_CI_USER (default
#                                   urxe-ci, added if missing)
#
# `test` first checks that the user really loads PREFIX's libibverbs.so.1
# (else a verbs program would silently use Debian's, which finds no device)
# and then runs `PREFIX/bin/urxe run -- CMD`: CMD and every program it
# starts see rxe0 on loopback.  No root, no kernel module is needed for
# that; root only installs packages.
set -euo pipefail

BUILD_PACKAGES=(build-essential cmake pkg-config file libibverbs-dev
		librdmacm-dev libev-dev libisal-dev libmnl-dev)
# The verbs programs the smoke test runs; yours may need more.
TEST_PACKAGES=(ibverbs-utils)

say() { printf '=== urxe-ci: %s\n' "$*"; }
die() { printf 'urxe-ci: %s\n' "$*" >&2; exit 1; }

apt_install() {
	[ "$(id -u)" -eq 0 ] || die "installing packages needs root"
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

# configure SRC BUILD: a release build of the library and the CLI only
# (no test suites, no benchmarks: they need more packages).
configure() {
	cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DURXE_TESTS=OFF -DURXE_BENCH=OFF
	cmake --build "$2" -j "$(nproc)"
}

# build_dir: URXE_CI_BUILD if set (install and deb then share a build),
# else a fresh temporary directory.
build_dir() {
	if [ -n "${URXE_CI_BUILD:-}" ]; then
		echo "$URXE_CI_BUILD"
	else
		mktemp -d "${TMPDIR:-/tmp}/urxe-build.XXXXXX"
	fi
}

cmd_install() {
	[ $# -eq 2 ] || die "usage: urxe-ci.sh install SRC PREFIX"
	local b
	b=$(build_dir)
	say "build $1 in $b, install to $2"
	configure "$1" "$b"
	cmake --install "$b" --prefix "$2"
}

cmd_deb() {
	[ $# -eq 2 ] || die "usage: urxe-ci.sh deb SRC OUTDIR"
	local b
	b=$(build_dir)
	configure "$1" "$b"
	(cd "$b" && cpack -G DEB)
	mkdir -p "$2"
	cp "$b"/urxe_*.deb "$2"/
	say "$(ls "$2"/urxe_*.deb)"
}

cmd_install_deb() {
	local debs=("$1"/urxe_*.deb)
	[ -e "${debs[0]}" ] || die "no urxe_*.deb in $1"
	apt_install "${debs[@]}" "${TEST_PACKAGES[@]}"
}

# as_user CMD...: CMD as this user, or as URXE_CI_USER when root.
as_user() {
	local u=${URXE_CI_USER:-urxe-ci}
	if [ "$(id -u)" -ne 0 ]; then
		"$@"
		return
	fi
	id -u "$u" >/dev/null 2>&1 ||
		useradd --system --no-create-home --home-dir /nonexistent "$u"
	[ "$(id -u "$u")" -ne 0 ] || die "URXE_CI_USER=$u is root"
	# root's HOME and XDG_CONFIG_HOME are not the user's (urxe reads its
	# device configuration from there).
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- \
		env -u XDG_CONFIG_HOME HOME="$(getent passwd "$u" | cut -d: -f6)" \
		USER="$u" LOGNAME="$u" "$@"
}

cmd_test() {
	local prefix urxe want got
	[ $# -ge 2 ] || die "usage: urxe-ci.sh test PREFIX CMD [ARGS...]"
	prefix=$(cd "$1" && pwd -P)
	shift
	urxe=$prefix/bin/urxe
	[ -x "$urxe" ] || die "no $urxe: install urxe first"
	# The directory `urxe run` puts first (it fails, saying why, when the
	# library is absent or unreadable): it must be the prefix's.
	want=$(as_user "$urxe" run -- sh -c 'echo "${LD_LIBRARY_PATH%%:*}"')
	case $want in
	"$prefix"/*) want=$want/libibverbs.so.1 ;;
	*) die "urxe run uses '$want', not a directory under $prefix" ;;
	esac
	got=$(as_user "$urxe" run -- ldd /usr/bin/ibv_devinfo |
		awk '$1 == "libibverbs.so.1" { print $3 }')
	[ "$(readlink -f "$got")" = "$(readlink -f "$want")" ] ||
		die "$(as_user id -un) would load '${got:-nothing}', not $want (is $prefix readable by that user?)"
	say "$(as_user id -un) runs \`urxe run -- $*\`, loading $want"
	as_user "$urxe" run -- "$@"
}

case ${1:-} in
packages) apt_install "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" ;;
install) shift; cmd_install "$@" ;;
deb) shift; cmd_deb "$@" ;;
install-deb) shift; cmd_install_deb "$@" ;;
test) shift; cmd_test "$@" ;;
*) sed -n '4,22s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
