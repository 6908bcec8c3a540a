# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash disable=SC2034
#
# bench/lib.sh: what bench/run, bench/ab.sh and bench/wire_compare.sh
# share.  Sourced; the caller defines say and die (each prefixes its own
# name) and sets NAME to that name.

# bench_user USER: AS_USER becomes the command prefix that runs a program
# as USER, an ordinary user (root or an unknown user stops the bench).
bench_user() {
	local uid
	uid=$(id -u "$1" 2>/dev/null) || die "no user $1"
	[ "$uid" -ne 0 ] || die "$1 is root: the programs must run as an ordinary user"
	AS_USER=(setpriv "--reuid=$uid" "--regid=$(id -g "$1")" --clear-groups --)
}

# traffic_turn: the integration tests that move heavy traffic take turns
# through this lock (tests/integration/lib.sh); so do the benches.  The
# descriptor stays open (TRAFFIC_FD) until the bench exits.
traffic_turn() {
	local f=/tmp/urxe-it-traffic.lock start=$SECONDS
	[ -e "$f" ] || (umask 0 && : >>"$f") 2>/dev/null || true
	if ! exec {TRAFFIC_FD}<"$f"; then
		say "$NAME: note: cannot open $f: not taking turns with the tests"
		return 0
	fi
	flock -w 300 "$TRAFFIC_FD" ||
		say "$NAME: note: no turn at $f within 300 s: measuring beside other traffic"
	[ $((SECONDS - start)) -eq 0 ] ||
		say "$NAME: waited $((SECONDS - start)) s for the integration tests' traffic ($f)"
}

# check_maps PID WANT WHAT [TRIES]: the program a timeout process PID runs
# maps the library WANT (a resolved path) as its libibverbs, or the bench
# stops: its figures would be another library's.  Looks TRIES times,
# 25 ms apart (default once), until the library is mapped; a program
# already gone is not checked here (its output tells).  MAPPED=1 once
# the library was seen.
check_maps() {
	local child lib i
	for ((i = 0; i < ${4:-1}; i++)); do
		child=$(pgrep -P "$1" | head -n 1)
		[ -n "$child" ] || return 0
		lib=$(awk '$6 ~ /libibverbs\.so/ { print $6; exit }' "/proc/$child/maps" 2>/dev/null)
		if [ -n "$lib" ]; then
			[ "$lib" = "$2" ] || die "$3 (pid $child) runs with $lib, not $2: its figures would not be urxe's"
			MAPPED=1
			return 0
		fi
		[ "${4:-1}" -le 1 ] || sleep 0.025
	done
}
