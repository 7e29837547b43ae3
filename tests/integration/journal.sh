#!/bin/bash
# fatelfd's log in the journal: a real systemd-journald (Debian's, from the
# systemd package) runs in a private mount namespace of this test, over
# tmpfs on /run/systemd, /run/log and /var/log/journal, so the machine's own
# journal (if any) is neither read nor written. A private fatelfd is started
# as systemd starts a service: stdout and stderr a stream to journald
# (systemd-cat) and JOURNAL_STREAM naming that stream. Each line of a
# transaction must then be a journal entry with FATELF_PACKAGE=,
# FATELF_VERSION=, FATELF_TXID= (the id History shows), FATELF_KIND= and
# FATELF_UID= (the caller's), found with journalctl's field matches as a
# fleet log pipeline would; lines about no transaction carry none of them.
# A daemon whose stderr is a file, or whose JOURNAL_STREAM names another
# stream (inherited from a parent), writes plain lines to stderr, with no
# "<PRIORITY>" prefix.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

JOURNALD=/lib/systemd/systemd-journald
SELF=$(readlink -f "$0")
if [ -z "${FATELF_JOURNAL_NS:-}" ]; then
	t_init journal
	t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
	t_require_tool unshare journalctl systemd-cat minisign jq stat
	[ -x "$JOURNALD" ] || t_skip "$JOURNALD is not installed (Debian package systemd)"
	[ "$(id -u)" = 0 ] || t_skip "a private journald needs root (a mount namespace over /run/systemd)"
	unshare -m --propagation private true 2>/dev/null ||
		t_skip "no mount namespace can be made here (unshare -m)"
	# Again, inside a mount namespace of its own.
	FATELF_JOURNAL_NS=1 exec unshare -m --propagation private bash "$SELF" "$@"
fi

t_init journal
mount -t tmpfs tmpfs /run/systemd 2>/dev/null || { mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd; } ||
	{ echo "Bail out! cannot mount a tmpfs on /run/systemd"; exit 99; }
mkdir -p /run/log && mount -t tmpfs tmpfs /run/log || { echo "Bail out! cannot mount a tmpfs on /run/log"; exit 99; }
if [ -d /var/log/journal ]; then
	mount -t tmpfs tmpfs /var/log/journal || { echo "Bail out! cannot mount a tmpfs on /var/log/journal"; exit 99; }
fi
"$JOURNALD" 2>"$T_WORK/journald.err" &
JPID=$!
for ((i = 0; i < 100; i++)); do
	[ -S /run/systemd/journal/socket ] && [ -S /run/systemd/journal/stdout ] && break
	sleep 0.05
done
[ -S /run/systemd/journal/socket ] || { echo "Bail out! journald did not start: $(cat "$T_WORK/journald.err")"; exit 99; }

daemon_init
trap 'daemon_cleanup; kill $JPID 2>/dev/null; wait $JPID 2>/dev/null' EXIT

minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G" "no key"
mkdir -p keys && cp vendor.pub keys/ && DAEMON_KEYS=$T_WORK/keys
mkdir -p t/opt/greet && echo "hello from the journal test" >t/opt/greet/README
"$FATELF" bundle create -o greet.fatbundle --name greet --version 1.0 --sign vendor.key t >/dev/null ||
	fail "bundle create" "greet.fatbundle"
echo "not a bundle" >broken.fatbundle

# entries FIELD=VALUE...: this daemon's journal entries that match, as JSON
# lines; waits up to ~5 s for at least one (journald stores asynchronously).
entries() {
	local i out
	for ((i = 0; i < 100; i++)); do
		out=$(journalctl -o json --no-pager SYSLOG_IDENTIFIER=fatelfd "$@" 2>/dev/null)
		[ -n "$out" ] && break
		sleep 0.05
	done
	printf '%s\n' "$out"
}

# ---- as under systemd: stderr is a journal stream, JOURNAL_STREAM names it
daemon_prepare d1
daemon_start d1 systemd-cat -t fatelfd-stream sh -c \
	'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) && export JOURNAL_STREAM && exec "$0" "$@"' ||
	fail "fatelfd starts under systemd-cat" "see $T_WORK/d1/log"
run ctl --json install greet.fatbundle
check_eq "install greet.fatbundle exits 0" 0 "$RC"
txid=$(jq -r 'select(.result) | .result.id' <<<"$RUN_OUT")
check_match "... with a transaction id" '^[0-9]+$' "$txid"

e=$(entries FATELF_PACKAGE=greet)
check_match "journalctl FATELF_PACKAGE=greet finds the install's 'done' line" \
	'^job 1 install greet 1\.0 \(uid 0\): done \(transaction' \
	"$(jq -r .MESSAGE <<<"$e")"
done_line=$(jq -c 'select(.MESSAGE | test("done \\(transaction"))' <<<"$e")
check_eq "... the 'done' entry: FATELF_TXID, FATELF_KIND, FATELF_VERSION, FATELF_UID, PRIORITY, native transport" \
	"$txid install 1.0 0 6 journal" \
	"$(jq -r '"\(.FATELF_TXID) \(.FATELF_KIND) \(.FATELF_VERSION) \(.FATELF_UID) \(.PRIORITY) \(._TRANSPORT)"' <<<"$done_line")"
check_eq "journalctl FATELF_TXID=$txid: the same transaction's lines" "$txid" \
	"$(entries FATELF_TXID="$txid" | jq -r .FATELF_TXID | sort -u)"
check_match "... among them its start (without a package yet: a bundle from fd)" \
	'^job 1 install bundle from fd \(uid 0\): started \(transaction '"$txid"'\)$' \
	"$(entries FATELF_TXID="$txid" | jq -r .MESSAGE)"
check_eq "... whose entry has FATELF_UID=0 and no FATELF_VERSION or FATELF_PACKAGE yet" "0 null null" \
	"$(entries FATELF_TXID="$txid" | jq -r 'select(.MESSAGE | test("started")) | "\(.FATELF_UID) \(.FATELF_VERSION) \(.FATELF_PACKAGE)"')"

run ctl --json remove greet
check_eq "remove greet exits 0" 0 "$RC"
rtx=$(jq -r 'select(.result) | .result.id' <<<"$RUN_OUT")
check_eq "journalctl FATELF_KIND=remove: its lines name greet and transaction $rtx" "greet $rtx" \
	"$(entries FATELF_KIND=remove | jq -r '"\(.FATELF_PACKAGE) \(.FATELF_TXID)"' | sort -u)"
check_eq "journalctl FATELF_KIND=remove FATELF_VERSION=1.0 FATELF_UID=0: its 'done' line" \
	"job 2 remove greet 1.0 (uid 0): done (transaction $rtx, 1 files, 0 bytes written, 0 saved)" \
	"$(entries FATELF_KIND=remove FATELF_VERSION=1.0 FATELF_UID=0 | jq -r .MESSAGE)"

run ctl install broken.fatbundle
check_match "installing a file that is no bundle fails" '^[1-9]' "$RC"
ftx=$(ctl --json history | jq -r '[.transactions[] | select(.state == "failed")][0].id')
check_match "... and its history row is failed" '^[0-9]+$' "$ftx"
check_eq "... its error line is PRIORITY=3 with FATELF_TXID=$ftx, FATELF_KIND=install and FATELF_UID=0" \
	"3 install 0" \
	"$(entries FATELF_TXID="$ftx" PRIORITY=3 | jq -r '"\(.PRIORITY) \(.FATELF_KIND) \(.FATELF_UID)"' | sort -u)"

check_match "the 'serving' line is in the journal" 'serving io.fatelf.Manager' \
	"$(entries | jq -r .MESSAGE)"
check_eq "... and lines about no transaction carry no FATELF_ field" "" \
	"$(entries | jq -r 'select(.MESSAGE | test("^serving|^download helper")) | keys[] | select(startswith("FATELF_"))')"
check_nomatch "nothing of the jobs went to the stream as plain text" 'started|done' \
	"$(journalctl -o cat --no-pager SYSLOG_IDENTIFIER=fatelfd-stream 2>/dev/null)"
daemon_stop
check_eq "the daemon stops cleanly" 0 "$DAEMON_STATUS"

# ---- stderr a file: plain lines, no priority prefixes
daemon_prepare d2
daemon_start d2 || fail "fatelfd starts with stderr to a file" "see $T_WORK/d2/log"
check "install greet.fatbundle" ctl install greet.fatbundle
daemon_stop
check_match "stderr to a file: 'job 1 install ... started' in the log" \
	'^job 1 install bundle from fd \(uid 0\): started \(transaction 1\)$' "$(cat d2/log)"
check_nomatch "... and no line starts with a priority prefix" '^<[0-7]>' "$(cat d2/log)"

# ---- JOURNAL_STREAM inherited, naming another stream: stderr stays
daemon_prepare d3
daemon_start d3 JOURNAL_STREAM=1:1 || fail "fatelfd starts with a stale JOURNAL_STREAM" "see $T_WORK/d3/log"
check "install greet.fatbundle" ctl install greet.fatbundle
daemon_stop
check_match "a JOURNAL_STREAM that is not stderr: lines stay on stderr" \
	'^job 1 install greet 1\.0 \(uid 0\): done \(transaction 1, ' "$(cat d3/log)"
check_nomatch "... with no priority prefix" '^<[0-7]>' "$(cat d3/log)"
check_no_sanitizer_report

t_done
