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

# ns CMD...: runs CMD once, prints its wall time in nanoseconds.
ns() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

# batch N CMD...: runs CMD N times in a row (timed together by ns).
batch() {
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" || return 1
	done
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# compare LABEL TARGET SETUP "A CMD" "B CMD": A is fatelf, B the baseline.
# SETUP runs before every timed command (outside the timing), to remove
# outputs and write dirty pages back. Prints one table row and records PASS/FAIL.
rows=()
failures=0
compare() {
	local label=$1 target=$2 setup=$3 a=$4 b=$5 i ta=() tb=() ma mb ratio verdict
	eval "$setup"; ns eval "$a" >/dev/null
	eval "$setup"; ns eval "$b" >/dev/null
	for ((i = 0; i < RUNS; i++)); do
		eval "$setup"; ta+=("$(ns eval "$a")")
		eval "$setup"; tb+=("$(ns eval "$b")")
	done
	eval "$setup"
	ma=$(printf '%s\n' "${ta[@]}" | median)
	mb=$(printf '%s\n' "${tb[@]}" | median)
	ratio=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", a / b }')
	if awk -v r="$ratio" -v t="$target" 'BEGIN { exit !(r <= t) }'; then
		verdict=PASS
	else
		verdict=FAIL
		failures=$((failures + 1))
	fi
	rows+=("$(printf '%-44s %11.2f %11.2f %7s %7s  %s' "$label" \
		"$(awk -v n="$ma" 'BEGIN { print n / 1e6 }')" \
		"$(awk -v n="$mb" 'BEGIN { print n / 1e6 }')" "$ratio" "<=$target" "$verdict")")
	echo "${rows[-1]}" >&2
}

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

printf '\n%-44s %11s %11s %7s %7s  %s\n' "benchmark (median of $RUNS)" "fatelf ms" "baseline ms" ratio target result
for r in "${rows[@]}"; do
	echo "$r"
done
echo "$(( ${#rows[@]} - failures )) passed, $failures failed"
[ "$failures" -eq 0 ]
