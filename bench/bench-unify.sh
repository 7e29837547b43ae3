#!/bin/bash
# Unify benchmarks: bench/bench-unify.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# fatelf bundle create --from ARCH=TREE for four architectures' builds of
# one package: four directory trees of BENCH_UNIFY_FILES files (default
# 2,000) and about BENCH_UNIFY_MB MB (default 300, 10^6 bytes) each.
# In every tree:
#   - 200 ELF files that differ per architecture, under usr/bin: one
#     small program (tests/integration/hello.c, dynamically linked) built
#     once per architecture by its compiler (the first four of gcc for
#     amd64, aarch64-linux-gnu-gcc, arm-linux-gnueabihf-gcc,
#     i686-linux-gnu-gcc, riscv64-linux-gnu-gcc that are installed; fewer
#     than four skips the benchmark), each copy given its own objcopy
#     --add-section .note.salt of 96 KiB to 1 MB of real machine code: a
#     slice of this system's libraries that no other file has (copies of
#     one program would let zstd find each in the one before it, which
#     real files do not allow). About 120 MB a tree, compressing some 3x;
#   - the rest, the same data files in every tree (random bytes, so
#     nothing compresses them): one pool of random bytes cut by split into
#     equal files, in directories of 100 under usr/share/bench, copied
#     into each tree (cp; a reflink where the file system has them).
# Making the trees takes about a minute and a half on 2 cores (objcopy),
# so the defaults are the issue's full size. Rows, each a ratio of two
# commands timed side by side in this one run, alternating (bench/lib.sh
# compare), or of a measure against a fixed bound:
#   (1) fatelf bundle create -o B --name bench --version 1 --from A=tree-A ...
#       (four --from)  vs  bsdtar --zstd -cf T.tar.zst of the same four
#       trees: wall time (<= 1.3), and CPU time, user+sys of the command's
#       process (bash times) (<= 1.3). Both write a .tar.zst of the same
#       input bytes; bsdtar compresses them all, unify reads and hashes
#       them all (the index) and compresses the shared data once.
#   (2) fatelf bundle create's peak RSS (/usr/bin/time -f %M, GNU time)
#       with the default trees and with trees of 4x the entries and the
#       same bytes (the data cut into 4x as many files), each a row
#       against 128 MiB (131072 kB). Unify streams every file's bytes
#       through one 64 KiB buffer into zstd's workers, whose buffers (some
#       75 MiB with two workers at the default level, measured the same
#       at 400 and 1,600 files a tree) are the bulk of it; what grows is
#       an index entry a path and source and the manifest, under 1 kB an
#       entry. 128 MiB is those buffers plus room for the 4x trees' 32,000
#       index entries many times over, and far below what holding the
#       sources' bytes would take (1.2 GB). Both peaks, their ratio and
#       the kB per added entry are in the notes.
#   (3) the bundle's size  vs  the sum of four per-architecture
#       bsdtar --zstd -cf of the trees (<= 0.5): the data is stored once
#       and only the ELF files four times, so unifying must at least halve
#       what four separate archives take (here about 0.4 is expected:
#       the data, incompressible, is 60% of a tree's bytes, and the ELF
#       files, some 3x smaller compressed, are stored four times either
#       way).
# BENCH_BASE=DIR adds a row: unify by this build against unify by DIR's
# tools/fatelf of the same trees, side by side (<= 1.05, no slower).
# Times are medians of BENCH_RUNS runs (default 3) after one warm-up run;
# each timed command starts after the outputs are removed and sync.
# Work files live in a temp dir under BENCH_DIR (default: the build dir)
# and are removed at the end (BENCH_KEEP=1 keeps them). Exits 0 if every
# row is within its target, 1 if one is not, 2 when a tool is missing and
# 77 when fewer than four cross compilers are installed.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
RUNS=${BENCH_RUNS:-3}
NFILES=${BENCH_UNIFY_FILES:-2000}
MB=${BENCH_UNIFY_MB:-300}
NELF=200
MEM_BOUND=131072
[ -x "$FATELF" ] || { echo "bench: $FATELF is not built (make)" >&2; exit 2; }
BASE=
if [ -n "${BENCH_BASE:-}" ]; then
	BASE=$(cd "$BENCH_BASE" 2>/dev/null && pwd)/tools/fatelf
	[ -x "$BASE" ] || { echo "bench: $BENCH_BASE/tools/fatelf is not built" >&2; exit 2; }
fi
command -v bsdtar >/dev/null || { echo "bench: bsdtar is not installed (apt-get install libarchive-tools)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is not installed (apt-get install time)" >&2; exit 2; }
for t in split dd; do
	command -v "$t" >/dev/null || { echo "bench: $t is not installed" >&2; exit 2; }
done
for n in "$NFILES" "$MB"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench: not a count: $n" >&2; exit 2; }
done
[ "$NFILES" -gt $((NELF + 99)) ] || { echo "bench: BENCH_UNIFY_FILES must be at least $((NELF + 100))" >&2; exit 2; }

# ARCH (as --from names it), its compiler and objcopy
declare -A CC OBJCOPY
CC=([amd64]=gcc [arm64]=aarch64-linux-gnu-gcc [armhf]=arm-linux-gnueabihf-gcc [i386]=i686-linux-gnu-gcc
    [riscv64]=riscv64-linux-gnu-gcc)
OBJCOPY=([amd64]=x86_64-linux-gnu-objcopy [arm64]=aarch64-linux-gnu-objcopy [armhf]=arm-linux-gnueabihf-objcopy
	 [i386]=i686-linux-gnu-objcopy [riscv64]=riscv64-linux-gnu-objcopy)
arches=()
for a in amd64 arm64 armhf i386 riscv64; do
	[ "${#arches[@]}" -lt 4 ] || break
	command -v "${CC[$a]}" >/dev/null && command -v "${OBJCOPY[$a]}" >/dev/null && arches+=("$a")
done
if [ "${#arches[@]}" -lt 4 ]; then
	echo "bench: skipped: unify needs four architectures' compilers and objcopy, found ${#arches[@]} (${arches[*]:-none}); apt-get install gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf gcc-i686-linux-gnu gcc-riscv64-linux-gnu" >&2
	exit 77
fi

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-unify.XXXXXX") || exit 3
[ -n "${BENCH_KEEP:-}" ] || trap 'cd / && rm -rf "$work"' EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

# addrow LABEL A B RATIO TARGET: a row compare did not time (CPU, memory,
# size); PASS or FAIL as compare decides, FAIL when RATIO is not a number.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }
bytes_of() { find "$@" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d\n", s }'; }
t0=${EPOCHREALTIME//[!0-9]/}

# ---- the ELF files: one small program per architecture, 200 copies
# each made distinct (and 100 KB to 1 MB) by a section of real machine
# code: a slice of this system's own libraries, a slice no other file has
# (copies of one program would let zstd find each in the one before it,
# which real files do not allow)
echo "# architectures: ${arches[*]}; making $NELF ELF files each" >&2
salt_size() { echo $(((96 << 10) + (($1 * 37) % 200) * 4700)); }
need=0
for ((i = 0; i < NELF; i++)); do
	need=$((need + $(salt_size "$i")))
done
need=$((need * ${#arches[@]}))
find /usr/lib/x86_64-linux-gnu /usr/lib /usr/bin -maxdepth 1 -type f -size +64k -name '*.so*' 2>/dev/null | sort |
	xargs -d '\n' cat 2>/dev/null | head -c "$need" >corpus
[ "$(stat -c %s corpus)" -eq "$need" ] ||
	{ echo "bench: this system's libraries are fewer than $need bytes, for the ELF files' code" >&2; exit 2; }
off=0
for a in "${arches[@]}"; do
	"${CC[$a]}" -O2 -o "prog-$a" "$top/tests/integration/hello.c" 2>"cc-$a.err" ||
		{ echo "bench: ${CC[$a]} failed:" >&2; cat "cc-$a.err" >&2; exit 1; }
	mkdir -p "tree-$a/usr/bin"
	for ((i = 0; i < NELF; i++)); do
		n=$(salt_size "$i")
		dd if=corpus of=salt bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$n" status=none &&
			"${OBJCOPY[$a]}" --add-section .note.salt=salt "prog-$a" "tree-$a/usr/bin/p$(printf %03d "$i")" ||
			{ echo "bench: objcopy failed" >&2; exit 1; }
		off=$((off + n))
	done
done
rm -f salt corpus
elf_bytes=$(bytes_of $(printf 'tree-%s/usr/bin ' "${arches[@]}"))

# ---- the data: the same in every tree; DATA bytes a tree, so that the
# four trees are 4 x MB MB in all
data=$(((MB * 1000000 * 4 - elf_bytes) / 4))
[ "$data" -gt $((NFILES * 1024)) ] ||
	{ echo "bench: BENCH_UNIFY_MB=$MB leaves too little room for data beside $elf_bytes bytes of ELF files" >&2; exit 2; }
head -c "$data" /dev/urandom >pool || exit 1
# cut_data N DIR: the pool cut into N files of equal size (the remainder
# dropped), in directories of 100 under DIR/usr/share/bench
cut_data() {
	local n=$1 dir=$2 size=$(($data / $1)) d k
	for ((d = 0; d * 100 < n; d++)); do
		k=$((n - d * 100))
		[ "$k" -gt 100 ] && k=100
		mkdir -p "$dir/usr/share/bench/d$(printf %03d "$d")" || return 1
		dd if=pool bs=1M iflag=skip_bytes,count_bytes skip=$((d * 100 * size)) count=$((k * size)) status=none |
			(cd "$dir/usr/share/bench/d$(printf %03d "$d")" && split -b "$size" -a 3 -d - f) || return 1
	done
}
# put_data N: every tree's data, N files
put_data() {
	local a
	rm -rf data && cut_data "$1" data || { echo "bench: cannot cut the data" >&2; exit 1; }
	for a in "${arches[@]}"; do
		rm -rf "tree-$a/usr/share" && cp -r --reflink=auto data/usr/share "tree-$a/usr/" ||
			{ echo "bench: cannot copy the data" >&2; exit 1; }
	done
	rm -rf data
}
put_data $((NFILES - NELF))
sync
from=()
trees=()
for a in "${arches[@]}"; do
	from+=(--from "$a=tree-$a")
	trees+=("tree-$a")
done
files=$(find "${trees[@]}" -type f | wc -l)
src_bytes=$(bytes_of "${trees[@]}")
t1=${EPOCHREALTIME//[!0-9]/}
printf '# trees: %s; %s files, %s bytes (%s of them ELF files); made in %.1f s\n' "${trees[*]}" "$files" \
	"$src_bytes" "$elf_bytes" "$(awk -v n=$((10#$t1 - 10#$t0)) 'BEGIN { print n / 1e6 }')" >&2

# ---- (1) wall and CPU time
# cpu FILE CMD...: CMD, with the shell's children's CPU (bash times)
# before and after appended to FILE; no process of its own
cpu() {
	local f=$1 rc
	shift
	times >>"$f"
	"$@"
	rc=$?
	times >>"$f"
	return $rc
}
# cpu_ms FILE: the median CPU ms of the timed runs in FILE (the warm-up
# left out): user+sys of the children, the second line of each times
cpu_ms() {
	awk 'function t(x, p) { sub(/s$/, "", x); split(x, p, "m"); return p[1] * 60000 + p[2] * 1000 }
	     FNR % 4 == 2 { a = t($1) + t($2) } FNR % 4 == 0 { print t($1) + t($2) - a }' "$1" |
		tail -n +2 | median
}
unify() { "$FATELF" bundle create -o u.fatbundle --name bench --version 1 "${from[@]}"; }
tarall() { bsdtar --zstd -cf t.tar.zst "${trees[@]}"; }
rm -f cpu.a.t cpu.b.t
compare "(1) unify 4 trees  vs  bsdtar --zstd -cf" 1.3 "rm -f u.fatbundle t.tar.zst; sync" \
	"cpu cpu.a.t unify" "cpu cpu.b.t tarall"
ca=$(cpu_ms cpu.a.t)
cb=$(cpu_ms cpu.b.t)
addrow "(1) CPU ms: unify  vs  bsdtar --zstd -cf" "$ca" "$cb" "$(ratio "$ca" "$cb")" 1.3
if [ -n "$BASE" ]; then
	compare "(1) unify  vs  the same by BENCH_BASE's fatelf" 1.05 "rm -f u.fatbundle b.fatbundle; sync" \
		unify \
		"\"\$BASE\" bundle create -o b.fatbundle --name bench --version 1 \"\${from[@]}\""
	rm -f b.fatbundle
fi

# ---- (3) size: the bundle against four per-arch .tar.zst
unify >unify.out 2>&1 || { echo "bench: unify failed:" >&2; cat unify.out >&2; exit 1; }
sum=0
for a in "${arches[@]}"; do
	bsdtar --zstd -cf "t-$a.tar.zst" "tree-$a" || exit 1
	sum=$((sum + $(stat -c %s "t-$a.tar.zst")))
done
tarall || exit 1
usize=$(stat -c %s u.fatbundle)
addrow "(3) size: bundle  vs  4 per-arch .tar.zst" "$usize" "$sum" "$(ratio "$usize" "$sum")" 0.5
notes+=("(3) sizes: the sources $src_bytes bytes; the unified bundle $usize bytes; four per-arch bsdtar --zstd $sum bytes ($(for a in "${arches[@]}"; do printf '%s %s, ' "$a" "$(stat -c %s "t-$a.tar.zst")"; done | sed 's/, $//')); one bsdtar --zstd of the four trees $(stat -c %s t.tar.zst) bytes")
notes+=("(3) fatelf's report: $(tail -1 unify.out)")
rm -f t-*.tar.zst t.tar.zst

# ---- (2) peak memory, at N and at 4N entries of the same bytes
# peak ENTRIES: one unify under GNU time; its maxrss kB in hwm, its wall
# ms in wall
peak() {
	local s e
	rm -f u.fatbundle
	sync
	s=${EPOCHREALTIME//[!0-9]/}
	/usr/bin/time -f %M -o mem.txt "$FATELF" bundle create -o u.fatbundle --name bench --version 1 "${from[@]}" \
		>unify.out 2>&1 || { echo "bench: unify failed:" >&2; cat unify.out >&2; exit 1; }
	e=${EPOCHREALTIME//[!0-9]/}
	hwm=$(tail -1 mem.txt)
	wall=$(awk -v n=$((10#$e - 10#$s)) 'BEGIN { printf "%.0f", n / 1e3 }')
}
peak
hwm1=$hwm
wall1=$wall
addrow "(2) peak RSS kB, $NFILES files a tree  vs  128 MiB" "$hwm1" "$MEM_BOUND" "$(ratio "$hwm1" "$MEM_BOUND")" 1.0
n4=$((NFILES * 4))
echo "# re-cutting the data into $((n4 - NELF)) files a tree" >&2
put_data $((n4 - NELF))
sync
src4=$(bytes_of "${trees[@]}")
peak
hwm4=$hwm
addrow "(2) peak RSS kB, $n4 files a tree  vs  128 MiB" "$hwm4" "$MEM_BOUND" "$(ratio "$hwm4" "$MEM_BOUND")" 1.0
notes+=("$(awk -v h1="$hwm1" -v h4="$hwm4" -v n="$NFILES" -v b1="$src_bytes" -v b4="$src4" -v w1="$wall1" -v w4="$wall" \
	'BEGIN { printf "(2) peak RSS of unify (GNU time %%M): %d kB at %d files a tree (%d bytes), %d kB at %d (%d bytes): %.3fx the memory for 4x the entries, %.2f kB per added entry (of the 4 sources); one run each, %d ms and %d ms",
		h1, n, b1, h4, 4 * n, b4, h4 / h1, (h4 - h1) / (12 * n), w1, w4 }')")

report
rc=$?
for n in "${notes[@]}"; do
	echo "$n"
done
echo "CPU: user+sys of the command's process and its threads (bash times, the shell's children); bsdtar compresses on one thread, unify's zstd on $(nproc) workers"
exit $rc
