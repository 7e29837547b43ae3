#!/bin/bash
# Crash injection (issue 5, promise 1): a package is never half-installed.
# After any crash each transaction is wholly before or wholly after,
# `fatelfctl verify` is clean and no hidden temp file is left behind.
#
# Part 1, failpoints (builds configured with --enable-failpoints only): a
# private fatelfd runs with FATELF_FAILPOINT=NAME[:N], which makes the
# engine SIGKILL itself at that step (a kill -9 at exactly that point);
# fatelfctl runs one operation and must report the lost daemon (exit 3);
# the daemon is restarted without the failpoint (recovery runs at start)
# and the result must be exactly the state before the operation (a
# failpoint before the store commit) or exactly the state after it (at
# the store commit or later): every file's type, mode, size and sha256 and
# every symlink's target, the store's rows as `fatelfctl --json list`,
# `info` and `files` show them, the history row (rolled-back or
# committed, never pending), a clean `fatelfctl verify`, and no
# ".fatelf.*" temp in the root. The expected states come from the same
# operation run without a failpoint, and are checked against the source
# trees themselves. The failpoints (lib/install/engine_tx.c), in protocol order:
#
#   tx-started            the pending history row is written
#   tx-journaled          the plan is in the journal, nothing touched yet
#   mkdirs                new directories made (install and upgrade)
#   staged:N              after the Nth file is staged (first, middle, last)
#   kept:N                upgrade: after the Nth unchanged file streamed past, left in place
#   before-sync           before the syncfs that makes the staged files durable
#   after-sync            after it
#   rows-moved            install and upgrade: the new version's rows are in (the
#                         unchanged files' moved to it), not committed
#   before-store-commit   the store transaction is written, not committed
#   after-store-commit    the commit point: from here it is rolled forward
#   rename:N              after the Nth rename/unlink/rmdir (first, middle, last)
#   after-renames         every rename done, before the second syncfs
#   after-final-sync      after it
#   before-journal-clear  before the journal rows are dropped
#   after-journal-clear   the transaction is done, the reply not yet sent
#   before-disk-record    install and upgrade: before the package's settled time is recorded
#   after-disk-record     after it
#
# Each also fires with the transaction's kind as a prefix (install.,
# upgrade., remove., thin.); remove and thin are aimed at that way
# ("remove.rename:2"). A few runs also crash the recovery itself
# (recover-op:N, after the Nth operation recovery redoes or undoes, and
# recovered, once it is done) and then restart once more. For each
# per-file failpoint the run at last+1 must not fire: "last" is the last.
#
# Part 2, random kills (every build): N installs and upgrades that
# alternate between version 1.0 and 2.0 of a package of ~100 files and a
# few MiB, each hit by kill -9 of the daemon at a random moment from 0 to
# 1.3 times an uninterrupted install's time after fatelfctl starts; then
# restart and check that the package is wholly one version (or absent if
# it never was installed), byte for byte, with matching store rows,
# verify clean, no temps. Runs that finish before the kill are counted
# apart and must check out the same way.
# N is 40, or 200 with FATELF_LONG_TESTS=1.
#
# Figures: "# figure: failpoints survived X/Y" and
# "# figure: random kills survived X/Y".
. "${top_srcdir:?run through make check}/tests/reliability/lib.sh" || exit 99

rl_init crash
t_require_exec "$MKFIXTURE"
t_require_tool awk xargs find

# ================================================================ fixtures
# Package demo for the failpoints: three FatELF programs (thinned by the
# native policy), data files, a config file, a symlink and nested
# directories. 2.0 changes tool1 and changed.dat, drops gone.txt and the
# directory share/old, and adds new.txt.
mk_demo() { # TREE VERSION
	local t=$1 v=$2 i
	mkdir -p "$t/opt/demo/bin" "$t/opt/demo/share" "$t/etc/demo"
	if [ "$v" = 1.0 ]; then
		rl_fat_file "$t/opt/demo/bin/tool1" 11 48K || return 1
		mkdir -p "$t/opt/demo/share/old"
		printf 'old\n' >"$t/opt/demo/share/old/old.txt"
		printf 'gone in 2.0\n' >"$t/opt/demo/share/gone.txt"
	else
		rl_fat_file "$t/opt/demo/bin/tool1" 21 40K || return 1
		printf 'new in 2.0\n' >"$t/opt/demo/share/new.txt"
	fi
	rl_fat_file "$t/opt/demo/bin/tool2" 31 24K || return 1
	rl_fat_file "$t/opt/demo/bin/tool3" 41 16K || return 1
	chmod 0755 "$t"/opt/demo/bin/*
	for i in 1 2 3 4; do
		printf 'data file %s of demo\n' "$i" >"$t/opt/demo/share/data$i.txt"
	done
	head -c 20000 /dev/urandom >"$t/opt/demo/share/changed.dat"
	printf 'greeting=hello\n' >"$t/etc/demo/demo.conf"
	ln -s bin/tool1 "$t/opt/demo/tool"
}
if mk_demo tree1 1.0 && mk_demo tree2 2.0; then
	pass "make the demo 1.0 and 2.0 trees"
else
	fail "make the demo 1.0 and 2.0 trees"
	t_done
fi
check "bundle demo 1.0" rl_bundle "$T_WORK/demo-1.fatbundle" demo 1.0 tree1
check "bundle demo 2.0" rl_bundle "$T_WORK/demo-2.fatbundle" demo 2.0 tree2

# Package bulk for the random kills: 100 files, 4 MiB, a tenth of them
# FatELF (thinning costs time too). 2.0 rewrites every file, drops five
# and adds five, so an upgrade touches all of it.
mk_bulk() { # TREE SEED
	local t=$1 s=$2 i d
	for ((i = 0; i < 100; i++)); do
		d=$t/opt/bulk/d$((i % 7))
		mkdir -p "$d"
		if [ $((i % 10)) = 0 ]; then
			rl_fat_file "$d/prog$i" $((s + i * 2)) 40K || return 1
			chmod 0755 "$d/prog$i"
		else
			head -c 40000 /dev/urandom >"$d/file$i"
		fi
	done
}
if mk_bulk bulk1 1000 && mk_bulk bulk2 5000; then
	rm -f bulk1/opt/bulk/d3/file94 bulk1/opt/bulk/d4/file95 bulk1/opt/bulk/d5/file96 \
		bulk1/opt/bulk/d6/file97 bulk1/opt/bulk/d0/file98
	rm -f bulk2/opt/bulk/d1/file1 bulk2/opt/bulk/d2/file2 bulk2/opt/bulk/d3/file3 \
		bulk2/opt/bulk/d4/file4 bulk2/opt/bulk/d5/file5
	mkdir -p bulk2/opt/bulk/only2
	printf 'only in 2.0\n' >bulk2/opt/bulk/only2/readme
	pass "make the bulk 1.0 and 2.0 trees ($(find bulk1 -type f | wc -l) and $(find bulk2 -type f | wc -l) files, $(du -sh bulk2 | cut -f1))"
else
	fail "make the bulk trees"
	t_done
fi
check "bundle bulk 1.0" rl_bundle "$T_WORK/bulk-1.fatbundle" bulk 1.0 bulk1
check "bundle bulk 2.0" rl_bundle "$T_WORK/bulk-2.fatbundle" bulk 2.0 bulk2

# ---- helpers of this suite
# op_args OP: the fatelfctl arguments of each operation.
op_args() {
	case $1 in
	install) echo "install $T_WORK/demo-1.fatbundle" ;;
	upgrade) echo "install $T_WORK/demo-2.fatbundle" ;;
	remove) echo "remove demo" ;;
	thin) echo "thin demo" ;;
	esac
}
# The state directory an operation starts from.
op_base() {
	case $1 in
	install) echo base-empty ;;
	upgrade | remove) echo base-v1 ;;
	thin) echo base-keep ;;
	esac
}

# Text of a daemon's root, and store, while it runs.
state_of() { # PKG...
	rl_snapshot_root "$ROOT"
	echo "--- store"
	rl_snapshot_store "$@"
}

# expected_tree TREE POLICY: what a tree should become in a root: the
# tree's own snapshot, with each FatELF file's bytes replaced by its
# x86_64 record's when POLICY is native.
expected_tree() {
	local tree=$1 policy=$2
	rl_snapshot_root "$tree" | while read -r y m p rest; do
		if [ "$y" = f ] && [ "$policy" = native ] && "$FATELF" validate -q "$tree/$p" >/dev/null 2>&1; then
			"$FATELF" extract -o "$T_WORK/.rl-rec" "$tree/$p" x86_64 >/dev/null 2>&1 ||
				echo "cannot extract $p"
			printf 'f %s %s %s %s\n' "$m" "$p" "$(file_size "$T_WORK/.rl-rec")" \
				"$(sha256sum <"$T_WORK/.rl-rec" | cut -d' ' -f1)"
		else
			printf '%s %s %s %s\n' "$y" "$m" "$p" "$rest" | sed 's/ $//'
		fi
	done
}
# The files of a snapshot only (the root also holds directories other
# packages, or nothing, made).
files_of() {
	grep -E '^(f|l) ' | LC_ALL=C sort
}

# ================================================================ base states
# Each base is a stopped daemon's directory, copied for each run.
daemon_prepare base-empty
daemon_prepare base-v1
daemon_prepare base-keep
ok=yes
daemon_start base-empty && daemon_stop || ok=no
if daemon_start base-v1 && ctl install "$T_WORK/demo-1.fatbundle" >/dev/null && daemon_stop; then :; else ok=no; fi
if daemon_start base-keep && ctl install --policy keep "$T_WORK/demo-1.fatbundle" >/dev/null &&
	daemon_stop; then :; else ok=no; fi
if [ $ok = yes ]; then
	pass "the base states: empty, demo 1.0 native, demo 1.0 kept fat"
else
	fail "the base states: empty, demo 1.0 native, demo 1.0 kept fat" "$(tail -20 base-*/log)"
	t_done
fi

# clone BASE NAME: a fresh copy of a base state (its own socket name).
clone() {
	rm -rf "${T_WORK:?}/$2"
	cp -a "$T_WORK/$1" "$T_WORK/$2"
	rm -f "$T_WORK/$2/log"
}

# Reference states: each operation run without a failpoint.
declare -A BEFORE AFTER BEFORE_STORE AFTER_STORE
for op in install upgrade remove thin; do
	clone "$(op_base "$op")" "ref-$op"
	if ! daemon_start "ref-$op"; then
		fail "reference $op: the daemon starts" "$(cat "$DLOG")"
		continue
	fi
	BEFORE[$op]=$(rl_snapshot_root "$ROOT")
	BEFORE_STORE[$op]=$(rl_snapshot_store demo)
	# shellcheck disable=SC2046
	run ctl $(op_args "$op")
	check_eq "reference $op without a failpoint exits 0" 0 "$RC"
	AFTER[$op]=$(rl_snapshot_root "$ROOT")
	AFTER_STORE[$op]=$(rl_snapshot_store demo)
	check_eq "reference $op: the transaction is committed" committed "$(rl_tx_states | tail -1 | cut -d' ' -f2)"
	check_exit 0 "reference $op: verify is clean" ctl verify
	daemon_stop
done
# The references are what the trees say: demo 1.0 installed natively is
# tree1 with each fat file thinned to x86_64, 2.0 likewise, the keep
# install holds the fat files themselves, remove leaves no file of demo.
exp1=$(expected_tree tree1 native | files_of)
exp2=$(expected_tree tree2 native | files_of)
expk=$(expected_tree tree1 keep | files_of)
check_eq "reference: installed demo 1.0 is tree1, fat files thinned, byte for byte" "$exp1" \
	"$(files_of <<<"${AFTER[install]}")"
check_eq "reference: upgraded demo 2.0 is tree2, fat files thinned, byte for byte" "$exp2" \
	"$(files_of <<<"${AFTER[upgrade]}")"
check_eq "reference: demo 1.0 kept fat is tree1 byte for byte" "$expk" \
	"$(files_of <<<"${BEFORE[thin]}")"
check_eq "reference: thinning the kept install gives the native install" "$exp1" \
	"$(files_of <<<"${AFTER[thin]}")"
check_eq "reference: remove leaves no file of demo" "" \
	"$(files_of <<<"${AFTER[remove]}" | grep -v '^f etc/demo/demo.conf ')"
check_match "reference: the upgrade's store rows name 2.0" '"version":"2.0"' "${AFTER_STORE[upgrade]}"

# ================================================================ part 1: failpoints
FP_TOTAL=0
FP_OK=0
nfiles1=$(find tree1 ! -type d | wc -l)
nfiles2=$(find tree2 ! -type d | wc -l)
nfat=3
# Operations after the commit point: install, its files; upgrade, its
# files plus the stale files and directory of 1.0; remove, every file
# (the config file too: it was not changed) plus every directory demo
# owns, all of tree1's; thin, the fat files.
ndirs1=$(find tree1 -mindepth 1 -type d | wc -l)
# The upgrade writes only what changed: tool1, changed.dat, new.txt and
# the symlink (symlinks are always written again); the other seven files
# of 2.0 have 1.0's bytes and stay in place.
nwritten2=4
nkept2=$((nfiles2 - nwritten2))
declare -A NSTAGED NRENAMED
NSTAGED[install]=$nfiles1
NSTAGED[upgrade]=$nwritten2
NSTAGED[thin]=$nfat
NRENAMED[install]=$nfiles1
NRENAMED[upgrade]=$((nwritten2 + 3))
NRENAMED[remove]=$((nfiles1 + ndirs1))
NRENAMED[thin]=$nfat

# which_side FP: before or after, from the failpoint's side of the store commit.
which_side() {
	case ${1#*.} in
	tx-started* | tx-journaled* | mkdirs* | staged* | kept* | before-sync* | after-sync* | \
		rows-moved* | before-store-commit*) echo before ;;
	*) echo after ;;
	esac
}

# crash_run OP FP [RECOVERY-FP...]: one failpoint run, checked against the
# expected side; each RECOVERY-FP crashes one restart's recovery first.
crash_run() {
	local op=$1 fp=$2 side name problems=() got gots rfp
	shift 2
	side=$(which_side "$fp")
	name="$op killed at $fp${*:+, recovery killed at $*}: wholly $side"
	FP_TOTAL=$((FP_TOTAL + 1))
	clone "$(op_base "$op")" "fp"
	if ! daemon_start fp "FATELF_FAILPOINT=$fp"; then
		fail "$name" "the daemon with the failpoint did not start" "$(cat "$DLOG")"
		return
	fi
	# shellcheck disable=SC2046
	run ctl $(op_args "$op")
	[ "$RC" = 3 ] || problems+=("fatelfctl exited $RC, not 3: $RUN_ERR")
	grep -Eq 'closed the connection|cannot reach|connection' <<<"$RUN_ERR" ||
		problems+=("fatelfctl did not say the daemon went away: $RUN_ERR")
	daemon_reap
	[ "$DAEMON_STATUS" = 137 ] || problems+=("the daemon did not die of SIGKILL (wait status $DAEMON_STATUS)")
	for rfp in "$@"; do
		if daemon_start fp "FATELF_FAILPOINT=$rfp"; then
			problems+=("the restart with $rfp did not die in recovery")
			daemon_stop
		elif [ "$DAEMON_STATUS" != 137 ]; then
			problems+=("the restart with $rfp ended with wait status $DAEMON_STATUS, not SIGKILL")
		fi
	done
	if ! daemon_start fp; then
		fail "$name" "${problems[@]}" "the restart without a failpoint failed" "$(tail -20 "$DLOG")"
		return
	fi
	# Killed once the journal was cleared, or after recovery finished,
	# there is nothing left to recover.
	case "$fp $*" in
	*after-journal-clear* | *disk-record* | *recovered*) ;;
	*) grep -q 'recovered [1-9]' "$DLOG" || problems+=("the restart did not log a recovered transaction") ;;
	esac
	got=$(rl_snapshot_root "$ROOT")
	if [ "$side" = before ]; then
		[ "$got" = "${BEFORE[$op]}" ] ||
			problems+=("the root is not as before:" "$(diff <(echo "${BEFORE[$op]}") <(echo "$got") | head -20)")
	else
		[ "$got" = "${AFTER[$op]}" ] ||
			problems+=("the root is not as after:" "$(diff <(echo "${AFTER[$op]}") <(echo "$got") | head -20)")
	fi
	gots=$(rl_snapshot_store demo)
	if [ "$side" = before ]; then
		[ "$gots" = "${BEFORE_STORE[$op]}" ] ||
			problems+=("the store is not as before:" "$(diff <(echo "${BEFORE_STORE[$op]}") <(echo "$gots") | head -10)")
	else
		[ "$gots" = "${AFTER_STORE[$op]}" ] ||
			problems+=("the store is not as after:" "$(diff <(echo "${AFTER_STORE[$op]}") <(echo "$gots") | head -10)")
	fi
	local states last
	states=$(rl_tx_states)
	last=$(tail -1 <<<"$states")
	if [ "$side" = before ]; then
		[ "$last" = "$(kind_of "$op") rolled-back" ] || problems+=("history: last row is '$last', not rolled-back")
	else
		[ "$last" = "$(kind_of "$op") committed" ] || problems+=("history: last row is '$last', not committed")
	fi
	grep -q pending <<<"$states" && problems+=("history still has a pending row: $states")
	run ctl verify
	[ "$RC" = 0 ] && grep -q ' 0 problems' <<<"$RUN_OUT" || problems+=("verify is not clean: $(last_run)")
	local temps
	temps=$(rl_temps "$ROOT")
	[ -z "$temps" ] || problems+=("temps left: $temps")
	daemon_stop
	if [ ${#problems[@]} -eq 0 ]; then
		FP_OK=$((FP_OK + 1))
		pass "$name"
	else
		fail "$name" "${problems[@]}"
	fi
}
kind_of() {
	case $1 in
	install) echo install ;;
	upgrade) echo upgrade ;;
	remove) echo remove ;;
	thin) echo thin ;;
	esac
}

# no_fire_run OP FP: the failpoint one past the last hit does not fire;
# the operation completes and leaves the after state.
no_fire_run() {
	local op=$1 fp=$2
	clone "$(op_base "$op")" "fp"
	if ! daemon_start fp "FATELF_FAILPOINT=$fp"; then
		fail "$op with $fp (one past the last) completes" "the daemon did not start"
		return
	fi
	# shellcheck disable=SC2046
	run ctl $(op_args "$op")
	check_eq "$op with $fp (one past the last hit) completes: the last was the last" \
		"0 yes" "$RC $([ "$(rl_snapshot_root "$ROOT")" = "${AFTER[$op]}" ] && echo yes || echo no)"
	daemon_stop
}

if [ "$FATELF_FAILPOINTS" = yes ]; then
	echo "# failpoints: tx-started tx-journaled mkdirs staged:N kept:N before-sync after-sync" \
		"rows-moved before-store-commit after-store-commit rename:N after-renames" \
		"after-final-sync before-journal-clear after-journal-clear before-disk-record" \
		"after-disk-record (each also as KIND.NAME), recover-op:N recovered"
	for op in install upgrade remove thin; do
		case $op in
		remove | thin) pfx=$op. ;;
		*) pfx= ;;
		esac
		fps="tx-started tx-journaled"
		[ "$op" = install ] || [ "$op" = upgrade ] && fps="$fps mkdirs"
		if [ -n "${NSTAGED[$op]:-}" ]; then
			n=${NSTAGED[$op]}
			fps="$fps staged:1 staged:$(((n + 1) / 2)) staged:$n"
		fi
		[ "$op" = upgrade ] && fps="$fps kept:1 kept:$nkept2"
		fps="$fps before-sync after-sync"
		[ "$op" = install ] || [ "$op" = upgrade ] && fps="$fps rows-moved"
		fps="$fps before-store-commit after-store-commit"
		n=${NRENAMED[$op]}
		fps="$fps rename:1 rename:$(((n + 1) / 2)) rename:$n"
		fps="$fps after-renames after-final-sync before-journal-clear after-journal-clear"
		[ "$op" = install ] || [ "$op" = upgrade ] &&
			fps="$fps before-disk-record after-disk-record"
		echo "# $op: ${fps// /, } (prefix '$pfx')"
		for fp in $fps; do
			crash_run "$op" "$pfx$fp"
		done
		[ -n "${NSTAGED[$op]:-}" ] && no_fire_run "$op" "${pfx}staged:$((NSTAGED[$op] + 1))"
		[ "$op" = upgrade ] && no_fire_run "$op" "kept:$((nkept2 + 1))"
		no_fire_run "$op" "${pfx}rename:$((n + 1))"
	done
	# A crash while recovering is recovered at the next start.
	crash_run upgrade "staged:$(((nwritten2 + 1) / 2))" recover-op:1
	crash_run upgrade "rename:$(((nwritten2 + 1) / 2))" recover-op:1 recover-op:2
	crash_run remove remove.rename:1 recover-op:3
	crash_run thin thin.after-store-commit recover-op:2
	crash_run install before-store-commit recovered
	echo "# figure: failpoints survived $FP_OK/$FP_TOTAL"
else
	echo "# skipping the failpoint runs: this build has no failpoints (configure --enable-failpoints)"
fi

# ================================================================ part 2: random kills
N=40
[ "${FATELF_LONG_TESTS:-0}" = 1 ] && N=200

# Reference states of bulk: 1.0 and 2.0 installed.
declare -A BULK BULK_STORE
RK_MS=
clone base-empty ref-bulk
if daemon_start ref-bulk; then
	for v in 1 2 1 2; do
		t0=$(date +%s%N)
		run ctl install --allow-downgrade "$T_WORK/bulk-$v.fatbundle"
		t1=$(date +%s%N)
		# The fastest of the four: the others were slowed by something else.
		ms=$(((t1 - t0) / 1000000))
		[ -n "${RK_MS:-}" ] && [ "$RK_MS" -le "$ms" ] || RK_MS=$ms
		check_eq "reference: bulk $v.0 installs" 0 "$RC"
		BULK[$v]=$(rl_snapshot_root "$ROOT")
		BULK_STORE[$v]=$(rl_snapshot_store bulk)
	done
	daemon_stop
	check_eq "reference: bulk 1.0 is bulk1, fat files thinned" \
		"$(expected_tree bulk1 native | files_of)" "$(files_of <<<"${BULK[1]}")"
	check_eq "reference: bulk 2.0 is bulk2, fat files thinned" \
		"$(expected_tree bulk2 native | files_of)" "$(files_of <<<"${BULK[2]}")"
else
	fail "reference bulk: the daemon starts" "$(cat "$DLOG")"
fi
# Kill at a random moment from 0 to 1.3 times what an uninterrupted
# install took here (~100 ms in a normal build, ~300 ms sanitized), so
# that about three kills in four land mid-way whatever the machine, and
# the rest after the end.
RK_MAX=$((RK_MS * 13 / 10))
[ "$RK_MAX" -ge 50 ] || RK_MAX=50
echo "# random kills: an uninterrupted install of bulk took $RK_MS ms; kills land 0-$RK_MAX ms after the start"
clone base-empty rnd
EMPTY=$(rl_snapshot_root "$T_WORK/rnd/root")
RK_OK=0
RK_FINISHED=0
RK_KILLED=0
RK_FORWARD=0
RK_BACK=0
cur=none
daemon_start rnd || fail "the random-kill daemon starts" "$(cat "$DLOG")"
for ((i = 1; i <= N; i++)); do
	# The other version than the installed one, so each run changes it.
	case $cur in
	1) want=2 ;;
	*) want=1 ;;
	esac
	delay=$(awk -v r="$RANDOM" -v m="$RK_MAX" 'BEGIN { printf "%.3f", (r % (m + 1)) / 1000 }')
	ctl install --allow-downgrade "$T_WORK/bulk-$want.fatbundle" >"$T_WORK/.rk.out" 2>"$T_WORK/.rk.err" &
	cpid=$!
	sleep "$delay"
	kill -9 "$DPID" 2>/dev/null
	wait "$cpid"
	crc=$?
	daemon_reap
	problems=()
	case $crc in
	0) RK_FINISHED=$((RK_FINISHED + 1)) ;;
	3) RK_KILLED=$((RK_KILLED + 1)) ;;
	*) problems+=("fatelfctl exited $crc: $(cat "$T_WORK/.rk.err")") ;;
	esac
	if ! daemon_start rnd; then
		fail "random kill $i: the daemon restarts" "$(tail -20 "$DLOG")"
		break
	fi
	got=$(rl_snapshot_root "$ROOT")
	gots=$(rl_snapshot_store bulk)
	now=
	if [ "$got" = "${BULK[1]}" ] && [ "$gots" = "${BULK_STORE[1]}" ]; then
		now=1
	elif [ "$got" = "${BULK[2]}" ] && [ "$gots" = "${BULK_STORE[2]}" ]; then
		now=2
	elif [ "$cur" = none ] && [ "$got" = "$EMPTY" ] && [ "$gots" = "$(printf '{"packages":[]}\nbulk: not installed')" ]; then
		now=none
	else
		problems+=("neither version (nor absent), after $delay s, fatelfctl exit $crc:"
			"$(diff <(echo "${BULK[$want]}") <(echo "$got") | head -10)"
			"$(diff <(echo "${BULK_STORE[$want]}") <(echo "$gots") | head -6)")
	fi
	[ "$crc" = 0 ] && [ -n "$now" ] && [ "$now" != "$want" ] &&
		problems+=("fatelfctl said done but the package is $now, not $want")
	[ -n "$now" ] && [ "$now" != "$want" ] && [ "$now" != "$cur" ] &&
		problems+=("the package became $now: it was $cur, the install was $want")
	run ctl verify
	[ "$RC" = 0 ] && grep -q ' 0 problems' <<<"$RUN_OUT" || problems+=("verify is not clean: $(last_run)")
	temps=$(rl_temps "$ROOT")
	[ -z "$temps" ] || problems+=("temps left: $temps")
	rl_tx_states | grep -q pending && problems+=("history has a pending row")
	if [ ${#problems[@]} -eq 0 ]; then
		RK_OK=$((RK_OK + 1))
	else
		fail "random kill $i (install $want.0 over $cur, kill after $delay s)" "${problems[@]}"
	fi
	if [ "$crc" = 3 ] && [ -n "$now" ]; then
		if [ "$now" = "$want" ]; then
			RK_FORWARD=$((RK_FORWARD + 1))
		else
			RK_BACK=$((RK_BACK + 1))
		fi
	fi
	[ -n "$now" ] && cur=$now
done
daemon_stop
check_eq "random kills: every run left one whole version, verify clean, no temps" "$N" "$RK_OK"
echo "# random kills: $RK_KILLED killed before fatelfctl had its answer ($RK_BACK left the old state, $RK_FORWARD the new)," \
	"$RK_FINISHED finished before the kill"

# A sanitized build reports memory errors in the daemon's log (a daemon
# killed with SIGKILL reports nothing, the clean stops do).
san=$(grep -h -E -A3 'ERROR: [A-Za-z]*Sanitizer|runtime error:' "$T_WORK"/*/log 2>/dev/null | head -20)
check_eq "no sanitizer report in any daemon log" "" "$san"
echo "# figure: random kills survived $RK_OK/$N"
t_done
