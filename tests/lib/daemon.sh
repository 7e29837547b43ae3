# A private fatelfd for a shell suite (sourced after
# tests/integration/lib.sh, which gives t_init, check_* and T_WORK).
#
# Each daemon runs over a directory of its own, DIR: DIR/root, DIR/state,
# DIR/fatelfd.conf and its log DIR/log. Its socket lives in one directory
# under /tmp for the whole suite, DAEMON_SOCKDIR (mode 0755): a socket path
# has at most 107 bytes, and an unprivileged caller must reach the socket
# whatever the build directory's permissions are. A daemon can be started,
# stopped, killed and started again over the same DIR.
#
# FATELFD may be a normal or a sanitizer (ASan/UBSan) build: its reports go
# to the log, and daemon_stop prints them; check_no_sanitizer_report makes
# them a failed check.
#
#   daemon_init                   the socket directory, and an EXIT trap
#                                 that runs daemon_cleanup
#   daemon_prepare DIR [LINE...]  DIR/root, DIR/state, DIR/fatelfd.conf
#   daemon_start DIR [VAR=VALUE...] [WRAPPER ARGS...]
#   daemon_stop, daemon_kill, daemon_reap
#   ctl ARGS...                   fatelfctl against the daemon last started
#
# The daemon last started is named by DPID, SOCK, ROOT, DDIR, DLOG and
# DSTATUS (the file its exit status is written to); DAEMON_STATUS is the
# wait status of the last one reaped.

: "${FATELFD:=$top_builddir/daemon/fatelfd}"
: "${FATELFCTL:=$top_builddir/client/fatelfctl}"
export FATELFD FATELFCTL

# The keys directory every daemon's config trusts (TrustedKeys=).
: "${DAEMON_KEYS:=}"
# The state directory of the daemons started while it is set, instead of
# DIR/state: a root that keeps its own (ROOT/var/lib/fatelf, as
# fatelf install --root makes it).
: "${DAEMON_STATE_DIR:=}"
DAEMON_SOCKDIR=
DAEMON_STATUS=
DAEMON_REPORTED=no
DAEMON_SEQ=0
DAEMON_PIDS=()
DAEMON_LOGS=()
DPID=
SOCK=
ROOT=
DDIR=
DLOG=
DSTATUS=
DLOG_FROM=0

# daemon_init: makes DAEMON_SOCKDIR and sets the EXIT trap. A suite with
# more to undo sets its own trap, calling daemon_cleanup from it.
daemon_init() {
	t_require_exec "$FATELFD" "$FATELFCTL"
	t_require_tool timeout
	DAEMON_SOCKDIR=$(mktemp -d /tmp/fatelfd-test.XXXXXX) || { echo "Bail out! mktemp"; exit 99; }
	chmod 0755 "$DAEMON_SOCKDIR"
	trap daemon_cleanup EXIT
}

# daemon_cleanup: stops every daemon still running and removes the socket
# directory.
daemon_cleanup() {
	daemon_stop_all
	[ -n "$DAEMON_SOCKDIR" ] && rm -rf "$DAEMON_SOCKDIR"
}

# daemon_stop_all: SIGKILL every daemon daemon_start started that still
# runs (one whose watcher has not written its status yet: a pid that ended
# is never signalled, it may belong to someone else by now).
daemon_stop_all() {
	local e pid watcher seq
	for e in "${DAEMON_PIDS[@]}"; do
		IFS=: read -r pid watcher seq <<<"$e"
		[ -e "$DAEMON_SOCKDIR/$seq.status" ] || kill -9 "$pid" 2>/dev/null
		wait "$watcher" 2>/dev/null
	done
	DAEMON_PIDS=()
}

# daemon_vendor_key: a vendor key pair made by fatelf bundle keygen in the
# work directory (vendor.pub, vendor.key, no password), its public half
# in keys/, which DAEMON_KEYS then names for daemon_prepare.
daemon_vendor_key() {
	"$FATELF" bundle keygen --no-password -p vendor.pub -s vendor.key >/dev/null || fail "keygen" "no key"
	mkdir -p keys && cp vendor.pub keys/
	DAEMON_KEYS=$T_WORK/keys
}

# daemon_prepare DIR [LINE...]: makes DIR/root, DIR/state and
# DIR/fatelfd.conf ([Daemon] trusting DAEMON_KEYS, then the lines). DIR is
# relative to the work directory or absolute.
daemon_prepare() {
	local d=$1
	shift
	case $d in /*) ;; *) d=$T_WORK/$d ;; esac
	mkdir -p "$d/root" "$d/state"
	{
		echo "[Daemon]"
		[ -n "$DAEMON_KEYS" ] && echo "TrustedKeys=$DAEMON_KEYS"
		printf '%s\n' "$@"
	} >"$d/fatelfd.conf"
}

# daemon_start DIR [VAR=VALUE...] [WRAPPER ARGS...]: starts fatelfd over DIR
# (made by daemon_prepare) through env(1) with the given arguments, so
# they set its environment (e.g. FATELF_FAILPOINT=rename:2) and may name a
# program that runs it (strace ...). Waits until it answers status. The
# log is appended to, so restarts keep the earlier lines. Returns 0 when
# it answers, 1 when it died first (DAEMON_STATUS holds its wait status),
# 2 when it neither answered nor died within ~20 s; on 1 and 2 it prints
# the end of the log as comments.
#
# The daemon runs under a watcher subshell that waits for it and writes
# its wait status to DSTATUS: the suite's shell would otherwise print
# "Killed" for every kill -9, and a SIGKILLed daemon's status could not be
# told from a clean exit.
daemon_start() {
	local d=$1 i watcher pidf
	shift
	case $d in /*) ;; *) d=$T_WORK/$d ;; esac
	DDIR=$d
	ROOT=$d/root
	DLOG=$d/log
	SOCK=$DAEMON_SOCKDIR/$(basename "$d").sock
	echo "--- start $* ---" >>"$DLOG"
	DLOG_FROM=$(stat -c %s "$DLOG")
	DAEMON_LOGS+=("$DLOG")
	# A stale socket must not answer for the new daemon.
	rm -f "$SOCK"
	DAEMON_SEQ=$((DAEMON_SEQ + 1))
	pidf=$DAEMON_SOCKDIR/$DAEMON_SEQ.pid
	DSTATUS=$DAEMON_SOCKDIR/$DAEMON_SEQ.status
	(
		env "$@" "$FATELFD" --socket "$SOCK" --root "$ROOT" --state-dir "${DAEMON_STATE_DIR:-$d/state}" \
			--config "$d/fatelfd.conf" 2>>"$DLOG" &
		echo $! >"$pidf"
		wait $!
		echo $? >"$DSTATUS.new"
		mv "$DSTATUS.new" "$DSTATUS"
	) 2>/dev/null &
	watcher=$!
	for ((i = 0; i < 500; i++)); do
		[ -s "$pidf" ] && break
		sleep 0.01
	done
	DPID=$(cat "$pidf")
	DAEMON_PIDS+=("$DPID:$watcher:$DAEMON_SEQ")
	for ((i = 0; i < 400; i++)); do
		if [ -e "$DSTATUS" ]; then
			daemon_reap
			daemon_log_tail "exited $DAEMON_STATUS before it answered"
			return 1
		fi
		if [ -S "$SOCK" ] && timeout 5 "$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1 &&
			[ ! -e "$DSTATUS" ]; then
			return 0
		fi
		sleep 0.05
	done
	daemon_log_tail "did not answer within 20 s"
	return 2
}

# daemon_log_tail WHY: the last lines of the daemon's log, as comments.
daemon_log_tail() {
	echo "# fatelfd in $DDIR $1; the end of its log:"
	tail -c +"$((DLOG_FROM + 1))" "$DLOG" | tail -n 20 | sed 's/^/#   /'
}

# daemon_reap: waits for the last daemon to end; DAEMON_STATUS is its wait
# status (137 = killed by SIGKILL). Gives up after ~20 s
# (DAEMON_STATUS=timeout). Prints any sanitizer report of this run.
daemon_reap() {
	local i
	for ((i = 0; i < 400; i++)); do
		[ -e "$DSTATUS" ] && break
		sleep 0.05
	done
	if [ ! -e "$DSTATUS" ]; then
		DAEMON_STATUS=timeout
		return 1
	fi
	DAEMON_STATUS=$(cat "$DSTATUS")
	DAEMON_REPORTED=no
	if tail -c +"$((DLOG_FROM + 1))" "$DLOG" | grep -qE "$DAEMON_SANITIZER_ERE"; then
		daemon_log_tail "made a sanitizer report (exit $DAEMON_STATUS)"
		DAEMON_REPORTED=yes
	fi
	return 0
}

# daemon_stop: a clean stop (SIGTERM), then reaps it; a daemon that does
# not exit 0 (it crashed, or a sanitizer found a leak at exit) gets the end
# of its log printed. Returns daemon_reap's status: the suite judges
# DAEMON_STATUS.
daemon_stop() {
	kill "$DPID" 2>/dev/null
	daemon_reap || return
	if [ "$DAEMON_STATUS" != 0 ] && [ "$DAEMON_REPORTED" = no ]; then
		daemon_log_tail "exited $DAEMON_STATUS on SIGTERM"
	fi
	return 0
}

# daemon_kill: kill -9 of the last daemon, then reaps it.
daemon_kill() {
	kill -9 "$DPID" 2>/dev/null
	daemon_reap
}

# ctl ARGS...: fatelfctl against the last daemon (60 s at most).
ctl() {
	timeout 60 "$FATELFCTL" --socket "$SOCK" "$@"
}

# daemon_sanitized: true when FATELFD is an ASan build.
daemon_sanitized() {
	grep -qa __asan_init "$FATELFD"
}

# check_no_sanitizer_report: no log of a daemon the suite started holds an
# AddressSanitizer, LeakSanitizer or UBSan report.
DAEMON_SANITIZER_ERE='AddressSanitizer|LeakSanitizer|runtime error:'
check_no_sanitizer_report() {
	local l found=
	while IFS= read -r l; do
		[ -n "$l" ] && found+=$(grep -m5 -E "$DAEMON_SANITIZER_ERE" "$l" 2>/dev/null | sed "s|^|$l: |")
	done < <(printf '%s\n' "${DAEMON_LOGS[@]}" | sort -u)
	if [ -z "$found" ]; then
		pass "no sanitizer report in the daemons' logs"
	else
		fail "no sanitizer report in the daemons' logs" "$found"
	fi
}
