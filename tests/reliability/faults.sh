#!/bin/bash
# Faults the world throws at fatelfd in the middle of a transaction, each
# of which must end in a clear error and a rollback:
#
#  - a full disk: the preflight refuses a bundle too big for a
#    size-limited tmpfs root; and a disk that fills up while a slow,
#    pipe-fed upgrade is staging, so ENOSPC hits in the middle of a file;
#  - a read-only root (a tmpfs remounted read-only): upgrade and remove;
#  - an immutable file (chattr +i): remove;
#  - a failing HTTP source: nginx serving with limit_rate, killed in the
#    middle of the transfer (a truncated download);
#  - an HTTP source that sends part of the body and then stalls
#    (FetchTimeoutSec=2 makes the timeout fire fast);
#  - an fd source (a pipe) that stops sending and is then closed.
#
# After each fault: fatelfctl exits 1 with one line saying what happened;
# the root is byte for byte what it was before (package big 1.0, whose
# upgrade to 2.0 was under way), no '.fatelf.*' temp is left, the store
# shows the same rows, the history's newest row is failed or rolled-back,
# fatelfctl verify is clean, and the daemon still answers.
#
# Mounting needs root: without it the mount-based checks are skipped with
# a note (the suite still runs the others).
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
. "$top_srcdir/tests/reliability/lib.sh" || exit 99

rl_init faults
# Everything below mounts beneath the work directory: never without one.
case ${T_WORK:-} in /?*/tests/work/faults) ;; *) echo "Bail out! work directory '${T_WORK:-}'"; exit 99 ;; esac
t_require_tool python3 cmp dd mkfifo

IS_ROOT=no
[ "$(id -u)" -eq 0 ] && IS_ROOT=yes

# Mount points to undo at exit, last first; daemons are stopped before.
MOUNTS=()
OTHER_PIDS=()
cleanup() {
	local i p
	for p in "${OTHER_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	daemon_stop_all
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}" 2>/dev/null
	done
	MOUNTS=()
	rm -rf "$DAEMON_SOCKDIR"
}
trap cleanup EXIT

# ---------------------------------------------------------------- fixtures
# Package big: a 3 MiB blob of random bytes (so an uncompressed bundle
# streams the blob byte for byte), a README and a config file. 2.0 has a
# different blob and README. Bundles are uncompressed: bytes written into
# the pipe are bytes the engine can stage.
BLOB=$((3 * 1024 * 1024))
mk_tree() { # DIR VERSION
	mkdir -p "$1/opt/big/share" "$1/etc/big"
	head -c "$BLOB" /dev/urandom >"$1/opt/big/share/blob"
	printf 'big, version %s\n' "$2" >"$1/opt/big/README"
	printf 'setting=%s\n' "$2" >"$1/etc/big/big.conf"
}
mk_tree tree1 1.0
mk_tree tree2 2.0
check "bundle big 1.0" rl_bundle big-1.fatbundle big 1.0 tree1 --compression none
check "bundle big 2.0" rl_bundle big-2.fatbundle big 2.0 tree2 --compression none
BIG2_SIZE=$(file_size big-2.fatbundle)

# ---------------------------------------------------------------- helpers
# A daemon over DIR whose root holds big 1.0. With a mount command given
# (MOUNT_SRC set), the root is a bind mount of DIR/fs/root where DIR/fs
# is a tmpfs of MOUNT_SIZE, so a filler file in DIR/fs (outside the root)
# uses up the root's disk.
# setup DIR [CONFIG-LINE...]: returns 1 (after a failed check) when the
# daemon does not start or big 1.0 does not install.
setup() {
	local d=$1
	shift
	daemon_prepare "$d" "$@"
	if [ -n "${MOUNT_SIZE:-}" ]; then
		mkdir -p "$T_WORK/$d/fs"
		if ! mount -t tmpfs -o "size=$MOUNT_SIZE" "fatelf-$d" "$T_WORK/$d/fs"; then
			fail "$d: mount a $MOUNT_SIZE tmpfs"
			return 1
		fi
		MOUNTS+=("$T_WORK/$d/fs")
		mkdir -p "$T_WORK/$d/fs/root"
		if ! mount --bind "$T_WORK/$d/fs/root" "$T_WORK/$d/root"; then
			fail "$d: bind-mount the tmpfs root"
			return 1
		fi
		MOUNTS+=("$T_WORK/$d/root")
	fi
	if ! daemon_start "$d"; then
		fail "$d: fatelfd starts" "$(tail -20 "$DLOG")"
		return 1
	fi
	run ctl install big-1.fatbundle
	if [ "$RC" -ne 0 ]; then
		fail "$d: install big 1.0 first" "$(last_run)"
		return 1
	fi
	return 0
}

# before: remembers the root, the store and the history's length.
BEFORE_ROOT=
BEFORE_STORE=
BEFORE_NTX=
before() {
	BEFORE_ROOT=$(rl_snapshot_root "$ROOT")
	BEFORE_STORE=$(rl_snapshot_store big)
	BEFORE_NTX=$(rl_tx_states | grep -c .)
}

# after_fault LABEL ERE [KIND]: the checks every fault ends with. RC and
# RUN_ERR are fatelfctl's (as run leaves them; FAULT_ERR keeps that
# stderr afterwards); ERE is what its one line must say; KIND the
# transaction kind of the history row (default install|upgrade).
after_fault() {
	local label=$1 ere=$2 kind=${3:-install|upgrade} states last
	FAULT_ERR=$RUN_ERR
	echo "# $label: exit $RC, stderr: $RUN_ERR"
	check_eq "$label: fatelfctl exits 1" 1 "$RC"
	check_one_line "$label: one line on stderr" "$RUN_ERR"
	check_match "$label: saying what happened" "$ere" "$RUN_ERR"
	if ! kill -0 "$DPID" 2>/dev/null; then
		fail "$label: the daemon is still running" "$(tail -20 "$DLOG")"
		return
	fi
	pass "$label: the daemon is still running"
	check "$label: ... and answers status" ctl status
	check_eq "$label: the root is byte-identical to before" "$BEFORE_ROOT" "$(rl_snapshot_root "$ROOT")"
	check_eq "$label: no .fatelf.* temp is left" "" "$(rl_temps "$ROOT")"
	check_eq "$label: the store is unchanged" "$BEFORE_STORE" "$(rl_snapshot_store big)"
	states=$(rl_tx_states)
	last=$(printf '%s\n' "$states" | tail -1)
	check_eq "$label: one more history row" "$((BEFORE_NTX + 1))" "$(printf '%s\n' "$states" | grep -c .)"
	check_match "$label: ... failed or rolled back" "^($kind) (failed|rolled-back)$" "$last"
	run ctl verify
	check_eq "$label: fatelfctl verify is clean" 0 "$RC"
}

# A staged temp with bytes in it: staging has begun.
staging_begun() {
	[ -n "$(find "$ROOT" -name '.fatelf.*' -type f -size +0 2>/dev/null | head -1)" ]
}

# The fatelfctl started in the background (CPID) has ended; RC, RUN_ERR.
ctl_bg_wait() {
	wait "$CPID"
	RC=$?
	RUN_OUT=$(cat "$T_WORK/.bg.out")
	RUN_ERR=$(cat "$T_WORK/.bg.err")
}


# ================================================================ full disk
if [ "$IS_ROOT" = yes ]; then
	# --- the preflight refuses: 3 MiB of free space is not enough.
	MOUNT_SIZE=5m
	if setup full; then
		dd if=/dev/zero of="$T_WORK/full/fs/filler" bs=64k count=24 2>/dev/null
		before
		run ctl install big-2.fatbundle
		after_fault "full disk (preflight)" '^fatelfctl: install: disk full: needs [0-9.]+ [KM]iB'
		daemon_stop
	fi
	# --- ENOSPC in the middle of a file: the preflight passes (16 MiB
	# free), the upgrade is fed through a pipe, and once the blob's temp
	# holds bytes, a filler takes every free block of the tmpfs.
	MOUNT_SIZE=16m
	if setup enospc; then
		before
		mkfifo pipe-enospc
		timeout 60 "$FATELFCTL" --socket "$SOCK" install - <pipe-enospc >.bg.out 2>.bg.err &
		CPID=$!
		exec 7>pipe-enospc
		timeout 30 head -c $((BIG2_SIZE / 2)) big-2.fatbundle >&7
		if wait_for 20 staging_begun; then
			pass "ENOSPC mid-file: staging began (a temp holds bytes)"
		else
			fail "ENOSPC mid-file: staging began (a temp holds bytes)" "$(ls -laR "$ROOT" | head -30)"
		fi
		dd if=/dev/zero of="$T_WORK/enospc/fs/filler" bs=64k 2>/dev/null
		check_eq "ENOSPC mid-file: the filler took every block" 0 \
			"$(df -k --output=avail "$T_WORK/enospc/fs" | tail -1 | tr -d ' ')"
		# The rest in the background: the daemon stops reading at the
		# error, and a writer blocked on a full pipe must not hang us.
		(tail -c +$((BIG2_SIZE / 2 + 1)) big-2.fatbundle >&7) 2>/dev/null &
		WPID=$!
		exec 7>&-
		ctl_bg_wait
		kill "$WPID" 2>/dev/null
		wait "$WPID" 2>/dev/null
		rm -f "$T_WORK/enospc/fs/filler"
		after_fault "ENOSPC mid-file" '^fatelfctl: install: (disk full|.*(No space|space))'
		# The preflight's "needs N" has no meaning here: nothing said
		# how much was needed, and "needs 0 B" misleads.
		check_nomatch "ENOSPC mid-file: ... without claiming it needs 0 B" 'needs 0 B' "$FAULT_ERR"
		run ctl install big-2.fatbundle
		check_eq "ENOSPC mid-file: with space again, the upgrade succeeds" 0 "$RC"
		check_cmp "... and installs 2.0's blob" tree2/opt/big/share/blob "$ROOT/opt/big/share/blob"
		daemon_stop
	fi
	unset MOUNT_SIZE

	# ================================================================ read-only root
	MOUNT_SIZE=16m
	if setup ro; then
		before
		if mount -o remount,bind,ro "$T_WORK/ro/root"; then
			run ctl install big-2.fatbundle
			after_fault "read-only root (upgrade)" '^fatelfctl: install: .*([Rr]ead-only|EROFS)'
			BEFORE_NTX=$((BEFORE_NTX + 1))
			run ctl remove big
			after_fault "read-only root (remove)" '^fatelfctl: remove: .*([Rr]ead-only|EROFS)' remove
			mount -o remount,bind,rw "$T_WORK/ro/root"
			check "read-only root: writable again, big 2.0 installs (no restart)" \
				ctl install big-2.fatbundle
			# Whatever the remove left journaled is settled by a restart.
			daemon_stop
			if daemon_start ro; then
				run ctl install big-2.fatbundle
				check_match "read-only root: after a restart big 2.0 installs (or is already)" \
					'^0$' "$RC"
				check_cmp "... with 2.0's blob" tree2/opt/big/share/blob "$ROOT/opt/big/share/blob"
				check "... and verify is clean" ctl verify
			else
				fail "read-only root: fatelfd restarts" "$(tail -20 "$DLOG")"
			fi
		else
			fail "read-only root: remount the root read-only"
		fi
		daemon_stop
	fi
	unset MOUNT_SIZE

	# ================================================================ immutable file
	# A file the admin made immutable (chattr +i) cannot be unlinked: the
	# remove fails before its commit point, naming the file, and keeps
	# the package whole.
	if command -v chattr >/dev/null 2>&1 && setup immut; then
		before
		if chattr +i "$ROOT/opt/big/share/blob" 2>/dev/null; then
			run ctl remove big
			chattr -i "$ROOT/opt/big/share/blob"
			after_fault "immutable file (remove)" \
				'^fatelfctl: remove: .*/opt/big/share/blob: .*immutable.*EPERM' remove
			# A directory that is append-only takes new files but
			# gives none up.
			BEFORE_NTX=$((BEFORE_NTX + 1))
			if chattr +a "$ROOT/opt/big/share" 2>/dev/null; then
				run ctl remove big
				chattr -a "$ROOT/opt/big/share"
				after_fault "append-only directory (remove)" \
					'^fatelfctl: remove: .*/opt/big/share: .*append-only.*EPERM' remove
			fi
			run ctl remove big
			check_eq "immutable file: once mutable again, big removes" 0 "$RC"
			check_eq "... and its files are gone" "" "$(find "$ROOT/opt" -type f 2>/dev/null)"
		else
			echo "# skipping the immutable file check: chattr +i does not work on $ROOT"
		fi
		daemon_stop
	fi
else
	echo "# skipping the full disk, ENOSPC and read-only root checks: mounting needs root"
fi

# ================================================================ HTTP sources
# The daemon times a silent download out after FetchTimeoutSec.
if command -v nginx >/dev/null 2>&1; then
	if setup http "FetchTimeoutSec=2"; then
		port=$(free_port)
		mkdir -p ngx/www ngx/tmp ngx/logs
		cp big-2.fatbundle ngx/www/big-2.fatbundle
		chmod -R go+rX ngx
		# 256 KiB/s: the 3 MiB bundle takes ~12 s, and is cut after ~2.
		nginx_conf "$T_WORK/ngx" \
			"	server {
		listen 127.0.0.1:$port;
		root $T_WORK/ngx/www;
		limit_rate 256k;
	}"
		nginx -c "$T_WORK/ngx/nginx.conf" -p "$T_WORK/ngx" -g 'daemon off;' 2>ngx/logs/stderr &
		NGPID=$!
		OTHER_PIDS+=("$NGPID")
		if wait_for 10 python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port"; then
			before
			timeout 60 "$FATELFCTL" --socket "$SOCK" install "http://127.0.0.1:$port/big-2.fatbundle" \
				>.bg.out 2>.bg.err &
			CPID=$!
			if wait_for 20 staging_begun; then
				pass "nginx killed mid-transfer: staging began"
			else
				fail "nginx killed mid-transfer: staging began" "$(cat ngx/logs/error.log)"
			fi
			kill -9 "$NGPID"
			wait "$NGPID" 2>/dev/null
			ctl_bg_wait
			after_fault "nginx killed mid-transfer" \
				'^fatelfctl: install: download failed: .*big-2\.fatbundle'
		else
			fail "nginx answers on 127.0.0.1:$port" "$(cat ngx/logs/stderr ngx/logs/error.log)"
		fi

		# --- a server that sends headers and half the body, then stalls.
		port=$(free_port)
		python3 "$top_srcdir/tests/reliability/httpstall.py" "$port" big-2.fatbundle >stall.out 2>&1 &
		SPID=$!
		OTHER_PIDS+=("$SPID")
		if wait_for 10 grep -q ready stall.out; then
			before
			t0=$(date +%s.%N)
			run ctl install "http://127.0.0.1:$port/big-2.fatbundle"
			t1=$(date +%s.%N)
			secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
			echo "# stalled download: fatelfctl returned after $secs s (FetchTimeoutSec=2)"
			check_match "stalled download: gives up within 20 s" '^([0-9]|1[0-9])\.' "$secs"
			after_fault "stalled download" \
				'^fatelfctl: install: download failed: .*(no data for [0-9]+ seconds|timed? ?out)'
		else
			fail "the stalling server listens" "$(cat stall.out)"
		fi
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
		daemon_stop
	fi
else
	echo "# skipping the HTTP faults: nginx is not installed"
fi

# ================================================================ a pipe that stops
# An fd source sends half the bundle, stalls (the daemon keeps serving
# meanwhile), and is then closed: the bundle is truncated.
if setup pipe; then
	before
	mkfifo pipe-cut
	timeout 60 "$FATELFCTL" --socket "$SOCK" install - <pipe-cut >.bg.out 2>.bg.err &
	CPID=$!
	exec 7>pipe-cut
	timeout 30 head -c $((BIG2_SIZE / 2)) big-2.fatbundle >&7
	if wait_for 20 staging_begun; then
		pass "pipe closed mid-bundle: staging began"
	else
		fail "pipe closed mid-bundle: staging began"
	fi
	sleep 1
	run ctl status
	check_eq "pipe stalled: status answers meanwhile" 0 "$RC"
	check_match "... and shows the running transaction" 'upgrade|install|staging' "$RUN_OUT"
	exec 7>&-
	ctl_bg_wait
	after_fault "pipe closed mid-bundle" '^fatelfctl: install: '
	daemon_stop
fi

cleanup
trap - EXIT
t_done
