#!/bin/bash
# The memory fatelfd holds for its clients is bounded for all of them
# together. uid 65534 keeps 64 connections (its MaxConnectionsPerUser=)
# that send calls with large replies and never read one, reconnecting as
# they are dropped. Meanwhile root's client keeps being served, and the
# daemon's resident memory stays at or below 64 MiB. The same with a
# second uid hoarding too (the global bound), with 64 idle connections
# that each had a call of almost 1 MiB answered, and with lower bounds set
# in fatelfd.conf (MaxBufferedPerUser=, MaxBufferedTotal=).
# LIMITS_SECONDS sets each attack's length (default 6; 20 under ASan).
. "$(dirname "$0")/lib.sh" || exit 99

SECS=${LIMITS_SECONDS:-6}

rl_init limits
t_require_tool python3 setpriv
[ "$(id -u)" -eq 0 ] || t_skip "the attack runs as uid 65534 and 65533: needs root"

CALL='{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"io.fatelf.Manager"}}'
# Under AddressSanitizer freed memory sits in its quarantine and the
# shadow counts too: there the bound is only "not without limit".
# Its calls are several times slower too, so the hoarders get longer to
# reach their bounds and a Status call longer to come back.
RSS_MAX=$((64 << 10))
STATUS_WAIT=5
if daemon_sanitized; then
	RSS_MAX=$((1024 << 10))
	SECS=${LIMITS_SECONDS:-20}
	STATUS_WAIT=20
fi

vm_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DPID/status" 2>/dev/null; }

# attack DESC UID...: one hoarder of 64 connections per uid, for SECS;
# root calls Status every 0.2 s meanwhile and the daemon's VmRSS is
# sampled. Checks the peak, that every Status was answered, and that the
# daemon still serves.
attack() {
	local desc=$1 u pids=() ok=0 bad=0 peak=0 rss end
	shift
	for u in "$@"; do
		timeout $((SECS + 30)) setpriv --reuid="$u" --regid="$u" --clear-groups "$SYS_PYTHON" \
			"$VLC" hoard "$SOCK" 64 "$CALL" "$SECS" >"hoard.$u" 2>&1 &
		pids+=($!)
	done
	end=$(($(date +%s) + SECS))
	while [ "$(date +%s)" -lt "$end" ]; do
		if timeout "$STATUS_WAIT" "$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1; then
			ok=$((ok + 1))
		else
			bad=$((bad + 1))
		fi
		rss=$(vm_kb VmRSS)
		[ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
		sleep 0.2
	done
	for u in "${pids[@]}"; do wait "$u"; done
	# The exact peak since the start (the samples may miss it).
	rss=$(vm_kb VmHWM)
	[ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
	for u in "$@"; do echo "# hoarder uid $u: $(cat "hoard.$u")"; done
	check_match "$desc: the hoarders had replies dropped" 'dropped=[1-9]' "$(cat "hoard.$1")"
	if [ "$peak" -gt 0 ] && [ "$peak" -le "$RSS_MAX" ]; then
		pass "$desc: the daemon's peak VmRSS stays at or below $((RSS_MAX >> 10)) MiB ($peak kB)"
	else
		fail "$desc: the daemon's peak VmRSS stays at or below $((RSS_MAX >> 10)) MiB" "peak $peak kB"
	fi
	check_eq "$desc: root's Status calls were all answered ($ok)" "0" "$bad"
	check "$desc: the daemon still serves" ctl status
}

daemon_prepare d
daemon_start d
echo "# idle: VmRSS $(vm_kb VmRSS) kB"
attack "one uid's 64 never-reading connections" 65534
attack "two uids' 64 never-reading connections each" 65534 65533

# Calls that were read and answered leave nothing to hold: 64 connections
# of one uid that each sent one call of almost MaxMessageSize (1 MiB),
# got its reply, and stay open cost the daemon no more than the bound.
mkdir -p "$DAEMON_SOCKDIR/big.d"
chown 65534:65534 "$DAEMON_SOCKDIR/big.d"
big=$DAEMON_SOCKDIR/big.d/big
timeout 120 setpriv --reuid=65534 --regid=65534 --clear-groups "$SYS_PYTHON" \
	"$VLC" bigcalls "$SOCK" 64 $(((1 << 20) - 64)) \
	"$big.ready" "$big.stop" >big.out 2>&1 &
bigpid=$!
for _ in $(seq 1200); do [ -e "$big.ready" ] && break; sleep 0.1; done
check_match "64 connections of one uid each had a 1 MiB call answered" 'answered=64' "$(cat big.out)"
rss=$(vm_kb VmRSS)
if [ -n "$rss" ] && [ "$rss" -le "$RSS_MAX" ]; then
	pass "... and held open, the daemon's VmRSS stays at or below $((RSS_MAX >> 10)) MiB ($rss kB)"
else
	fail "... and held open, the daemon's VmRSS stays at or below $((RSS_MAX >> 10)) MiB" "$rss kB"
fi
check "... and the daemon still serves" ctl status
touch "$big.stop"
wait "$bigpid"
daemon_stop

# Lower bounds from the config: a single never-reading connection is
# dropped once it holds 1 MiB (not the 16 MiB a connection may hold).
daemon_prepare small "MaxBufferedPerUser=1M" "MaxBufferedTotal=2M"
daemon_start small
run timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$SYS_PYTHON" \
	"$VLC" noread "$SOCK" "$CALL" 30
check_match "MaxBufferedPerUser=1M: a never-reading connection is dropped" '^dropped=1' "$RUN_OUT"
calls=$(sed -n 's/.*calls=\([0-9]*\).*/\1/p' <<<"$RUN_OUT")
# Each reply is about 6 KB; 16 MiB of them would be some 2,800 calls.
check_match "... well before it holds 16 MiB ($calls calls)" '^([0-9]{1,3}|1[0-9]{3})$' "$calls"
check_match "... and the log says which bound it passed" \
	"closing a connection of uid 65534 \(pid [0-9]+\) holding [0-9]+ bytes: over MaxBufferedPerUser=" \
	"$(cat "$DLOG")"
check "... and the daemon still serves" ctl status
daemon_stop

daemon_prepare bad "MaxBufferedPerUser=12"
daemon_start bad
check_eq "MaxBufferedPerUser=12 is refused at start" 1 "$?"
check_match "... naming the key and the range" "MaxBufferedPerUser: 12 is out of range" "$(cat "$DLOG")"

t_done
