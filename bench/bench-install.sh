#!/bin/bash
# Install benchmarks: bench/bench-install.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# A signed bundle of 2,000 files, about 300 MB: 200 FatELF files of three
# records each (real x86_64, i686 and aarch64 libraries of this machine and
# its cross toolchains, glued) and 1,800 data files of mixed sizes
# (pseudo-random, a third of them base64 text so that some compress). A
# private fatelfd installs it with policy native and durable commits (the
# defaults). Two ratios, each of two commands timed side by side in this
# one run, alternating, so both see the same machine and page cache:
#   (a) fatelfctl install B into a fresh root  vs  bsdtar -xf B into a
#       fresh directory followed by sync                      (<= 1.3)
#   (b) fatelfctl install B  vs  dpkg -i of a .deb of the same tree into a
#       temp root/instdir/admindir (dpkg fsyncs every file too)
#       fatelf at least 1.5x faster, i.e. ratio               (<= 0.667)
# Before every timed command (outside the timing) the output is made
# afresh: as root, a new ext4 file system on a loop image for each run
# (BENCH_FRESH_FS=0: an emptied directory instead), a daemon started on it,
# and dirty pages written back.
# Times are medians of BENCH_RUNS runs (default 5) after one warm-up run.
# Work files live in a temp dir under BENCH_DIR (default: the build dir)
# and are removed at the end (BENCH_KEEP=1 keeps them). Exits 0 if both
# ratios are within target.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
FATELFD=${FATELFD:-$builddir/daemon/fatelfd}
FATELFCTL=${FATELFCTL:-$builddir/client/fatelfctl}
RUNS=${BENCH_RUNS:-5}
for p in "$FATELF" "$FATELFD" "$FATELFCTL"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make)" >&2; exit 2; }
done
for t in bsdtar dpkg dpkg-deb minisign jq; do
	command -v "$t" >/dev/null || { echo "bench: $t is not installed" >&2; exit 2; }
done

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-install.XXXXXX") || exit 3
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
elf_list() { # DIR...: the ELF shared libraries of 8 to 400 KiB there, by name
	find "$@" -maxdepth 1 -type f -name '*.so*' -size +8k -size -400k 2>/dev/null | sort |
		while read -r f; do is_elf "$f" && echo "$f"; done
}

# ---- the tree: 20 directories of 100 files
echo "# making a 2,000-file tree in $work" >&2
mapfile -t x64 < <(elf_list /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)
mapfile -t x32 < <(elf_list /usr/i686-linux-gnu/lib)
mapfile -t a64 < <(elf_list /usr/aarch64-linux-gnu/lib)
echo "# sources: ${#x64[@]} x86_64, ${#x32[@]} i686, ${#a64[@]} aarch64 libraries" >&2
[ "${#x64[@]}" -gt 0 ] && [ "${#x32[@]}" -gt 0 ] && [ "${#a64[@]}" -gt 0 ] ||
	{ echo "bench: needs the i686 and aarch64 cross toolchains' libraries" >&2; exit 2; }

# 200 FatELF files: file k is in directory k % 20.
nfat=0
for ((k = 0; k < 200; k++)); do
	d=tree/opt/bench/d$(printf %02d $((k % 20)))
	mkdir -p "$d"
	f=$d/lib$(printf %03d "$k").so
	# Walk the x86_64 list with a stride so the sizes vary; a glue that
	# fails (two inputs of one target cannot happen here, but a library
	# the validator refuses can) tries the next one.
	for ((t = 0; t < 20; t++)); do
		i=$(( (k * 37 + t) % ${#x64[@]} ))
		if "$FATELF" glue -o "$f" "${x64[$i]}" "${x32[$(( (k + t) % ${#x32[@]} ))]}" \
			"${a64[$(( (k * 3 + t) % ${#a64[@]} ))]}" 2>/dev/null; then
			nfat=$((nfat + 1))
			break
		fi
	done
	chmod 0755 "$f"
done
[ "$nfat" -eq 200 ] || { echo "bench: glued only $nfat FatELF files" >&2; exit 1; }
fat_bytes=$(find tree -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')

# 1,800 data files sharing what is left of 300 MB, sizes spread over
# three orders of magnitude by a fixed pseudo-random sequence.
budget=$(( 300 * 1000 * 1000 - fat_bytes ))
[ "$budget" -gt 0 ] || budget=$((100 * 1000 * 1000))
awk -v n=1800 -v budget="$budget" 'BEGIN {
	srand(4); for (i = 0; i < n; i++) { w[i] = 2 ^ (rand() * 10); s += w[i] }
	for (i = 0; i < n; i++) printf "%d\n", int(budget * w[i] / s) + 1 }' >sizes
i=0
while read -r size; do
	d=tree/opt/bench/d$(printf %02d $((i % 20)))
	f=$d/data$(printf %04d "$i")
	if [ $((i % 3)) -eq 2 ]; then
		head -c $(( size * 3 / 4 + 1 )) /dev/urandom | base64 -w 76 | head -c "$size" >"$f"
	else
		head -c "$size" /dev/urandom >"$f"
	fi
	chmod 0644 "$f"
	i=$((i + 1))
done <sizes
files=$(find tree -type f | wc -l)
bytes=$(du -sb tree | cut -f1)
printf '# tree: %s files (%s FatELF, %s bytes of them), %s bytes in all\n' "$files" "$nfat" "$fat_bytes" "$bytes" >&2

# ---- the bundle, the .deb, and the daemon
minisign -G -W -f -p k.pub -s k.key >/dev/null 2>&1 || { echo "bench: minisign -G failed" >&2; exit 1; }
"$FATELF" bundle create -o b.fatbundle --name bench --version 1 --sign k.key tree >/dev/null ||
	{ echo "bench: bundle create failed" >&2; exit 1; }
mkdir -p debtree/DEBIAN
cp -a tree/. debtree/
cat >debtree/DEBIAN/control <<EOF
Package: bench
Version: 1
Architecture: all
Maintainer: fatelf benchmarks <bench@example.invalid>
Description: the install benchmark's tree
EOF
debz=
for z in zstd xz gzip; do
	if dpkg-deb --root-owner-group -Z"$z" --build debtree b.deb >/dev/null 2>&1; then
		debz=$z
		break
	fi
done
[ -n "$debz" ] || { echo "bench: dpkg-deb --build failed" >&2; exit 1; }
rm -rf debtree
printf '# bundle (zstd): %s bytes; .deb (data.tar.%s): %s bytes\n' "$(stat -c %s b.fatbundle)" \
	"$debz" "$(stat -c %s b.deb)" >&2

mkdir -p keys
cp k.pub keys/
printf '[Policy]\nPolicy=native\n[Daemon]\nRequireSignature=yes\nDurable=yes\nTrustedKeys=%s/keys\n' "$work" >fatelfd.conf
SOCK=$work/sock

# Where the timed commands write. As root, each timed command gets a
# freshly made ext4 file system (a loop-mounted image on the same disk):
# on a long-used file system, ext4's inode allocator scans past inodes the
# benchmark itself deleted a moment before (recently_deleted), which costs
# more than the install and varies from run to run. Otherwise a
# directory of the work dir is emptied between runs.
FS=$work/fs
fresh_fs=no
if [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null && [ "${BENCH_FRESH_FS:-1}" = 1 ]; then
	truncate -s 3G fs.img && mkdir -p "$FS" && mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 fs.img &&
		mount -o loop fs.img "$FS" && umount "$FS" && fresh_fs=yes
fi
echo "# output file system: $([ $fresh_fs = yes ] && echo "a fresh ext4 per run (loop image)" || echo "a directory of $work")" >&2

start_daemon() {
	local i
	"$FATELFD" --socket "$SOCK" --root "$FS/root" --state-dir "$FS/state" --config "$work/fatelfd.conf" \
		2>>daemon.log &
	DPID=$!
	for ((i = 0; i < 100; i++)); do
		"$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench: fatelfd did not start:" >&2
	cat daemon.log >&2
	exit 1
}
stop_daemon() {
	[ -n "$DPID" ] || return 0
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=
}
# fresh_output: an empty output file system (or directory) with a daemon
# serving FS/root and an empty dpkg database in FS/dr; dirty pages written
# back. Runs before every timed command, outside the timing.
fresh_output() {
	stop_daemon
	if [ $fresh_fs = yes ]; then
		mountpoint -q "$FS" && umount "$FS"
		mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 fs.img && mount -o loop fs.img "$FS" ||
			{ echo "bench: cannot make the output file system" >&2; exit 1; }
	else
		rm -rf "$FS"
		mkdir -p "$FS"
	fi
	mkdir -p "$FS/root" "$FS/state" "$FS/x" "$FS/dr/var/lib/dpkg/info" "$FS/dr/var/lib/dpkg/updates" \
		"$FS/dr/var/lib/dpkg/triggers"
	: >"$FS/dr/var/lib/dpkg/status"
	: >"$FS/dr/var/lib/dpkg/available"
	start_daemon
	sync
}
cleanup_fs() {
	stop_daemon
	[ $fresh_fs = yes ] && mountpoint -q "$FS" && umount "$FS"
}
trap 'cleanup_fs; cleanup' EXIT

ctl() { "$FATELFCTL" --socket "$SOCK" "$@"; }
dpkg_install() {
	dpkg --root="$FS/dr" --instdir="$FS/dr" --admindir="$FS/dr/var/lib/dpkg" --force-not-root \
		--force-bad-path --force-script-chrootless --log=/dev/null -i b.deb
}

# One checked install first: everything lands, fat files thinned.
fresh_output
ctl install b.fatbundle >/dev/null || { echo "bench: install failed" >&2; exit 1; }
inst_files=$(find "$FS/root" -type f | wc -l)
inst_bytes=$(find "$FS/root" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
[ "$inst_files" -eq "$files" ] || { echo "bench: installed $inst_files files, want $files" >&2; exit 1; }
is_elf "$FS/root/opt/bench/d00/lib000.so" || { echo "bench: lib000.so was not thinned to an ELF" >&2; exit 1; }
printf '# fatelf install (native): %s files, %s bytes written (fat total %s)\n' "$inst_files" "$inst_bytes" "$bytes" >&2
dpkg_install >dpkg.log 2>&1 || { echo "bench: dpkg -i failed:" >&2; tail -5 dpkg.log >&2; exit 1; }
[ "$(find "$FS/dr/opt" -type f | wc -l)" -eq "$files" ] || { echo "bench: dpkg installed the wrong number of files" >&2; exit 1; }

compare "(a) install (native)  vs  bsdtar -xf + sync" 1.3 fresh_output \
	"ctl install b.fatbundle" \
	"bsdtar -xf b.fatbundle -C \"\$FS/x\" && sync"
compare "(b) install (native)  vs  dpkg -i (.deb $debz)" 0.667 fresh_output \
	"ctl install b.fatbundle" \
	"dpkg_install"

report
