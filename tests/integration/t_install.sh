#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_install BUILD_DIR: `cmake --install BUILD_DIR --prefix P` into a fresh
# P, then what a new user does with it.  The file list is exactly the CLI,
# the two libraries in their private directory, man pages, docs and the
# demo; no installed file keeps a runpath into the build; as the ordinary
# user, P/bin/urxe run -- ibv_devices finds rxe0 with P's libibverbs.so.1
# loaded, and P's demo.sh (the README demo) passes; urxe run says
# precisely why it refuses when the library is missing or unreadable; the
# man pages render without a warning.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
# shellcheck source=tests/integration/install_lib.sh
. "$HERE/install_lib.sh"
urxe_it_init "$@"

P=$WORK/prefix
LIBDIR=$(cache_var CMAKE_INSTALL_LIBDIR)
[ -n "$LIBDIR" ] || die "no CMAKE_INSTALL_LIBDIR in $B/CMakeCache.txt (configured without install rules?)"

capture install cmake --install "$B" --prefix "$P"
expect_rc "cmake --install --prefix $P" 0 install
[ "$RC" -eq 0 ] || die "nothing installed"
chmod -R a+rX "$P"
note "installed $(find "$P" -type f | wc -l) files"

layout_check "prefix" "$P" "$LIBDIR"
runpath_check "prefix" "$P"
# Nothing of the build is needed any more: the prefix's own files only.
installed_run "prefix" "$P/bin/urxe" "$P/$LIBDIR/urxe"
capture ldd_cm as_user_plain ldd "$P/$LIBDIR/urxe/librdmacm.so.1"
expect_match "librdmacm.so.1 (no LD_LIBRARY_PATH) resolves its libibverbs.so.1 beside it" \
	ldd_cm "^[[:space:]]+libibverbs\.so\.1 => $P/$LIBDIR/urxe/libibverbs\.so\.1 "
installed_demo "prefix" "$P/share/urxe/demo.sh"

# --- urxe run without its library -------------------------------------------

# A copied binary: the two places it looked in, and a nonzero exit.
mkdir -p "$WORK/copy/bin"
cp "$P/bin/urxe" "$WORK/copy/bin/"
capture copied as_user "$WORK/copy/bin/urxe" run -- true
expect_rc "a copied urxe (no libraries): run fails" 1 copied
expect_match "... saying where it looked" copied \
	"^urxe: no libibverbs\.so\.1 beside this urxe: looked in $WORK/copy/$LIBDIR/urxe and $WORK/copy/lib; " err
expect_no_match "... and not that something is unreadable" copied 'not readable' err

# An install the user cannot read: said so, distinctly.
cp -a "$P" "$WORK/locked"
chmod 700 "$WORK/locked/$LIBDIR/urxe"
capture locked as_user "$WORK/locked/bin/urxe" run -- true
expect_rc "an unreadable library directory: run fails" 1 locked
expect_match "... saying the library is not readable by this user" locked \
	"^urxe: $WORK/locked/$LIBDIR/urxe/libibverbs\.so\.1 is not readable by this user" err

# --- man pages ----------------------------------------------------------------

for page in man1/urxe.1 man5/urxe-devices.conf.5; do
	f=$P/share/man/$page
	if ! command -v groff >/dev/null || ! command -v man >/dev/null; then
		fail "man pages: groff and man are needed (apt-get install man-db)"
		break
	fi
	capture "groff.${page##*/}" groff -ww -man -z "$f"
	if [ "$RC" -eq 0 ] && ! [ -s "$(err "groff.${page##*/}")" ]; then
		pass "groff -ww -man: $page without a warning"
	else
		fail "groff -ww -man: $page: exit $RC"
		show "groff.${page##*/}"
	fi
	capture "man.${page##*/}" env MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$f"
	if [ "$RC" -eq 0 ] && ! [ -s "$(err "man.${page##*/}")" ] &&
	   grep -q '^SEE ALSO' "$(out "man.${page##*/}")"; then
		pass "man --warnings -l: $page renders, down to SEE ALSO, silently"
	else
		fail "man --warnings -l: $page: exit $RC"
		show "man.${page##*/}"
	fi
done
# The commands urxe(1) must describe.
for w in 'urxe run' 'dev show' 'dev add' 'dev del' 'stats' '--json' 'doctor' '--version'; do
	check "urxe(1) describes $w" grep -qF -- "$w" "$(out man.urxe.1)"
done

finish
