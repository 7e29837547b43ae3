#!/bin/bash
# Scale benchmarks of fatelfd: bench/bench-scale.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# Packages of many small files: N files of 4 KiB of random bytes, in
# directories of 1,000, made into signed bundles (version 1 and, for the
# upgrade, version 2 in which 1% of the files changed). A private fatelfd
# (policy native, durable commits, signature required) works on a fresh
# loop-mounted ext4 for every timed command, as in bench-install.sh. Each
# ratio is of two commands timed side by side in this one run, alternating:
#   (1) for N in BENCH_SCALE_COUNTS (default "2000 20000"; add 200000 to
#       see the largest): fatelfctl install into a fresh root  vs  bsdtar
#       -xf of the same bundle into a fresh directory + sync: wall time
#       (<= 1.2), and CPU time (<= 1.5) of the same runs: fatelfd's
#       (utime+stime+cutime+cstime of /proc/PID/stat, before and after)
#       plus fatelfctl's, against bsdtar's and sync's (user+sys of the
#       shell's children, bash `times`). The spread of each ratio across N
#       (half the range over the middle; the ratios should be within +-10%
#       of each other) is a row too, once two N were measured.
#   (2) with version 1 of the BENCH_SCALE_N-file package (default 20,000)
#       installed: fatelfctl install of version 2 (an upgrade, 1% of the
#       files changed)  vs  a fresh install of version 2 by a second
#       daemon into a fresh root on the same file system (<= 0.2). The
#       bytes the upgrade wrote (fatelfd's write_bytes of /proc/PID/io, and
#       the loop device's sectors written, each before and after, with a
#       sync and the daemon's idle-time WAL checkpoint; see settle)
#       against the package's size go to the notes, and what the
#       store's log took (bench/store-census.py: its pages, the table or
#       index of each, and the 4 KiB blocks of the database they land in).
#   (3) fatelfctl verify PKG  vs  sha256sum over the same installed files
#       (one xargs -0 over a file list); the page cache is kept warm for
#       both (no drop; each side runs once before the timed rounds)
#       (<= 1.2).
#   (4) fatelfctl remove PKG  vs  rm -rf of the same installed tree + sync
#       (<= 1.2).
#   (5) fatelfd's peak RSS (VmHWM of a daemon started just for that
#       install) while it installs the N-file package: a row per N against
#       128 MiB (131072 kB), the ratio kB / 131072 (<= 1.0).
# A bundle that cannot be made or installed is a FAIL row with the error
# (its message in the notes), and the other rows go on. A package may
# have 200,000 entries (files and directories), the bundle limit: an N
# whose files and directories would pass it (N=200000 would be 200,203
# entries) gets as many files as fit, 199,797 for N=200000, said in the
# notes. BENCH_BASE=DIR runs every row again
# with the fatelfd and fatelfctl of another build dir (the bundles are
# made by this one's fatelf), labelled "base:". Needs root (loop mounts).
# Times are medians of BENCH_RUNS runs (default 3) after one warm-up run.
# Work files live in a temp dir under BENCH_DIR (default: the build dir)
# and are removed at the end (BENCH_KEEP=1 keeps them). Exits 0 if every
# ratio is within its target.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
THIS_FATELFD=${FATELFD:-$builddir/daemon/fatelfd}
THIS_FATELFCTL=${FATELFCTL:-$builddir/client/fatelfctl}
RUNS=${BENCH_RUNS:-3}
COUNTS=${BENCH_SCALE_COUNTS:-2000 20000}
UPN=${BENCH_SCALE_N:-20000}
for p in "$FATELF" "$THIS_FATELFD" "$THIS_FATELFCTL"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make)" >&2; exit 2; }
done
builds=(this)
if [ -n "${BENCH_BASE:-}" ]; then
	basedir=$(cd "$BENCH_BASE" 2>/dev/null && pwd) || { echo "bench: no build dir $BENCH_BASE" >&2; exit 2; }
	for p in "$basedir/daemon/fatelfd" "$basedir/client/fatelfctl"; do
		[ -x "$p" ] || { echo "bench: $p is not built" >&2; exit 2; }
	done
	builds+=(base)
fi
for t in bsdtar minisign mkfs.ext4 split sha256sum xargs timeout; do
	command -v "$t" >/dev/null || { echo "bench: $t is not installed" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "bench: needs root, for loop-mounted file systems" >&2; exit 2; }
for n in $COUNTS $UPN; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench: not a count: $n" >&2; exit 2; }
done

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-scale.XXXXXX") || exit 3
FS=$work/fs
SOCK=$work/sock
SOCK2=$work/sock2
DPID=
DPID2=
stop_daemons() {
	local p
	for p in "$DPID" "$DPID2"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	DPID=
	DPID2=
}
cleanup() {
	cd /
	stop_daemons
	mountpoint -q "$FS" && umount "$FS"
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

# addrow LABEL A B RATIO TARGET: a row of the table that compare did not
# time (CPU, spread, memory), with its own columns; PASS or FAIL as
# compare decides, FAIL when RATIO is not a number.
skipped=()

# ---- the trees and bundles
# mktree N DIR: N files of 4 KiB of random bytes under DIR/opt/scale, in
# directories of 1,000 files; one head and one split per directory.
# files_of N: the files of the N-file tree, within the bundle limit of
# 200,000 entries with its directories (one a 1,000 files, opt and
# opt/scale, and the root)
files_of() {
	local n=$1 dirs=$((($1 + 999) / 1000 + 3))
	if [ $((n + dirs)) -gt 200000 ]; then
		n=$((200000 - dirs))
	fi
	echo "$n"
}
mktree() {
	local n d k dir=$2
	n=$(files_of "$1")
	for ((d = 0; d * 1000 < n; d++)); do
		k=$((n - d * 1000))
		[ "$k" -gt 1000 ] && k=1000
		mkdir -p "$dir/opt/scale/d$(printf %03d "$d")" || return 1
		head -c $((k * 4096)) /dev/urandom |
			(cd "$dir/opt/scale/d$(printf %03d "$d")" && split -b 4096 -a 3 -d - f) || return 1
	done
}
minisign -G -W -f -p k.pub -s k.key >/dev/null 2>&1 || { echo "bench: minisign -G failed" >&2; exit 1; }
mkdir -p keys
cp k.pub keys/
printf '[Policy]\nPolicy=native\n[Daemon]\nRequireSignature=yes\nDurable=yes\nTrustedKeys=%s/keys\n' "$work" >fatelfd.conf

# bundle N VERSION TREE: makes sN-vVERSION.fatbundle; on failure a FAIL
# row with fatelf's message.
# why LOG: what a failure broke, for a row's label: the error's name
# (FATELF_E_*) if the log has one, else the last part of its last line
# (the message goes whole to the notes)
why() {
	local e
	e=$(grep -o 'FATELF_E_[A-Z0-9_]*' "$1" | tail -1)
	[ -n "$e" ] && { echo "$e"; return; }
	grep -v '^#' "$1" | tail -1 | sed 's/.*: //' | cut -c1-40
}
declare -A bundle_ok
bundle() {
	local n=$1 v=$2 tree=$3 out=s$1-v$2.fatbundle
	echo "# N=$n: bundle create version $v" >&2
	if timeout 1800 "$FATELF" bundle create -o "$out" --name scale --version "$v" --sign k.key "$tree" \
		>create.log 2>&1; then
		bundle_ok[$n-$v]=1
		printf '# N=%s: %s is %s bytes\n' "$n" "$out" "$(stat -c %s "$out")" >&2
	else
		addrow "N=$n: bundle create v$v: $(why create.log)" - - error 0
		notes+=("N=$n: bundle create v$v failed: $(grep -v '^#' create.log | tail -3 | tr '\n' ' ')")
		echo "bench: ${notes[-1]}" >&2
	fi
}
maxn=$UPN
for n in $COUNTS; do
	[ "$n" -gt "$maxn" ] && maxn=$n
	echo "# N=$n: making the tree" >&2
	rm -rf tree
	mktree "$n" tree || { echo "bench: cannot make the tree of $n files" >&2; exit 1; }
	[ "$(files_of "$n")" = "$n" ] ||
		notes+=("N=$n: $(files_of "$n") files, so that with their directories the package has the bundle limit of 200,000 entries")
	bundle "$n" 1 tree
	if [ "$n" = "$UPN" ]; then
		mv tree tree-up
	fi
	rm -rf tree
done
if [ ! -d tree-up ]; then
	echo "# N=$UPN: making the tree" >&2
	mktree "$UPN" tree-up || exit 1
	bundle "$UPN" 1 tree-up
fi
# version 2: every 100th file new
changed=0
while read -r f; do
	head -c 4096 /dev/urandom >"$f.new" && mv "$f.new" "$f" || exit 1
	changed=$((changed + 1))
done < <(find tree-up -type f | sort | awk 'NR % 100 == 1')
echo "# N=$UPN: version 2 changes $changed files" >&2
bundle "$UPN" 2 tree-up
up_bytes=$(find tree-up -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
rm -rf tree-up

# ---- the output file system: a fresh ext4 per timed command (see
# bench-install.sh), sized for the largest N twice over
size_g=$((maxn * 4096 * 3 / (1 << 30) + 2))
inodes=$((maxn * 3 + 65536))
truncate -s "${size_g}G" fs.img && mkdir -p "$FS" || exit 1
mkfs_fs() {
	mkfs.ext4 -q -F -N "$inodes" -E lazy_itable_init=0,lazy_journal_init=0 fs.img >/dev/null
}
echo "# output file system: a fresh ext4 per run (loop image, ${size_g} GiB, $inodes inodes)" >&2

use_build() { # this|base
	if [ "$1" = this ]; then
		D_BIN=$THIS_FATELFD
		C_BIN=$THIS_FATELFCTL
		tag=
	else
		D_BIN=$basedir/daemon/fatelfd
		C_BIN=$basedir/client/fatelfctl
		tag="base: "
	fi
}
# start_daemon VAR SOCK ROOT STATE: a fatelfd of the build in use, a child
# of this shell; its pid in VAR
start_daemon() {
	local i
	"$D_BIN" --socket "$2" --root "$3" --state-dir "$4" --config "$work/fatelfd.conf" \
		>/dev/null 2>>"$work/daemon.log" &
	printf -v "$1" %s $!
	for ((i = 0; i < 100; i++)); do
		"$C_BIN" --socket "$2" status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench: fatelfd did not start:" >&2
	tail -20 "$work/daemon.log" >&2
	exit 1
}
# fresh_output: a new empty file system on FS with a daemon serving FS/root,
# and FS/x for bsdtar; dirty pages written back. Outside the timing.
fresh_output() {
	stop_daemons
	mountpoint -q "$FS" && umount "$FS"
	mkfs_fs && mount -o loop fs.img "$FS" || { echo "bench: cannot make the output file system" >&2; exit 1; }
	mkdir -p "$FS/root" "$FS/state" "$FS/root2" "$FS/state2" "$FS/x"
	start_daemon DPID "$SOCK" "$FS/root" "$FS/state"
	sync
}
# settle: fatelfd copies its store's WAL into the database once it has
# been idle for a second after a job; that copy (of the install in a
# setup) is let happen here, outside the timing, so that it lands on
# neither side of a comparison, and the bytes an upgrade wrote include
# its own copy. Then the dirty pages are written back.
settle() {
	sleep 2.5
	sync
}
ctl() { "$C_BIN" --socket "$SOCK" "$@"; }
ctl2() { "$C_BIN" --socket "$SOCK2" "$@"; }

# CPU of a timed command, measured inside it: bash's `times` (the CPU of
# this shell's children so far) and, for fatelf, /proc/PID/stat of the
# daemon, before and after, appended to cpu.TAG.*; no process of its own.
cpu_daemon() { # CMD...: CMD with fatelfd's and the shell's children's CPU into cpu.a.*
	local s0 s1 rc
	read -r s0 <"/proc/$DPID/stat"
	times >>cpu.a.t
	"$@"
	rc=$?
	times >>cpu.a.t
	read -r s1 <"/proc/$DPID/stat"
	printf '%s\n%s\n' "$s0" "$s1" >>cpu.a.d
	return $rc
}
cpu_children() { # CMD...: CMD with the shell's children's CPU into cpu.b.t
	local rc
	times >>cpu.b.t
	"$@"
	rc=$?
	times >>cpu.b.t
	return $rc
}
bsdtar_sync() { bsdtar -xf "$1" -C "$FS/x" && sync; }
tck=$(getconf CLK_TCK)
# cpu_ms TAG: the median CPU ms of the timed rounds (the warm-up left out)
cpu_ms() {
	{
		awk 'function t(x, p) { sub(/s$/, "", x); split(x, p, "m"); return p[1] * 60000 + p[2] * 1000 }
		     FNR % 4 == 2 { a = t($1) + t($2) } FNR % 4 == 0 { print t($1) + t($2) - a }' "cpu.$1.t" |
			tail -n +2 >cpu.$1.tms
		if [ -f "cpu.$1.d" ]; then
			# the fields after "(comm) ": 12..15 are utime stime cutime cstime
			awk -v tck="$tck" '{ sub(/^.*\) /, ""); v = ($12 + $13 + $14 + $15) * 1000 / tck }
			     NR % 2 == 1 { a = v } NR % 2 == 0 { print v - a }' "cpu.$1.d" | tail -n +2 >cpu.$1.dms
			paste -d+ cpu.$1.tms cpu.$1.dms | awk -F+ '{ print $1 + $2 }'
		else
			cat cpu.$1.tms
		fi
	} | median
}
# checked_install N [nohwm]: in a fresh output, a fresh daemon installs the
# N-file bundle and is checked (every file there); its VmHWM is a row
# (unless nohwm). Returns 1 (after a FAIL row naming the error) when the
# install failed.
checked_install() {
	local n=$1 got hwm
	fresh_output
	if ! timeout 1800 "$C_BIN" --socket "$SOCK" install "s$n-v1.fatbundle" >install.log 2>&1; then
		addrow "${tag}N=$n: install: $(why install.log)" - - error 0
		notes+=("${tag}N=$n: install failed: $(grep -v '^#' install.log | tail -3 | tr '\n' ' ')")
		echo "bench: ${notes[-1]}" >&2
		return 1
	fi
	got=$(find "$FS/root/opt/scale" -type f | wc -l)
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$DPID/status")
	[ -n "${2:-}" ] || addrow "${tag}(5) N=$n: fatelfd VmHWM kB  vs  128 MiB" "$hwm" 131072 \
		"$(awk -v h="$hwm" 'BEGIN { printf "%.3f", h / 131072 }')" 1.0
	[ "$got" -eq "$(files_of "$n")" ] ||
		{ addrow "${tag}N=$n: installed $got files, not $(files_of "$n")" - - error 0; return 1; }
	return 0
}
median_ms() { # FILE: the median ms of the numbers (ns) in FILE
	median <"$1" | awk '{ printf "%.2f", $1 / 1e6 }'
}

for build in "${builds[@]}"; do
	use_build "$build"
	# ---- (1) and (5): install against bsdtar, for every N
	wall=()
	cpu=()
	for n in $COUNTS; do
		[ -n "${bundle_ok[$n-1]:-}" ] || { skipped+=("${tag}(1) N=$n: no bundle"); continue; }
		checked_install "$n" || continue
		rm -f cpu.*
		compare "${tag}(1) N=$n: install  vs  bsdtar -xf + sync" 1.2 fresh_output \
			"cpu_daemon ctl install s$n-v1.fatbundle" \
			"cpu_children bsdtar_sync s$n-v1.fatbundle"
		wall+=("$(echo "${rows[-1]}" | awk '{ print $(NF - 2) }')")
		ca=$(cpu_ms a)
		cb=$(cpu_ms b)
		r=$(awk -v a="$ca" -v b="$cb" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }')
		addrow "${tag}(1) N=$n: CPU fatelfd+ctl  vs  bsdtar+sync" "$ca" "$cb" "$r" 1.5
		[ "$r" != n/a ] && cpu+=("$r")
	done
	spread() { # LABEL RATIO...: half the range over the middle
		local label=$1
		shift
		if [ $# -lt 2 ]; then
			skipped+=("${tag}(1) spread of the $label ratio across N: fewer than two N measured")
			return
		fi
		IFS=$'\t' read -r lo hi s < <(printf '%s\n' "$@" | sort -n |
			awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s\t%s\t%.3f\n", lo, hi, (hi - lo) / (hi + lo) }')
		addrow "${tag}(1) $label ratio spread over N (lo, hi)" "$lo" "$hi" "$s" 0.10
	}
	spread wall "${wall[@]}"
	spread CPU "${cpu[@]}"

	# ---- (3), (2), (4) on the UPN-file package
	if [ -z "${bundle_ok[$UPN-1]:-}" ] || [ -z "${bundle_ok[$UPN-2]:-}" ]; then
		skipped+=("${tag}(2)-(4): no bundles of $UPN files")
		continue
	fi
	hwm=
	case " $COUNTS " in *" $UPN "*) hwm=nohwm ;; *) ;; esac
	checked_install "$UPN" $hwm || {
		skipped+=("${tag}(2)-(4): the $UPN-file install failed")
		continue
	}
	(cd "$FS/root" && find opt -type f -print0) >files.list
	settle
	compare "${tag}(3) N=$UPN: verify  vs  sha256sum (warm)" 1.2 "sync" \
		"ctl verify scale" \
		"(cd \"\$FS/root\" && xargs -0 -a \"$work/files.list\" sha256sum)"

	# bytes written by one upgrade, outside the timing
	loopdev=$(findmnt -no SOURCE "$FS")
	loopdev=${loopdev##*/}
	settle
	w0=$(awk '/^write_bytes:/ { print $2 }' "/proc/$DPID/io")
	s0=$(awk '{ print $7 }' "/sys/block/$loopdev/stat")
	cp "$FS/state/fatelf.db-wal" before.wal 2>/dev/null || : >before.wal
	if ctl --json install "s$UPN-v2.fatbundle" >upgrade.log 2>&1; then
		# the log as the upgrade left it, before the idle-time checkpoint
		# (a second after the job) copies it into the database
		cp "$FS/state/fatelf.db-wal" after.wal 2>/dev/null || : >after.wal
		settle
		w1=$(awk '/^write_bytes:/ { print $2 }' "/proc/$DPID/io")
		s1=$(awk '{ print $7 }' "/sys/block/$loopdev/stat")
		# the file bytes the upgrade wrote, as its reply says
		fw=$(grep -o '"bytes_written":[0-9]*' upgrade.log | tail -1 | cut -d: -f2)
		notes+=("$(awk -v w=$((w1 - w0)) -v s=$(((s1 - s0) * 512)) -v f="${fw:-0}" -v p="$up_bytes" -v c="$changed" -v n="$UPN" -v tag="$tag" \
			'BEGIN { printf "%s(2) upgrade of %d files, %d changed: fatelfd wrote %d bytes (/proc/PID/io write_bytes), %.2f%% of the package (%d bytes): file data %d bytes (%.2f%%, the reply'"'"'s bytes_written), the store and the rest %d bytes (%.2f%%); the loop device took %d bytes (/sys/block/loopN/stat sectors written, journal and metadata included, after sync), %.2f%%",
				tag, n, c, w, 100 * w / p, p, f, 100 * f / p, w - f, 100 * (w - f) / p, s, 100 * s / p }')")
		echo "# ${notes[-1]}" >&2
		if command -v python3 >/dev/null && cp "$FS/state/fatelf.db" census.db &&
			census=$(python3 "$top/bench/store-census.py" before.wal after.wal census.db); then
			notes+=("${tag}(2) the store's part of that upgrade: $census")
			echo "# ${notes[-1]}" >&2
		fi
	else
		notes+=("${tag}(2) upgrade failed: $(grep -v '^#' upgrade.log | tail -3 | tr '\n' ' ')")
		echo "bench: ${notes[-1]}" >&2
		addrow "${tag}(2) upgrade: $(why upgrade.log)" - - error 0
		continue
	fi

	setup_v1() { # a fresh output with version 1 installed, and a second daemon on FS/root2
		fresh_output
		ctl install "s$UPN-v1.fatbundle" >/dev/null 2>&1 || { echo "bench: install of version 1 failed" >&2; exit 1; }
		start_daemon DPID2 "$SOCK2" "$FS/root2" "$FS/state2"
		settle
	}
	compare "${tag}(2) N=$UPN: upgrade 1%  vs  fresh install v2" 0.2 setup_v1 \
		"ctl install s$UPN-v2.fatbundle" \
		"ctl2 install s$UPN-v2.fatbundle"
	compare "${tag}(4) N=$UPN: remove  vs  rm -rf + sync" 1.2 setup_v1 \
		"ctl remove scale" \
		"rm -rf \"\$FS/root/opt\" && sync"
done
stop_daemons

case " $COUNTS " in
*" 200000 "*) ;;
*) skipped+=("N=200000 (BENCH_SCALE_COUNTS=\"2000 20000 200000\" adds it)") ;;
esac
report
rc=$?
for n in "${notes[@]}"; do
	echo "$n"
done
for s in "${skipped[@]}"; do
	echo "skipped: $s"
done
echo "CPU: fatelfd's from /proc/PID/stat and the shell's children's from bash times, both in 1/$tck s ticks; verify: page cache warm on both sides"
exit $rc
