#!/bin/bash
# fatelfd's own life: its state directory, its socket, its download helper
# and its stop.
#
#  - the state directory is 0700 and its files (lock, database, -wal,
#    -shm) 0600, so uid 65534 can open none of them: it can neither take
#    a lock that stalls an install nor one that stops the next start. A
#    state directory that another uid owns or that others may write is
#    refused, naming it; an older install's looser modes are tightened;
#    the store is opened through the state directory that was checked,
#    so one swapped in after the check gets nothing;
#  - a second fatelfd on a socket that a daemon serves refuses to start
#    and leaves that socket alone; a socket left behind by a dead daemon
#    is replaced; a daemon only unlinks the socket inode it bound; a
#    symlink swapped in for the socket just after bind is neither
#    followed nor served;
#  - the download helper is checked at start (missing, or not executable
#    by the download uid), and a download's error names the helper, the
#    uid and the errno;
#  - SIGTERM stops the daemon within 5 s while a Verify thread is stuck, a
#    download stalls and a client never reads.
. "$(dirname "$0")/lib.sh" || exit 99

rl_init lifecycle
t_require_tool python3 setpriv stat
[ "$(id -u)" -eq 0 ] || t_skip "uid 65534 and chown: needs root"


# grab.py DIR SECONDS: as an unprivileged user, opens every file of the
# state directory DIR it can, prints "NAME=opened|ERRNO" for each, then
# for SECONDS takes every lock it can get on them and holds it: a shared
# flock on the lock file (a daemon that starts meanwhile cannot take its
# own), a read lock on SQLite's WAL write-lock byte of -shm (a writer
# then gets "database is locked").
cat >"$DAEMON_SOCKDIR/grab.py" <<'PY'
import errno, fcntl, os, sys, time
d, secs = sys.argv[1], float(sys.argv[2])
fds, out = {}, []
for name in ("lock", "fatelf.db", "fatelf.db-wal", "fatelf.db-shm"):
    try:
        fds[name] = os.open(os.path.join(d, name), os.O_RDONLY)
        out.append(name + "=opened")
    except OSError as e:
        out.append(name + "=" + errno.errorcode.get(e.errno, str(e.errno)))
print(" ".join(out), flush=True)
end = time.time() + secs
while time.time() < end:
    if "lock" in fds:
        try:
            fcntl.flock(fds["lock"], fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pass
    if "fatelf.db-shm" in fds:
        try:
            fcntl.lockf(fds["fatelf.db-shm"], fcntl.LOCK_SH | fcntl.LOCK_NB, 8, 120)
        except OSError:
            pass
    time.sleep(0.005)
PY
chmod 0644 "$DAEMON_SOCKDIR/grab.py"

mode_of() { stat -c %a "$1" 2>&1; }
modes() { # DIR: the modes of the state directory and its files, one line
	local d=$1 f out
	out="state=$(mode_of "$d")"
	for f in lock fatelf.db fatelf.db-wal fatelf.db-shm; do
		out="$out $f=$(mode_of "$d/$f")"
	done
	echo "$out"
}

mkdir -p tree/usr/share/lc
echo "the lifecycle package" >tree/usr/share/lc/README
rl_bundle lc.fatbundle lc 1.0 tree
cp lc.fatbundle "$DAEMON_SOCKDIR/lc.fatbundle"
# 40 directories deep, so that Verify's walk from its check of the type
# to its open is long enough for the swap to land in it often.
SWD=usr/share/sw$(printf '/d%.0s' {1..40})
mkdir -p "sw/$SWD"
echo "swapped" >"sw/$SWD/f"
rl_bundle "$DAEMON_SOCKDIR/sw.fatbundle" sw 1.0 sw

# The daemon's directory is under DAEMON_SOCKDIR (0755), so what keeps uid
# 65534 out is the state directory's own mode, not a parent's.
D=$DAEMON_SOCKDIR/life
daemon_prepare "$D"
chmod 0755 "$D/state"

# ================================================================ state directory
daemon_start "$D"
check_eq "a fresh start: the state directory is 0700, its files 0600" \
	"state=700 lock=600 fatelf.db=600 fatelf.db-wal=600 fatelf.db-shm=600" "$(modes "$D/state")"

setpriv --reuid=65534 --regid=65534 --clear-groups "$SYS_PYTHON" "$DAEMON_SOCKDIR/grab.py" \
	"$D/state" 40 >grab.out 2>&1 &
GRAB=$!
for ((i = 0; i < 200; i++)); do
	[ -s grab.out ] && break
	sleep 0.05
done
check_eq "uid 65534 can open none of the state directory's files" \
	"lock=EACCES fatelf.db=EACCES fatelf.db-wal=EACCES fatelf.db-shm=EACCES" "$(head -1 grab.out)"
sleep 0.3
run ctl install "$DAEMON_SOCKDIR/lc.fatbundle"
check_eq "an install goes through while uid 65534 tries to lock the store" 0 "$RC"
check_eq "... and its file is there" "the lifecycle package" "$(cat "$ROOT/usr/share/lc/README" 2>&1)"
daemon_stop
sleep 0.3
daemon_start "$D"
check_eq "a restart goes through while uid 65534 tries to take the lock" 0 "$?"
kill "$GRAB" 2>/dev/null
wait "$GRAB" 2>/dev/null
daemon_stop

# An older install: a 0755 directory and 0644 files. A user who took the
# lock then (the daemon stopped) is not taken for a daemon silently.
chmod 0755 "$D/state"
chmod 0644 "$D/state"/lock "$D/state"/fatelf.db*
rm -f grab.out
setpriv --reuid=65534 --regid=65534 --clear-groups "$SYS_PYTHON" "$DAEMON_SOCKDIR/grab.py" \
	"$D/state" 30 >grab.out 2>&1 &
GRAB=$!
for ((i = 0; i < 200; i++)); do
	[ -s grab.out ] && break
	sleep 0.05
done
sleep 0.3
n=$(grep -c . "$DLOG")
daemon_start "$D"
check_eq "a lock taken by another user while it was open to all stops the start" 1 "$?"
check_match "... with a message naming the lock file and what to do" \
	"$D/state/lock was open to other users \(mode 0644\): if no fatelfd runs, remove it and start again" \
	"$(tail -n +"$((n + 1))" "$DLOG")"
kill "$GRAB" 2>/dev/null
wait "$GRAB" 2>/dev/null
chmod 0755 "$D/state"
chmod 0644 "$D/state"/lock "$D/state"/fatelf.db*
daemon_start "$D"
check_eq "an older install's 0755 directory and 0644 files are tightened at start" \
	"state=700 lock=600 fatelf.db=600 fatelf.db-wal=600 fatelf.db-shm=600" "$(modes "$D/state")"
daemon_stop

refused_start() { # DESC ERE
	local n
	n=$(grep -c . "$DLOG")
	daemon_start "$D"
	local rc=$?
	if [ "$rc" -eq 1 ] && [ "$DAEMON_STATUS" != 0 ]; then
		pass "$1: fatelfd exits $DAEMON_STATUS"
	else
		fail "$1: fatelfd exits non-zero" "daemon_start returned $rc, status $DAEMON_STATUS"
		[ "$rc" -eq 0 ] && daemon_stop
	fi
	check_match "... naming the directory and the rule" "$2" "$(tail -n +"$((n + 1))" "$DLOG")"
}
chown 65534:65534 "$D/state"
refused_start "a state directory owned by uid 65534 is refused" \
	"state directory $D/state is owned by uid 65534, not by uid 0"
chown 0:0 "$D/state"
chmod 0777 "$D/state"
refused_start "a state directory others may write is refused" \
	"state directory $D/state is writable by others \(mode 0777\)"
chmod 0770 "$D/state"
refused_start "a state directory its group may write is refused" \
	"state directory $D/state is writable by its group \(mode 0770\)"
chmod 0700 "$D/state"

# The store is opened through the state directory that was checked, not
# by its name again: with the state directory in a directory that uid
# 65534 may write (and not sticky), it moves root's state directory aside
# and makes its own in its place after the check (strace holds flock's
# return for 2 s). Nothing lands in the other one: the database and the
# lock stay in root's, and the next check of the name refuses to start.
if command -v strace >/dev/null; then
	P=$(mktemp -d /tmp/fatelf-stateparent.XXXXXX)
	chmod 0777 "$P"
	strace -f -qq -o /dev/null -e trace=flock -e inject=flock:delay_exit=2000000 \
		"$FATELFD" --socket "$DAEMON_SOCKDIR/statedir.sock" --root "$ROOT" --state-dir "$P/state" \
		--config "$D/fatelfd.conf" 2>statedir.log &
	tracer=$!
	timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		"sleep 1; mv '$P/state' '$P/state.root' && mkdir -m 0700 '$P/state' && echo moved" >move.out 2>&1
	check_eq "uid 65534 moved the state directory aside and made its own" moved "$(cat move.out)"
	for ((i = 0; i < 300; i++)); do
		kill -0 "$tracer" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$tracer" 2>/dev/null; then
		dpid=$(pgrep -P "$tracer")
		[ -n "$dpid" ] && kill "$dpid"
	fi
	wait "$tracer"
	check_eq "... the daemon refuses to start (exit 1)" 1 "$?"
	check_match "... naming the directory now there and its owner" \
		"state directory $P/state is owned by uid 65534" "$(cat statedir.log)"
	check_eq "... nothing landed in that directory" "" "$(ls -A "$P/state")"
	check "... and root's state directory holds the database" test -s "$P/state.root/fatelf.db"
	rm -rf "$P"
else
	echo "# skipped: a state directory moved aside after its check (strace is missing)"
fi

# ================================================================ the socket
daemon_start "$D"
ino=$(stat -c %i "$SOCK")
check_eq "the socket is a socket anyone may connect to (0666)" "socket 666" \
	"$(stat -c '%F %a' "$SOCK" | sed 's/^socket.* /socket /')"
daemon_prepare second
run timeout 20 "$FATELFD" --socket "$SOCK" --root "$T_WORK/second/root" \
	--state-dir "$T_WORK/second/state" --config "$T_WORK/second/fatelfd.conf"
check_eq "a second fatelfd on a served socket exits 1" 1 "$RC"
check_match "... saying the socket is in use" "^error: fatelfd: $SOCK: already in use by a running fatelfd$" "$RUN_ERR"
check_nomatch "... and never says it serves" "serving" "$RUN_ERR"
check_eq "... the first daemon's socket is still there, the same inode" "$ino" "$(stat -c %i "$SOCK" 2>&1)"
check "... and the first daemon still serves" ctl status
check_eq "... the second touched nothing in its own state directory first" "" \
	"$(ls -A "$T_WORK/second/state")"

# A socket put at the path by someone else after we bound ours is not
# ours to unlink at exit.
mv "$SOCK" "$SOCK.moved"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCK"
other=$(stat -c %i "$SOCK")
daemon_stop
check_eq "a stopping daemon leaves a socket it did not bind" "$other" "$(stat -c %i "$SOCK" 2>&1)"
rm -f "$SOCK" "$SOCK.moved"

# A socket left by a daemon that died is replaced.
daemon_start "$D"
daemon_kill
check "a killed daemon leaves its socket behind" test -S "$SOCK"
"$FATELFD" --socket "$SOCK" --root "$ROOT" --state-dir "$D/state" --config "$D/fatelfd.conf" \
	2>stale.log &
STALE=$!
ok=no
for ((i = 0; i < 200; i++)); do
	if timeout 5 "$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1; then
		ok=yes
		break
	fi
	sleep 0.05
done
check_eq "a daemon started over that stale socket serves" yes "$ok"
kill "$STALE"
wait "$STALE"
check_eq "... stops cleanly" 0 "$?"
check "... and unlinks the socket it bound" test ! -e "$SOCK"

# A socket in a directory that others may write (a --socket under /tmp):
# uid 65534 swaps a symlink to a root 0600 file in for the socket just
# after bind(2) made it (strace holds bind's return for 1.5 s). The
# daemon changes nothing through that name: it refuses to serve a socket
# whose path no longer leads to it.
if command -v strace >/dev/null; then
	SD=$(mktemp -d /tmp/fatelf-sockdir.XXXXXX)
	chown 65534:65534 "$SD"
	chmod 0777 "$SD"
	secret=$T_WORK/socket-secret
	echo secret >"$secret"
	chmod 0600 "$secret"
	timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$SYS_PYTHON" -c '
import os, stat, sys, time
d, target = sys.argv[1], sys.argv[2]
sock, link = os.path.join(d, "s.sock"), os.path.join(d, "link")
os.symlink(target, link)
end = time.time() + 30
while time.time() < end:
    try:
        if stat.S_ISSOCK(os.lstat(sock).st_mode):
            os.rename(link, sock)
            print("swapped")
            break
    except FileNotFoundError:
        pass
    time.sleep(0.001)
' "$SD" "$secret" >swap.out 2>&1 &
	swapper=$!
	timeout 60 strace -f -qq -o /dev/null -e trace=bind -e inject=bind:delay_exit=1500000 \
		"$FATELFD" --socket "$SD/s.sock" --root "$ROOT" --state-dir "$D/state" \
		--config "$D/fatelfd.conf" 2>swapsock.log &
	tracer=$!
	wait "$swapper"
	check_eq "uid 65534 swapped a symlink in for the new socket" swapped "$(cat swap.out)"
	# Time for a daemon that took the symlink for its socket to use it.
	for ((i = 0; i < 40; i++)); do
		kill -0 "$tracer" 2>/dev/null || break
		sleep 0.1
	done
	check_eq "... the file it points to keeps its mode and owner" "600 0:0" \
		"$(stat -c '%a %u:%g' "$secret")"
	check_eq "... and its bytes" secret "$(cat "$secret")"
	if kill -0 "$tracer" 2>/dev/null; then
		fail "... the daemon refuses to serve" "it still runs"
		# timeout's child is strace, whose child is the daemon.
		dpid=$(pgrep -P "$(pgrep -P "$tracer")")
		[ -n "$dpid" ] && kill "$dpid"
	else
		pass "... the daemon refuses to serve"
	fi
	wait "$tracer"
	check_eq "... and exits 1" 1 "$?"
	check_match "... naming the socket" "$SD/s.sock: .*replaced" "$(cat swapsock.log)"
	check "... and the symlink is left as it is" test -L "$SD/s.sock"
	rm -rf "$SD"
else
	echo "# skipped: a symlink swapped in for the new socket (strace is missing)"
fi

# ================================================================ the download helper
daemon_start "$D"
check_match "the start says the download helper can be run" \
	"download helper .*/fatelf-fetch: executable by a download uid of its own \(2145386496-2145452031, " \
	"$(cat "$DLOG")"
daemon_stop

helper_case() { # DESC HELPER ERRNO-TEXT ERRNO-NAME
	local n
	n=$(grep -c . "$DLOG")
	daemon_start "$D" FATELF_FETCH_HELPER="$2"
	check_match "$1: the start says so" \
		"^error: fatelfd: download helper $2: a download uid of its own \([0-9]+-[0-9]+, [^)]*\) cannot execute it: $3" \
		"$(tail -n +"$((n + 1))" "$DLOG")"
	run ctl install http://127.0.0.1:9/lc.fatbundle
	check_eq "$1: an install from a URL fails" 1 "$RC"
	check_match "$1: the error names the helper, the uid and the errno" \
		"cannot run the download helper $2 as uid 214[0-9]{7}: $3 \($4\)" "$RUN_ERR"
	daemon_stop
}
helper_case "a missing helper" "$DAEMON_SOCKDIR/no-such-fetch" "No such file or directory" ENOENT
cp "$top_builddir/fetch/fatelf-fetch" "$DAEMON_SOCKDIR/private-fetch"
chmod 0700 "$DAEMON_SOCKDIR/private-fetch"
helper_case "a helper only root may run" "$DAEMON_SOCKDIR/private-fetch" "Permission denied" EACCES

# ================================================================ SIGTERM
# A helper that sends nothing, for ever.
# Its sleep carries this suite's pid (sleep adds its arguments up), so the
# check below finds this run's helper and no other's.
STALL="sleep 600 0.000$$"
printf '#!/bin/sh\nexec %s\n' "$STALL" >"$DAEMON_SOCKDIR/stall-fetch"
chmod 0755 "$DAEMON_SOCKDIR/stall-fetch"
env=(FATELF_FETCH_HELPER="$DAEMON_SOCKDIR/stall-fetch")
what="a Verify of a FIFO, a stalled download and a client that never reads"
# Test builds also get a Verify thread stuck for good, whatever Verify
# does with a FIFO: the first Verify call blocks where no signal reaches.
if [ "$FATELF_FAILPOINTS" = yes ]; then
	env+=(FATELF_FAILPOINT=verify-stuck)
	what="a stuck Verify thread, $what"
fi
daemon_start "$D" "${env[@]}"
# (Installed above; again here, so this part stands on its own.)
ctl --json list 2>/dev/null | grep -q '"lc"' || ctl install "$DAEMON_SOCKDIR/lc.fatbundle" >/dev/null 2>&1
ctl install "$DAEMON_SOCKDIR/sw.fatbundle" >/dev/null 2>&1
BG=()
if [ "$FATELF_FAILPOINTS" = yes ]; then
	ctl verify lc >/dev/null 2>&1 &
	BG+=($!)
	sleep 0.3
fi
# An installed file swapped for a FIFO that nobody writes and back, again
# and again, while Verify runs: a Verify that checks the file's type and
# then opens it blocking hangs in open().
mkfifo "$ROOT/$SWD/fifo"
cat >swap.py <<'PY'
import os, sys, time
d, stop = sys.argv[1], sys.argv[2]
end = time.time() + 30
while not os.path.exists(stop) and time.time() < end:
    os.rename(d + "/f", d + "/keep"); os.rename(d + "/fifo", d + "/f")
    os.rename(d + "/f", d + "/fifo"); os.rename(d + "/keep", d + "/f")
PY
python3 swap.py "$ROOT/$SWD" swap.stop &
SWAP=$!
# Verify calls one after the other on one connection, for at most 8 s,
# until one gets no reply within a second; that connection is kept open.
python3 "$VLC" repeat "$SOCK" \
	'{"method":"io.fatelf.Manager.Verify","parameters":{"package":"sw"}}' 8 1 >verifies.out 2>&1 &
BG+=($!)
for ((i = 0; i < 500; i++)); do
	[ -s verifies.out ] && break
	sleep 0.02
done
touch swap.stop
wait "$SWAP"
echo "# Verify calls while a file was swapped for a FIFO: $(cat verifies.out) (\"hung N\": call N never ended)"
ctl install http://127.0.0.1:9/lc.fatbundle >/dev/null 2>&1 &
BG+=($!)
timeout 60 python3 "$VLC" noread "$SOCK" \
	'{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"io.fatelf.Manager"}}' 30 \
	>/dev/null 2>&1 &
BG+=($!)
for ((i = 0; i < 200; i++)); do
	ctl --json status 2>/dev/null | grep -q '"fetching"' && break
	sleep 0.05
done
check_match "the download is running and stalled" '"fetching"' "$(ctl --json status 2>&1)"
sleep 1
t0=$(date +%s%N)
kill -TERM "$DPID"
for ((i = 0; i < 400; i++)); do
	[ -e "$DSTATUS" ] && break
	sleep 0.02
done
ms=$((($(date +%s%N) - t0) / 1000000))
if [ -e "$DSTATUS" ] && [ "$ms" -lt 5000 ]; then
	pass "SIGTERM stops fatelfd within 5 s despite $what ($ms ms)"
else
	fail "SIGTERM stops fatelfd within 5 s despite $what" "still running after $ms ms"
	daemon_kill
fi
daemon_reap
check_eq "... and it exits 0" 0 "$DAEMON_STATUS"
for p in "${BG[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
check_nomatch "... leaving no helper behind" "$DAEMON_SOCKDIR/stall-fetch|$STALL\$" "$(ps -eo args)"
daemon_start "$D"
check_eq "the next start serves, and the packages are still installed" "lc sw" \
	"$(ctl --json list 2>&1 | jq -r '.packages[].name' 2>&1 | sort | xargs)"
daemon_stop

t_done
