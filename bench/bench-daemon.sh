#!/bin/bash
# Daemon benchmarks: bench/bench-daemon.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# Private fatelfd instances in a temp dir, and figures against fixed targets:
#   (c) Owner lookup on a store of 1,000,000 files: the median of 1,000
#       Owner calls over one connection (a Python client, paths picked at
#       random)                                         <= 1 ms
#       and, for comparison, dpkg -S on a dpkg database of the same size
#       (one package whose .list has 1,000,000 paths); the ratio is printed.
#       The store is made by the daemon and then filled with the sqlite3
#       CLI (rows as the engine writes them), which takes seconds where an
#       install of a million files would take many minutes.
#   (d) Status round trips over one connection (bench/vlping, a small C
#       client built here with cc, since a Python client is slower than
#       the daemon)                                     >= 20,000/s
#   (e) 50 concurrent clients calling List while a 4 GiB install runs:
#       no errors, the install still running at the end; p99 reported.
#   (f) memory: daemon VmRSS when idle (after start, and again after the
#       round trips)                                    <= 10 MiB
#       peak VmHWM during a 4 GiB install, from a file fd  <= 64 MiB
# (d) takes the median rate of BENCH_RUNS runs (default 5). The 4 GiB
# bundle is 64 files of 64 MiB of zeros, zstd-compressed (a few MB), so
# the install writes 4 GiB with durable commits. Work files live in a temp
# dir under BENCH_DIR (default: the build dir) and are removed at the end
# (BENCH_KEEP=1 keeps them). Exits 0 if every figure meets its target.
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
for t in cc python3 sqlite3 dpkg jq; do
	command -v "$t" >/dev/null || { echo "bench: $t is not installed" >&2; exit 2; }
done

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-daemon.XXXXXX") || exit 3
DPIDS=()
cleanup() {
	local p
	for p in "${DPIDS[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3

. "$top/bench/lib.sh"

# figure LABEL VALUE UNIT OP TARGET: one row of the closing table.
figure() {
	local label=$1 value=$2 unit=$3 op=$4 target=$5 verdict
	if awk -v v="$value" -v t="$target" -v op="$op" \
		'BEGIN { exit !((op == "<=" && v <= t) || (op == ">=" && v >= t)) }'; then
		verdict=PASS
	else
		verdict=FAIL
		failures=$((failures + 1))
	fi
	rows+=("$(printf '%-52s %12s %-6s %2s %-10s %s' "$label" "$value" "$unit" "$op" "$target" "$verdict")")
	echo "${rows[-1]}" >&2
}
note() {
	rows+=("$(printf '%-52s %s' "$1" "$2")")
	echo "${rows[-1]}" >&2
}

# start_daemon NAME: a private fatelfd in NAME/ (socket NAME/sock); sets
# SOCK and DPID.
start_daemon() {
	local d=$work/$1 i
	mkdir -p "$d/root" "$d/state"
	printf '[Daemon]\nRequireSignature=no\n' >"$d/fatelfd.conf"
	SOCK=$d/sock
	"$FATELFD" --socket "$SOCK" --root "$d/root" --state-dir "$d/state" --config "$d/fatelfd.conf" \
		2>>"$d/log" &
	DPID=$!
	DPIDS+=("$DPID")
	for ((i = 0; i < 200; i++)); do
		"$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "bench: fatelfd in $d did not start:" >&2
	cat "$d/log" >&2
	exit 1
}
stop_daemon() {
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
}
ctl() { "$FATELFCTL" --socket "$SOCK" "$@"; }
kib() { awk '/^'"$2"':/ { print $2 }' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

cc -O2 -o vlping "$top/bench/vlping.c" || { echo "bench: cannot build bench/vlping.c" >&2; exit 1; }

# ================================================ (f) idle, (d) round trips
start_daemon a
sleep 1
idle0=$(kib "$DPID" VmRSS)
figure "(f) daemon VmRSS, idle after start (MiB)" "$(mib "$idle0")" MiB "<=" 10
# Shared libraries' pages count in VmRSS; say how much is the daemon's own.
note "    of which anonymous / file-backed (libraries)" \
	"$(mib "$(kib "$DPID" RssAnon)") / $(mib "$(kib "$DPID" RssFile)") MiB"
rates=()
for ((i = 0; i < RUNS; i++)); do
	out=$(./vlping "$SOCK" 50000 1 '{"method":"io.fatelf.Manager.Status"}') ||
		{ echo "bench: Status round trips failed: $out" >&2; exit 1; }
	rates+=("$(awk '{ for (i = 1; i < NF; i++) if ($i == "rate") print $(i + 1) }' <<<"$out")")
	echo "# Status x50000: $out" >&2
done
rate=$(printf '%s\n' "${rates[@]}" | median)
figure "(d) Status round trips over one connection (/s)" "$rate" /s ">=" 20000
sleep 1
idle1=$(kib "$DPID" VmRSS)
figure "(f) daemon VmRSS, idle after the round trips (MiB)" "$(mib "$idle1")" MiB "<=" 10

# ================================================ (f) peak during a 4 GiB install
echo "# making the 4 GiB bundle" >&2
mkdir -p big/opt/zero
for ((i = 0; i < 64; i++)); do
	truncate -s 64M "big/opt/zero/z$(printf %02d "$i")"
done
printf 'four gigabytes of zeros\n' >big/opt/zero/README
"$FATELF" bundle create -o zero.fatbundle --name zero --version 1 --compression zstd big >/dev/null ||
	{ echo "bench: bundle create of 4 GiB failed" >&2; exit 1; }
rm -rf big
printf '# 4 GiB bundle: %s bytes\n' "$(stat -c %s zero.fatbundle)" >&2
t0=$(date +%s%N)
ctl install zero.fatbundle >/dev/null || { echo "bench: the 4 GiB install failed" >&2; exit 1; }
t1=$(date +%s%N)
hwm=$(kib "$DPID" VmHWM)
note "    4 GiB install took" "$(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.1f s", n / 1e9 }')"
figure "(f) daemon VmHWM after a 4 GiB install (MiB)" "$(mib "$hwm")" MiB "<=" 64
[ "$(du -sb a/root/opt/zero | cut -f1)" -ge $((4 << 30)) ] ||
	{ echo "bench: the 4 GiB install did not write 4 GiB" >&2; exit 1; }
ctl remove zero >/dev/null || { echo "bench: remove failed" >&2; exit 1; }

# ================================================ (e) 50 readers during an install
ctl install zero.fatbundle >inst.out 2>&1 &
ipid=$!
running=no
for ((i = 0; i < 200; i++)); do
	if [ "$(ctl --json status 2>/dev/null | jq -r '.running != null')" = true ]; then
		running=yes
		break
	fi
	sleep 0.05
done
out=$(./vlping "$SOCK" 400 50 '{"method":"io.fatelf.Manager.List"}')
vrc=$?
still=$(ctl --json status 2>/dev/null | jq -r '.running != null')
wait "$ipid"
irc=$?
echo "# List x400 x50 clients: $out (install running before: $running, after: $still, install exit $irc)" >&2
errs=$(awk '{ for (i = 1; i < NF; i++) if ($i == "errors") print $(i + 1) }' <<<"$out")
p99=$(awk '{ for (i = 1; i < NF; i++) if ($i == "p99_us") print $(i + 1) }' <<<"$out")
figure "(e) List errors, 50 clients during an install" "${errs:-all}" "" "<=" 0
[ "$vrc" -eq 0 ] || failures=$((failures + 1))
note "    List p99 latency, 50 clients during an install" "$(awk -v u="${p99:-0}" 'BEGIN { printf "%.2f ms", u / 1000 }')"
note "    the install ran all along (before/after), exit" "$running/$still, $irc"
[ "$running" = yes ] && [ "$still" = true ] && [ "$irc" -eq 0 ] || {
	echo "bench: the readers did not overlap the install, or it failed" >&2
	failures=$((failures + 1))
}
stop_daemon

# ================================================ (c) owner on 1,000,000 files
echo "# filling a store with 1,000,000 files" >&2
start_daemon m
stop_daemon
db=$work/m/state/fatelf.db
t0=$(date +%s%N)
sqlite3 "$db" <<'EOF' || { echo "bench: cannot fill the store" >&2; exit 1; }
PRAGMA foreign_keys = ON;
BEGIN;
INSERT INTO packages (name, version, summary, vendor, installed_at, policy)
	VALUES ('big', '1', 'one million files', 'bench', CAST(strftime('%s', 'now') AS INTEGER), 'native');
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
INSERT INTO dirs (path, package_id)
	SELECT printf('/opt/big/d%03d', i), (SELECT id FROM packages WHERE name = 'big') FROM n;
INSERT INTO dirs (path, package_id) SELECT '/opt/big', id FROM packages WHERE name = 'big';
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999)
INSERT INTO files (path, package_id, type, mode, size, sha256, config, kind, installed_form,
		   installed_size, installed_sha256)
	SELECT printf('/opt/big/d%03d/f%06d', i / 1000, i), (SELECT id FROM packages WHERE name = 'big'),
	       'file', 420, 100 + i % 4096, lower(hex(randomblob(32))), 0, 'data', 'as-shipped',
	       100 + i % 4096, NULL FROM n;
UPDATE files SET installed_sha256 = sha256;
COMMIT;
EOF
t1=$(date +%s%N)
echo "# store filled in $(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.1f s", n / 1e9 }'): $(stat -c %s "$db") bytes" >&2
start_daemon m
[ "$(ctl --json info big | jq -r .package.files)" = 1000000 ] ||
	{ echo "bench: the daemon does not see the million files" >&2; exit 1; }
cat >owner.py <<'EOF'
# owner.py SOCKET N: N Owner calls over one connection for random paths of
# the million-file store; prints "median_us P99_us ERRORS".
import json, random, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
random.seed(1)
buf = b""
lat = []
errors = 0
for _ in range(int(sys.argv[2])):
    i = random.randrange(1000000)
    path = "/opt/big/d%03d/f%06d" % (i // 1000, i)
    msg = json.dumps({"method": "io.fatelf.Manager.Owner", "parameters": {"path": path}}).encode() + b"\0"
    t0 = time.perf_counter_ns()
    s.sendall(msg)
    while b"\0" not in buf:
        d = s.recv(65536)
        if not d:
            sys.exit("connection closed")
        buf += d
    raw, _, buf = buf.partition(b"\0")
    lat.append(time.perf_counter_ns() - t0)
    r = json.loads(raw)
    if "error" in r or r.get("parameters", {}).get("package") != "big":
        errors += 1
lat.sort()
print("%.1f %.1f %d" % (lat[len(lat) // 2] / 1e3, lat[len(lat) * 99 // 100] / 1e3, errors))
EOF
read -r omed op99 oerr < <(python3 owner.py "$SOCK" 1000)
figure "(c) Owner median, 1,000,000-file store (ms)" "$(awk -v u="$omed" 'BEGIN { printf "%.3f", u / 1000 }')" ms "<=" 1
figure "(c) Owner errors" "$oerr" "" "<=" 0
note "    Owner p99" "$(awk -v u="$op99" 'BEGIN { printf "%.3f ms", u / 1000 }')"
run_s=$(./vlping "$SOCK" 10 1 '{"method":"io.fatelf.Manager.Status"}')
note "    Status on the 1,000,000-file store" "$(awk '{ for (i = 1; i < NF; i++) if ($i == "median_us") printf "%.2f ms median", $(i + 1) / 1000 }' <<<"$run_s")"
stop_daemon

# dpkg -S on a database of the same size
mkdir -p dpkgdb/info dpkgdb/updates dpkgdb/triggers
cat >dpkgdb/status <<'EOF'
Package: big
Status: install ok installed
Priority: optional
Section: misc
Maintainer: bench <bench@example.invalid>
Architecture: all
Version: 1
Description: one million files

EOF
: >dpkgdb/available
{
	printf '/.\n/opt\n/opt/big\n'
	awk 'BEGIN { for (d = 0; d < 1000; d++) { printf "/opt/big/d%03d\n", d
		for (i = d * 1000; i < d * 1000 + 1000; i++) printf "/opt/big/d%03d/f%06d\n", d, i } }'
} >dpkgdb/info/big.list
dpkg --admindir="$work/dpkgdb" -S /opt/big/d500/f500123 >dpkg.out 2>&1
grep -q '^big: /opt/big/d500/f500123$' dpkg.out || { echo "bench: dpkg -S did not find the path:" >&2; cat dpkg.out >&2; exit 1; }
dt=()
for ((i = 0; i < RUNS; i++)); do
	dt+=("$(ns dpkg --admindir="$work/dpkgdb" -S "/opt/big/d$(printf %03d $((i * 97 % 1000)))/f$(printf %06d $((i * 97 % 1000 * 1000 + 7)))")")
done
dmed=$(printf '%s\n' "${dt[@]}" | median)
note "    dpkg -S on 1,000,000 files (median of $RUNS)" "$(awk -v n="$dmed" 'BEGIN { printf "%.1f ms", n / 1e6 }')"
note "    dpkg -S / fatelfctl Owner (median over median)" \
	"$(awk -v d="$dmed" -v f="$omed" 'BEGIN { printf "%.0fx faster", (d / 1e3) / f }')"

printf '\n%-52s %12s %-6s %2s %-10s %s\n' "benchmark" value unit "" target result
for r in "${rows[@]}"; do
	echo "$r"
done
echo "$failures failed"
[ "$failures" -eq 0 ]
