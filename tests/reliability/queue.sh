#!/bin/bash
# fatelfd's job queue as an admin sees it. One job is held running by a
# bundle fed through a FIFO that stops after 256 KiB; meanwhile:
#
#  - `install --no-wait` prints the transaction id at once, and that id is
#    the history row's (state "queued" until the job starts);
#  - `status` lists the running and the queued jobs: id, kind, package or
#    source, state, caller uid;
#  - `cancel ID` of a queued job: it never starts, its history row says
#    "cancelled", a caller waiting for it gets Cancelled, status no longer
#    lists it;
#  - `cancel ID` of the running job says "rolling back transaction N...",
#    returns only once the rollback is done (the history row is final and
#    nothing of the package is on disk when it returns), then "cancelled";
#  - `history` shows "cancelled"; the queue then runs on;
#  - a stop with jobs queued closes their rows as cancelled; a start after a
#    kill -9 does so for the rows it finds queued.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
. "$top_srcdir/tests/reliability/lib.sh" || exit 99

rl_init queue
t_require_tool mkfifo

FEEDERS=()
cleanup() {
	local p
	for p in "${FEEDERS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	daemon_cleanup
}
trap cleanup EXIT

# ---------------------------------------------------------------- fixtures
mkdir -p tree-slow/opt/slow
head -c $((3 * 1024 * 1024)) /dev/urandom >tree-slow/opt/slow/blob
check "bundle slow (3 MiB, uncompressed)" rl_bundle slow.fatbundle slow 1.0 tree-slow --compression none
for p in qa qb qc qd; do
	mkdir -p "tree-$p/opt/$p"
	echo "$p" >"tree-$p/opt/$p/README"
	check "bundle $p" rl_bundle "$p.fatbundle" "$p" 1.0 "tree-$p"
done

# hold NAME: a FIFO NAME.fifo fed with slow.fatbundle's first 256 KiB, the
# rest only once NAME.go exists. FEEDER is the writer's pid.
FEEDER=
hold() {
	rm -f "$1.fifo" "$1.go"
	mkfifo "$1.fifo"
	(
		head -c 262144 slow.fatbundle
		while [ ! -e "$1.go" ]; do sleep 0.05; done
		tail -c +262145 slow.fatbundle
	) >"$1.fifo" 2>/dev/null &
	FEEDER=$!
	FEEDERS+=("$FEEDER")
}
# txid_of TEXT: the N of "transaction N".
txid_of() { printf '%s\n' "$1" | sed -n 's/.*transaction \([0-9][0-9]*\).*/\1/p' | head -1; }
# tx_state ID: the history row's state ("" when there is none).
tx_state() { ctl --json history | jq -r ".transactions[] | select(.id == $1) | .state"; }
# wait_state ID STATE: up to ~20 s.
wait_state() {
	local i
	for ((i = 0; i < 400; i++)); do
		[ "$(tx_state "$1")" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

daemon_prepare main
daemon_start main || fail "fatelfd starts" "$(tail -20 "$DLOG")"

# ---------------------------------------------------------------- ids and the list
hold slow1
run ctl install --no-wait slow1.fifo
check_eq "--no-wait, nothing else runs: exit 0" 0 "$RC"
check_match "... says it runs, with its transaction id" "^running: install of slow1.fifo, transaction [0-9]+ \(" "$RUN_OUT"
T1=$(txid_of "$RUN_OUT")
check_eq "... the id is the history row's, pending" pending "$(tx_state "$T1")"

run ctl install --no-wait qa.fatbundle
check_match "--no-wait behind it: queued, with its transaction id" \
	"^queued: install of qa.fatbundle, transaction [0-9]+$" "$RUN_OUT"
TA=$(txid_of "$RUN_OUT")
check_eq "... the history row says queued" queued "$(tx_state "$TA")"
run ctl --json install --no-wait qb.fatbundle
TB=$(printf '%s' "$RUN_OUT" | jq -r .id)
check_eq "--no-wait --json: the first reply carries the id (queued row)" queued "$(tx_state "$TB")"
# A remove waits in the queue too (its caller stays).
ctl remove qa >remove.out 2>remove.err &
RM=$!
for ((i = 0; i < 200; i++)); do
	TR=$(ctl --json status | jq -r '.jobs[] | select(.kind == "remove") | .id')
	[ -n "$TR" ] && break
	sleep 0.05
done
check_match "a remove queues too, with a transaction id" '^[0-9]+$' "$TR"

run ctl --json status
check_eq "status lists the jobs: ids in order" "$T1 $TA $TB $TR" \
	"$(printf '%s' "$RUN_OUT" | jq -r '[.jobs[].id] | map(tostring) | join(" ")')"
check_eq "... states" "running queued queued queued" \
	"$(printf '%s' "$RUN_OUT" | jq -r '[.jobs[].state] | join(" ")')"
check_eq "... kinds" "install install install remove" \
	"$(printf '%s' "$RUN_OUT" | jq -r '[.jobs[].kind] | join(" ")')"
check_eq "... install source fd, remove package qa" "fd fd fd qa" \
	"$(printf '%s' "$RUN_OUT" | jq -r '[.jobs[] | (.package // .source)] | join(" ")')"
check_eq "... caller uids" "0 0 0 0" "$(printf '%s' "$RUN_OUT" | jq -r '[.jobs[].uid] | map(tostring) | join(" ")')"
run ctl status
check_match "status in words: a jobs table" "ID +KIND +WHAT +STATE +UID" "$RUN_OUT"
check_match "... the queued remove" "$TR +remove +qa +queued +0" "$RUN_OUT"

# remove and thin --no-wait return once queued too, with the id; the
# jobs stay queued after their callers are gone.
run ctl remove --no-wait nosuch
check_match "remove --no-wait: queued, with its transaction id" \
	"^queued: remove of nosuch, transaction [0-9]+$" "$RUN_OUT"
TNR=$(txid_of "$RUN_OUT")
run ctl thin --no-wait nosuch
check_match "thin --no-wait: queued, with its transaction id" \
	"^queued: thin of nosuch, transaction [0-9]+$" "$RUN_OUT"
TNT=$(txid_of "$RUN_OUT")
check_eq "... both are still queued" "queued queued" "$(tx_state "$TNR") $(tx_state "$TNT")"
check "... and cancelled by id" ctl cancel "$TNR"
check "... both" ctl cancel "$TNT"

# ---------------------------------------------------------------- cancel a queued job
run ctl cancel "$TA"
check_eq "cancel ID of a queued job: exit 0" 0 "$RC"
check_eq "... says so" "cancelled transaction $TA, before it started" "$RUN_OUT"
check_eq "... its history row says cancelled" cancelled "$(tx_state "$TA")"
check_eq "... status no longer lists it" "$T1 $TB $TR" \
	"$(ctl --json status | jq -r '[.jobs[].id] | map(tostring) | join(" ")')"
run ctl cancel "$TA"
check_eq "cancel of it again: exit 1" 1 "$RC"
check_eq "... it has already ended, and how" \
	"fatelfctl: cancel: transaction $TA has already ended (cancelled); nothing to cancel" "$RUN_ERR"
check_eq "... as data: the id and the state" "io.fatelf.Manager.NoSuchTransaction $TA cancelled" \
	"$(ctl --json cancel "$TA" | jq -r '"\(.error) \(.parameters.id) \(.parameters.state)"')"
run ctl cancel 999999
check_eq "cancel of an id that never was: exit 1, no such transaction" \
	"1 fatelfctl: cancel: no such transaction: 999999 is neither queued nor running" "$RC $RUN_ERR"
check_eq "... no state as data" "null" "$(ctl --json cancel 999999 | jq -r .parameters.state)"
run ctl cancel 0
check_eq "cancel 0: a usage error (exit 2)" "2" "$RC"

# A caller waiting in the queue (no --no-wait) is told.
ctl install qc.fatbundle >qc.out 2>qc.err &
QC=$!
for ((i = 0; i < 200; i++)); do
	TC=$(ctl --json status | jq -r '.jobs[] | select(.state == "queued") | .id' | tail -1)
	[ -n "$TC" ] && [ "$TC" != "$TR" ] && [ "$TC" != "$TB" ] && break
	sleep 0.05
done
check "cancel the waiting caller's job" ctl cancel "$TC"
wait "$QC"
check_eq "... its fatelfctl exits 1" 1 "$?"
check_match "... saying it was cancelled" "cancelled: transaction $TC" "$(cat qc.err)"
check_eq "... and qc was never installed" "" "$(ls "$ROOT/opt" 2>/dev/null | grep qc)"

# ---------------------------------------------------------------- cancel the running job
run ctl cancel "$T1"
AFTER_STATE=$(tx_state "$T1")
check_eq "cancel of the running job: exit 0" 0 "$RC"
check_eq "... 'rolling back', then 'cancelled'" \
	"rolling back transaction $T1...
cancelled transaction $T1: rolled back, every package is as it was" "$RUN_OUT"
check_eq "... when it returns, the history row is final: cancelled" cancelled "$AFTER_STATE"
check_eq "... nothing of the package is on disk" "" "$(ls "$ROOT/opt" 2>/dev/null | grep slow)"
# Temps are named .fatelf.<txid>.<seq>.<random>: the queued job qb starts as
# soon as the rollback ends and may already have its own.
check_eq "... no temp file of the cancelled job" "" "$(rl_temps "$ROOT" | grep -F "/.fatelf.$T1.")"
run ctl history
check_match "history shows cancelled, in words" "$T1 +install +slow.* cancelled" "$RUN_OUT"

# The queue runs on: qb installs, then the remove of qa fails (never installed).
check "the next queued job runs to its end" wait_state "$TB" committed
check_eq "... qb is installed" qb "$(cat "$ROOT/opt/qb/README" 2>/dev/null)"
BEFORE=$(rl_snapshot_root "$ROOT")
check "... the queued remove ran after it (qa was never installed)" wait_state "$TR" failed
wait "$RM"
check_eq "... its caller exits 1" 1 "$?"
check_match "... package not installed" "package not installed: qa" "$(cat remove.err)"
check_eq "... status: nothing left" "0" "$(ctl --json status | jq -r '.jobs | length')"
check_eq "... and with the queue empty, no temp file of any job" "" "$(rl_temps "$ROOT")"

# --json cancel of a running job: two lines, rolling-back then cancelled.
hold slow2
run ctl install --no-wait slow2.fifo
T2=$(txid_of "$RUN_OUT")
run ctl --json cancel
check_eq "cancel (no id) --json: rolling-back, then cancelled" "rolling-back cancelled" \
	"$(printf '%s\n' "$RUN_OUT" | jq -r .state | tr '\n' ' ' | sed 's/ $//')"
check_eq "... of the running job" "$T2 $T2" "$(printf '%s\n' "$RUN_OUT" | jq -r .id | tr '\n' ' ' | sed 's/ $//')"
run ctl cancel
check_eq "cancel with nothing running: exit 1" 1 "$RC"
check_match "... no transaction is running" "no transaction is running" "$RUN_ERR"

# ---------------------------------------------------------------- a stop with jobs queued
hold slow3
run ctl install --no-wait slow3.fifo
T3=$(txid_of "$RUN_OUT")
run ctl install --no-wait qd.fatbundle
TD=$(txid_of "$RUN_OUT")
check_eq "queued before the stop" queued "$(tx_state "$TD")"
daemon_stop
check_eq "the daemon stops cleanly with a job queued" 0 "$DAEMON_STATUS"
daemon_start main || fail "fatelfd starts again" "$(tail -20 "$DLOG")"
check_eq "... the running job's row: cancelled" cancelled "$(tx_state "$T3")"
check_eq "... the queued job's row: cancelled" cancelled "$(tx_state "$TD")"
check_eq "... qd never installed" "" "$(ls "$ROOT/opt" 2>/dev/null | grep qd)"

# A kill -9 leaves a queued row behind: the next start closes it.
hold slow4
run ctl install --no-wait slow4.fifo
run ctl install --no-wait qd.fatbundle
TK=$(txid_of "$RUN_OUT")
daemon_kill
daemon_start main || fail "fatelfd starts after kill -9" "$(tail -20 "$DLOG")"
check_eq "after kill -9, the queued row is closed as cancelled" cancelled "$(tx_state "$TK")"
check_match "... and the start says so" "1 queued transaction of the last run marked cancelled" "$(cat "$DLOG")"
check_eq "... the root is as before the cancelled and killed jobs" "$BEFORE" "$(rl_snapshot_root "$ROOT")"
daemon_stop

t_done
