#!/bin/bash
# Upgrade benchmark: bench/bench-upgrade.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# A signed bundle of 20,000 files of 4 KiB (pseudo-random, 200 directories
# of 100), version 1.0, and a 2.0 in which 1% of them (200 files) changed.
# A private fatelfd (policy native, durable commits) runs two commands,
# timed side by side in this one run, alternating:
#   A: fatelfctl install 2.0 over 1.0 installed (the upgrade)
#   B: fatelfctl install 2.0 into a fresh root
# Ratio A/B target <= 0.2. Besides the time, the bytes the daemon wrote
# (write_bytes of /proc/PID/io, before and after) for each side, and the
# reply's bytes_written and files_unchanged. Before each timed command
# (outside the timing) a new root and state directory are made, a daemon
# started on them, 1.0 installed by it for A, and dirty pages written back.
# Times are medians of BENCH_RUNS runs (default 5) after one warm-up each.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELF=${FATELF:-$builddir/tools/fatelf}
FATELFD=${FATELFD:-$builddir/daemon/fatelfd}
FATELFCTL=${FATELFCTL:-$builddir/client/fatelfctl}
RUNS=${BENCH_RUNS:-5}
NFILES=${BENCH_FILES:-20000}
NCHANGED=${BENCH_CHANGED:-$((NFILES / 100))}
for p in "$FATELF" "$FATELFD" "$FATELFCTL"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make)" >&2; exit 2; }
done
for t in minisign jq python3; do
	command -v "$t" >/dev/null || { echo "bench: $t is not installed" >&2; exit 2; }
done

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-upgrade.XXXXXX") || exit 3
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

echo "# making a $NFILES-file tree and its 2.0 ($NCHANGED files changed) in $work" >&2
python3 - "$NFILES" "$NCHANGED" <<'EOF' || exit 3
import os, random, sys
n, changed = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(1)
pick = set(rnd.sample(range(n), changed))
for i in range(n):
    data = rnd.randbytes(4096)
    for v in ("v1", "v2"):
        d = f"{v}/opt/big/d{i // 100:03d}"
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/f{i:05d}", "wb") as f:
            f.write(data if v == "v1" or i not in pick else rnd.randbytes(4096))
EOF
minisign -G -W -f -p k.pub -s k.key >/dev/null 2>&1 || exit 3
for v in 1 2; do
	"$FATELF" bundle create -o "big-$v.fatbundle" --name big --version "$v.0" --sign k.key "v$v" \
		>/dev/null || exit 3
done
rm -rf v1 v2
mkdir -p keys
cp k.pub keys/
printf '[Policy]\nPolicy=native\n[Daemon]\nRequireSignature=yes\nDurable=yes\nTrustedKeys=%s/keys\n' "$work" >fatelfd.conf
SOCK=$work/d.sock

start_daemon() {
	rm -rf "$work/fs" && mkdir -p "$work/fs/root" "$work/fs/state"
	"$FATELFD" --socket "$SOCK" --root "$work/fs/root" --state-dir "$work/fs/state" \
		--config "$work/fatelfd.conf" >/dev/null 2>>"$work/log" </dev/null &
	DPID=$!
	for ((i = 0; i < 200; i++)); do
		"$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "bench: fatelfd did not start" >&2
	exit 3
}
stop_daemon() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	DPID=
}
wbytes() { awk '/^write_bytes/ { print $2 }' "/proc/$DPID/io"; }
setup_fresh() { stop_daemon; start_daemon; sync; }
setup_upgrade() {
	stop_daemon
	start_daemon
	"$FATELFCTL" --socket "$SOCK" install "$work/big-1.fatbundle" >/dev/null || exit 3
	sync
}
# install2 SIDE: the timed command; the daemon's write_bytes and the reply
# go to SIDE.io and SIDE.json.
install2() {
	local w0 w1
	w0=$(wbytes)
	"$FATELFCTL" --socket "$SOCK" --json install "$work/big-2.fatbundle" >"$1.json" || return 1
	w1=$(wbytes)
	echo $((w1 - w0)) >>"$1.io"
}

# One side: its setup, then install2 timed (ns to SIDE.t).
side() { # up|fresh
	local t
	if [ "$1" = up ]; then setup_upgrade; else setup_fresh; fi
	t=$(ns install2 "$1") || exit 1
	echo "$t" >>"$1.t"
}
side up
side fresh
rm -f up.io fresh.io up.t fresh.t
for ((r = 0; r < RUNS; r++)); do
	# odd rounds run the fresh install first
	if ((r % 2)); then
		side fresh
		side up
	else
		side up
		side fresh
	fi
done
stop_daemon
mu=$(median <up.t)
mf=$(median <fresh.t)
ratio=$(awk -v a="$mu" -v b="$mf" 'BEGIN { printf "%.3f", a / b }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 0.2) ? "PASS" : "FAIL" }')
printf '%-60s %10s %10s %7s %7s %s\n' "what" "upgrade" "fresh" "ratio" "target" ""
printf '%-60s %8.1fms %8.1fms %7s %7s %s\n' \
	"fatelfctl install 2.0: over 1.0 vs fresh ($NFILES x 4 KiB, $NCHANGED changed)" \
	"$(awk -v n="$mu" 'BEGIN { print n / 1e6 }')" "$(awk -v n="$mf" 'BEGIN { print n / 1e6 }')" \
	"$ratio" "<= 0.2" "$verdict"
echo "# runs (ms): upgrade $(awk '{ printf "%d ", $1 / 1e6 }' up.t)fresh $(awk '{ printf "%d ", $1 / 1e6 }' fresh.t)"
echo "# daemon write_bytes per run (median): upgrade $(median <up.io), fresh install $(median <fresh.io)"
echo "# upgrade reply: $(jq -c 'select(.result) | .result | {bytes_written, files, files_unchanged, bytes_unchanged}' up.json)"
echo "# fresh reply:   $(jq -c 'select(.result) | .result | {bytes_written, files, files_unchanged, bytes_unchanged}' fresh.json)"
[ "$verdict" = PASS ]
