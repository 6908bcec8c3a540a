# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# bench/run's message-size sweep and its files; sourced by bench/run, which
# provides run_fg, perftest, kv, calc, say and the sizes (DUR, TPUT_S...).
#
# Section 7: urxe on loopback (root) against message size, each figure
# beside the machine's UDP limit at the same size, taken right before it:
#   - bandwidth: ib_write_bw -s S (1 QP) for S = 64 B .. 1 MiB; the limit is
#     UDP GSO+GRO throughput in datagrams of one RoCE frame's size (the
#     payload min(S, 4096) plus the 58 bytes of headers and ICRC around it),
#     counted in payload bytes, since those are what a WRITE moves;
#   - latency: ib_send_lat -s S for S = 2 B .. 32 KiB (typical); the limit is
#     half the busy-poll round trip of one UDP datagram of S + 58 bytes.
# The results go to OUT_DIR (bench/run's --out): sweep.csv, sweep.json,
# and sweep.svg drawn by bench/plot.py; the summary table likewise
# (summary.csv, summary.json).

readonly SWEEP_FRAME_OVERHEAD=58
SWEEP_ROWS=()

# sweep_udp_bw SIZE: GB/s of payload the UDP limit moves at SIZE.
sweep_udp_bw() {
	local p=$(($1 < 4096 ? $1 : 4096)) seg gbps name=sweep.udp_bw.$1
	seg=$((p + SWEEP_FRAME_OVERHEAD))
	run_fg "$name" 30 root "" "$B/bin/urxe-udp-limit" tput --time "$TPUT_S" \
		--seg "$seg"
	gbps=$(kv "$WORK/out/$name" gbps)
	[ -n "$gbps" ] || { echo ""; return; }
	calc 'sprintf("%.3f", g * p / s)' g="$gbps" p="$p" s="$seg"
}

# sweep_udp_lat SIZE: half the busy-poll UDP round trip at SIZE, in us.
sweep_udp_lat() {
	local z=$(($1 + SWEEP_FRAME_OVERHEAD)) v name=sweep.udp_lat.$1
	run_fg "$name" 60 root "" "$B/bin/urxe-udp-limit" rtt --iters "$RTT_SWEEP_N" \
		--size "$z"
	v=$(kv "$WORK/out/$name" median_us)
	[ -n "$v" ] || { echo ""; return; }
	calc 'sprintf("%.2f", v / 2)' v="$v"
}

# sweep_row KIND SIZE URXE LIMIT UNIT: one point, printed and kept.
sweep_row() {
	local ratio
	ratio=$(ratio_of "$3" "$4")
	SWEEP_ROWS+=("$1,$2,${3:-},${4:-},$5,$ratio")
	say "$(printf '  %-9s %8s B  urxe %10s %-4s  UDP limit %10s %-4s  ratio %s' \
		"$1" "$2" "${3:-FAILED}" "$5" "${4:-?}" "$5" "$ratio")"
}

sweep() {
	local s lim
	RTT_SWEEP_N=$((RTT_N / 5))
	say "  bandwidth: ib_write_bw 1 QP, -D $DUR s, beside UDP GSO+GRO in frames of that size"
	for s in 64 256 1024 4096 16384 65536 262144 1048576; do
		lim=$(sweep_udp_bw "$s")
		perftest lo root ib_write_bw "$s" 1
		sweep_row bandwidth "$s" "$PT" "$lim" GB/s
	done
	say "  latency: ib_send_lat -n $LAT_N (typical), beside half the busy-poll UDP round trip"
	for s in 2 64 256 1024 4096 16384 32768; do
		lim=$(sweep_udp_lat "$s")
		perftest lo root ib_send_lat "$s" ""
		sweep_row latency "$s" "$PT" "$lim" us
	done
}

# json_str TEXT: TEXT as a JSON string.
json_str() {
	local t=${1//\\/\\\\}
	t=${t//\"/\\\"}
	t=${t//$'\t'/ }
	printf '"%s"' "$t"
}

# write_results DIR: sweep.csv/json/svg and summary.csv/json into DIR.
write_results() {
	local dir=$1 r f i sep first=1
	local keys=(figure value limit ratio target met)
	mkdir -p "$dir" || { say "bench: cannot write $dir"; return; }
	{
		echo "kind,size_bytes,urxe,udp_limit,unit,ratio"
		for r in "${SWEEP_ROWS[@]}"; do echo "$r"; done
	} >"$dir/sweep.csv"
	{
		printf '{"schema": 1, "machine": %s, "sweep": [' "$(json_str "$MACHINE_DESC")"
		for r in "${SWEEP_ROWS[@]}"; do
			IFS=, read -ra f <<<"$r"
			[ "$first" -eq 1 ] || printf ','
			first=0
			printf '\n  {"kind": "%s", "size_bytes": %s, "urxe": %s, "udp_limit": %s, "unit": "%s"}' \
				"${f[0]}" "${f[1]}" "${f[2]:-null}" "${f[3]:-null}" "${f[4]}"
		done
		printf '\n]}\n'
	} >"$dir/sweep.json"
	{
		printf 'figure\tvalue\tlimit\tratio\ttarget\tmet\n'
		for r in "${ROWS[@]}"; do printf '%s\n' "${r%$'\t'}"; done
	} | awk -F'\t' -v OFS=, '{ for (i = 1; i <= NF; i++) { gsub(/"/, "\"\"", $i); $i = "\"" $i "\"" } print }' \
		>"$dir/summary.csv"
	{
		printf '{"schema": 1, "summary": ['
		first=1
		for r in "${ROWS[@]}"; do
			IFS=$'\t' read -ra f <<<"$r"
			[ "$first" -eq 1 ] || printf ','
			first=0
			sep=""
			printf '\n  {'
			for i in 0 1 2 3 4 5; do
				printf '%s%s: %s' "$sep" "$(json_str "${keys[$i]}")" \
					"$(json_str "${f[$i]:-}")"
				sep=", "
			done
			printf '}'
		done
		printf '\n]}\n'
	} >"$dir/summary.json"
	if python3 "$HERE/plot.py" "$dir/sweep.csv" -o "$dir/sweep.svg" \
		--title "urxe on loopback beside the UDP limit ($MACHINE_DESC)"; then
		say "  results: $dir/{sweep,summary}.{csv,json}, plot $dir/sweep.svg"
	else
		say "  results: $dir/{sweep,summary}.{csv,json} (no plot: python3 failed)"
	fi
}
