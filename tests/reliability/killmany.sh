#!/bin/bash
# kill -9 of fatelfd during the install of a package of 20,000 small files
# (4 KiB each, in 20 directories): the durable staging of many small files
# (write-back left to the syncfs before the store commit, digests computed
# in batches on the second core, directories held open) must keep the
# promise of crash.sh at a scale where a per-file shortcut would show.
#
# Each round starts from an empty root and state, starts the install,
# kills the daemon at a moment aimed at a phase by what is on disk (times
# alone miss the phases on a loaded machine): while staging, when temps
# first show in directory dNN (files are staged directory by directory,
# d00 to d19), or while renaming, when the first file shows in dNN under
# its own name; NN is random within a third of the directories per
# round. It restarts the daemon (recovery runs at start) and checks:
#   - the package is wholly absent (no file of it on disk) or wholly
#     installed: every one of the 20,000 files there, with the tree's
#     bytes (sha256) and mode;
#   - no ".fatelf.*" temp is left anywhere beneath the root;
#   - the store, read with the sqlite3 CLI, agrees with the disk: a
#     packages row and 20,000 files rows whose installed_sha256 are the
#     files' own when installed, neither when absent; no journal row and
#     no pending transaction;
#   - after the check, an install to completion works (after the first
#     round that left the package absent, to keep the suite short).
# Rounds: 6 (FATELF_LONG_TESTS=1: 20). Figure: "# figure: kills survived X/N".
. "${top_srcdir:?run through make check}/tests/reliability/lib.sh" || exit 99

rl_init killmany
t_require_tool python3 sqlite3 sha256sum find sort awk

NFILES=20000
ROUNDS=6
[ "${FATELF_LONG_TESTS:-0}" = 1 ] && ROUNDS=20

# ---- the tree and its bundle
"$SYS_PYTHON" - "$NFILES" <<'PY' || { echo "Bail out! cannot make the tree"; exit 99; }
import os, sys
n = int(sys.argv[1])
for i in range(n):
    d = "tree/opt/small/d%02d" % (i % 20)
    os.makedirs(d, exist_ok=True)
    with open("%s/f%05d" % (d, i), "wb") as f:
        f.write(os.urandom(4096))
PY
chmod -R u=rwX,go=rX tree
check "bundle small 1.0 ($NFILES files of 4 KiB)" rl_bundle "$T_WORK/small.fatbundle" small 1.0 tree

# "PATH MODE SHA256", sorted: of the tree, and what a root or the store holds.
sums_of() { # DIR
	(cd "$1" && find opt/small -type f -printf '%p %m\n' 2>/dev/null | LC_ALL=C sort >"$T_WORK/.modes" &&
		find opt/small -type f -print0 2>/dev/null | xargs -0 -r sha256sum | awk '{ print $2, $1 }' |
		LC_ALL=C sort >"$T_WORK/.sums" &&
		LC_ALL=C join "$T_WORK/.modes" "$T_WORK/.sums" | sed 's|^|/|')
}
WANT=$(sums_of tree)
check_eq "the tree has $NFILES files" "$NFILES" "$(wc -l <<<"$WANT")"
WANT_STORE=$(awk '{ print $1, $3 }' <<<"$WANT")

db() { # SQL: against the daemon's store (it is idle while the suite reads)
	sqlite3 -readonly -batch -noheader "$DDIR/state/fatelf.db" "$1" 2>&1
}

# One uninterrupted install, for reference.
daemon_prepare ref
INST_MS=
if daemon_start ref; then
	t0=$(date +%s%N)
	run ctl install "$T_WORK/small.fatbundle"
	t1=$(date +%s%N)
	INST_MS=$(((t1 - t0) / 1000000))
	check_eq "reference: the install succeeds" 0 "$RC"
	check_eq "reference: every file installed with its bytes and mode" "$WANT" "$(sums_of "$ROOT")"
	daemon_stop
else
	fail "reference: the daemon starts"
fi
echo "# an uninterrupted install of $NFILES files took ${INST_MS:-?} ms"

# wait_for GLOB: until a name matches GLOB (60 s at most); prints the
# seconds waited.
wait_for() {
	local t0=${EPOCHREALTIME/./} n
	for ((n = 0; n < 6000; n++)); do
		compgen -G "$1" >/dev/null && break
		sleep 0.01
	done
	echo $(((${EPOCHREALTIME/./} - t0) / 1000))
}

OK=0
KILLED=0
FINISHED=0
INSTALLED=0
ABSENT=0
for ((i = 1; i <= ROUNDS; i++)); do
	rm -rf "$T_WORK/kd"
	daemon_prepare kd
	daemon_start kd || { fail "round $i: the daemon starts"; continue; }
	# odd rounds aim at staging, even ones at the renames; the directory
	# moves from the first third to the last over three rounds
	dir=$(printf 'd%02d' $(( ((i - 1) / 2 % 3) * 7 + RANDOM % 6 )))
	if ((i % 2)); then
		phase="staging, temps in $dir"
		glob="$ROOT/opt/small/$dir/.fatelf.*"
	else
		phase="renames, files in $dir"
		glob="$ROOT/opt/small/$dir/f*"
	fi
	ctl install "$T_WORK/small.fatbundle" >"$T_WORK/.k.out" 2>"$T_WORK/.k.err" &
	cpid=$!
	delay="$(wait_for "$glob") ms, $phase"
	kill -9 "$DPID" 2>/dev/null
	wait "$cpid"
	crc=$?
	daemon_reap
	problems=()
	case $crc in
	0) FINISHED=$((FINISHED + 1)) ;;
	3) KILLED=$((KILLED + 1)) ;;
	*) problems+=("fatelfctl exited $crc: $(cat "$T_WORK/.k.err")") ;;
	esac
	if ! daemon_start kd; then
		fail "round $i: the daemon restarts after the kill"
		continue
	fi
	got=$(sums_of "$ROOT")
	npkg=$(db "SELECT count(*) FROM packages WHERE name = 'small'")
	store=$(db "SELECT path, installed_sha256 FROM files ORDER BY path" | tr '|' ' ' | LC_ALL=C sort)
	if [ "$got" = "$WANT" ]; then
		state=installed
		[ "$npkg" = 1 ] || problems+=("all files on disk, but $npkg packages rows")
		[ "$store" = "$WANT_STORE" ] ||
			problems+=("the store's files rows differ from the disk: $(diff <(echo "$WANT_STORE") <(echo "$store") | head -5)")
	elif [ -z "$got" ]; then
		state=absent
		[ "$npkg" = 0 ] || problems+=("no file on disk, but $npkg packages rows")
		[ -z "$store" ] || problems+=("no file on disk, but $(wc -l <<<"$store") files rows")
	else
		state=partial
		problems+=("$(wc -l <<<"$got") of $NFILES files on disk, or wrong bytes:" \
			"$(diff <(echo "$WANT") <(echo "$got") | head -5)")
	fi
	[ "$crc" = 0 ] && [ "$state" != installed ] && problems+=("fatelfctl said done, the package is $state")
	temps=$(rl_temps "$ROOT")
	[ -z "$temps" ] || problems+=("temps left: $(head -3 <<<"$temps") ($(wc -l <<<"$temps") in all)")
	j=$(db "SELECT count(*) FROM journal")
	[ "$j" = 0 ] || problems+=("$j journal rows left")
	p=$(db "SELECT count(*) FROM transactions WHERE state = 'pending'")
	[ "$p" = 0 ] || problems+=("$p pending transactions")
	if [ "$state" = absent ] && [ -z "${COMPLETED:-}" ]; then
		COMPLETED=$i
		run ctl install "$T_WORK/small.fatbundle"
		[ "$RC" = 0 ] && [ "$(sums_of "$ROOT")" = "$WANT" ] && [ -z "$(rl_temps "$ROOT")" ] ||
			problems+=("the install after recovery: exit $RC, $(last_run)")
	fi
	daemon_stop
	[ "$state" = installed ] && INSTALLED=$((INSTALLED + 1))
	[ "$state" = absent ] && ABSENT=$((ABSENT + 1))
	if [ ${#problems[@]} -eq 0 ]; then
		OK=$((OK + 1))
		pass "round $i: killed after $delay (fatelfctl exit $crc): the package is $state, store agrees, no temps"
	else
		fail "round $i: killed after $delay (fatelfctl exit $crc)" "${problems[@]}"
	fi
done
echo "# $KILLED killed before fatelfctl had its answer, $FINISHED finished first; $ABSENT absent, $INSTALLED installed"
check_no_sanitizer_report
echo "# figure: kills survived $OK/$ROUNDS"
t_done
