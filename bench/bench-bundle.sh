#!/bin/bash
# Bundle benchmarks: bench/bench-bundle.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# A staging tree of 2,000 files, about 300 MB, made of real programs,
# libraries (some glued into FatELF files) and data files of this system. Two ratios, each of two commands timed side by side in
# this one run, alternating, so both see the same machine and page cache:
#   (a) fatelf bundle create of the tree  vs  bsdtar --zstd -cf of it  (<= 1.3)
#   (b) fatelf bundle verify of the bundle  vs  bsdtar -xOf B >/dev/null,
#       which is decompression alone                                  (<= 1.3)
# Times are medians of BENCH_RUNS runs (default 5) after one warm-up run.
# Work files live in a temp dir under BENCH_DIR (default: the build dir)
# and are removed at the end. Exits 0 if both ratios are within target.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
MKFIXTURE=${MKFIXTURE:-$builddir/tests/fixtures/mkfixture}
RUNS=${BENCH_RUNS:-5}
for p in "$FATELF" "$MKFIXTURE"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make; make check builds mkfixture)" >&2; exit 2; }
done
command -v bsdtar >/dev/null || { echo "bench: bsdtar is not installed (apt-get install libarchive-tools)" >&2; exit 2; }

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-bundle.XXXXXX") || exit 3
[ -n "${BENCH_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

# ---- the tree: 20 directories of 100 files, from real files of this system
# A vendor's tree is programs, libraries and their data, so the tree is
# made of those: x86_64 ELF files from /usr, FatELF files glued from an
# x86_64 and an aarch64 library (the aarch64 ones from the cross
# toolchain's sysroot), and data files from /usr/share. Falls back to
# mkfixture images where the system has too few.
echo "# making a 2,000-file tree in $work" >&2
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
mapfile -t elfs < <(find /usr/lib/x86_64-linux-gnu /usr/bin /usr/sbin /usr/libexec /usr/lib/gcc \
	-type f -size +16k -size -1536k 2>/dev/null | sort | while read -r f; do is_elf "$f" && echo "$f"; done)
mapfile -t arms < <(find /usr/aarch64-linux-gnu/lib -type f -name '*.so*' -size +64k 2>/dev/null | sort |
	while read -r f; do is_elf "$f" && echo "$f"; done)
mapfile -t datas < <(find /usr/share -type f -size +4k -size -512k 2>/dev/null | sort)
echo "# sources: ${#elfs[@]} ELF files, ${#arms[@]} aarch64 libraries, ${#datas[@]} data files" >&2
for d in $(seq -w 0 19); do
	mkdir -p "tree/opt/app/d$d"
done
n=0
for d in $(seq -w 0 19); do
	dir=tree/opt/app/d$d
	for i in $(seq -w 0 99); do
		f=$dir/f$i
		k=$((n / 2))
		case $((n % 25)) in
		0)
			# 80 FatELF files: an x86_64 and an aarch64 library
			if [ "${#elfs[@]}" -gt 0 ] && [ "${#arms[@]}" -gt 0 ] &&
				"$FATELF" glue -o "$f" "${elfs[$(( (k * 7) % ${#elfs[@]} ))]}" "${arms[$((k % ${#arms[@]}))]}" 2>/dev/null; then
				:
			else
				"$MKFIXTURE" -o e1 --machine 62 --size $((768 << 10)) --seed $((n * 2 + 1)) &&
					"$MKFIXTURE" -o e2 --machine 183 --size $((768 << 10)) --seed $((n * 2 + 2)) &&
					"$FATELF" glue -o "$f" e1 e2 || exit 1
			fi
			chmod 0755 "$f" ;;
		1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 1[0-5])
			# 1,200 x86_64 programs and libraries
			if [ "${#elfs[@]}" -gt 0 ]; then
				cp "${elfs[$(( (n * 13) % ${#elfs[@]} ))]}" "$f" || exit 1
			else
				"$MKFIXTURE" -o "$f" --machine 62 --size $((150 << 10)) --seed $((n + 1000)) || exit 1
			fi
			chmod 0755 "$f" ;;
		*)
			# 720 data files
			if [ "${#datas[@]}" -gt 0 ]; then
				cp "${datas[$(( (n * 17) % ${#datas[@]} ))]}" "$f" || exit 1
			else
				head -c $((40 << 10)) /dev/urandom >"$f"
			fi
			chmod 0644 "$f" ;;
		esac
		n=$((n + 1))
	done
done
rm -f e1 e2
sync
files=$(find tree -type f | wc -l)
bytes=$(du -sb tree | cut -f1)
printf '# tree: %s files, %s bytes\n' "$files" "$bytes" >&2
printf "# by kind (bytes): fatelf %s, elf+data %s\n" "$(find tree -type f -size +1500k -printf "%s\n" | awk "{s+=\$1} END {print s}")" "$(find tree -type f -size -1500k -printf "%s\n" | awk "{s+=\$1} END {print s}")" >&2

compare "bundle create  vs  bsdtar --zstd -cf" 1.3 "rm -f b.fatbundle t.tar.zst" \
	"\"\$FATELF\" bundle create -o b.fatbundle --name bench --version 1 tree" \
	"bsdtar --zstd -cf t.tar.zst -C tree ."
"$FATELF" bundle create -o b.fatbundle --name bench --version 1 tree >/dev/null || exit 1
bsdtar --zstd -cf t.tar.zst -C tree .
printf '# bundle: %s bytes; bsdtar --zstd: %s bytes\n' "$(stat -c %s b.fatbundle)" \
	"$(stat -c %s t.tar.zst)" >&2
compare "bundle verify  vs  bsdtar -xOf B >/dev/null" 1.3 ":" \
	"\"\$FATELF\" bundle verify b.fatbundle" \
	"bsdtar -xOf b.fatbundle > /dev/null"

report
