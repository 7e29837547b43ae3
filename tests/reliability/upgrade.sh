#!/bin/bash
# An upgrade writes only what changed. A file whose bytes, mode and
# installed form are the same in the old and the new version, and that is
# still on disk as the engine left it, stays in place: same inode, not
# staged, not renamed; its store row moves to the new version. Everything
# else is written as before:
#   - a file the admin changed on disk is written again (same size and
#     mtime put back too: the change time tells), unless it is a config
#     file, which keeps its rule (the admin's copy stays, the new version
#     goes to PATH.fatelf-new);
#   - a file whose mode changes is written again;
#   - a file only touched (new mtime, same bytes) is hashed and stays.
# The reply counts only what was written in bytes_written, and the files
# left in place in files_unchanged and bytes_unchanged (a dry run says the
# same beforehand). With failpoints, a kill -9 at each new step (kept:N,
# rows-moved, before-disk-record, after-disk-record) leaves the package
# wholly 1.0 or wholly 2.0, with the unchanged files' inodes as they were.
# On a small ext4 root (root only), a disk full before the upgrade
# (DiskFull from the preflight) or filled while it stages (ENOSPC) leaves
# the package wholly 1.0, bytes, inodes and store rows; with space again
# the upgrade succeeds.
. "${top_srcdir:?run through make check}/tests/reliability/lib.sh" || exit 99

rl_init upgrade
t_require_exec "$MKFIXTURE"
t_require_tool stat cmp touch

# ================================================================ fixtures
# 2.0 changes changed.dat and up.conf, and the mode of mode.txt; the
# rest has 1.0's bytes. 3.0 changes changed.dat again only.
mk_tree() { # TREE VERSION
	local t=$1 v=$2 i
	mkdir -p "$t/opt/up/bin" "$t/opt/up/share" "$t/etc/up"
	rl_fat_file "$t/opt/up/bin/prog" 71 32K || return 1
	chmod 0755 "$t/opt/up/bin/prog"
	for i in 1 2 3 4 5; do
		head -c 4096 /dev/zero | tr '\0' "$i" >"$t/opt/up/share/same$i.txt"
	done
	printf 'the admin edits this file\n' >"$t/opt/up/share/admin.txt"
	printf 'the admin touches this file\n' >"$t/opt/up/share/touched.txt"
	printf 'the mode of this file changes\n' >"$t/opt/up/share/mode.txt"
	printf 'changed.dat of %s\n' "$v" >"$t/opt/up/share/changed.dat"
	head -c 3000 /dev/zero >>"$t/opt/up/share/changed.dat"
	printf 'same=1\n' >"$t/etc/up/same.conf"
	if [ "$v" = 1.0 ]; then
		printf 'greeting=hello\n' >"$t/etc/up/up.conf"
		chmod 0644 "$t/opt/up/share/mode.txt"
	else
		printf 'greeting=hello\nnew=2\n' >"$t/etc/up/up.conf"
		chmod 0600 "$t/opt/up/share/mode.txt"
	fi
}
ok=yes
for v in 1.0 2.0 3.0; do
	mk_tree "tree$v" "$v" && rl_bundle "$T_WORK/up-$v.fatbundle" up "$v" "tree$v" || ok=no
done
check_eq "make and bundle up 1.0, 2.0 and 3.0" yes "$ok"

ino() { stat -c %i "$ROOT/$1"; }
# The reply's result, after the progress lines.
result() { jq -c 'select(.result) | .result' <<<"$RUN_OUT"; }
db() { # SQL: one query of the stopped or running daemon's store
	"$SYS_PYTHON" -c 'import sqlite3, sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
for r in c.execute(sys.argv[2]): print(*r)' "$DDIR/state/fatelf.db" "$1"
}
KEPT="opt/up/bin/prog opt/up/share/same1.txt opt/up/share/same2.txt opt/up/share/same3.txt
opt/up/share/same4.txt opt/up/share/same5.txt opt/up/share/touched.txt etc/up/same.conf etc/up/up.conf"
inodes() { # the inodes of the files 2.0 leaves in place (up.conf: the admin's copy stays)
	local p
	for p in $KEPT; do echo "$p $(ino "$p")"; done
}

# ================================================================ 1.0 -> 2.0
daemon_prepare base
daemon_start base || t_done
check_exit 0 "install up 1.0" ctl install "$T_WORK/up-1.0.fatbundle"
check_eq "every file of 1.0 has its lstat recorded after the install" 0 \
	"$(db "SELECT count(*) FROM files WHERE type = 'file' AND disk_ino IS NULL")"
check_eq "... as staged (no change time in a file row: no second write of each), and the package's settled time" "0 1" \
	"$(db "SELECT count(*) FROM files WHERE disk_ctime_ns IS NOT NULL") $(db "SELECT count(*) FROM packages WHERE disk_settled_ns > 0")"
daemon_stop
cp -a "$T_WORK/base" "$T_WORK/base-v1"
daemon_start base || t_done

# What the admin does between the two versions.
printf 'the admin EDITS this file\n' >"$ROOT/opt/up/share/admin.txt"
touch -d '2001-01-01' "$ROOT/opt/up/share/touched.txt"
printf 'greeting=admin\n' >"$ROOT/etc/up/up.conf"
before=$(inodes)
admin_ino=$(ino opt/up/share/admin.txt)
mode_ino=$(ino opt/up/share/mode.txt)
changed_ino=$(ino opt/up/share/changed.dat)

# Written: changed.dat, admin.txt and mode.txt, and up.conf.fatelf-new.
want_written=$(($(stat -c %s tree2.0/opt/up/share/changed.dat) + $(stat -c %s tree2.0/opt/up/share/admin.txt) +
	$(stat -c %s tree2.0/opt/up/share/mode.txt) + $(stat -c %s tree2.0/etc/up/up.conf)))
want_unchanged=0
for p in $KEPT; do
	[ "$p" = etc/up/up.conf ] || want_unchanged=$((want_unchanged + $(stat -c %s "$ROOT/$p")))
done

run ctl --json install --dry-run "$T_WORK/up-2.0.fatbundle"
check_eq "dry run: bytes_written, files_unchanged, bytes_unchanged" \
	"$want_written 8 $want_unchanged" \
	"$(jq -r '"\(.bytes_written) \(.files_unchanged) \(.bytes_unchanged)"' <<<"$(result)")"

run ctl --json install "$T_WORK/up-2.0.fatbundle"
check_eq "upgrade to 2.0 exits 0" 0 "$RC"
reply2=$(result)
check_eq "the reply: bytes_written counts only what was written" "$want_written" \
	"$(jq -r .bytes_written <<<"$reply2")"
check_eq "the reply: 8 files unchanged, of bytes_unchanged bytes" "8 $want_unchanged" \
	"$(jq -r '"\(.files_unchanged) \(.bytes_unchanged)"' <<<"$reply2")"
check_eq "the reply: the admin's up.conf is kept" /etc/up/up.conf "$(jq -r '.config_kept[]' <<<"$reply2")"
check_eq "the history row's bytes_written is the reply's" "$want_written" \
	"$(ctl --json history --limit 1 | jq -r '.transactions[0].bytes_written')"
check_eq "unchanged files keep their inode (touched.txt after a hash, the admin's up.conf)" \
	"$before" "$(inodes)"
check "admin.txt, changed by the admin, is written again" \
	test "$(ino opt/up/share/admin.txt)" != "$admin_ino"
check_exit 0 "admin.txt holds 2.0's bytes" cmp tree2.0/opt/up/share/admin.txt "$ROOT/opt/up/share/admin.txt"
check "mode.txt, whose mode changed, is written again" \
	test "$(ino opt/up/share/mode.txt)" != "$mode_ino"
check_eq "mode.txt has 2.0's mode" 600 "$(stat -c %a "$ROOT/opt/up/share/mode.txt")"
check "changed.dat is written again" test "$(ino opt/up/share/changed.dat)" != "$changed_ino"
check_exit 0 "changed.dat holds 2.0's bytes" cmp tree2.0/opt/up/share/changed.dat "$ROOT/opt/up/share/changed.dat"
check_eq "the admin's up.conf stays" "greeting=admin" "$(cat "$ROOT/etc/up/up.conf")"
check_exit 0 "2.0's up.conf goes to up.conf.fatelf-new" cmp tree2.0/etc/up/up.conf "$ROOT/etc/up/up.conf.fatelf-new"
check_eq "the store says 2.0" 2.0 "$(ctl --json info up | jq -r .package.version)"
check_eq "the rows of unchanged files are 2.0's files" \
	"$(cd tree2.0 && find . -type f -printf '/%P\n' | LC_ALL=C sort)" \
	"$(ctl --json files up | jq -r '.files[] | select(.type != "dir") | .path' | grep -v fatelf-new | LC_ALL=C sort)"
run ctl verify
check_match "verify is clean" ' 0 problems' "$RUN_OUT"
check_eq "no temp is left" "" "$(rl_temps "$ROOT")"

# ================================================================ 2.0 -> 3.0
# The files 2.0 wrote were recorded after their rename: 3.0 leaves
# mode.txt and admin.txt in place by their lstat. same1.txt is changed by
# the admin with its size and mtime put back: its change time gives it
# away, so it is written again.
mode_ino=$(ino opt/up/share/mode.txt)
admin_ino=$(ino opt/up/share/admin.txt)
same1_ino=$(ino opt/up/share/same1.txt)
cp -p "$ROOT/opt/up/share/same1.txt" "$T_WORK/same1.ref"
printf 'X' | dd of="$ROOT/opt/up/share/same1.txt" bs=1 seek=100 conv=notrunc status=none
touch -r "$T_WORK/same1.ref" "$ROOT/opt/up/share/same1.txt"
run ctl --json install "$T_WORK/up-3.0.fatbundle"
check_eq "upgrade to 3.0 exits 0" 0 "$RC"
reply3=$(result)
check_eq "mode.txt and admin.txt, written by 2.0, stay in place" "$mode_ino $admin_ino" \
	"$(ino opt/up/share/mode.txt) $(ino opt/up/share/admin.txt)"
check "same1.txt, changed with its size and mtime put back, is written again" \
	test "$(ino opt/up/share/same1.txt)" != "$same1_ino"
check_exit 0 "same1.txt holds 3.0's bytes" cmp tree3.0/opt/up/share/same1.txt "$ROOT/opt/up/share/same1.txt"
check_eq "the reply: bytes_written is changed.dat's, same1.txt's and up.conf.fatelf-new's" \
	"$(($(stat -c %s tree3.0/opt/up/share/changed.dat) + 4096 + $(stat -c %s tree3.0/etc/up/up.conf)))" \
	"$(jq -r .bytes_written <<<"$reply3")"
run ctl verify
check_match "verify is clean after 3.0" ' 0 problems' "$RUN_OUT"
daemon_stop

# ================================================================ full disk
# The root is a small ext4 (a loop-mounted image, no reserved blocks; its
# root directory is bind-mounted as the daemon's root, so a filler beside
# it takes the root's space). ext4 allocates late: a write that fits may
# still fail at fsync, which a tmpfs never does.
#   - the disk is full before the upgrade: the preflight refuses with
#     DiskFull (needed > available);
#   - the disk fills while the upgrade stages (a 3 MiB blob fed through a
#     pipe; the filler comes once its temp holds bytes): the upgrade fails
#     with DiskFull or ENOSPC.
# Either way the package stays wholly 1.0: the root's bytes and modes,
# the unchanged files' inodes, the store's rows; and once there is space
# again the same upgrade succeeds.
MOUNTS=()
LOOPS=()
undo_mounts() {
	local i
	daemon_stop_all
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}" 2>/dev/null
	done
	MOUNTS=()
}
trap 'undo_mounts; daemon_cleanup' EXIT

# ext4_root DIR: daemon_prepare DIR with its root on a new 24 MiB ext4 at
# DIR/fs; returns 1 where it cannot be made (not root, no loop device).
ext4_root() {
	local d=$T_WORK/$1
	daemon_prepare "$1"
	mkdir -p "$d/fs"
	truncate -s 24M "$d/fs.img" &&
		mkfs.ext4 -q -F -m 0 -E root_owner=0:0 "$d/fs.img" >/dev/null 2>&1 &&
		mount -o loop "$d/fs.img" "$d/fs" 2>/dev/null || return 1
	MOUNTS+=("$d/fs")
	mkdir -p "$d/fs/root"
	mount --bind "$d/fs/root" "$d/root" || return 1
	MOUNTS+=("$d/root")
}

# full_disk FILLER: takes every free block of the file system FILLER is on.
full_disk() {
	dd if=/dev/zero of="$1" bs=64k 2>/dev/null
	sync -f "$1"
	# ext4 may free a block or two of its estimate once the data is down.
	dd if=/dev/zero of="$1" bs=1k oflag=append conv=notrunc 2>/dev/null
	sync -f "$1"
}

# wholly_v1 LABEL: the root, the inodes and the store as before the upgrade.
wholly_v1() {
	check_eq "$1: the root's bytes and modes are 1.0's" "$V1_ROOT" "$(rl_snapshot_root "$ROOT")"
	check_eq "$1: ... the files 1.0 had keep their inodes" "$V1_INODES" "$(inodes)"
	check_eq "$1: ... the store's rows are 1.0's" "$V1_STORE" "$(rl_snapshot_store up)"
	check_eq "$1: ... no temp is left" "" "$(rl_temps "$ROOT")"
	run ctl verify up
	check_eq "$1: ... verify is clean" 0 "$RC"
}

if [ "$(id -u)" -ne 0 ] || ! command -v mkfs.ext4 >/dev/null || ! command -v mkfifo >/dev/null; then
	echo "# skipping the full disk checks: they need root, mkfs.ext4 and mkfifo"
elif ! ext4_root full; then
	echo "# skipping the full disk checks: cannot mount an ext4 image here"
else
	mkdir -p tree2.0big
	cp -a tree2.0/. tree2.0big/
	head -c $((3 * 1024 * 1024)) /dev/urandom >tree2.0big/opt/up/share/blob
	check "bundle up 2.0 with a 3 MiB blob, uncompressed" \
		rl_bundle "$T_WORK/up-2.0big.fatbundle" up 2.0 tree2.0big --compression none
	daemon_start full || t_done
	check_exit 0 "install up 1.0 on the ext4 root" ctl install "$T_WORK/up-1.0.fatbundle"
	V1_ROOT=$(rl_snapshot_root "$ROOT")
	V1_INODES=$(inodes)
	V1_STORE=$(rl_snapshot_store up)

	# --- full before the upgrade: the preflight refuses.
	full_disk "$T_WORK/full/fs/filler"
	avail=$(df -k --output=avail "$T_WORK/full/fs" | tail -1 | tr -d ' ')
	check "the filler took all but a few KiB ($avail KiB free)" test "$avail" -lt 8
	run timeout 60 python3 "$VLC" call "$SOCK" '{"method":"io.fatelf.Manager.Install","parameters":{"fd":0}}' \
		--fd "$T_WORK/up-2.0.fatbundle"
	err=$(grep '"error"' <<<"$RUN_OUT" | tail -1)
	check_eq "full disk: the upgrade fails with DiskFull" io.fatelf.Manager.DiskFull "$(jq -r .error <<<"$err" 2>&1)"
	check_eq "... needing more than is available" true \
		"$(jq -r '.parameters.needed > .parameters.available' <<<"$err" 2>&1)"
	run ctl install "$T_WORK/up-2.0.fatbundle"
	check_match "... fatelfctl exits 1 saying disk full" '^1 fatelfctl: install: disk full' "$RC $RUN_ERR"
	wholly_v1 "full disk"

	# --- the disk fills while the upgrade stages.
	rm -f "$T_WORK/full/fs/filler"
	size=$(stat -c %s "$T_WORK/up-2.0big.fatbundle")
	rm -f pipe-full
	mkfifo pipe-full
	timeout 60 "$FATELFCTL" --socket "$SOCK" install - <pipe-full >.bg.out 2>.bg.err &
	cpid=$!
	exec 7>pipe-full
	timeout 30 head -c $((size / 2)) "$T_WORK/up-2.0big.fatbundle" >&7
	staged=no
	for ((i = 0; i < 400; i++)); do
		if [ -n "$(find "$ROOT" -name '.fatelf.*' -type f -size +0 2>/dev/null | head -1)" ]; then
			staged=yes
			break
		fi
		sleep 0.05
	done
	check_eq "filling while staging: a temp holds bytes before the disk is filled" yes "$staged"
	full_disk "$T_WORK/full/fs/filler"
	(tail -c +$((size / 2 + 1)) "$T_WORK/up-2.0big.fatbundle" >&7) 2>/dev/null &
	wpid=$!
	exec 7>&-
	wait "$cpid"
	RC=$?
	RUN_ERR=$(cat .bg.err)
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	echo "# filling while staging: exit $RC, stderr: $RUN_ERR"
	check_eq "filling while staging: the upgrade fails (exit 1)" 1 "$RC"
	check_match "... a disk-full error naming the file it was staging" '^fatelfctl: install: disk full: /opt/up/share/blob: ' "$RUN_ERR"
	rm -f "$T_WORK/full/fs/filler"
	wholly_v1 "filling while staging"
	check_match "... the history row says the upgrade failed" '^(install|upgrade) (failed|rolled-back)$' \
		"$(rl_tx_states | tail -1)"

	# --- with space again, the same upgrades succeed.
	run ctl install "$T_WORK/up-2.0big.fatbundle"
	check_eq "with space again, the upgrade succeeds" "0 2.0" "$RC $(ctl --json info up | jq -r .package.version)"
	check_exit 0 "... the blob holds 2.0's bytes" cmp tree2.0big/opt/up/share/blob "$ROOT/opt/up/share/blob"
	check_exit 0 "... and changed.dat" cmp tree2.0/opt/up/share/changed.dat "$ROOT/opt/up/share/changed.dat"
	run ctl verify up
	check_eq "... verify is clean" 0 "$RC"
	daemon_stop
	undo_mounts
fi

# ================================================================ crashes
if [ "$FATELF_FAILPOINTS" = yes ]; then
	# A clean 1.0 -> 2.0 (no admin changes) as the after state.
	rm -rf "$T_WORK/ref" && cp -a "$T_WORK/base-v1" "$T_WORK/ref"
	daemon_start ref || t_done
	v1_root=$(rl_snapshot_root "$ROOT")
	ctl install "$T_WORK/up-2.0.fatbundle" >/dev/null
	v2_root=$(rl_snapshot_root "$ROOT")
	daemon_stop
	for fp in kept:1 kept:8 upgrade.rows-moved upgrade.before-store-commit \
		upgrade.before-disk-record upgrade.after-disk-record; do
		case $fp in
		kept* | *rows-moved | *before-store-commit) side=1.0 want=$v1_root ;;
		*) side=2.0 want=$v2_root ;;
		esac
		rm -rf "$T_WORK/fp" && cp -a "$T_WORK/base-v1" "$T_WORK/fp"
		problems=()
		daemon_start fp "FATELF_FAILPOINT=$fp" || t_done
		v1_inodes=$(inodes | grep -v '^etc/up/up.conf ')
		run ctl install "$T_WORK/up-2.0.fatbundle"
		[ "$RC" = 3 ] || problems+=("fatelfctl exited $RC, not 3")
		daemon_reap
		[ "$DAEMON_STATUS" = 137 ] || problems+=("the daemon was not killed (status $DAEMON_STATUS)")
		daemon_start fp || t_done
		[ "$(ctl --json info up | jq -r .package.version)" = "$side" ] || problems+=("the store does not say $side")
		[ "$(rl_snapshot_root "$ROOT")" = "$want" ] ||
			problems+=("the root is not wholly $side" "$(diff <(echo "$want") <(rl_snapshot_root "$ROOT") | head)")
		[ "$(inodes | grep -v '^etc/up/up.conf ')" = "$v1_inodes" ] || problems+=("an unchanged file's inode changed")
		run ctl verify
		grep -q ' 0 problems' <<<"$RUN_OUT" || problems+=("verify: $RUN_OUT")
		[ -z "$(rl_temps "$ROOT")" ] || problems+=("temps left: $(rl_temps "$ROOT")")
		[ "$(rl_tx_states | grep -c pending)" = 0 ] || problems+=("a pending history row is left")
		daemon_stop
		if [ ${#problems[@]} -eq 0 ]; then
			pass "killed at $fp: wholly $side, unchanged inodes kept"
		else
			fail "killed at $fp: wholly $side, unchanged inodes kept" "${problems[@]}"
		fi
	done
else
	echo "# skipping the failpoint runs: this build has no failpoints (configure --enable-failpoints)"
fi

t_done
