#!/bin/bash
# Benchmarks: bench/bench.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# Each figure is a ratio of two commands timed side by side in this one
# run, alternating, so both see the same machine, page cache and disk:
#   (a) fatelf glue of two 256 MiB ELF inputs  vs  cat a b > c     (<= 1.10)
#   (b) fatelf extract / thin of a 256 MiB record  vs  cp of 256 MiB (<= 1.10)
#   (c) fatelf validate / info on a 1 GiB fat file vs a 1 MiB one  (<= 1.5)
# Times are medians of BENCH_RUNS runs (default 11) after one warm-up run;
# for (c) each sample is BENCH_BATCH invocations (default 20) timed
# together, because one takes about a millisecond. Work files live in a
# temp dir under BENCH_DIR (default: the build dir), so every copy stays
# on one filesystem, and are removed at the end. Exits 0 if every ratio
# is within its target.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
MKFIXTURE=${MKFIXTURE:-$builddir/tests/fixtures/mkfixture}
RUNS=${BENCH_RUNS:-11}
BATCH=${BENCH_BATCH:-20}
MiB=$((1024 * 1024))

for p in "$FATELF" "$MKFIXTURE"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make; make check builds mkfixture)" >&2; exit 2; }
done

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench.XXXXXX") || exit 3
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

echo "# making inputs in $work" >&2
"$MKFIXTURE" -o a.elf --machine 62 --class 64 --data le --type exec --size $((256 * MiB)) --seed 1 || exit 1
"$MKFIXTURE" -o b.elf --machine 183 --class 64 --data le --type exec --size $((256 * MiB)) --seed 2 || exit 1
"$MKFIXTURE" -o big1.elf --machine 62 --class 64 --data le --type exec --size $((512 * MiB)) --seed 3 || exit 1
"$MKFIXTURE" -o big2.elf --machine 183 --class 64 --data le --type exec --size $((512 * MiB)) --seed 4 || exit 1
"$MKFIXTURE" -o small1.elf --machine 62 --class 64 --data le --type exec --size $((512 * 1024)) --seed 5 || exit 1
"$MKFIXTURE" -o small2.elf --machine 183 --class 64 --data le --type exec --size $((512 * 1024)) --seed 6 || exit 1
"$FATELF" glue -o ab.fat a.elf b.elf || exit 1
"$FATELF" glue -o big.fat big1.elf big2.elf || exit 1
"$FATELF" glue -o small.fat small1.elf small2.elf || exit 1
rm -f big1.elf big2.elf
# Start with the inputs written back, so no command pays for another's
# dirty pages; each copy benchmark also syncs (untimed) before each run.
sync
printf '# fat files: %s bytes, %s bytes, %s bytes\n' "$(stat -c %s ab.fat)" \
	"$(stat -c %s big.fat)" "$(stat -c %s small.fat)" >&2

compare "glue 2 x 256 MiB  vs  cat a b > c" 1.10 "rm -f out; sync" \
	"\"\$FATELF\" glue -o out a.elf b.elf" "cat a.elf b.elf > out"
compare "extract 256 MiB record  vs  cp 256 MiB" 1.10 "rm -f out; sync" \
	"\"\$FATELF\" extract -o out ab.fat aarch64" "cp b.elf out"
compare "thin to a 256 MiB record  vs  cp 256 MiB" 1.10 "rm -f out; sync" \
	"\"\$FATELF\" thin -o out ab.fat aarch64" "cp b.elf out"
compare "validate: 1 GiB fat  vs  1 MiB fat (x$BATCH)" 1.5 ":" \
	"batch $BATCH \"\$FATELF\" validate big.fat" "batch $BATCH \"\$FATELF\" validate small.fat"
compare "info: 1 GiB fat  vs  1 MiB fat (x$BATCH)" 1.5 ":" \
	"batch $BATCH \"\$FATELF\" info big.fat" "batch $BATCH \"\$FATELF\" info small.fat"

report
