#!/bin/bash
# Who the download helper is, while it talks to a server (doc/reliability.md,
# "The download helper's identity"). As root, with private fatelfds:
#
#  - a download from a server that drips one byte a second: the helper's
#    uid is neither root's nor nobody's, and no other process has it; it
#    has no supplementary groups; it is non-dumpable (its /proc files are
#    root's), so neither a process of nobody's uid nor one of its own uid
#    can open its stdin (/proc/PID/fd/0, where the URL and its password
#    came); a second daemon's download at the same time has another uid;
#  - a repository whose mirrors are a file:// directory without the
#    objects and then an http:// server that never answers: the process
#    connected to the server is not root, but a download uid's; with a
#    server that does answer, the install works and the files are the
#    vendor's; in the other order (an http:// mirror that answers 404,
#    then the file:// directory with everything) too;
#  - the fatelf tool's remote repository verbs (fatelf repo list|verify
#    URL), run by root: while `repo list` waits on the dripping server,
#    the process connected to it is fatelf-fetch under a download uid of
#    its own, without supplementary groups, non-dumpable, and dies with
#    the tool; list and verify of a repository served by nginx work as
#    root and as an unprivileged user (who keeps its own uid).
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
. "$top_srcdir/tests/reliability/lib.sh" || exit 99

rl_init fetchuid
[ "$(id -u)" -eq 0 ] || t_skip "the helper changes uid only under a root daemon: needs root"
t_require_tool python3 setpriv ss
SECRET=s3cretpw
OTHER_PIDS=()
cleanup() {
	local p
	daemon_stop_all
	for p in "${OTHER_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$DAEMON_SOCKDIR"
}
trap cleanup EXIT

# status_ids PID FIELD: the four ids of a Uid: or Gid: line.
status_ids() {
	awk -v f="$2:" '$1 == f { print $2, $3, $4, $5 }' "/proc/$1/status" 2>/dev/null
}
# uid_holders UID: the pids with UID as any of their four uids.
uid_holders() {
	local s
	for s in /proc/[0-9]*/status; do
		awk -v u="$1" '$1 == "Uid:" && ($2 == u || $3 == u || $4 == u || $5 == u) { print FILENAME }' \
			"$s" 2>/dev/null
	done | sed 's,^/proc/,,; s,/status$,,' | sort -n | tr '\n' ' ' | sed 's/ $//'
}
# helper_of DPID: the daemon's child, once there is one.
helper_of() {
	local p
	for ((i = 0; i < 200; i++)); do
		p=$(pgrep -P "$1" | head -1)
		[ -n "$p" ] && [ "$(readlink "/proc/$p/exe" 2>/dev/null)" != "$FATELFD" ] && { echo "$p"; return 0; }
		sleep 0.05
	done
	return 1
}

# ---------------------------------------------------------------- servers
# One byte a second, for ever, after headers that announce a megabyte.
DPORT=$(free_port)
python3 "$top_srcdir/tests/reliability/httpstall.py" "$DPORT" >drip.out 2>&1 &
OTHER_PIDS+=($!)
wait_for 10 grep -q ready drip.out || fail "the dripping server starts" "$(cat drip.out)"
# One that takes each request, notes its first line and never answers.
cat >silent.py <<'EOF'
import socket, sys, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(16)
print("ready", flush=True)
def hold(c):
    try:
        first = c.recv(65536).split(b"\r\n")[0].decode("latin-1")
        with open(sys.argv[2], "a") as log:
            log.write(first + "\n")
        while c.recv(65536):
            pass
    except OSError:
        pass
while True:
    c, _ = srv.accept()
    threading.Thread(target=hold, args=(c,), daemon=True).start()
EOF
SPORT=$(free_port)
: >silent.log
python3 silent.py "$SPORT" "$T_WORK/silent.log" >silent.out 2>&1 &
OTHER_PIDS+=($!)
wait_for 10 grep -q ready silent.out || fail "the silent server starts" "$(cat silent.out)"

# ================================================================ a single download
daemon_prepare one "FetchMinRateBytes=0" "FetchDeadlineSec=0"
daemon_start one || { fail "fatelfd starts" "$(tail -20 "$DLOG")"; t_done; }
ONE_PID=$DPID
ONE_SOCK=$SOCK
check_match "the start names the download uids" \
	"download helper .*/fatelf-fetch: executable by a download uid of its own \(2145386496-2145452031, " \
	"$(cat "$DLOG")"
run ctl install "http://fatelf:$SECRET@127.0.0.1:$DPORT/drip" --no-wait
check_eq "an install from a dripping server starts" 0 "$RC"
HP=$(helper_of "$ONE_PID")
check "its helper runs" test -n "$HP"
HP=${HP:-0}
read -r RU EU SU FU <<<"$(status_ids "$HP" Uid)"
read -r RG EG SG FG <<<"$(status_ids "$HP" Gid)"
echo "# helper $HP: uids $RU $EU $SU $FU, gids $RG $EG $SG $FG"
check_eq "its real, effective, saved and file system uids are one" "$RU $RU $RU" "$EU $SU $FU"
check_eq "... as are its gids" "$RG $RG $RG" "$EG $SG $FG"
if [ -n "$RU" ] && [ "$RU" -ne 0 ] && [ "$RU" -ne 65534 ]; then
	pass "its uid is neither root's nor nobody's ($RU)"
else
	fail "its uid is neither root's nor nobody's" "uid ${RU:-none}"
fi
check_eq "no other process has its uid" "$HP" "$(uid_holders "${RU:-0}")"
check_eq "... nor does the user database name it" "" "$(getent passwd "${RU:-0}")"
check_eq "it has no supplementary groups" "" "$(awk '$1 == "Groups:" { $1 = ""; print }' "/proc/$HP/status" | tr -d ' ')"
check_eq "it is non-dumpable: its /proc/PID/environ and mem are root's" "0 0" \
	"$(stat -c %u "/proc/$HP/environ" 2>&1) $(stat -c %u "/proc/$HP/mem" 2>&1)"
run setpriv --reuid=65534 --regid=65534 --clear-groups cat "/proc/$HP/fd/0"
check_eq "a process of nobody's uid cannot read its stdin (/proc/PID/fd/0)" "1 " "$((RC != 0)) $RUN_OUT"
check_nomatch "... nor see the password" "$SECRET" "$RUN_OUT"
run setpriv --reuid="${RU:-0}" --regid="${RG:-0}" --clear-groups cat "/proc/$HP/fd/0"
check_eq "... nor can a process of its own uid" "1 " "$((RC != 0)) $RUN_OUT"
run setpriv --reuid="${RU:-0}" --regid="${RG:-0}" --clear-groups cat "/proc/$HP/environ"
check_eq "... nor read its environment" 1 "$((RC != 0))"
run setpriv --reuid="${RU:-0}" --regid="${RG:-0}" --clear-groups \
	"$SYS_PYTHON" -c 'import ctypes, sys; sys.exit(0 if ctypes.CDLL(None, use_errno=True).ptrace(16, int(sys.argv[1]), 0, 0) == 0 else 1)' "$HP"
check_eq "... nor ptrace it (PTRACE_ATTACH)" 1 "$RC"

# A second daemon's download at the same time.
daemon_prepare two "FetchMinRateBytes=0" "FetchDeadlineSec=0"
if daemon_start two; then
	run ctl install "http://127.0.0.1:$DPORT/drip" --no-wait
	HP2=$(helper_of "$DPID")
	read -r RU2 _ <<<"$(status_ids "${HP2:-0}" Uid)"
	if [ -n "$RU2" ] && [ "$RU2" != "$RU" ] && [ "$RU2" -ne 0 ] && [ "$RU2" -ne 65534 ]; then
		pass "a second daemon's download at the same time has another uid ($RU2, $RU)"
	else
		fail "a second daemon's download at the same time has another uid" "${RU2:-none} and $RU"
	fi
	check_eq "... that no other process has" "$HP2" "$(uid_holders "${RU2:-0}")"
	ctl cancel >/dev/null 2>&1
	daemon_stop
else
	fail "a second fatelfd starts" "$(tail -20 "$DLOG")"
fi
SOCK=$ONE_SOCK
ctl cancel >/dev/null 2>&1
wait_for 10 sh -c "! kill -0 $HP 2>/dev/null" || fail "the cancelled helper ends" "pid $HP runs"
check_eq "the cancelled helper's uid is no process's any more" "" "$(uid_holders "${RU:-0}")"
DPID=$ONE_PID
daemon_stop

# ================================================================ a repository of file:// and http:// mirrors
mkdir -p tree/opt/mixed
printf 'mixed 1\n' >tree/opt/mixed/README
head -c 100000 /dev/urandom >tree/opt/mixed/data
check "bundle mixed 1" rl_bundle mixed-1.fatbundle mixed 1 tree
"$FATELF" repo init --sign "$RL_KEY" www/repo >/dev/null && \
	"$FATELF" repo add --sign "$RL_KEY" www/repo mixed-1.fatbundle >/dev/null ||
	fail "the repository is made" "fatelf repo failed"
check "the repository has objects" test -d www/repo/objects
# The local medium: everything but the objects.
mkdir -p local
(cd www/repo && tar cf - --exclude=./objects .) | (cd local && tar xf -)
check "... and the local copy has none" test ! -e local/objects
chmod -R go+rX www
HPORT=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$T_WORK/www" "$HPORT" >http.out 2>&1 &
OTHER_PIDS+=($!)
wait_for 10 python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$HPORT" 2>/dev/null ||
	fail "the http server starts" "$(cat http.out)"

daemon_prepare mix "Repositories=$T_WORK/mix/repos.d" "FetchTimeoutSec=30"
daemon_start mix || { fail "fatelfd starts (repositories)" "$(tail -20 "$DLOG")"; t_done; }
check "repo add: file:///local then a silent http:// server" \
	ctl repo add stall "file://$T_WORK/local" "http://127.0.0.1:$SPORT/repo" --key "$RL_PUB"
run ctl update
check_eq "update reads the index from the file:// mirror" 0 "$RC"
check_eq "... and asks the http:// server nothing" "" "$(cat silent.log)"
run ctl install mixed --no-wait
check_eq "an install from it starts" 0 "$RC"
wait_for 20 grep -q 'GET /repo/objects/' silent.log
check_match "the objects missing from file:// are asked of the http:// server" "^GET /repo/objects/" \
	"$(head -1 silent.log)"
CONN=$(ss -Htnp state established "( dport = :$SPORT )" 2>&1)
CPID=$(grep -o 'pid=[0-9]*' <<<"$CONN" | head -1 | cut -d= -f2)
echo "# connection to the silent server: $CONN"
check "a process holds the connection to it" test -n "$CPID"
read -r CU _ <<<"$(status_ids "${CPID:-0}" Uid)"
if [ -n "$CU" ] && [ "$CU" -ne 0 ] && [ "$CU" -ne 65534 ]; then
	pass "the process that talks to the http:// mirror is not root, but a download uid ($CU)"
else
	fail "the process that talks to the http:// mirror is not root" "pid ${CPID:-none}, uid ${CU:-none}"
fi
check_eq "... that no other process has" "${CPID:-x}" "$(uid_holders "${CU:-0}")"
check_eq "... non-dumpable" 0 "$(stat -c %u "/proc/${CPID:-0}/environ" 2>&1)"
ctl cancel >/dev/null 2>&1
wait_for 10 sh -c "! \"$FATELFCTL\" --socket \"$SOCK\" --json status | jq -e '.running != null' >/dev/null" || true
check "remove the stalled repository" ctl repo remove stall

check "repo add: file:///local then the http:// server that answers" \
	ctl repo add good "file://$T_WORK/local" "http://127.0.0.1:$HPORT/repo" --key "$RL_PUB"
check "update" ctl update
run ctl install mixed
check_eq "an install from file:// (no objects) then http:// works" 0 "$RC"
[ "$RC" -eq 0 ] || echo "$RUN_ERR" | sed 's/^/# /'
check_cmp "... the data file is the vendor's" tree/opt/mixed/data "$ROOT/opt/mixed/data"
check_eq "... and the README" "mixed 1" "$(cat "$ROOT/opt/mixed/README" 2>&1)"
check "remove mixed" ctl remove mixed
check "remove the repository" ctl repo remove good

check "repo add: an http:// mirror that answers 404, then file:// with everything" \
	ctl repo add back "http://127.0.0.1:$HPORT/nothing-here" "file://$T_WORK/www/repo" --key "$RL_PUB"
run ctl update
check_eq "update falls back to the file:// mirror" 0 "$RC"
run ctl install mixed
check_eq "... and so does the install" 0 "$RC"
[ "$RC" -eq 0 ] || echo "$RUN_ERR" | sed 's/^/# /'
check_cmp "... the data file is the vendor's" tree/opt/mixed/data "$ROOT/opt/mixed/data"
daemon_stop

# ================================================================ fatelf repo list|verify URL, as root
mkdir -p tmp-root
run_tool_bg() { # OUT ERR ARGS...: the tool in the background, its pid in TOOL_PID
	local out=$1 err=$2
	shift 2
	TMPDIR=$T_WORK/tmp-root "$FATELF" "$@" >"$out" 2>"$err" &
	TOOL_PID=$!
}
# conn_pid PORT: the pid of the process with an established connection to PORT.
conn_pid() {
	ss -Htnp state established "( dport = :$1 )" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2
}
run_tool_bg list-drip.out list-drip.err repo list "http://127.0.0.1:$DPORT/repo"
wait_for 20 sh -c "ss -Htnp state established '( dport = :$DPORT )' | grep -q pid=" ||
	fail "repo list connects to the dripping server" "$(cat list-drip.err)"
TP=$(conn_pid "$DPORT")
TP=${TP:-0}
echo "# fatelf $TOOL_PID; the process connected to the server: $TP ($(readlink "/proc/$TP/exe" 2>&1))"
check_match "the process that talks to the server is the download helper" "/fatelf-fetch$" \
	"$(readlink "/proc/$TP/exe" 2>&1)"
read -r TU TEU TSU TFU <<<"$(status_ids "$TP" Uid)"
read -r TG TEG TSG TFG <<<"$(status_ids "$TP" Gid)"
echo "# its uids $TU $TEU $TSU $TFU, gids $TG $TEG $TSG $TFG"
if [ -n "$TU" ] && [ "$TU" -ne 0 ] && [ "$TU" -ne 65534 ] &&
	[ "$TU" -ge 2145386496 ] && [ "$TU" -le 2145452031 ]; then
	pass "repo list as root: the helper's uid is a download uid, not root's ($TU)"
else
	fail "repo list as root: the helper's uid is a download uid, not root's" "uid ${TU:-none}"
fi
check_eq "... all four of its uids" "$TU $TU $TU" "$TEU $TSU $TFU"
check_eq "... its gids are one and not root's" "$TG $TG $TG 1" "$TEG $TSG $TFG $((${TG:-0} != 0))"
check_eq "... no other process has its uid" "$TP" "$(uid_holders "${TU:-0}")"
check_eq "... it has no supplementary groups" "" \
	"$(awk '$1 == "Groups:" { $1 = ""; print }' "/proc/$TP/status" 2>/dev/null | tr -d ' ')"
check_eq "... it is non-dumpable: its /proc/PID/environ and mem are root's" "0 0" \
	"$(stat -c %u "/proc/$TP/environ" 2>&1) $(stat -c %u "/proc/$TP/mem" 2>&1)"
check_eq "... it holds no descriptor of the temporary copy" "" \
	"$(ls -l "/proc/$TP/fd" 2>/dev/null | grep -F "$T_WORK/tmp-root")"
TMPCOPY=$(ls -d tmp-root/fatelf-repo.* 2>/dev/null | head -1)
check "... which the tool made" test -n "$TMPCOPY"
run setpriv --reuid="${TU:-0}" --regid="${TG:-0}" --clear-groups touch "${TMPCOPY:-tmp-root}/planted"
check_eq "... and where its uid may write nothing" "1 no" "$((RC != 0)) $([ -e "${TMPCOPY:-tmp-root}/planted" ] && echo yes || echo no)"
kill -9 "$TOOL_PID" 2>/dev/null
wait "$TOOL_PID" 2>/dev/null
wait_for 10 sh -c "! kill -0 $TP 2>/dev/null" || fail "the helper dies with the tool" "pid $TP runs"
check_eq "the helper dies with the tool" "" "$(uid_holders "${TU:-0}")"
rm -rf tmp-root/fatelf-repo.*

# A repository served by nginx: list and verify, as root and as nobody.
NPORT=$(free_port)
nginx_www "$NPORT" || fail "nginx starts" "$(cat ngx/logs/stderr)"
OTHER_PIDS+=($NGPID)
cp "$RL_PUB" rl-pub-any.pub && chmod 0644 rl-pub-any.pub
run env TMPDIR="$T_WORK/tmp-root" "$FATELF" repo list "http://127.0.0.1:$NPORT/repo"
check_eq "repo list http:// as root: exit 0" 0 "$RC"
check_match "... shows mixed 1" "mixed +1 " "$RUN_OUT"
run env TMPDIR="$T_WORK/tmp-root" "$FATELF" repo verify --key rl-pub-any.pub --vendor-key rl-pub-any.pub \
	"http://127.0.0.1:$NPORT/repo"
check_eq "repo verify http:// as root: exit 0" 0 "$RC"
check_match "... every object fetched and checked" "ok: serial [0-9]+, signature good, 1 package" "$RUN_OUT"
check_match "... the objects came from nginx" "^GET /repo/objects/.* 200 " "$(cat ngx/logs/files.log)"
check_eq "... leaving no temporary copy" "" "$(ls tmp-root)"
mkdir -p tmp-nobody && chown 65534:65534 tmp-nobody
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups env TMPDIR="$T_WORK/tmp-nobody")
run "${NOBODY[@]}" "$FATELF" repo list "http://127.0.0.1:$NPORT/repo"
check_eq "repo list http:// as an unprivileged user: exit 0" 0 "$RC"
[ "$RC" -eq 0 ] || echo "$RUN_ERR" | sed 's/^/# /'
check_match "... shows mixed 1" "mixed +1 " "$RUN_OUT"
run "${NOBODY[@]}" "$FATELF" repo verify --key rl-pub-any.pub --vendor-key rl-pub-any.pub \
	"http://127.0.0.1:$NPORT/repo"
check_eq "repo verify http:// as an unprivileged user: exit 0" 0 "$RC"
check_match "... every object fetched and checked" "ok: serial [0-9]+, signature good, 1 package" "$RUN_OUT"
check_eq "... leaving no temporary copy" "" "$(ls tmp-nobody)"
# An unprivileged caller's helper keeps the caller's uid.
setpriv --reuid=65534 --regid=65534 --clear-groups env TMPDIR="$T_WORK/tmp-nobody" \
	"$FATELF" repo list "http://127.0.0.1:$DPORT/repo" >/dev/null 2>&1 &
TOOL_PID=$!
wait_for 20 sh -c "ss -Htnp state established '( dport = :$DPORT )' | grep -q pid=" || true
TP=$(conn_pid "$DPORT")
read -r TU _ <<<"$(status_ids "${TP:-0}" Uid)"
check_eq "repo list as an unprivileged user: its helper runs as that user" 65534 "${TU:-none}"
kill -9 "$TOOL_PID" 2>/dev/null
wait "$TOOL_PID" 2>/dev/null
check_no_sanitizer_report

t_done
