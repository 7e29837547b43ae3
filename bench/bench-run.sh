#!/bin/bash
# Exec overhead of fat executables: bench/bench-run.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# Needs root (it registers fatelf-run with binfmt_misc) and an x86_64 host.
# For a ~1 MiB and a ~50 MiB program (a tiny C main plus that many random
# bytes in .rodata, a real PT_LOAD segment that the kernel maps), it
# builds the thin x86_64 program and a fat file of an aarch64 build of the
# same program (cross-compiled, first) and the x86_64 one (second, so the
# host's record is not simply the first), and times, interleaved in one
# run of bench/execbench (A, B, C, A, B, C, ...):
#   (a) the thin program run directly                 (the baseline)
#   (b) the fat file run as ./fat, through binfmt_misc (flags PO)
#   (c) fatelf-run ./fat, run directly
# after one warm-up round, which leaves the selected record in the cache.
# Target (the issue's): the median overhead, median(b or c) - median(a),
# at most 2 ms. The first run of a fat file copies its record into the
# cache; its time is reported separately (the median of BENCH_FIRST_RUNS
# runs, default 10, each with an emptied cache), with no target.
#
# Times are medians of BENCH_RUNS rounds (default 500). fatelf-run is
# registered under a name of its own (fatelf-bench-PID) with the magic
# FA 70 0E 1F 01 00 and unregistered on exit; its cache is a temp dir
# (FATELF_RUN_CACHE_DIR). binfmt_misc is mounted when it is not. Work
# files live in a temp dir under BENCH_DIR (default: the build dir) and
# are removed at the end (BENCH_KEEP=1 keeps them). Exits 0 if every
# overhead is within target.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
FATELF_RUN=${FATELF_RUN:-$builddir/tools/fatelf-run}
RUNS=${BENCH_RUNS:-500}
FIRST_RUNS=${BENCH_FIRST_RUNS:-10}
TARGET_MS=2
BINFMT=/proc/sys/fs/binfmt_misc
MiB=$((1024 * 1024))

for p in "$FATELF" "$FATELF_RUN"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make)" >&2; exit 2; }
done
FATELF_RUN=$(cd "$(dirname "$FATELF_RUN")" && pwd)/$(basename "$FATELF_RUN")
for t in gcc aarch64-linux-gnu-gcc; do
	command -v "$t" >/dev/null || { echo "bench: $t is not installed" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "bench: must run as root (it registers a binfmt_misc handler)" >&2; exit 2; }
[ "$(uname -m)" = x86_64 ] || { echo "bench: needs an x86_64 host (the fat files hold x86_64 and aarch64)" >&2; exit 2; }

# binfmt_misc: mounted if needed, our entry removed on exit
if [ ! -e "$BINFMT/register" ]; then
	modprobe binfmt_misc 2>/dev/null
	mount -t binfmt_misc binfmt_misc "$BINFMT" ||
		{ echo "bench: cannot mount binfmt_misc on $BINFMT" >&2; exit 2; }
fi
entry=fatelf-bench-$$

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-run.XXXXXX") || exit 3
cleanup() {
	[ -e "$BINFMT/$entry" ] && echo -1 >"$BINFMT/$entry"
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

# The kernel tries the newest entry first, so ours wins over an older one
# with the same magic; say so when there is one, as it would be a
# different fatelf-run for anyone else.
for e in "$BINFMT"/*; do
	case ${e##*/} in register | status) continue ;; esac
	grep -qx 'magic fa700e1f0100' "$e" 2>/dev/null &&
		echo "# note: binfmt_misc entry ${e##*/} also handles FatELF ($(sed -n 's/^interpreter //p' "$e")); ours is newer and is used" >&2
done
printf '%s' ":$entry:M::"'\xfa\x70\x0e\x1f\x01\x00'"::$FATELF_RUN:PO" >"$BINFMT/register" ||
	{ echo "bench: cannot register $FATELF_RUN with binfmt_misc" >&2; exit 2; }
echo "# registered binfmt_misc entry $entry: $(tr '\n' ' ' <"$BINFMT/$entry")" >&2

export FATELF_RUN_CACHE_DIR=$work/cache
mkdir -m 0700 "$FATELF_RUN_CACHE_DIR" || exit 3

gcc -O2 -o execbench "$top/bench/execbench.c" || { echo "bench: cannot build bench/execbench.c" >&2; exit 1; }

# The program: main reads one byte of the blob, which .incbin places in
# .rodata, so the blob is part of the read-only PT_LOAD segment.
cat >prog.c <<'EOF'
extern const unsigned char blob_start[], blob_end[];
__asm__(".section .rodata.blob,\"a\"\n"
	".globl blob_start\nblob_start:\n"
	".incbin \"blob.bin\"\n"
	".globl blob_end\nblob_end:\n"
	".previous\n");
int main(void)
{
	volatile unsigned char c = blob_start[(blob_end - blob_start) / 2];
	(void)c;
	return 0;
}
EOF

# ms NS: nanoseconds as milliseconds
ms() { awk -v n="$1" 'BEGIN { printf "%.3f", n / 1e6 }'; }
# field LINE KEY: the value after KEY in an execbench line
field() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' <<<"$1"; }

# row LABEL THIN_MS FAT_MS FAT_P90_MS RATIO OVERHEAD_MS PAIRED_MS
row() {
	local verdict
	if awk -v o="$6" -v t="$TARGET_MS" 'BEGIN { exit !(o <= t) }'; then
		verdict=PASS
	else
		verdict=FAIL
		failures=$((failures + 1))
	fi
	rows+=("$(printf '%-34s %8s %8s %8s %7s %9s %9s %7s  %s' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "<=$TARGET_MS" "$verdict")")
	echo "${rows[-1]}" >&2
}
note() {
	rows+=("$(printf '%-34s %s' "$1" "$2")")
	echo "${rows[-1]}" >&2
}

for size in 1 50; do
	d=$work/s$size
	mkdir -p "$d" && cd "$d" || exit 3
	echo "# ${size} MiB: building the x86_64 and aarch64 programs" >&2
	head -c $((size * MiB)) /dev/urandom >blob.bin
	cp ../prog.c .
	gcc -O2 -o "app$size" prog.c || exit 1
	aarch64-linux-gnu-gcc -O2 -o "app$size.aarch64" prog.c || exit 1
	rm -f blob.bin
	"$FATELF" glue -o "fat$size" "app$size.aarch64" "app$size" || exit 1
	thin=$d/app$size
	fat=$d/fat$size
	printf '# thin %s bytes, fat %s bytes (aarch64 + x86_64)\n' "$(stat -c %s "$thin")" "$(stat -c %s "$fat")" >&2
	"$thin" && "$fat" && "$FATELF_RUN" "$fat" ||
		{ echo "bench: the programs do not run: thin $thin, fat $fat" >&2; exit 1; }

	# The first run: each sample starts from an empty cache.
	firsts=()
	for ((i = 0; i < FIRST_RUNS; i++)); do
		rm -rf "${FATELF_RUN_CACHE_DIR:?}"/*
		out=$("$work/execbench" -w 0 1 "$thin" -- "$FATELF_RUN" "$fat") || exit 1
		firsts+=("$(awk '$1 == "cmd" && $2 == 1 { print $6 * 1e6 }' <<<"$out")")
	done
	first=$(printf '%.0f\n' "${firsts[@]}" | median)
	# the copies' writeback must not land in the timed runs
	sync

	which=$("$FATELF_RUN" --which "$fat") || { echo "bench: fatelf-run --which $fat failed" >&2; exit 1; }
	sed 's/^/# fatelf-run --which: /' <<<"$which" >&2
	cached=$(sed -n 's/^cache \(.*\) (new)$/\1/p; t; s/^cache //p' <<<"$which")
	before=$(stat -c '%d:%i %Y' "$cached" 2>/dev/null)

	out=$("$work/execbench" "$RUNS" "$thin" -- "$fat" -- "$FATELF_RUN" "$fat") || exit 1
	sed 's/^/# execbench: /' <<<"$out" >&2
	after=$(stat -c '%d:%i %Y' "$cached" 2>/dev/null)
	if [ -z "$before" ] || [ "$before" != "$after" ]; then
		echo "bench: the cache entry $cached was not reused (before: '$before', after: '$after')" >&2
		failures=$((failures + 1))
	fi

	a=$(grep '^cmd 0 ' <<<"$out")
	b=$(grep '^cmd 1 ' <<<"$out")
	c=$(grep '^cmd 2 ' <<<"$out")
	vb=$(grep '^vs 1 ' <<<"$out")
	vc=$(grep '^vs 2 ' <<<"$out")
	row "${size} MiB: ./fat (binfmt_misc)" "$(field "$a" median_ms)" "$(field "$b" median_ms)" \
		"$(field "$b" p90_ms)" "$(field "$vb" ratio)" "$(field "$vb" diff_ms)" "$(field "$vb" paired_diff_ms)"
	row "${size} MiB: fatelf-run ./fat" "$(field "$a" median_ms)" "$(field "$c" median_ms)" \
		"$(field "$c" p90_ms)" "$(field "$vc" ratio)" "$(field "$vc" diff_ms)" "$(field "$vc" paired_diff_ms)"
	note "${size} MiB: first run (fills cache)" "$(ms "$first") ms (median of $FIRST_RUNS, each with an empty cache)"
	cd "$work" || exit 3
done

printf '\n%-34s %8s %8s %8s %7s %9s %9s %7s  %s\n' "exec, median of $RUNS (ms)" thin fat "fat p90" ratio overhead paired target result
for r in "${rows[@]}"; do
	echo "$r"
done
echo "overhead = median(fat) - median(thin); paired = median of the per-round differences"
npass=$(printf '%s\n' "${rows[@]}" | grep -c ' PASS$')
echo "$npass passed, $failures failed"
[ "$failures" -eq 0 ]
