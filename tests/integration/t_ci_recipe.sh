#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# t_ci_recipe BUILD_DIR: the CI recipes of examples/ci, run for real.
# From github-actions.yml: its `run:` steps except package installation,
# in a workspace laid out as its checkout steps lay it out (the project,
# urxe's source in ./urxe: a copy of this tree), with URXE_PREFIX moved
# into the test's directory:
#   - the build-and-install step as the job's container runs it, as root:
#     here root of a user namespace of the ordinary user (unshare -r);
#   - the test step as root (when this test is root), which is how the
#     container runs it: urxe-ci.sh drops to URXE_CI_USER, the ordinary
#     user; and as the ordinary user itself, which is how the Dockerfile's
#     `USER tester` runs its CMD.
# Each must pass: the smoke test's PASS, its server mapping the prefix's
# libibverbs.so.1.  The Dockerfile cannot be built here (no docker): every
# file it copies exists, every urxe-ci.sh subcommand it runs exists, it and
# the workflow use the same script; its `deb` step is run (cpack, from the
# build above) and its package's test as the Dockerfile's CMD runs it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
CI=$SRC/examples/ci
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
urxe_it_init "$@"
command -v cmake >/dev/null || skip "no cmake"
as_user_plain unshare -r true >/dev/null 2>&1 ||
	skip "$TUSER cannot make a user namespace (unshare -r)"

YML=$CI/github-actions.yml
DOCKERFILE=$CI/Dockerfile

# --- the workflow's steps ----------------------------------------------------

# Every `run:` is one line (a block would not be taken apart here).
check "github-actions.yml: every run: step is one line" \
	bash -c '! grep -Eq "^[[:space:]]+run:[[:space:]]*[|>]" "$1"' _ "$YML"
mapfile -t STEPS < <(sed -En 's/^[[:space:]]+run:[[:space:]]+(.*)$/\1/p' "$YML")
check "github-actions.yml: three run: steps (packages, install, test)" \
	[ "${#STEPS[@]}" -eq 3 ]
check "github-actions.yml: urxe is checked out at ./urxe" \
	grep -Eq '^[[:space:]]+path:[[:space:]]+urxe$' "$YML"
check "github-actions.yml: runs in a debian:12 container" \
	grep -Eq '^[[:space:]]+container:[[:space:]]+debian:12$' "$YML"
PKG="" INSTALL="" TEST=""
for s in "${STEPS[@]}"; do
	case $s in
	"urxe/examples/ci/urxe-ci.sh packages") PKG=$s ;;
	"urxe/examples/ci/urxe-ci.sh install "*) INSTALL=$s ;;
	"urxe/examples/ci/urxe-ci.sh test "*) TEST=$s ;;
	*) fail "github-actions.yml: a step this test does not know: $s" ;;
	esac
done
[ -n "$PKG" ] && [ -n "$INSTALL" ] && [ -n "$TEST" ] ||
	die "github-actions.yml: the packages, install and test steps are not all there"
note "not run (package installation, root): $PKG"
check "the steps install to \$URXE_PREFIX (which the test moves)" \
	bash -c '[[ $1 == *"\"\$URXE_PREFIX\""* && $2 == *"\"\$URXE_PREFIX\""* ]]' _ "$INSTALL" "$TEST"

# The workspace: your project (empty here) and urxe's source as ./urxe,
# owned by the user, as a checkout the job owns.
WS=$WORK/ws
mkdir -p "$WS/urxe" "$WORK/prefix" "$WORK/build" "$WORK/out-deb"
tar -C "$SRC" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$WS/urxe" -xf -
if [ "$(id -u)" -eq 0 ]; then
	chown -R "$TUSER:" "$WS" "$WORK/prefix" "$WORK/build" "$WORK/out-deb"
fi
# Steps run from the workspace with a clean environment (lib.sh's), plus
# the job's URXE_PREFIX and the build directory install and deb share.
STEP_ENV=(URXE_PREFIX="$WORK/prefix" URXE_CI_BUILD="$WORK/build")

T_LIMIT=500 capture ci_install as_user_plain "${STEP_ENV[@]}" \
	unshare -r bash -c 'cd "$1" && eval "$2"' _ "$WS" "$INSTALL"
expect_rc "step '$INSTALL' (root of a user namespace of $TUSER)" 0 ci_install
[ "$RC" -eq 0 ] || { tail -n 30 "$(err ci_install)" | sed 's/^/#     | /'; die "urxe was not built"; }
check "... installed $WORK/prefix/bin/urxe" test -x "$WORK/prefix/bin/urxe"

# smoke_ok NAME DESC: the captured test step NAME passed, its server had
# the prefix's libibverbs.so.1 mapped.
smoke_ok() {
	expect_rc "$2" 0 "$1"
	expect_match "$2: verbs-smoke: PASS" "$1" '^verbs-smoke: PASS$'
	expect_match "$2: the server mapped the prefix's libibverbs" "$1" \
		"^verbs-smoke: the server maps $WORK/prefix/[^ ]*/urxe/libibverbs\.so\.1"
}

if [ "$(id -u)" -eq 0 ]; then
	# As the container: root, which hands the test to URXE_CI_USER.
	# (No sanitizer preload: the recipe's urxe is a release build.)
	mapfile -d '' ENV0 < <(user_env)
	capture ci_test_root timeout -k 5 120 env -i "${ENV0[@]}" "${STEP_ENV[@]}" \
		URXE_CI_USER="$TUSER" bash -c 'cd "$1" && eval "$2"' _ "$WS" "$TEST"
	smoke_ok ci_test_root "step '$TEST' as root"
	expect_match "... which ran the test as $TUSER" ci_test_root \
		"^=== urxe-ci: $TUSER runs \`urxe run -- "
fi
T_LIMIT=120 capture ci_test_user as_user_plain "${STEP_ENV[@]}" \
	bash -c 'cd "$1" && eval "$2"' _ "$WS" "$TEST"
smoke_ok ci_test_user "step '$TEST' as $TUSER"

# --- the Dockerfile --------------------------------------------------------------

# Paths the Dockerfile names: COPY sources (relative to the directory
# holding ./urxe) and the scripts its RUN and CMD lines start.
check "Dockerfile: FROM debian:12, both stages" \
	[ "$(grep -c '^FROM debian:12' "$DOCKERFILE")" -eq 2 ]
while read -r src; do
	check "Dockerfile: COPY's $src exists" test -e "$WS/$src"
done < <(sed -En 's/^COPY +([^-][^ ]*( [^ ]+)*) +[^ ]+$/\1/p' "$DOCKERFILE" | tr ' ' '\n')
check "Dockerfile: the test runs as USER tester (not root)" \
	grep -q '^USER tester$' "$DOCKERFILE"
SUBS=$(sed -n 's/^\([a-z-]*\)) .*;;$/\1/p' "$CI/urxe-ci.sh" | sort | tr '\n' ' ')
note "urxe-ci.sh subcommands: $SUBS"
while read -r sub; do
	check "Dockerfile: urxe-ci.sh $sub exists" \
		grep -qw -- "$sub" <<<"$SUBS"
done < <(grep -E '^(RUN|CMD) ' "$DOCKERFILE" |
	grep -oE 'urxe-ci\.sh"?,? *"?[a-z-]+' | sed -E 's/.*[ "]([a-z-]+)$/\1/')
check "Dockerfile and workflow call the same script (examples/ci/urxe-ci.sh)" \
	bash -c 'grep -q "/src/urxe/examples/ci/urxe-ci.sh" "$1" && grep -q "urxe/examples/ci/urxe-ci.sh" "$2"' _ "$DOCKERFILE" "$YML"
check "Dockerfile: CMD is urxe-ci.sh test /usr /ci/verbs-smoke.sh" \
	grep -q '^CMD \["/ci/urxe-ci.sh", "test", "/usr", "/ci/verbs-smoke.sh"\]$' "$DOCKERFILE"

# Its deb step (the first stage's last RUN), from the build above.
DEB_STEP=$(sed -n 's|^RUN /src/urxe/examples/ci/urxe-ci.sh deb /src/urxe /out$|deb|p' "$DOCKERFILE")
check "Dockerfile: the first stage runs urxe-ci.sh deb /src/urxe /out" [ "$DEB_STEP" = deb ]
T_LIMIT=300 capture ci_deb as_user_plain "${STEP_ENV[@]}" unshare -r \
	"$WS/urxe/examples/ci/urxe-ci.sh" deb "$WS/urxe" "$WORK/out-deb"
expect_rc "urxe-ci.sh deb (root of a user namespace)" 0 ci_deb
DEB=$(find "$WORK/out-deb" -name 'urxe_*.deb' | head -n 1)
if [ -n "$DEB" ]; then
	# The second stage installs it; here it is unpacked (no dpkg -i on
	# the host), and the CMD's test runs as the user on that /usr.
	mkdir "$WORK/root"
	dpkg-deb -x "$DEB" "$WORK/root"
	chmod 755 "$WORK/root"
	T_LIMIT=120 capture ci_deb_test as_user_plain "$CI/urxe-ci.sh" test \
		"$WORK/root/usr" "$CI/verbs-smoke.sh"
	expect_rc "the package: urxe-ci.sh test <root>/usr verbs-smoke.sh as $TUSER" 0 ci_deb_test
	expect_match "... verbs-smoke: PASS" ci_deb_test '^verbs-smoke: PASS$'
	expect_match "... with the package's libibverbs" ci_deb_test \
		"^verbs-smoke: the server maps $WORK/root/usr/[^ ]*/urxe/libibverbs\.so\.1"
else
	fail "urxe-ci.sh deb made no urxe_*.deb"
fi

finish
