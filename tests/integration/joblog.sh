#!/bin/bash
# fatelfd's log on a stderr that is not the journal (a file, as on a
# terminal or under a plain supervisor): one plain line per message, no
# "<PRIORITY>" prefix, "error: " before an error. Each job's lines name the
# job's number, its kind, the package and version as far as they are known,
# and the uid that called: root's and, through AdminGroup=, another uid's.
# A job that waits behind another says so. The journal's form of the same
# lines is tests/integration/journal.sh.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init joblog
t_require_exec "$FATELF"
daemon_init
daemon_vendor_key

for v in 1.0 1.1; do
	mkdir -p "t$v/opt/greet"
	echo "greet $v" >"t$v/opt/greet/README"
	"$FATELF" bundle create -o "$DAEMON_SOCKDIR/greet-$v.fatbundle" --name greet --version "$v" \
		--sign vendor.key "t$v" >/dev/null || fail "bundle create" "greet $v"
done
chmod 0644 "$DAEMON_SOCKDIR"/*.fatbundle
echo "not a bundle" >broken.fatbundle

# job_lines: the jobs' lines the daemon wrote since it started.
job_lines() {
	tail -c +"$((DLOG_FROM + 1))" "$DLOG" | grep -E '^(error: |warning: )?job '
}

# An admin that is not root: uid 65534, whose group (65534) is AdminGroup=.
ADM=$(getent group 65534 | cut -d: -f1)
daemon_prepare d ${ADM:+"AdminGroup=$ADM"}
daemon_start d || { fail "fatelfd starts" "$(tail -20 "$DLOG")"; t_done; }

# ---- root: install, then remove
check "root installs greet 1.0" ctl install "$DAEMON_SOCKDIR/greet-1.0.fatbundle"
check "root removes greet" ctl remove greet
check_eq "the install's and the remove's lines name the package, the version and uid 0" \
	"job 1 install bundle from fd (uid 0): started (transaction 1)
job 1 install greet 1.0 (uid 0): done (transaction 1, 1 files, 10 bytes written, 0 saved)
job 2 remove greet (uid 0): started (transaction 2)
job 2 remove greet 1.0 (uid 0): done (transaction 2, 1 files, 0 bytes written, 0 saved)" "$(job_lines)"

# ---- a failure: "error: " and the message
run ctl install broken.fatbundle
check_match "installing a file that is no bundle fails" '^[1-9]' "$RC"
check_match "... its line is an error of job 3 by uid 0, saying what is wrong" \
	'^error: job 3 install bundle from fd \(uid 0\): opening the archive: ' "$(job_lines)"

# ---- another uid, an admin through AdminGroup=
if [ -n "$ADM" ] && [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	as_adm() {
		timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$FATELFCTL" --socket "$SOCK" "$@"
	}
	check "uid 65534 (group $ADM) installs greet 1.0" as_adm install "$DAEMON_SOCKDIR/greet-1.0.fatbundle"
	check "... and upgrades it to 1.1" as_adm install "$DAEMON_SOCKDIR/greet-1.1.fatbundle"
	check_eq "their lines name uid 65534, and the upgrade both versions" \
		"job 4 install bundle from fd (uid 65534): started (transaction 4)
job 4 install greet 1.0 (uid 65534): done (transaction 4, 1 files, 10 bytes written, 0 saved)
job 5 install bundle from fd (uid 65534): started (transaction 5)
job 5 upgrade greet 1.0 -> 1.1 (uid 65534): done (transaction 5, 1 files, 10 bytes written, 0 saved)" \
		"$(job_lines | grep -E '^job [45] ')"
	check "root removes greet again" ctl remove greet
else
	echo "# skipping the admin that is not root: not root, no setpriv or no group 65534"
	ctl remove greet >/dev/null 2>&1
fi

# ---- a job that waits its turn: the first reads a pipe that stays silent
# until the second is queued.
n=$(job_lines | wc -l)
last=$(job_lines | sed -nE 's/^job ([0-9]+) .*/\1/p' | tail -1)
first=$((last + 1)) second=$((last + 2))
{
	for ((i = 0; i < 200; i++)); do
		[ -e go ] && break
		sleep 0.05
	done
	cat "$DAEMON_SOCKDIR/greet-1.0.fatbundle"
} | ctl install - >first.out 2>&1 &
P1=$!
for ((i = 0; i < 200; i++)); do
	job_lines | grep -q "^job $first .*: started" && break
	sleep 0.05
done
ctl install "$DAEMON_SOCKDIR/greet-1.1.fatbundle" >second.out 2>&1 &
P2=$!
for ((i = 0; i < 200; i++)); do
	job_lines | grep -q "^job $second .*: queued" && break
	sleep 0.05
done
touch go
wait $P1
check_eq "the first install (from a pipe) exits 0" 0 "$?"
wait $P2
check_eq "the second install exits 0" 0 "$?"
tx=$(ctl --json history greet | jq -r '.transactions[0].id')
check_eq "the second says it was queued behind the first, then runs after it" \
	"job $first install bundle from fd (uid 0): started (transaction $((tx - 1)))
job $second install bundle from fd (uid 0): queued behind job $first (transaction $tx)
job $first install greet 1.0 (uid 0): done (transaction $((tx - 1)), 1 files, 10 bytes written, 0 saved)
job $second install bundle from fd (uid 0): started (transaction $tx)
job $second upgrade greet 1.0 -> 1.1 (uid 0): done (transaction $tx, 1 files, 10 bytes written, 0 saved)" \
	"$(job_lines | tail -n +"$((n + 1))")"

# A caller's text with a newline in it cannot forge a line of the log:
# the URL of an install stays on its own job's line.
run ctl install $'http://127.0.0.1:9/x\nerror: forged line'
check_nomatch "a newline in a caller's URL forges no log line" '^error: forged line' "$(cat "$DLOG")"
check_match "... the URL stays on its own job's line" '^job [0-9]+ install http://127\.0\.0\.1:9/x.error: forged line \(uid 0\): started' "$(cat "$DLOG")"

daemon_stop
check_eq "the daemon stops cleanly" 0 "$DAEMON_STATUS"
check_nomatch "no line of its stderr starts with a priority prefix" '^<[0-7]>' "$(cat "$DLOG")"
check_match "... its lines about no job are plain too" '^serving io\.fatelf\.Manager on ' "$(cat "$DLOG")"
check_no_sanitizer_report

t_done
