#!/bin/bash
# A repository install clones what an installed file already holds
# (doc/repository.md, section 2). A private fatelfd whose root is on an
# XFS loop image (reflink on, mkfs.xfs's default) installs package a,
# then package b from a repository served by nginx on 127.0.0.1. b holds
# a's 2 MiB data file at another path, and a FatELF program whose
# x86_64 record is the program a installed thinned. Checks: nginx served
# neither object; b's two files share their extents with a's (filefrag's
# "shared" flag); the reply counts them as cloned, fatelfctl's line says
# so; the bytes are the vendor's. Then the admin changes a's data file in
# place: c, which needs the same bytes, clones it, finds by the hash that
# the copy is not the object, and fetches the object instead (nginx's log
# shows it; the installed bytes are the vendor's). On an ext4 image,
# which cannot share extents, the same install copies (cloned 0).
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init repoclone
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL" "$MKFIXTURE"
t_require_tool jq minisign nginx curl filefrag mkfs.xfs mkfs.ext4 losetup mount umount
[ "$(uname -m)" = x86_64 ] || t_skip "the thinned record is the x86_64 one"
[ "$(id -u)" = 0 ] || t_skip "not root: cannot mount a loop image"
[ -e /dev/loop-control ] || t_skip "no loop devices (/dev/loop-control)"

MOUNTS=()
LOOPS=()
NGPID=
# undo: unmounts the images and detaches their loop devices (also from
# the EXIT trap, so a failing run leaves nothing mounted)
undo() {
	local m l
	daemon_stop_all
	for m in "${MOUNTS[@]}"; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	MOUNTS=()
	for l in "${LOOPS[@]}"; do
		losetup -d "$l" 2>/dev/null
	done
	LOOPS=()
}
cleanup() {
	[ -n "$NGPID" ] && kill "$NGPID" 2>/dev/null
	undo
	daemon_cleanup
}

# image FSTYPE SIZE DIR: a loop image of FSTYPE mounted on DIR
image() {
	local img=$T_WORK/$1.img loop
	truncate -s "$2" "$img" || return 1
	if [ "$1" = xfs ]; then mkfs.xfs -q "$img"; else mkfs.ext4 -q -F "$img"; fi >/dev/null 2>&1 || return 1
	loop=$(losetup -f --show "$img" 2>/dev/null) || return 1
	LOOPS+=("$loop")
	mkdir -p "$3"
	mount "$loop" "$3" || return 1
	MOUNTS+=("$3")
}

minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G (vendor)" "no key"
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G (repository)" "no key"
mkdir -p keys && cp vendor.pub keys/vendor.pub
DAEMON_KEYS=$T_WORK/keys

# ---- the packages
"$MKFIXTURE" -o x86 --machine x86_64 --type exec --size 1M --seed 7 &&
	"$MKFIXTURE" -o arm --machine aarch64 --type exec --size 300K --seed 8 &&
	"$MKFIXTURE" -o arm2 --machine aarch64 --type exec --size 200K --seed 9 ||
	fail "mkfixture makes the programs' records"
mkdir -p ta/opt/a/bin ta/opt/a/share tb/srv/b/bin tc/srv/c
"$FATELF" glue -o ta/opt/a/bin/tool x86 arm >/dev/null
head -c 2097152 /dev/urandom >ta/opt/a/share/big
echo "a's own" >ta/opt/a/share/own
cp ta/opt/a/share/big tb/srv/b/big-copy
# another fat file, whose x86_64 record is a's program
"$FATELF" glue -o tb/srv/b/bin/tool2 x86 arm2 >/dev/null
echo "b's own" >tb/srv/b/own
cp ta/opt/a/share/big tc/srv/c/big-again
for p in a b c; do
	"$FATELF" bundle create -o "pkg$p-1.fatbundle" --name "pkg$p" --version 1 --sign vendor.key "t$p" >/dev/null ||
		fail "bundle create pkg$p"
done
check "repo init --sign" "$FATELF" repo init --sign repo.key www/repo
check "repo add pkga, pkgb and pkgc" "$FATELF" repo add --sign repo.key www/repo pkga-1.fatbundle pkgb-1.fatbundle pkgc-1.fatbundle

big=$(sha256sum ta/opt/a/share/big | cut -c1-64)
rec=$(sha256sum x86 | cut -c1-64)
bown=$(sha256sum tb/srv/b/own | cut -c1-64)
obj() { echo "/repo/objects/${1:0:2}/$1.zst"; }

# ---- nginx, serving www/
port=$(free_port)
nginx_www "$port" || fail "nginx starts" "$(cat ngx/logs/stderr)"
daemon_init
trap cleanup EXIT
URL=http://127.0.0.1:$port/repo
fetched() { awk '$1 == "GET" && $3 == 200 && $2 ~ /^\/repo\/objects\// {print $2}' ngx/logs/files.log | sort; }
fetch_of() { jq -r "select(.fetch) | .fetch.$1" <<<"$RUN_OUT" | tail -1; }
shared() { filefrag -v "$1" 2>/dev/null | grep -c shared; }

# start_in DIR: a fatelfd over DIR (its root the image mounted on
# DIR/root: staged files live beside their targets, so every clone and
# copy is within the image), told of the repository and updated
start_in() {
	daemon_prepare "$1" "Repositories=$T_WORK/$1/repos.d"
	daemon_start "$1" || fail "fatelfd in $1 starts" "see $T_WORK/$1/log"
	ctl repo add main "$URL" --key repo.pub >/dev/null &&
		ctl update >/dev/null || fail "repo add and update in $1"
}

# ---- XFS: shared extents
if ! image xfs 512M "$T_WORK/dx/root"; then
	undo
	t_skip "cannot make and mount an XFS loop image (no free loop device?)"
fi
start_in dx
R=$T_WORK/dx/root
run ctl --json install pkga
check_eq "install pkga exits 0" 0 "$RC"
check_cmp "... a's program is the x86_64 record" x86 "$R/opt/a/bin/tool"

: >ngx/logs/files.log
run ctl --json install pkgb
check_eq "install pkgb exits 0" 0 "$RC"
check_eq "... reading two objects from a's files" 2 "$(fetch_of local)"
check_eq "... both cloned" 2 "$(fetch_of cloned)"
check_eq "... and fetching only b's own file" "$(obj "$bown")" "$(fetched)"
check_cmp "the 2 MiB copy is the vendor's bytes" ta/opt/a/share/big "$R/srv/b/big-copy"
check_cmp "the program thinned from b's fat file is the x86_64 record" x86 "$R/srv/b/bin/tool2"
check_eq "... and b's own file is there" "b's own" "$(cat "$R/srv/b/own")"
check_match "the 2 MiB copy shares its extents with a's (filefrag -v)" '^[1-9]' "$(shared "$R/srv/b/big-copy")"
check_match "... and a's file shares them back" '^[1-9]' "$(shared "$R/opt/a/share/big")"
check_match "the thinned program shares its extents with a's" '^[1-9]' "$(shared "$R/srv/b/bin/tool2")"
check_eq "the copy has its manifest's mode, not the source's" 644 "$(stat -c %a "$R/srv/b/big-copy")"
run ctl verify pkgb
check_eq "verify pkgb: the cloned files are b's" 0 "$RC"

check "remove pkgb" ctl remove pkgb
run ctl install pkgb
check_eq "install pkgb again, in words" 0 "$RC"
check_match "... says how many it cloned" "fetch: 1 object \([0-9.]+ [KMG]?i?B\), 2 from installed files \(2 cloned\)$" \
	"$RUN_OUT"
check "remove pkgb" ctl remove pkgb
# XFS frees an unlinked file's blocks in the background: a few seconds
for ((i = 0; i < 50; i++)); do
	sync -f "$R/opt/a/share/big"
	[ "$(shared "$R/opt/a/share/big")" = 0 ] && break
	sleep 0.1
done
check_eq "... a's file shares nothing any more" 0 "$(shared "$R/opt/a/share/big")"

# the admin changes a's file in place, keeping its size
flip_byte "$R/opt/a/share/big" 1000
flip_byte "$R/opt/a/share/big" 2000000
: >ngx/logs/files.log
run ctl --json install pkgc
check_eq "install pkgc, whose file's only local copy was changed, exits 0" 0 "$RC"
check_eq "... clones nothing (the copy failed the hash)" 0 "$(fetch_of cloned)"
check_eq "... reads nothing from installed files" 0 "$(fetch_of local)"
check_eq "... and fetches the object" "$(obj "$big")" "$(fetched)"
check_cmp "... so the installed bytes are the vendor's" ta/opt/a/share/big "$R/srv/c/big-again"
check_eq "... in extents of its own" 0 "$(shared "$R/srv/c/big-again")"
check_nomatch "... and a's changed file is left as the admin made it" "^$big" "$(sha256sum "$R/opt/a/share/big")"
daemon_stop
check_eq "fatelfd on XFS stops cleanly" 0 "$DAEMON_STATUS"
undo

# ---- ext4: no shared extents, the bytes are copied
if image ext4 64M "$T_WORK/de/root"; then
	start_in de
	R=$T_WORK/de/root
	check "install pkga (ext4)" ctl install pkga
	: >ngx/logs/files.log
	run ctl --json install pkgb
	check_eq "install pkgb on ext4 exits 0" 0 "$RC"
	check_eq "... reading two objects from a's files" 2 "$(fetch_of local)"
	check_eq "... copying them: none cloned" 0 "$(fetch_of cloned)"
	check_eq "... fetching only b's own file" "$(obj "$bown")" "$(fetched)"
	check_cmp "... the copy is the vendor's bytes" ta/opt/a/share/big "$R/srv/b/big-copy"
	check_cmp "... and the program the x86_64 record" x86 "$R/srv/b/bin/tool2"
	check "remove pkgb (ext4)" ctl remove pkgb
	run ctl install pkgb
	check_match "in words: no cloned count" "fetch: 1 object \([0-9.]+ [KMG]?i?B\), 2 from installed files$" "$RUN_OUT"
	daemon_stop
	check_eq "fatelfd on ext4 stops cleanly" 0 "$DAEMON_STATUS"
	undo
else
	undo
	fail "an ext4 loop image for the copy run" "mkfs.ext4 or mount failed"
fi
check_no_sanitizer_report

kill "$NGPID" 2>/dev/null
wait "$NGPID" 2>/dev/null
NGPID=
t_done
