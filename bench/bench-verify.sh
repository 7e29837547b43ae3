#!/bin/bash
# Verify and remove benchmarks: bench/bench-verify.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# A package of BENCH_FILES (default 20,000) files of 4 KiB each in 100
# directories, installed by a private fatelfd into a directory of the
# work dir. Two ratios, each of two commands timed side by side,
# alternating which runs first, warm page cache on both sides:
#   (a) fatelfctl verify PKG  vs  one sha256sum over the installed files
#                                                             (<= 1.2)
#   (b) fatelfctl remove PKG  vs  rm -rf of a copy of the tree + sync
#                                                             (<= 1.2)
# Before each remove (outside the timing) the package is installed again
# (and the copy made again) and dirty pages are written back.
# Times are medians of BENCH_RUNS runs (default 3) after one warm-up run.
# BENCH_ONLY=verify or BENCH_ONLY=remove runs one of the two.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
FATELFD=${FATELFD:-$builddir/daemon/fatelfd}
FATELFCTL=${FATELFCTL:-$builddir/client/fatelfctl}
RUNS=${BENCH_RUNS:-3}
NFILES=${BENCH_FILES:-20000}
for p in "$FATELF" "$FATELFD" "$FATELFCTL"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make)" >&2; exit 2; }
done

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-verify.XXXXXX") || exit 3
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

echo "# making a $NFILES-file tree of 4 KiB files in $work" >&2
mkdir -p tree/opt/vb
per=$(( (NFILES + 99) / 100 ))
for ((d = 0; d < 100; d++)); do
	n=$(( NFILES - d * per ))
	[ "$n" -gt "$per" ] && n=$per
	[ "$n" -gt 0 ] || break
	mkdir -p "tree/opt/vb/d$d"
	head -c $((n * 4096)) /dev/urandom | (cd "tree/opt/vb/d$d" && split -a 6 -d -b 4096 - f)
done
chmod -R u=rwX,go=rX tree
[ "$(find tree -type f | wc -l)" -eq "$NFILES" ] || { echo "bench: tree is wrong" >&2; exit 1; }

"$FATELF" bundle create -o b.fatbundle --name vb --version 1 tree >/dev/null ||
	{ echo "bench: bundle create failed" >&2; exit 1; }
printf '[Daemon]\nRequireSignature=no\nDurable=yes\n' >fatelfd.conf
SOCK=$work/sock
mkdir -p root state
"$FATELFD" --socket "$SOCK" --root "$work/root" --state-dir "$work/state" --config "$work/fatelfd.conf" \
	2>>daemon.log &
DPID=$!
for ((i = 0; i < 100; i++)); do
	"$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1 && break
	sleep 0.1
done
ctl() { "$FATELFCTL" --socket "$SOCK" "$@"; }
ctl install b.fatbundle >/dev/null || { echo "bench: install failed" >&2; cat daemon.log >&2; exit 1; }
(cd root && find opt -type f | sort) >list
mapfile -t paths <list
[ "${#paths[@]}" -eq "$NFILES" ] || { echo "bench: installed ${#paths[@]} files" >&2; exit 1; }

sums() { (cd root && sha256sum -- "${paths[@]}"); }
warm() { sync; }
[ "${BENCH_ONLY:-verify}" = verify ] &&
compare "(a) verify ($NFILES x 4 KiB)  vs  sha256sum" 1.2 warm \
	"ctl verify vb" \
	"sums"

reinstall() {
	ctl files vb >/dev/null 2>&1 || ctl install b.fatbundle >/dev/null || exit 1
	rm -rf copy
	cp -a root/opt copy
	# warm the cache for both: stat every inode
	find root copy >/dev/null
	sync
}
[ "${BENCH_ONLY:-remove}" = remove ] &&
compare "(b) remove ($NFILES x 4 KiB)  vs  rm -rf + sync" 1.2 reinstall \
	"ctl remove vb" \
	"rm -rf copy && sync"

report
