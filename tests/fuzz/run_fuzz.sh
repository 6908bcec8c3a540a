#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# run_fuzz.sh FUZZER CORPUS SECONDS [LIBFUZZER-OPTION...]: the ctest fuzz.rx.
# Fuzzes for SECONDS over a temporary copy of CORPUS (the seed corpus in the
# source tree stays as it is; what the run finds is thrown away).  A crash,
# leak or sanitizer report fails the test; its input is kept as
# fuzz-artifacts/crash-* in the working directory (the build's tests dir),
# ready to become a tests/fuzz/regressions/*.hex (`xxd -p crash-X`).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 FUZZER CORPUS SECONDS [OPTION...]" >&2; exit 2; }
fuzzer=$1 corpus=$2 secs=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/urxe-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -- "$corpus"/* "$work"/ 2>/dev/null || true
mkdir -p fuzz-artifacts
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=8192 \
	-timeout=30 -print_final_stats=1 -artifact_prefix=fuzz-artifacts/ \
	"$@" "$work"
