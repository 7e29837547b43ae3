#!/bin/bash
# What a mirror can do to fatelfd's downloads, and what a URL's
# credentials must never reach.
#
#  - Secrets: an install from http://fatelf:PASSWORD@127.0.0.1:PORT/...
#    (nginx with basic auth) works, and a failing one (404, 401, a URL
#    that does not parse) is refused; PASSWORD appears in no reply
#    (FetchFailed's url and message), no fatelfctl output, no line of the
#    daemon's log, no history row (History, fatelfctl history, the SQLite
#    files themselves), and not on the download helper's command line.
#  - A server that drips one byte a second is cut by FetchMinRateBytes=
#    over FetchLowSpeedSec=, or by FetchDeadlineSec=, and the worker runs
#    the next job; so is a passed pipe that drips, by FetchDeadlineSec=.
#  - FetchDenyNetworks=127.0.0.2/32 with nginx on 127.0.0.1 redirecting to
#    127.0.0.2: the hop is refused, naming it and the network, and nothing
#    reaches 127.0.0.2; with the list empty the redirect is followed; with
#    the default list (127.0.0.0/8 among others) it is followed too, since
#    the first URL's host is already in that network; with 127.0.0.1/32
#    and 127.0.0.2/32 only the first URL's own range is allowed.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
. "$top_srcdir/tests/reliability/lib.sh" || exit 99

rl_init mirror
t_require_tool python3 nginx sqlite3 openssl
SECRET=s3cretpw
OTHER_PIDS=()
cleanup() {
	local p
	daemon_stop_all
	[ -n "${MIXED:-}" ] && hosts_unmix
	for p in "${OTHER_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$DAEMON_SOCKDIR"
}
trap cleanup EXIT

connects() { # HOST PORT
	python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)' "$1" "$2" \
		2>/dev/null
}
vlc() {
	timeout 120 python3 "$VLC" "$@"
}
# no_secret DESC TEXT: TEXT does not hold the password.
no_secret() {
	if printf '%s' "$2" | grep -aq -- "$SECRET"; then
		fail "$1: no '$SECRET'" "$(printf '%s' "$2" | grep -a -- "$SECRET" | head -5)"
	else
		pass "$1: no '$SECRET'"
	fi
}

# ---------------------------------------------------------------- servers
mkdir -p tree-app/opt/app www/pub www/auth ngx/tmp ngx/logs
printf 'app 1\n' >tree-app/opt/app/README
check "bundle app 1" rl_bundle www/pub/app-1.fatbundle app 1 tree-app
cp www/pub/app-1.fatbundle www/auth/app-1.fatbundle
printf 'fatelf:{PLAIN}%s\n' "$SECRET" >ngx/htpasswd
chmod -R go+rX www ngx
PORT=$(free_port)
MPORT=$(free_port)
SPORT=$(free_port)
mkdir -p tls
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout tls/key.pem -out tls/cert.pem >tls/openssl.out 2>&1 ||
	fail "openssl makes a certificate for 127.0.0.1" "$(cat tls/openssl.out)"
nginx_conf "$T_WORK/ngx" \
	"	server {
		listen 127.0.0.1:$PORT;
		listen [::1]:$PORT;
		root $T_WORK/www;
		location /auth/ {
			auth_basic \"fatelf\";
			auth_basic_user_file $T_WORK/ngx/htpasswd;
		}
		location = /hop/app-1.fatbundle {
			return 302 http://127.0.0.2:$PORT/pub/app-1.fatbundle;
		}
		location = /tohttps/app-1.fatbundle {
			return 302 https://127.0.0.1:$SPORT/pub/app-1.fatbundle;
		}
	}" \
	"	server {
		listen 127.0.0.1:$SPORT ssl;
		ssl_certificate $T_WORK/tls/cert.pem;
		ssl_certificate_key $T_WORK/tls/key.pem;
		root $T_WORK/www;
		location = /down/app-1.fatbundle {
			return 302 http://127.0.0.1:$PORT/pub/app-1.fatbundle;
		}
		location = /up/app-1.fatbundle {
			return 302 https://127.0.0.1:$SPORT/pub/app-1.fatbundle;
		}
	}" \
	"	server {
		listen 127.0.0.2:$MPORT;
		location = /hopm/app-1.fatbundle {
			return 302 http://127.0.0.1:$PORT/pub/app-1.fatbundle;
		}
	}" \
	"	server {
		listen 127.0.0.2:$PORT;
		root $T_WORK/www;
		access_log $T_WORK/ngx/logs/lo2.log;
		location = /hop0/app-1.fatbundle {
			return 302 http://0.0.0.0:$PORT/pub/app-1.fatbundle;
		}
		location = /hop6/app-1.fatbundle {
			return 302 http://[::]:$PORT/pub/app-1.fatbundle;
		}
		location = /hopdec/app-1.fatbundle {
			return 302 http://2130706433:$PORT/pub/app-1.fatbundle;
		}
	}"
nginx -c "$T_WORK/ngx/nginx.conf" -p "$T_WORK/ngx" -g 'daemon off;' 2>ngx/logs/stderr &
OTHER_PIDS+=($!)
if ! wait_for 10 connects 127.0.0.1 "$PORT" || ! wait_for 10 connects 127.0.0.2 "$PORT"; then
	fail "nginx answers on 127.0.0.1:$PORT and 127.0.0.2:$PORT" "$(cat ngx/logs/stderr ngx/logs/error.log)"
	t_done
fi
BASE=http://127.0.0.1:$PORT
AUTH=http://fatelf:$SECRET@127.0.0.1:$PORT

# One byte a second, for ever, after headers that announce a megabyte.
DPORT=$(free_port)
python3 "$top_srcdir/tests/reliability/httpstall.py" "$DPORT" >drip.out 2>&1 &
OTHER_PIDS+=($!)
wait_for 10 grep -q ready drip.out || fail "the dripping server starts" "$(cat drip.out)"

# ================================================================ secrets
daemon_prepare secrets
daemon_start secrets || { fail "fatelfd starts (default config)" "$(tail -20 "$DLOG")"; t_done; }

run ctl install "$AUTH/auth/app-1.fatbundle"
check_eq "install from a URL with user:password@ (basic auth) works" "0 app 1" \
	"$RC $(cat "$ROOT/opt/app/README" 2>&1)"
no_secret "... its output" "$RUN_OUT $RUN_ERR"
ctl remove app >/dev/null 2>&1

run ctl install "$AUTH/auth/missing.fatbundle"
check_eq "a 404 with user:password@: exit 1" 1 "$RC"
check_match "... one line naming the URL without credentials and the 404" \
	"^fatelfctl: install: download failed: http://127.0.0.1:$PORT/auth/missing\\.fatbundle: .*404" "$RUN_ERR"
no_secret "... fatelfctl's words" "$RUN_OUT $RUN_ERR"
check_eq "... the daemon's log line names the URL once" \
	"error: job N install (uid 0): http://127.0.0.1:$PORT/auth/missing.fatbundle: the server answered HTTP 404 Not Found" \
	"$(grep 'missing\.fatbundle: the server' "$DLOG" | tail -1 | sed -E 's/^error: job [0-9]+ /error: job N /')"
run ctl --json install "$AUTH/auth/missing.fatbundle"
no_secret "... fatelfctl --json" "$RUN_OUT $RUN_ERR"

run vlc call "$SOCK" "{\"method\":\"io.fatelf.Manager.Install\",\"parameters\":{\"url\":\"$AUTH/auth/missing.fatbundle\"}}"
check_eq "the FetchFailed reply's url has no credentials" \
	"io.fatelf.Manager.FetchFailed $BASE/auth/missing.fatbundle" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r '"\(.error) \(.parameters.url)"' 2>&1)"
no_secret "... the whole reply" "$RUN_OUT"
# The download's own error, not the empty archive it left the reader.
MSG404=$(tail -1 <<<"$RUN_OUT" | jq -r '.parameters.message' 2>&1)
check_eq "... whose message is the helper's" \
	"$BASE/auth/missing.fatbundle: the server answered HTTP 404 Not Found" "$MSG404"
check_eq "... and so is its history row's error (History, the store)" \
	"failed $MSG404 failed $MSG404" \
	"$(ctl --json history --limit 1 | jq -r '(.transactions // .)[0] | "\(.state) \(.error)"' 2>&1) $(sqlite3 "$DDIR/state/fatelf.db" 'SELECT state, error FROM transactions ORDER BY id DESC LIMIT 1' 2>&1 | tr '|' ' ')"
run ctl history --limit 1
check_match "... and fatelfctl history's line" "failed .*the server answered HTTP 404 Not Found" "$RUN_OUT"

run ctl install "http://fatelf:${SECRET}XX@127.0.0.1:$PORT/auth/app-1.fatbundle"
check_match "a wrong password: download failed (401)" "download failed: .*401" "$RUN_ERR"
no_secret "... its words" "$RUN_OUT $RUN_ERR"
run ctl install "http://fatelf:$SECRET@127.0.0.1:99999999/x.fatbundle"
check_eq "a URL that does not parse, with credentials: exit 1, saying why (its port)" \
	"1 fatelfctl: install: download failed: http://127.0.0.1:99999999/x.fatbundle: not a valid URL (Port number was not a decimal number between 0 and 65535)" \
	"$RC $RUN_ERR"
no_secret "... its words" "$RUN_OUT $RUN_ERR"
run ctl install "http://fatelf:$SECRET@127.0.0.1:$DPORT/drip" --no-wait
# The helper runs now: its command line is readable by every local user.
HELPER_CMDLINES=
for ((i = 0; i < 100; i++)); do
	HELPER_CMDLINES=$(for p in $(pgrep -P "$DPID"); do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done 2>/dev/null)
	[ -n "$HELPER_CMDLINES" ] && break
	sleep 0.05
done
check_match "a running download's helper is seen" 'fatelf-fetch' "$HELPER_CMDLINES"
no_secret "... its command line (in /proc, for every user)" "$HELPER_CMDLINES"
# Queued behind it: passwords with a raw '/', '?' or '#' (so the authority
# seems to end before the '@'), and one with an '@' of its own. They do
# not parse; they fail after the cancel, and their log lines and history
# rows are checked below with every other.
ctl install "http://fatelf:pa/$SECRET@127.0.0.1:$PORT/auth/app-1.fatbundle" --no-wait >/dev/null 2>&1
ctl install "http://fatelf:p@$SECRET@127.0.0.1:$PORT/auth/app-1.fatbundle" --no-wait >/dev/null 2>&1
ctl install "http://fatelf:pa?$SECRET@127.0.0.1:$PORT/auth/app-1.fatbundle" --no-wait >/dev/null 2>&1
ctl install "http://fatelf:pa#$SECRET@127.0.0.1:$PORT/auth/app-1.fatbundle" --no-wait >/dev/null 2>&1
run ctl --json status
check_eq "Status lists the running download and the four queued" "running queued queued queued queued" \
	"$(jq -r '[.jobs[].state] | join(" ")' <<<"$RUN_OUT" 2>&1)"
no_secret "... Status' job list (for every user)" "$RUN_OUT"
run ctl status
no_secret "... fatelfctl status" "$RUN_OUT $RUN_ERR"
ctl cancel >/dev/null 2>&1
wait_for 20 sh -c "! \"$FATELFCTL\" --socket \"$SOCK\" --json status | jq -e '.running != null' >/dev/null"

run ctl history
no_secret "fatelfctl history" "$RUN_OUT $RUN_ERR"
run ctl --json history --limit 1000
no_secret "History" "$RUN_OUT"
run ctl --json status
no_secret "Status" "$RUN_OUT"
# state_files WHEN: the database, its WAL and SHM, the lock.
state_files() {
	no_secret "the state directory's files $1 ($(ls "$DDIR/state" | tr '\n' ' '))" \
		"$(grep -al -- "$SECRET" "$DDIR"/state/* 2>&1)"
}
state_files "while the daemon runs"
daemon_stop
state_files "after it stopped"
no_secret "every line of the daemon's log ($(wc -l <"$DLOG") lines)" "$(cat "$DLOG")"
check_match "... which logs the jobs, URLs without credentials" "install http://127.0.0.1:$PORT/auth/" "$(cat "$DLOG")"
check_match "... whose history holds the failed installs" 'failed' \
	"$(sqlite3 "$DDIR/state/fatelf.db" 'SELECT state FROM transactions' 2>&1)"
echo "# history: $(sqlite3 "$DDIR/state/fatelf.db" 'SELECT state, error FROM transactions' 2>&1 | tr '\n' ';')"
echo "# log: $(grep -a 'job' "$DLOG" | head -8 | tr '\n' ';')"

# ================================================================ a dripping server
# Each limit alone: the minimum rate (100 bytes/s over 3 s), the deadline (4 s).
drip_case() { # DIR MAXSEC ERE CONFIG...
	local d=$1 max=$2 ere=$3 t0 secs
	shift 3
	daemon_prepare "$d" "$@"
	daemon_start "$d" || { fail "fatelfd starts ($*)" "$(tail -20 "$DLOG")"; return; }
	t0=$(date +%s%N)
	timeout 60 "$FATELFCTL" --socket "$SOCK" install "http://127.0.0.1:$DPORT/drip" >drip-ctl.out 2>&1 &
	local cpid=$!
	# The next job waits behind it.
	wait_for 10 sh -c "\"$FATELFCTL\" --socket \"$SOCK\" --json status | jq -e '.running != null' >/dev/null"
	timeout 90 "$FATELFCTL" --socket "$SOCK" install "$BASE/pub/app-1.fatbundle" >next.out 2>&1 &
	local npid=$!
	wait "$cpid"
	RC=$?
	secs=$((($(date +%s%N) - t0) / 1000000000))
	check_eq "a server dripping 1 byte/s ($*): exit 1" 1 "$RC"
	check_match "... saying why" "$ere" "$(cat drip-ctl.out)"
	if [ "$secs" -le "$max" ]; then
		pass "... within $max s ($secs s)"
	else
		fail "... within $max s" "after $secs s"
	fi
	wait "$npid"
	check_eq "... and the job queued behind it runs: app installed" "0 app 1" \
		"$? $(cat "$ROOT/opt/app/README" 2>&1)"
	daemon_stop
}
drip_case rate 20 'download failed: http://127.0.0.1:[0-9]+/drip: slower than 100 bytes/s for 3 s' \
	"FetchMinRateBytes=100" "FetchLowSpeedSec=3" "FetchDeadlineSec=0"
drip_case deadline 20 'download failed: http://127.0.0.1:[0-9]+/drip: the download did not end within its deadline of 4 s' \
	"FetchMinRateBytes=0" "FetchDeadlineSec=4"

# A pipe that drips ("curl URL | fatelfctl install -") meets the deadline too.
daemon_prepare pipedrip "FetchMinRateBytes=0" "FetchDeadlineSec=4"
if daemon_start pipedrip; then
	mkfifo drip.fifo
	(for ((i = 0; i < 60; i++)); do printf x || exit 0; sleep 1; done) >drip.fifo 2>/dev/null &
	OTHER_PIDS+=($!)
	t0=$(date +%s%N)
	run timeout 60 "$FATELFCTL" --socket "$SOCK" install - <drip.fifo
	secs=$((($(date +%s%N) - t0) / 1000000000))
	check_eq "a pipe dripping 1 byte/s (FetchDeadlineSec=4): exit 1" 1 "$RC"
	check_match "... saying why" 'fd: the bundle did not arrive within the deadline of 4 s' "$RUN_ERR"
	if [ "$secs" -le 20 ]; then pass "... within 20 s ($secs s)"; else fail "... within 20 s" "after $secs s"; fi
	run ctl install "$BASE/pub/app-1.fatbundle"
	check_eq "... and the next job runs" 0 "$RC"
	daemon_stop
else
	fail "fatelfd starts (FetchDeadlineSec=4)" "$(tail -20 "$DLOG")"
fi

# ================================================================ redirects into a denied network
# hop_case DIR EXPECT DESC CONFIG...: EXPECT is "refused" or "followed".
hop_case() {
	local d=$1 want=$2 desc=$3 before after
	shift 3
	daemon_prepare "$d" "$@"
	daemon_start "$d" || { fail "fatelfd starts ($*)" "$(tail -20 "$DLOG")"; return; }
	before=$(wc -l <ngx/logs/lo2.log 2>/dev/null || echo 0)
	run ctl install "$BASE/hop/app-1.fatbundle"
	after=$(wc -l <ngx/logs/lo2.log 2>/dev/null || echo 0)
	if [ "$want" = refused ]; then
		check_eq "$desc: refused (exit 1)" 1 "$RC"
		check_eq "... one line naming the hop and the denied network" \
			"fatelfctl: install: download failed: $BASE/hop/app-1.fatbundle: redirected to http://127.0.0.2:$PORT/pub/app-1.fatbundle: 127.0.0.2 is in a denied network (127.0.0.2/32)" \
			"$RUN_ERR"
		check_eq "... no request reached 127.0.0.2" "$before" "$after"
		check_eq "... nothing installed" no "$([ -e "$ROOT/opt/app/README" ] && echo yes || echo no)"
		run vlc call "$SOCK" "{\"method\":\"io.fatelf.Manager.Install\",\"parameters\":{\"url\":\"$BASE/hop/app-1.fatbundle\"}}"
		check_eq "... FetchFailed{url} over Varlink" "io.fatelf.Manager.FetchFailed $BASE/hop/app-1.fatbundle" \
			"$(tail -1 <<<"$RUN_OUT" | jq -r '"\(.error) \(.parameters.url)"' 2>&1)"
	else
		check_eq "$desc: followed, app installed" "0 app 1" "$RC $(cat "$ROOT/opt/app/README" 2>&1)"
		check_eq "... from 127.0.0.2" "$((before + 1))" "$after"
	fi
	daemon_stop
}
hop_case deny2 refused "FetchDenyNetworks=127.0.0.2/32, redirect 127.0.0.1 -> 127.0.0.2" \
	"FetchDenyNetworks=" "FetchDenyNetworks=127.0.0.2/32"
hop_case deny12 refused "FetchDenyNetworks=127.0.0.1/32 127.0.0.2/32 (the first host's own range only)" \
	"FetchDenyNetworks=" "FetchDenyNetworks=127.0.0.1/32 127.0.0.2/32"
# Other spellings of the loopback, from a first host outside the list:
# the unspecified address (a connection to it reaches this host), and
# 127.0.0.1 as one decimal number.
daemon_prepare denylo "FetchDenyNetworks=" "FetchDenyNetworks=127.0.0.1/32 ::1/128"
if daemon_start denylo; then
	for h in "hop0|0.0.0.0|0.0.0.0|0.0.0.0 (this host)|127.0.0.1/32" \
		"hop6|[::]|[::]|:: (this host)|::1/128" "hopdec|2130706433|127.0.0.1|127.0.0.1|127.0.0.1/32"; do
		IFS='|' read -r loc host shown addr net <<<"$h"
		run ctl install "http://127.0.0.2:$PORT/$loc/app-1.fatbundle"
		check_eq "a redirect to http://$host:$PORT/ with 127.0.0.1/32 ::1/128 denied: refused, naming it" \
			"1 fatelfctl: install: download failed: http://127.0.0.2:$PORT/$loc/app-1.fatbundle: redirected to http://$shown:$PORT/pub/app-1.fatbundle: $addr is in a denied network ($net)" \
			"$RC $RUN_ERR"
		check_eq "... nothing installed" no "$([ -e "$ROOT/opt/app/README" ] && echo yes || echo no)"
	done
	daemon_stop
else
	fail "fatelfd starts (FetchDenyNetworks=127.0.0.1/32 ::1/128)" "$(tail -20 "$DLOG")"
fi
# A first host whose name gives 127.0.0.1 (where nothing listens on MPORT)
# and then 127.0.0.2, which answers with a redirect to 127.0.0.1: the
# address that answered is not in 127.0.0.1/32, so the hop is refused.
MIXED=fatelf-mirror-mixed.test
hosts_unmix() {
	grep -v " $MIXED\$" /etc/hosts >"$T_WORK/hosts.new" && cat "$T_WORK/hosts.new" >/etc/hosts
}
printf '127.0.0.1 %s\n127.0.0.2 %s\n' "$MIXED" "$MIXED" >>/etc/hosts
check_eq "$MIXED resolves to 127.0.0.1, then 127.0.0.2" "127.0.0.1 127.0.0.2" \
	"$(getent ahostsv4 "$MIXED" | awk '$2 == "STREAM" {print $1}' | tr '\n' ' ' | sed 's/ $//')"
daemon_prepare denymixed "FetchDenyNetworks=" "FetchDenyNetworks=127.0.0.1/32"
if daemon_start denymixed; then
	run ctl install "http://$MIXED:$MPORT/hopm/app-1.fatbundle"
	check_eq "a first host named for 127.0.0.1 (closed) and 127.0.0.2 (a redirect to 127.0.0.1): refused" \
		"1 fatelfctl: install: download failed: http://$MIXED:$MPORT/hopm/app-1.fatbundle: redirected to http://127.0.0.1:$PORT/pub/app-1.fatbundle: 127.0.0.1 is in a denied network (127.0.0.1/32)" \
		"$RC $RUN_ERR"
	check_eq "... nothing installed" no "$([ -e "$ROOT/opt/app/README" ] && echo yes || echo no)"
	daemon_stop
else
	fail "fatelfd starts (FetchDenyNetworks=127.0.0.1/32)" "$(tail -20 "$DLOG")"
fi
hosts_unmix

# A proxy in the daemon's environment is not used: the deny list could
# not hold through it. The "proxy" answers 502 and notes each connection.
PPORT=$(free_port)
cat >proxy.py <<'EOF'
import socket, sys
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(16)
print("ready", flush=True)
while True:
    c, _ = srv.accept()
    try:
        first = c.recv(65536).split(b"\r\n")[0].decode("latin-1")
        with open(sys.argv[2], "a") as log:
            log.write(first + "\n")
        c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except OSError:
        pass
    c.close()
EOF
: >proxy.log
python3 proxy.py "$PPORT" "$T_WORK/proxy.log" >proxy.out 2>&1 &
OTHER_PIDS+=($!)
wait_for 10 grep -q ready proxy.out || fail "the proxy starts" "$(cat proxy.out)"
daemon_prepare proxyenv
if daemon_start proxyenv http_proxy="http://127.0.0.1:$PPORT" https_proxy="http://127.0.0.1:$PPORT" \
	all_proxy="http://127.0.0.1:$PPORT" ALL_PROXY="http://127.0.0.1:$PPORT"; then
	run ctl install "$BASE/pub/app-1.fatbundle"
	check_eq "http_proxy, https_proxy and all_proxy in fatelfd's environment: installed directly" \
		"0 app 1" "$RC $(cat "$ROOT/opt/app/README" 2>&1)"
	check_eq "... the proxy saw no connection" 0 "$(wc -l <proxy.log)"
	daemon_stop
else
	fail "fatelfd starts (a proxy in its environment)" "$(tail -20 "$DLOG")"
fi

# The proxy the admin configures (FetchProxy=) is the one used.
: >proxy.log
daemon_prepare proxycfg "FetchProxy=http://127.0.0.1:$PPORT"
if daemon_start proxycfg; then
	run ctl --json install "$BASE/pub/app-1.fatbundle"
	check_eq "FetchProxy=: the download goes through that proxy (which answers 502)" \
		"1 io.fatelf.Manager.FetchFailed" "$RC $(jq -rs 'last.error' <<<"$RUN_OUT" 2>&1)"
	check_match "... the error says the proxy's answer" '502' "$(jq -rs 'last.parameters.message' <<<"$RUN_OUT")"
	check_eq "... the proxy was asked for the URL" "GET $BASE/pub/app-1.fatbundle HTTP/1.1" \
		"$(head -1 proxy.log)"
	daemon_stop
else
	fail "fatelfd starts (FetchProxy=)" "$(tail -20 "$DLOG")"
fi
daemon_prepare proxycred "FetchProxy=http://user:$SECRET@127.0.0.1:$PPORT"
run timeout 20 "$FATELFD" --socket "$DAEMON_SOCKDIR/proxycred.sock" --root "$T_WORK/proxycred/root" \
	--state-dir "$T_WORK/proxycred/state" --config "$T_WORK/proxycred/fatelfd.conf"
check_eq "FetchProxy= with credentials: fatelfd refuses to start" 1 "$RC"
check_match "... naming the key and the rule" 'FetchProxy: a proxy URL may not hold credentials' "$RUN_ERR"
no_secret "... the refusal" "$RUN_OUT$RUN_ERR"

# ================================================================ https never steps down to http
# nginx with a certificate for 127.0.0.1 from the suite's own CA (test
# builds of fatelf-fetch take it from FATELF_FETCH_TEST_CAINFO).
if [ "$FATELF_FAILPOINTS" = yes ]; then
	daemon_prepare tls
	if daemon_start tls FATELF_FETCH_TEST_CAINFO="$T_WORK/tls/cert.pem"; then
		run ctl install "https://127.0.0.1:$SPORT/pub/app-1.fatbundle"
		check_eq "an install from https (the test CA) works" "0 app 1" "$RC $(cat "$ROOT/opt/app/README" 2>&1)"
		ctl remove app >/dev/null 2>&1
		run ctl install "https://127.0.0.1:$SPORT/down/app-1.fatbundle"
		check_eq "a redirect from https to http: refused, naming it" \
			"1 fatelfctl: install: download failed: https://127.0.0.1:$SPORT/down/app-1.fatbundle: redirected to http://127.0.0.1:$PORT/pub/app-1.fatbundle: a download from https follows redirects to https only" \
			"$RC $RUN_ERR"
		check_eq "... nothing installed" no "$([ -e "$ROOT/opt/app/README" ] && echo yes || echo no)"
		run ctl install "https://127.0.0.1:$SPORT/up/app-1.fatbundle"
		check_eq "a redirect from https to https is followed" "0 app 1" "$RC $(cat "$ROOT/opt/app/README" 2>&1)"
		ctl remove app >/dev/null 2>&1
		run ctl install "$BASE/tohttps/app-1.fatbundle"
		check_eq "a redirect from http to https is followed" "0 app 1" "$RC $(cat "$ROOT/opt/app/README" 2>&1)"
		daemon_stop
	else
		fail "fatelfd starts (the test CA)" "$(tail -20 "$DLOG")"
	fi
else
	echo "# not a failpoints build: fatelf-fetch takes no test CA"
fi

hop_case denynone followed "an empty FetchDenyNetworks=" "FetchDenyNetworks="
hop_case denydefault followed "the default list (127.0.0.0/8 holds the first host too)"

t_done
