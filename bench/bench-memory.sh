#!/bin/bash
# Memory benchmark: bench/bench-memory.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# The attack: one uid holds 64 connections (MaxConnectionsPerUser=) that
# send GetInterfaceDescription again and again and never read a reply,
# opening a new connection for each one the daemon drops. Without a bound
# for all connections together, each would hold up to the 16 MiB a
# connection may hold: about 1 GiB of the root daemon's memory.
# Figures, against a private fatelfd in a temp dir:
#   the daemon's peak VmRSS (VmHWM) during the attack   <= 64 MiB
#   (the ratio to 64 MiB is printed), and
#   root's Status calls during the attack, one every 0.2 s: all answered.
# BENCH_SECONDS sets the attack's length (default 20); BENCH_UIDS the
# attacking uids (default 65534; "65534 65533" also tests the global
# bound). Needs root (the attack runs as another uid than the client
# that must be served). Exits 0 when both figures meet their targets.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" 2>/dev/null && pwd) || { echo "bench: no build dir ${1:-$top/build}" >&2; exit 2; }
FATELFD=${FATELFD:-$builddir/daemon/fatelfd}
FATELFCTL=${FATELFCTL:-$builddir/client/fatelfctl}
SECS=${BENCH_SECONDS:-20}
UIDS=${BENCH_UIDS:-65534}
TARGET_KB=$((64 << 10))
for p in "$FATELFD" "$FATELFCTL"; do
	[ -x "$p" ] || { echo "bench: $p is not built (make)" >&2; exit 2; }
done
for t in python3 setpriv; do
	command -v "$t" >/dev/null || { echo "bench: $t is not installed" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (the attack runs as uid $UIDS)" >&2; exit 2; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

# Under /tmp, so that the attacking uid can reach the socket and script.
work=$(mktemp -d /tmp/fatelf-bench-memory.XXXXXX) || exit 3
chmod 0755 "$work"
trap '[ -n "${dpid:-}" ] && kill "$dpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cd "$work" || exit 3
cp "$top/tests/reliability/vlclient.py" vlclient.py
chmod 0644 vlclient.py
mkdir -p root state
printf '[Daemon]\nRequireSignature=no\n' >fatelfd.conf
sock=$work/sock

"$FATELFD" --socket "$sock" --root root --state-dir state --config fatelfd.conf 2>daemon.log &
dpid=$!
for ((i = 0; i < 200; i++)); do
	"$FATELFCTL" --socket "$sock" status >/dev/null 2>&1 && break
	sleep 0.05
done
vm_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$dpid/status"; }
idle=$(vm_kb VmRSS)

call='{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"io.fatelf.Manager"}}'
pids=()
for u in $UIDS; do
	setpriv --reuid="$u" --regid="$u" --clear-groups "$PY" vlclient.py hoard "$sock" 64 "$call" "$SECS" \
		>"hoard.$u" 2>&1 &
	pids+=($!)
done
ok=0 bad=0 worst=0
end=$(($(date +%s) + SECS))
while [ "$(date +%s)" -lt "$end" ]; do
	t0=$(date +%s%N)
	if timeout 5 "$FATELFCTL" --socket "$sock" status >/dev/null 2>&1; then
		ok=$((ok + 1))
	else
		bad=$((bad + 1))
	fi
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$ms" -gt "$worst" ] && worst=$ms
	sleep 0.2
done
for p in "${pids[@]}"; do wait "$p"; done
peak=$(vm_kb VmHWM)
now=$(vm_kb VmRSS)

echo "attack: uid(s) $UIDS, 64 never-reading connections each, ${SECS} s"
for u in $UIDS; do echo "  hoarder uid $u: $(cat "hoard.$u")"; done
printf '%-52s %10s %10s %7s  %s\n' "figure" "measured" "target" "ratio" "verdict"
verdict=PASS
[ "$peak" -le "$TARGET_KB" ] || verdict=FAIL
printf '%-52s %7d kB %7d kB %7.3f  %s\n' "daemon peak VmRSS (VmHWM) under the attack" "$peak" "$TARGET_KB" \
	"$(awk -v a="$peak" -v b="$TARGET_KB" 'BEGIN { print a / b }')" "$verdict"
sverdict=PASS
[ "$bad" -eq 0 ] && [ "$ok" -gt 0 ] || sverdict=FAIL
printf '%-52s %10s %10s %7s  %s\n' "root's Status calls answered (slowest ${worst} ms)" "$ok/$((ok + bad))" "all" "-" \
	"$sverdict"
echo "daemon VmRSS: idle $idle kB, after the attack $now kB"
[ "$verdict" = PASS ] && [ "$sverdict" = PASS ]
