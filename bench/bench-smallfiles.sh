#!/bin/bash
# Small-file install benchmark: bench/bench-smallfiles.sh [BUILDDIR] [NFILES...]
#
# A signed bundle of NFILES (default 2000 20000) files of 4 KiB of random
# bytes, in directories of 1,000, installed by a private fatelfd with
# durable commits (the default) into a fresh ext4 file system (a loop
# image; as root) or an emptied directory, against bsdtar -xf of the same
# bundle followed by sync. Alternating, BENCH_RUNS rounds (default 3);
# prints per round and the medians: wall ratio and CPU ratio (the
# daemon's user+system from /proc/PID/stat plus the client's, against
# bsdtar's and sync's).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir" >&2; exit 2; }
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(2000 20000)
FATELF=${FATELF:-$builddir/tools/fatelf}
FATELFD=$builddir/daemon/fatelfd
FATELFCTL=$builddir/client/fatelfctl
RUNS=${BENCH_RUNS:-3}
for t in bsdtar minisign python3; do
	command -v "$t" >/dev/null || { echo "bench: $t is not installed" >&2; exit 2; }
done
work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-small.XXXXXX") || exit 3
DPID=
FS=$work/fs
fresh_fs=no
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ $fresh_fs = yes ] && mountpoint -q "$FS" && umount "$FS"
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3
CLK=$(getconf CLK_TCK)

minisign -G -W -f -p k.pub -s k.key >/dev/null 2>&1 || { echo "bench: minisign -G failed" >&2; exit 1; }
mkdir -p keys && cp k.pub keys/
printf '[Policy]\nPolicy=native\n[Daemon]\nRequireSignature=yes\nDurable=yes\nTrustedKeys=%s/keys\n' "$work" >fatelfd.conf
SOCK=$work/sock
mkdir -p "$FS"
if [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null && [ "${BENCH_FRESH_FS:-1}" = 1 ]; then
	truncate -s 6G fs.img && mkfs.ext4 -q -F -N 600000 fs.img && fresh_fs=yes
fi

start_daemon() {
	"$FATELFD" --socket "$SOCK" --root "$FS/root" --state-dir "$FS/state" --config "$work/fatelfd.conf" \
		2>>daemon.log &
	DPID=$!
	for ((i = 0; i < 100; i++)); do
		"$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench: fatelfd did not start" >&2; cat daemon.log >&2; exit 1
}
stop_daemon() {
	[ -n "$DPID" ] || return 0
	kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=
}
fresh() {
	stop_daemon
	if [ $fresh_fs = yes ]; then
		mountpoint -q "$FS" && umount "$FS"
		mkfs.ext4 -q -F -N 600000 -E lazy_itable_init=0,lazy_journal_init=0 fs.img && mount -o loop fs.img "$FS" || exit 1
	else
		rm -rf "$FS"; mkdir -p "$FS"
	fi
	mkdir -p "$FS/root" "$FS/state" "$FS/x"
	start_daemon
	sync
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
now() { echo "${EPOCHREALTIME//[!0-9]/}"; }
# run_fatelf: prints "wall_us cpu_ticks"
run_fatelf() {
	local t0 t1 c0 c1 ct
	c0=$(ticks "$DPID")
	t0=$(now)
	"$FATELFCTL" --socket "$SOCK" install b.fatbundle >/dev/null || { echo "bench: install failed" >&2; exit 1; }
	t1=$(now)
	c1=$(ticks "$DPID")
	echo "$((t1 - t0)) $((c1 - c0))"
}
run_tar() {
	local t0 t1 c0 c1 me=$BASHPID
	c0=$(awk '{ print $16 + $17 }' "/proc/$me/stat")
	t0=$(now)
	bsdtar -xf b.fatbundle -C "$FS/x" && sync
	t1=$(now)
	c1=$(awk '{ print $16 + $17 }' "/proc/$me/stat")
	echo "$((t1 - t0)) $((c1 - c0))"
}
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for n in "${sizes[@]}"; do
	rm -rf tree b.fatbundle
	python3 - "$n" <<'PY'
import os, sys
n = int(sys.argv[1])
for i in range(n):
    d = "tree/opt/small/d%04d" % (i // 1000)
    if i % 1000 == 0:
        os.makedirs(d, exist_ok=True)
    with open("%s/f%06d" % (d, i), "wb") as f:
        f.write(os.urandom(4096))
PY
	"$FATELF" bundle create -o b.fatbundle --name small --version 1 --sign k.key tree >/dev/null ||
		{ echo "bench: bundle create failed" >&2; exit 1; }
	fresh; run_fatelf >/dev/null
	got=$(find "$FS/root/opt/small" -type f | wc -l)
	[ "$got" -eq "$n" ] || { echo "bench: installed $got files, want $n" >&2; exit 1; }
	fa=(); fc=(); ta=(); tc=()
	for ((r = 0; r < RUNS; r++)); do
		if ((r % 2)); then
			fresh; read -r w c < <(run_tar); ta+=("$w"); tc+=("$c")
			fresh; read -r w c < <(run_fatelf); fa+=("$w"); fc+=("$c")
		else
			fresh; read -r w c < <(run_fatelf); fa+=("$w"); fc+=("$c")
			fresh; read -r w c < <(run_tar); ta+=("$w"); tc+=("$c")
		fi
		printf '# %d files round %d: fatelf %d ms %d ticks, bsdtar+sync %d ms %d ticks\n' "$n" "$r" \
			$((fa[r] / 1000)) "${fc[r]}" $((ta[r] / 1000)) "${tc[r]}" >&2
	done
	mfa=$(printf '%s\n' "${fa[@]}" | med); mfc=$(printf '%s\n' "${fc[@]}" | med)
	mta=$(printf '%s\n' "${ta[@]}" | med); mtc=$(printf '%s\n' "${tc[@]}" | med)
	awk -v n="$n" -v fa="$mfa" -v ta="$mta" -v fc="$mfc" -v tc="$mtc" -v clk="$CLK" 'BEGIN {
		printf "%7d files: wall %.0f ms vs %.0f ms = %.2fx; cpu %.2f s vs %.2f s = %.2fx\n",
			n, fa / 1000, ta / 1000, fa / ta, fc / clk, tc / clk, (tc ? fc / tc : 0) }'
done
