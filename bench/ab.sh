#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/ab.sh BEFORE_BUILD AFTER_BUILD [--pairs N] [--quick] [--out FILE]
#             [--user] [--only PROG[:SIZE]]...: is the after build slower?  perftest on loopback,
# the two builds taking turns (before, after, before, after, ...), N pairs
# per figure (default 5, at least 5 for a reading the issue accepts), for
# the figures docs/performance.md reports: ib_write_bw 64 KiB and 4 KiB,
# ib_send_bw 64 KiB, ib_read_bw 64 KiB (1 QP, -D seconds), ib_send_lat,
# ib_write_lat, ib_read_lat 2 B (t_typical over -n iterations).
#
# This machine's speed moves from minute to minute (other guests on its
# host), so each after figure is set against the before figure measured
# just before it: per pair the ratio after/before for bandwidth and
# before/after for latency (>= 1 is "not worse" both ways); per figure
# the median of the pairs' ratios and whether it is >= 0.97.  Each pair
# is printed and written to a CSV (--out, default ./ab-YYYYmmdd-HHMMSS.csv):
# figure,unit,pair,before,after,ratio.
#
# Every server's and client's /proc/PID/maps is checked for the intended
# build's libibverbs.so.1 (as bench/run does): a run with another library
# stops the bench.  As root; the programs run as root (bench/run's
# section 2) or, with --user, as $URXE_BENCH_USER (default nobody).
# --only PROG or PROG:SIZE (repeatable) measures only those figures,
# for a bisection (e.g. --only ib_read_bw:65536).
# Benchmarks report; they do not assert: exit 0 whatever the figures, 1
# when the bench could not run.
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C

PAIRS=5 QUICK=0 OUT="" AS_USER=() WORK="" BUILDS=() PIDS=() ONLY=()
FIGS=("ib_write_bw 65536" "ib_write_bw 4096" "ib_send_bw 65536"
      "ib_read_bw 65536" "ib_send_lat 2" "ib_write_lat 2" "ib_read_lat 2")

die() { printf 'ab: FATAL: %s\n' "$*" >&2; exit 1; }
say() { printf '%s\n' "$*"; }
NAME=ab
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

usage() {
	sed -n '3,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

cleanup() {
	local rc=$? p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if [ -n "$WORK" ]; then
		if [ "$rc" -ne 0 ]; then say "ab: outputs kept in $WORK"; else rm -rf "$WORK"; fi
	fi
	exit "$rc"
}

parse_args() {
	local user=0 b
	while [ $# -gt 0 ]; do
		case $1 in
		--pairs) PAIRS=$2; shift ;;
		--quick) QUICK=1 ;;
		--out) OUT=$2; shift ;;
		--user) user=1 ;;
		--only) ONLY+=("$2"); shift ;;
		-h | --help) usage 0 ;;
		-*) usage ;;
		*) b=$(cd "$1" 2>/dev/null && pwd -P) || die "no build directory $1"
		   BUILDS+=("$b") ;;
		esac
		shift
	done
	[ "${#BUILDS[@]}" -eq 2 ] && [ "$PAIRS" -ge 1 ] 2>/dev/null || usage
	[ "$(id -u)" -eq 0 ] || die "run me as root (as bench/run)"
	if [ "$user" -eq 1 ]; then
		bench_user "${URXE_BENCH_USER:-nobody}"
	fi
	if [ "$QUICK" -eq 1 ]; then DUR=1 LAT_N=5000; else DUR=2 LAT_N=20000; fi
	OUT=${OUT:-$PWD/ab-$(date -u +%Y%m%d-%H%M%S).csv}
}

preflight() {
	local p b
	for p in ib_write_bw ib_send_bw ib_read_bw ib_send_lat ib_write_lat \
		 ib_read_lat timeout ss pgrep setpriv flock; do
		command -v "$p" >/dev/null || die "$p is not installed (perftest, iproute2, procps, util-linux)"
	done
	for b in "${BUILDS[@]}"; do
		[ -e "$b/lib/libibverbs.so.1" ] || die "$b/lib/libibverbs.so.1 is not built"
	done
	umask 022
	WORK=$(mktemp -d /tmp/urxe-ab.XXXXXX) || die "mktemp"
	chmod 755 "$WORK"
	mkdir -m 1777 "$WORK/tmp" && chmod 1777 "$WORK/tmp"
	mkdir "$WORK/out"
}

# one BUILD PROG SIZE TAG: one perftest run; sets VAL (GB/s or us) or "".
one() {
	local b=$1 prog=$2 size=$3 tag=$4 port spid cpid args env line fld secs deadline
	local rd=$WORK/run.$tag
	mkdir -m 1777 "$rd" && chmod 1777 "$rd"
	port=$((20000 + (RANDOM * 32768 + RANDOM) % 30000))
	while [ -n "$(ss -Htan "( sport = :$port )")" ]; do port=$((port + 1)); done
	args=("$prog" -d rxe0 -x 0 -F -s "$size" -p "$port")
	case $prog in
	*_bw) args+=(-q 1 -D "$DUR"); secs=$((DUR + 40)) ;;
	*) args+=(-n "$LAT_N"); secs=60 ;;
	esac
	env=("${AS_USER[@]}" env -i "PATH=$PATH" "HOME=$WORK/tmp" "TMPDIR=$WORK/tmp"
	     LC_ALL=C "URXE_RUNDIR=$rd" "URXE_DEVICES=rxe0 netdev lo" "LD_LIBRARY_PATH=$b/lib")
	VAL=""
	(cd "$WORK/tmp" && exec timeout -k 3 "$secs" "${env[@]}" "${args[@]}") >"$WORK/out/$tag.srv" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	deadline=$((SECONDS + 10))
	until [ -n "$(ss -Hltn "sport = :$port")" ]; do
		if ! kill -0 "$spid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
			kill -TERM "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
			say "    $tag: the server did not listen: $(tail -n 1 "$WORK/out/$tag.srv")"
			return
		fi
		sleep 0.05
	done
	MAPPED=0
	check_maps "$spid" "$(readlink -f "$b/lib/libibverbs.so.1")" "the $prog server" 40
	[ "$MAPPED" -eq 1 ] || die "could not see which libibverbs the $prog server ($tag) runs with"
	(cd "$WORK/tmp" && exec timeout -k 3 "$secs" "${env[@]}" "${args[@]}" 127.0.0.1) >"$WORK/out/$tag.cli" 2>&1 &
	cpid=$!
	PIDS+=("$cpid")
	check_maps "$cpid" "$(readlink -f "$b/lib/libibverbs.so.1")" "the $prog client" 40
	wait "$cpid"
	local crc=$?
	deadline=$((SECONDS + 5))
	while kill -0 "$spid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	PIDS=()
	rm -rf "$rd"
	line=$(awk '/^ *#bytes/ { getline; print; exit }' "$WORK/out/$tag.cli")
	read -ra fld <<<"$line"
	if [ "$crc" -eq 0 ] && [[ $prog == *_bw ]] && [ "${#fld[@]}" -ge 5 ]; then
		VAL=$(awk -v m="${fld[3]}" 'BEGIN { printf "%.3f", m * 1048576 / 1e9 }')
	elif [ "$crc" -eq 0 ] && [[ $prog == *_lat ]] && [ "${#fld[@]}" -ge 6 ]; then
		VAL=${fld[4]}
	else
		say "    $tag: FAILED (client exit $crc): $(grep -hE -m1 'Failed|Couldn|rror' "$WORK/out/$tag.cli" "$WORK/out/$tag.srv" | head -n 1)"
	fi
}

median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR) printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# wanted "PROG SIZE": whether --only (PROG, or PROG:SIZE) picks it; all
# are picked without --only.
wanted() {
	local o
	[ "${#ONLY[@]}" -gt 0 ] || return 0
	for o in "${ONLY[@]}"; do
		if [ "$o" = "${1% *}" ] || [ "$o" = "${1/ /:}" ]; then
			return 0
		fi
	done
	return 1
}

# figure PROG SIZE: PAIRS pairs, before then after; the median ratio.
figure() {
	local prog=$1 size=$2 i b a r unit name ratios=() med ok
	if [[ $prog == *_bw ]]; then unit=GB/s; else unit=us; fi
	if [ "$size" -ge 1024 ]; then name="$prog $((size / 1024)) KiB"; else name="$prog $size B"; fi
	say ""
	say "== $name ($unit; ratio $([ "$unit" = us ] && echo before/after || echo after/before), >= 1 is not worse)"
	for ((i = 1; i <= PAIRS; i++)); do
		one "${BUILDS[0]}" "$prog" "$size" "$prog.$size.$i.before"
		b=$VAL
		one "${BUILDS[1]}" "$prog" "$size" "$prog.$size.$i.after"
		a=$VAL
		if [ -z "$b" ] || [ -z "$a" ]; then
			say "  pair $i: before ${b:-FAILED}, after ${a:-FAILED}: no ratio"
			printf '%s,%s,%d,%s,%s,\n' "$name" "$unit" "$i" "$b" "$a" >>"$OUT"
			continue
		fi
		if [ "$unit" = us ]; then
			r=$(awk -v b="$b" -v a="$a" 'BEGIN { printf "%.3f", b / a }')
		else
			r=$(awk -v b="$b" -v a="$a" 'BEGIN { printf "%.3f", a / b }')
		fi
		ratios+=("$r")
		say "  pair $i: before $b, after $a $unit: ratio $r"
		printf '%s,%s,%d,%s,%s,%s\n' "$name" "$unit" "$i" "$b" "$a" "$r" >>"$OUT"
	done
	med=$(median "${ratios[@]}")
	if [ -z "$med" ]; then
		ok="no figure"
	else
		ok=$(awk -v m="$med" 'BEGIN { print (m >= 0.97) ? "yes" : "no" }')
	fi
	say "  $name: ratios ${ratios[*]:-none}; median ${med:--}; >= 0.97: $ok"
	SUMMARY+=("$(printf '%-22s median %-6s of %d pairs (%s)  >= 0.97: %s' "$name" "${med:--}" "${#ratios[@]}" "${ratios[*]:-}" "$ok")")
}

main() {
	local f t0=$SECONDS
	SUMMARY=()
	parse_args "$@"
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	preflight
	traffic_turn
	say "ab: before ${BUILDS[0]}, after ${BUILDS[1]}; $PAIRS pairs per figure, $([ "$QUICK" -eq 1 ] && echo quick || echo full) (bw -D $DUR s, lat -n $LAT_N)"
	say "  $(nproc) CPUs, Linux $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg); programs as $([ "${#AS_USER[@]}" -eq 0 ] && echo root || echo "${URXE_BENCH_USER:-nobody}")"
	echo "figure,unit,pair,before,after,ratio" >"$OUT"
	for f in "${FIGS[@]}"; do
		wanted "$f" || continue
		# shellcheck disable=SC2086
		figure $f
	done
	say ""
	say "== summary (median of the per-pair ratios; >= 1 is not worse)"
	printf '  %s\n' "${SUMMARY[@]}"
	say "  load average at the end $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - t0)) s; pairs in $OUT"
}

main "$@"
