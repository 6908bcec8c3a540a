# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Checks shared by t_install and t_deb on an installed urxe tree (a
# `cmake --install` prefix, or the Debian package's /usr extracted into a
# fresh root).  Sourced after lib.sh, never run.

# cache_var NAME: a variable of this build's CMakeCache.txt.
cache_var() {
	sed -n "s/^$1:[A-Z]*=//p" "$B/CMakeCache.txt" | head -n 1
}

# layout_check DESC PREFIX LIBDIR: PREFIX holds what an installed urxe
# needs and nothing else: the CLI, the two libraries (sonames and files,
# no link-time .so) in LIBDIR/urxe, the man pages, the demo, docs; no test
# or benchmark binary, no header.
layout_check() {
	local desc=$1 p=$2 ld=$3/urxe f rel bad=() want
	for want in bin/urxe "$ld/libibverbs.so.1" "$ld/librdmacm.so.1" \
		share/man/man1/urxe.1 share/man/man5/urxe-devices.conf.5 \
		share/urxe/demo.sh share/doc/urxe/README.md \
		share/doc/urxe/docs/urxe.md share/doc/urxe/examples/ci/urxe-ci.sh \
		share/doc/urxe/examples/02_first_write.c \
		share/doc/urxe/examples/Makefile \
		share/doc/urxe/docs/tutorial/README.md \
		share/doc/urxe/docs/tutorial/img/02-write.svg; do
		check "$desc: $want installed" test -e "$p/$want"
	done
	while IFS= read -r -d '' f; do
		rel=${f#"$p"/}
		case $rel in
		bin/urxe | share/man/man1/urxe.1 | share/man/man5/urxe-devices.conf.5 | \
		share/urxe/demo.sh | share/bash-completion/completions/urxe | \
		"$ld"/libibverbs.so.1 | "$ld"/libibverbs.so.1.[0-9]* | \
		"$ld"/librdmacm.so.1 | "$ld"/librdmacm.so.1.[0-9]* | \
		share/doc/urxe/*.md | share/doc/urxe/LICENSE | \
		share/doc/urxe/docs/*.md | share/doc/urxe/examples/ci/* | \
		share/doc/urxe/docs/tutorial/img/*.svg | \
		share/doc/urxe/examples/*.[ch] | \
		share/doc/urxe/examples/Makefile | \
		share/doc/urxe/examples/README.md) ;;
		*) bad+=("$rel") ;;
		esac
	done < <(find "$p" \( -type f -o -type l \) -print0)
	if [ "${#bad[@]}" -eq 0 ]; then
		pass "$desc: nothing else installed (no test, benchmark, header or link-time .so)"
	else
		fail "$desc: unexpected files installed: ${bad[*]}"
	fi
}

# runpath_check DESC DIR: no ELF file under DIR keeps an RPATH/RUNPATH into
# the build or source tree; librdmacm's is $ORIGIN (its libibverbs.so.1 is
# the one beside it, never the system's).
runpath_check() {
	local desc=$1 d=$2 src f rp n=0 bad=()
	src=$(cache_var CMAKE_HOME_DIRECTORY)
	while IFS= read -r -d '' f; do
		head -c 4 "$f" | grep -q $'\x7fELF' || continue
		n=$((n + 1))
		rp=$(readelf -d "$f" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p')
		case $rp in
		*"$B"* | *"$src"*) bad+=("${f#"$d"/}: $rp") ;;
		esac
		case ${f##*/} in
		librdmacm.so.1.*)
			check "$desc: ${f##*/}'s runpath is \$ORIGIN" [ "$rp" = '$ORIGIN' ] ;;
		esac
	done < <(find "$d" -type f -print0)
	if [ "$n" -ge 3 ] && [ "${#bad[@]}" -eq 0 ]; then
		pass "$desc: none of the $n ELF files has a runpath into $B or $src"
	else
		fail "$desc: $n ELF files; runpaths into the build: ${bad[*]:-none}"
	fi
}

# installed_run DESC URXE LIBDIR: as the user, URXE run -- ibv_devices lists
# rxe0, and the dynamic linker initializes LIBDIR's libibverbs.so.1 in it
# (LD_DEBUG=libs: "calling init: PATH"), nothing else of that name.
installed_run() {
	local desc=$1 urxe=$2 want=$3/libibverbs.so.1 inits
	capture inst_devices as_user LD_DEBUG=libs "$urxe" run -- ibv_devices
	expect_rc "$desc: urxe run -- ibv_devices" 0 inst_devices
	check "$desc: ibv_devices lists rxe0" \
		grep -Eq '^[[:space:]]+rxe0[[:space:]]' "$(out inst_devices)"
	inits=$(sed -n 's/.*calling init: \(.*libibverbs\.so.*\)$/\1/p' \
		"$(err inst_devices)" | sort -u)
	if [ "$inits" = "$want" ]; then
		pass "$desc: ibv_devices loaded $want and no other libibverbs"
	else
		fail "$desc: ibv_devices initialized '${inits:-no libibverbs}', not $want"
	fi
}

# installed_demo DESC DEMO: the installed demo, as the user, with its
# default directory (the prefix it is installed in).
installed_demo() {
	# (In a sanitizer build bash gets the preload too, without leak checks.)
	T_LIMIT=120 capture inst_demo as_user ASAN_OPTIONS=detect_leaks=0 bash "$2"
	expect_rc "$1: the installed demo.sh runs" 0 inst_demo
	expect_match "$1: demo: OK (ibv_rc_pingpong pair, devinfo, devices)" \
		inst_demo '^=== demo: OK: two processes exchanged RDMA traffic over rxe0'
}
