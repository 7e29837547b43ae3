#!/bin/bash
# Clone benchmarks: bench/bench-reflink.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# On a file system that shares extents, thin and extract of a record cost
# the same whatever its size: the record's blocks are cloned, not copied.
# For each file system (BENCH_FS, default "xfs btrfs ext4"; each one a
# fresh loop-mounted 3 GiB sparse image, so this needs root, mkfs.xfs from
# xfsprogs and mkfs.btrfs from btrfs-progs) a 1 GiB fat file of two
# 512 MiB records is made with the project's own tools, and each ratio is
# of two commands timed side by side in this one run, alternating:
#   (a) fatelf thin -o out FAT aarch64     vs  cp --reflink=never of the
#       record's 512 MiB                    (<= 0.02 where it clones: O(1);
#                                            <= 1.10 on ext4, as bench.sh)
#   (b) fatelf extract -o out FAT aarch64  vs  the same cp  (same targets)
#   (c) where it clones: thin of the 512 MiB record  vs  thin of a 1 MiB
#       one (a fat file of two 1 MiB records): the size does not count
#       (<= 1.5, as bench.sh's validate). On a loaded machine (a) and (b)
#       meet a floor that is not the copy's: starting the process, which
#       (c) shows is all that thin costs there.
#   (d) where it clones: (a) and (b) again with /bin/true timed in each
#       round too, and its median taken off both sides: the work of thin
#       and extract against the copy's, without the start of a process
#       (its fork and exec), which on a machine where that alone costs
#       more than 2% of the copy is the floor of (a) and (b)
#       (<= 0.02). The floor is printed after the table.
#   (e) where it clones: (a) and (b) with the output made durable on both
#       sides (each command followed by coreutils "sync out", an fsync of
#       that one file): a copy is done when its bytes are on the disk, and
#       without the fsync the copy's writeback is paid in the next
#       round's SETUP, outside the timing (<= 0.02).
# BENCH_BASE=DIR adds the same rows for the fatelf of another build dir
# (for example the build before copy_range cloned), against the same cp,
# in the same run: the before-and-after figures side by side. (A recent
# kernel's copy_file_range shares extents too, within one XFS or btrfs,
# so there the figures before FICLONERANGE are alike; the clone is what
# still holds where copy_file_range copies.)
# Times are medians of BENCH_RUNS runs (default 7) after one warm-up run;
# before each timed command (outside the timing) the output is removed
# and dirty pages are written back. Work files live in a temp dir under
# BENCH_DIR (default: the build dir); images are unmounted (which frees
# their loop devices) and removed at the end. Exits 0 if every ratio is
# within its target.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
MKFIXTURE=${MKFIXTURE:-$builddir/tests/fixtures/mkfixture}
BASE_FATELF=
if [ -n "${BENCH_BASE:-}" ]; then
	BASE_FATELF=$(cd "$BENCH_BASE" 2>/dev/null && pwd)/tools/fatelf
	[ -x "$BASE_FATELF" ] || { echo "bench: $BASE_FATELF is not built" >&2; exit 2; }
fi
RUNS=${BENCH_RUNS:-7}
MiB=$((1024 * 1024))

for p in "$FATELF" "$MKFIXTURE"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make; make check builds mkfixture)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "bench: needs root, for loop-mounted file systems" >&2; exit 2; }
filesystems=()
for fs in ${BENCH_FS:-xfs btrfs ext4}; do
	if command -v "mkfs.$fs" >/dev/null; then
		filesystems+=("$fs")
	else
		echo "bench: no mkfs.$fs: skipping $fs (apt-get install xfsprogs btrfs-progs)" >&2
	fi
done
[ ${#filesystems[@]} -gt 0 ] || { echo "bench: no file system to test" >&2; exit 2; }

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-reflink.XXXXXX") || exit 3
MNT=$work/mnt
cleanup() {
	cd /
	mountpoint -q "$MNT" && umount "$MNT"
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

mkfs_for() { # FS IMAGE
	case $1 in
	xfs) mkfs.xfs -q -f "$2" ;; # reflink is on by default since xfsprogs 5.1
	btrfs) mkfs.btrfs -q -f "$2" ;;
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$2" ;;
	*) mkfs."$1" "$2" ;;
	esac >/dev/null
}

mkdir -p "$MNT"
for fs in "${filesystems[@]}"; do
	rm -f fs.img
	truncate -s 3G fs.img && mkfs_for "$fs" fs.img && mount -o loop fs.img "$MNT" ||
		{ echo "bench: cannot make and mount a $fs image" >&2; exit 1; }
	cd "$MNT" || exit 3
	echo "# $fs: making a 1 GiB fat file of two 512 MiB records in $MNT" >&2
	"$MKFIXTURE" -o x86_64.elf --machine 62 --class 64 --data le --type exec --size $((512 * MiB)) --seed 3 || exit 1
	"$MKFIXTURE" -o aarch64.elf --machine 183 --class 64 --data le --type exec --size $((512 * MiB)) --seed 4 || exit 1
	"$MKFIXTURE" -o small1.elf --machine 62 --class 64 --data le --type exec --size $MiB --seed 5 || exit 1
	"$MKFIXTURE" -o small2.elf --machine 183 --class 64 --data le --type exec --size $MiB --seed 6 || exit 1
	"$FATELF" glue -o big.fat x86_64.elf aarch64.elf || exit 1
	"$FATELF" glue -o small.fat small1.elf small2.elf || exit 1
	rm -f x86_64.elf small1.elf small2.elf
	# the fat file's own blocks, so that nothing below is shared before it starts
	cp --reflink=never big.fat big.fat.own && mv big.fat.own big.fat || exit 1
	sync
	printf '# %s: fat file %s bytes, record %s bytes\n' "$fs" "$(stat -c %s big.fat)" \
		"$(stat -c %s aarch64.elf)" >&2
	target=1.10
	# a clone is possible where cp can make one
	cp --reflink=always aarch64.elf probe 2>/dev/null && target=0.02
	rm -f probe
	"$FATELF" thin -o out big.fat aarch64 && cmp -s out aarch64.elf ||
		{ echo "bench: $fs: thin did not give the record's bytes" >&2; exit 1; }

	compare "$fs: thin 512 MiB record  vs  cp --reflink=never" $target "rm -f out; sync" \
		"\"\$FATELF\" thin -o out big.fat aarch64" "cp --reflink=never aarch64.elf out"
	compare "$fs: extract 512 MiB record  vs  cp --reflink=never" $target "rm -f out; sync" \
		"\"\$FATELF\" extract -o out big.fat aarch64" "cp --reflink=never aarch64.elf out"
	if [ "$target" = 0.02 ]; then
		compare "$fs: thin 512 MiB record  vs  thin 1 MiB record" 1.5 "rm -f out; sync" \
			"\"\$FATELF\" thin -o out big.fat aarch64" "\"\$FATELF\" thin -o out small.fat aarch64"
		compare "$fs: thin + fsync out  vs  cp + fsync out" $target "rm -f out; sync" \
			"\"\$FATELF\" thin -o out big.fat aarch64 && sync out" "cp --reflink=never aarch64.elf out && sync out"
		compare "$fs: extract + fsync out  vs  cp + fsync out" $target "rm -f out; sync" \
			"\"\$FATELF\" extract -o out big.fat aarch64 && sync out" "cp --reflink=never aarch64.elf out && sync out"
		compare_net "$fs: thin less start  vs  cp less start" $target "rm -f out; sync" \
			"\"\$FATELF\" thin -o out big.fat aarch64" "cp --reflink=never aarch64.elf out"
		compare_net "$fs: extract less start  vs  cp less start" $target "rm -f out; sync" \
			"\"\$FATELF\" extract -o out big.fat aarch64" "cp --reflink=never aarch64.elf out"
	fi
	if [ -n "$BASE_FATELF" ]; then
		compare "$fs: thin, BENCH_BASE build  vs  cp --reflink=never" 1.10 "rm -f out; sync" \
			"\"\$BASE_FATELF\" thin -o out big.fat aarch64" "cp --reflink=never aarch64.elf out"
		compare "$fs: extract, BENCH_BASE build  vs  cp --reflink=never" 1.10 "rm -f out; sync" \
			"\"\$BASE_FATELF\" extract -o out big.fat aarch64" "cp --reflink=never aarch64.elf out"
	fi
	cd "$work" || exit 3
	umount "$MNT" || exit 1
	rm -f fs.img
done

report
rc=$?
for n in "${notes[@]}"; do
	echo "$n"
done
exit $rc
