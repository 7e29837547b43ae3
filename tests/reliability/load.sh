#!/bin/bash
# Promise 4: fatelfd keeps serving under load. 50 concurrent clients, each
# on its own connection, call read methods (Status, List, Info, Files,
# Owner, History, in a random mix) for D seconds, while upgrades between
# two versions of a package run back to back through fatelfctl. Every
# read call must succeed (a reply without an error, with the fields the
# interface promises), every install must succeed, every client must get
# served, and the daemon's open fds and memory must stay bounded.
#
# D is 20 s by default (the ASan build runs this too) and 60 s with
# FATELF_LONG_TESTS=1 (the issue's figure); LOAD_SECONDS overrides both.
# The figures go to the log as "# figure: ..." lines.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
. "$top_srcdir/tests/reliability/lib.sh" || exit 99

rl_init load
# Every path below is beneath the work directory: never without one.
case ${T_WORK:-} in /?*/tests/work/load) ;; *) echo "Bail out! work directory '${T_WORK:-}'"; exit 99 ;; esac
t_require_tool python3

CLIENTS=50
if [ -n "${LOAD_SECONDS:-}" ]; then
	D=$LOAD_SECONDS
elif [ "${FATELF_LONG_TESTS:-0}" = 1 ]; then
	D=60
else
	D=20
fi

# ---------------------------------------------------------------- fixtures
# Package load: fat programs (x86_64 + aarch64 records, thinned to x86_64
# by the native policy) and a data file, in two versions with different
# content, so each install writes and thins a few MiB.
mk_tree() { # DIR VERSION SEED
	local t=$1 v=$2 seed=$3 i
	mkdir -p "$t/opt/load/bin" "$t/opt/load/share" "$t/etc/load"
	for i in 1 2 3 4 5 6 7 8; do
		rl_fat_file "$t/opt/load/bin/prog$i" $((seed + i * 10)) 3145728 || return 1
		chmod 0755 "$t/opt/load/bin/prog$i"
	done
	head -c $((32 * 1024 * 1024)) /dev/urandom >"$t/opt/load/share/data"
	printf 'load %s\n' "$v" >"$t/opt/load/README"
	printf 'version=%s\n' "$v" >"$t/etc/load/load.conf"
}
check "make the tree of load 1.0" mk_tree tree1 1.0 100
check "make the tree of load 2.0" mk_tree tree2 2.0 500
check "bundle load 1.0" rl_bundle load-1.fatbundle load 1.0 tree1
check "bundle load 2.0" rl_bundle load-2.fatbundle load 2.0 tree2

# Under ASan, freed memory sits in a quarantine (256 MiB by default)
# before it is reused, which would hide a leak behind a wide bound: give
# the daemon a small one, so the bound below can stay tight.
asan=no
ldd "$FATELFD" 2>/dev/null | grep -q 'libasan' && asan=yes
daemon_prepare d
if [ "$asan" = yes ]; then
	daemon_start d ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
else
	daemon_start d
fi
if [ "$?" -ne 0 ]; then
	fail "fatelfd starts" "$(tail -20 "$DLOG")"
	t_done
fi
# The first install before the clients start: Info and Files then always
# find the package (an upgrade keeps it installed throughout).
t0=$(date +%s%N)
check "install load 1.0" ctl install load-1.fatbundle
t1=$(date +%s%N)
echo "# one install of load 1.0 took $(((t1 - t0) / 1000000)) ms with no load"

# /proc figures of the daemon: open fds, resident KiB.
fd_count() { ls "/proc/$DPID/fd" 2>/dev/null | wc -l; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status" 2>/dev/null; }
FD0=$(fd_count)
RSS0=$(rss_kib)

# ---------------------------------------------------------------- installs
# Upgrades back to back (2.0, then 1.0 with --allow-downgrade, ...) until
# the stop file appears; one line per install: "ok MS" or "fail: ...".
installer() {
	local v=2 s e
	while [ ! -e "$T_WORK/stop" ]; do
		s=$(date +%s%N)
		if out=$(ctl install --allow-downgrade "load-$v.fatbundle" 2>&1); then
			e=$(date +%s%N)
			echo "ok $(((e - s) / 1000000))"
		else
			echo "fail: $out"
		fi
		v=$((3 - v))
	done
}
rm -f stop
installer >installs.log 2>&1 &
IPID=$!

# ---------------------------------------------------------------- clients
cat >clients.py <<'EOF'
import json, random, sys, threading, time
from vlclient import connect, call as vl_call, Reader

sock_path, nclients, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
P = "io.fatelf.Manager."
# (method, parameters, a field every good reply has)
MIX = [
	("Status", {}, "version"),
	("List", {}, "packages"),
	("Info", {"package": "load"}, "package"),
	("Files", {"package": "load"}, "files"),
	("Owner", {"path": "/opt/load/bin/prog3"}, "package"),
	("History", {"limit": 20}, "transactions"),
]

lat = [[] for _ in range(nclients)]
errors = []
lock = threading.Lock()
start = threading.Barrier(nclients + 1)

def call(s, reader, method, params):
	r = vl_call(s, {"method": P + method, "parameters": params}, reader)
	if r is None:
		raise EOFError("the daemon closed the connection")
	return r

def client(i):
	rnd = random.Random(i)
	try:
		s = connect(sock_path, None)
		reader = Reader(s)
	except Exception as e:
		with lock:
			errors.append("client %d: connect: %r" % (i, e))
		start.wait()
		return
	start.wait()
	end = time.monotonic() + seconds
	try:
		while time.monotonic() < end:
			method, params, field = rnd.choice(MIX)
			t = time.perf_counter()
			r = call(s, reader, method, params)
			lat[i].append(time.perf_counter() - t)
			if "error" in r or field not in r.get("parameters", {}):
				with lock:
					errors.append("client %d: %s: %s" % (i, method, json.dumps(r)[:300]))
	except Exception as e:
		with lock:
			errors.append("client %d: %r" % (i, e))
	s.close()

threads = [threading.Thread(target=client, args=(i,)) for i in range(nclients)]
for t in threads:
	t.start()
start.wait()
t0 = time.monotonic()
for t in threads:
	t.join()
elapsed = time.monotonic() - t0
all_lat = sorted(x for l in lat for x in l)
n = len(all_lat)
def pct(p):
	return all_lat[min(n - 1, int(p * n))] * 1000 if n else 0.0
print("calls %d" % n)
print("errors %d" % len(errors))
print("elapsed %.1f" % elapsed)
print("p50 %.1f" % pct(0.50))
print("p99 %.1f" % pct(0.99))
print("max %.1f" % (all_lat[-1] * 1000 if n else 0.0))
print("min_calls_per_client %d" % min(len(l) for l in lat))
for e in errors[:20]:
	print("error: " + e)
EOF
timeout $((D + 120)) python3 clients.py "$SOCK" "$CLIENTS" "$D" >clients.out 2>clients.err
CRC=$?
touch stop
wait "$IPID"

val() { sed -n "s/^$1 //p" clients.out; }
calls=$(val calls)
errors=$(val errors)
elapsed=$(val elapsed)
p50=$(val p50)
p99=$(val p99)
min_calls=$(val min_calls_per_client)
ninst=$(grep -c '^ok' installs.log)
nfail=$(grep -c '^fail' installs.log)
check_eq "the client program ran to its end" "exit 0" "exit $CRC$(head -c 2000 clients.err)"
check_eq "no read call failed" 0 "${errors:-missing}"
[ "${errors:-0}" != 0 ] && grep '^error:' clients.out | head -20 | sed 's/^/#   /'
check_match "every one of the $CLIENTS clients was served" '^[1-9][0-9]*$' "${min_calls:-0}"
check_match "installs ran meanwhile (at least 2)" '^([2-9]|[1-9][0-9]+)$' "$ninst"
check_eq "no install failed" 0 "$nfail"
[ "$nfail" != 0 ] && grep '^fail' installs.log | head -5 | sed 's/^/#   /'
inst_ms=$(awk '/^ok/ { s += $2; n++ } END { if (n) printf "%d", s / n; else print 0 }' installs.log)
echo "# figure: load held: $CLIENTS clients, ${calls:-0} calls in ${elapsed:-?} s, ${errors:-?} errors, p50 ${p50:-?} ms, p99 ${p99:-?} ms, $ninst installs (mean ${inst_ms} ms each)"

# ---------------------------------------------------------------- afterwards
# The clients' connections are gone once the daemon has seen them close.
for ((i = 0; i < 100; i++)); do
	[ "$(fd_count)" -le $((FD0 + 2)) ] && break
	sleep 0.1
done
FD1=$(fd_count)
RSS1=$(rss_kib)
# ASan's shadow memory and its 16 MiB quarantine come on top.
if [ "$asan" = yes ]; then
	rss_bound=$((RSS0 + 160 * 1024))
else
	rss_bound=$((RSS0 + 64 * 1024))
fi
echo "# figure: daemon after the load: $FD1 fds (before $FD0), RSS $((RSS1 / 1024)) MiB (before $((RSS0 / 1024)) MiB)"
check "the daemon is still running" kill -0 "$DPID"
check_match "its open fds are back to where they were (+2)" "^($FD0|$((FD0 + 1))|$((FD0 + 2)))$" "$FD1"
if [ -n "$RSS1" ] && [ "$RSS1" -le "$rss_bound" ]; then
	pass "its RSS stayed bounded (${RSS1} KiB <= ${rss_bound} KiB)"
else
	fail "its RSS stayed bounded" "before ${RSS0} KiB, after ${RSS1:-?} KiB, bound ${rss_bound} KiB"
fi
check "it still answers status" ctl status
run ctl verify
check_eq "fatelfctl verify is clean after the run" 0 "$RC"
check_eq "no .fatelf.* temp is left" "" "$(rl_temps "$ROOT")"
check_match "the history holds every install, each committed" "^committed [0-9]+$" \
	"$(rl_tx_states | awk '{ print $2 }' | sort | uniq -c | awk '{ print $2, $1 }' | tr '\n' ' ' | sed 's/ $//')"
daemon_stop
check_eq "it stops cleanly on SIGTERM" 0 "$DAEMON_STATUS"
t_done
