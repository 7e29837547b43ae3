#!/bin/bash
# fatelf-run on a stock kernel: the test registers fatelf-run as a
# binfmt_misc handler (with the flags data/binfmt.d/fatelf.conf ships) and
# runs real fat executables as ./FILE, the way a user would. runprobe.c,
# built statically for x86_64, i686, aarch64 and riscv64 (and dynamically
# for x86_64 against a library found through $ORIGIN), reports what it
# sees: its architecture, argv, environment, stdio, /proc/self/exe, and
# its exit status and signals reach the shell. It also registers
# qemu-aarch64-static to show a fat file without a host record running
# through an emulator, and checks the cache's safety rules and the
# refusals (setuid, no record for the host).
#
# Needs root (binfmt_misc registration, other users' files); CI runs as
# root, anyone else gets a SKIP. Every binfmt_misc entry it registers, and
# every entry it disables, is put back by an EXIT trap.
. "$(dirname "$0")/lib.sh"

t_init run
[ "$(id -u)" = 0 ] || t_skip "registering a binfmt_misc handler needs root"
: "${FATELF_RUN:=$top_builddir/tools/fatelf-run}"
t_require_exec "$FATELF" "$FATELF_RUN" "$MKFIXTURE"
FATELF_RUN=$(realpath "$FATELF_RUN")
for tool in gcc i686-linux-gnu-gcc aarch64-linux-gnu-gcc riscv64-linux-gnu-gcc \
	qemu-aarch64-static setpriv perl readelf jq; do
	command -v "$tool" >/dev/null 2>&1 || { echo "Bail out! $tool is not installed"; exit 99; }
done
[ "$(uname -m)" = x86_64 ] || t_skip "the host is $(uname -m), this test expects x86_64"

W=$(realpath "$T_WORK")
probe_src=$top_srcdir/tests/integration/runprobe.c
BM=/proc/sys/fs/binfmt_misc
NAME=fatelf-test-$$
QNAME=fatelf-test-qemu-$$
# The cache of every run below, unless a check sets its own: fatelf-run
# creates it (0700), and it goes away with the work directory.
CACHE=$W/cache
export FATELF_RUN_CACHE_DIR=$CACHE

# ---------------------------------------------------------------- binfmt_misc
REGISTERED=()
DISABLED=()
STATUS_WAS=
cleanup() {
	local n
	for n in "${REGISTERED[@]}"; do
		[ -e "$BM/$n" ] && echo -1 >"$BM/$n"
	done
	for n in "${DISABLED[@]}"; do
		[ -e "$BM/$n" ] && echo 1 >"$BM/$n"
	done
	[ "$STATUS_WAS" = disabled ] && echo 0 >"$BM/status"
	return 0
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if [ ! -e "$BM/register" ]; then
	mount -t binfmt_misc binfmt_misc "$BM" 2>mount.err ||
		{ echo "Bail out! cannot mount binfmt_misc: $(cat mount.err)"; exit 99; }
fi
STATUS_WAS=$(cat "$BM/status")
[ "$STATUS_WAS" = disabled ] && echo 1 >"$BM/status"

# Other ELF handlers (a system's qemu-user registrations) would decide
# which foreign record runs and through what, and another FatELF handler
# (an installed fatelf-run) would compete with the one under test: switch
# them off while the test runs, so only the entries it registers act. A
# FatELF entry that exists at all is noted: "fatelf targets" still reports
# it (disabled) after the test's own entry is gone.
OTHER_FATELF=
for e in "$BM"/*; do
	n=${e##*/}
	case $n in register | status) continue ;; esac
	grep -q '^magic fa700e1f' "$e" && OTHER_FATELF=$n
	if [ "$(head -n1 "$e")" = enabled ] && grep -Eq '^magic (7f454c46|fa700e1f)' "$e"; then
		echo 0 >"$e" && DISABLED+=("$n")
	fi
done
[ ${#DISABLED[@]} -gt 0 ] && echo "# disabled for the test: ${DISABLED[*]}"

# register NAME LINE: registers a binfmt_misc entry, to be removed on exit.
register() {
	REGISTERED+=("$1")
	echo "$2" >"$BM/register"
}

unregister() {
	[ -e "$BM/$1" ] && echo -1 >"$BM/$1"
}

# The line the project ships for systemd-binfmt, with the test's name and
# the fatelf-run under test.
conf=$top_srcdir/data/binfmt.d/fatelf.conf.in
line=$(sed -n "s|^:fatelf:|:$NAME:|; s|@bindir@/fatelf-run|$FATELF_RUN|p" "$conf")
check_match "fatelf.conf.in registers the FatELF v1 magic with flags PO" \
	"^:$NAME:M::\\\\xfa\\\\x70\\\\x0e\\\\x1f\\\\x01\\\\x00::$FATELF_RUN:PO\$" "$line"
if register "$NAME" "$line" 2>reg.err; then
	pass "register fatelf-run as binfmt_misc entry $NAME"
else
	fail "register fatelf-run as binfmt_misc entry $NAME" "$(cat reg.err)"
	t_done
fi
check_eq "the entry is enabled, runs fatelf-run, with flags PO" \
	$'enabled\ninterpreter '"$FATELF_RUN"$'\nflags: PO' "$(head -n3 "$BM/$NAME")"

run "$FATELF" targets
check_match "fatelf targets says the handler is registered: name, interpreter, flags" \
	"^binfmt_misc: +registered \\($NAME, $FATELF_RUN, flags PO\\)" "$RUN_OUT"

# ---------------------------------------------------------------- the probes
# build OUT CC ARGS...: compiles runprobe.c (or whatever ARGS say).
build() {
	local out=$1 cc=$2
	shift 2
	if "$cc" -O2 -o "$out" "$@" 2>"$out.cc.err"; then
		pass "build $out with $cc"
	else
		fail "build $out with $cc" "$(cat "$out.cc.err")"
	fi
}
for a in x86_64:gcc i686:i686-linux-gnu-gcc aarch64:aarch64-linux-gnu-gcc \
	riscv64:riscv64-linux-gnu-gcc; do
	build "in-${a%%:*}" "${a#*:}" -static "$probe_src"
done

# fatfile OUT IN...: glues real records into a fat executable.
fatfile() {
	local out=$1
	shift
	rm -f "$out"
	"$FATELF" glue -o "$out" "$@" >glue.err 2>&1 && chmod 755 "$out" ||
		fail "glue $out from $*" "$(cat glue.err)"
}

# entries: how many files and directories the cache holds.
entries() {
	find "$CACHE" 2>/dev/null | wc -l
}

# ---------------------------------------------------------------- fat hello, run as ./hello
# aarch64 first, so the host's record is not simply the first one.
fatfile hello in-aarch64 in-x86_64 in-i686
check "fatelf validates the fat hello" "$FATELF" validate hello

check "./hello runs" ./hello
check_eq "./hello runs the x86_64 record, with argv[0] ./hello" \
	$'arch x86_64\nargv0 ./hello' "$RUN_OUT"
check_eq "the cache directory is created 0700" 700 "$(file_mode "$CACHE" 2>&1)"

run ./hello one 'two words' '' $'new\nline'
check_eq "arguments pass through unchanged, empty and multi-line ones too" \
	$'arch x86_64\nargv0 ./hello\narg 1 one\narg 2 two words\narg 3 \narg 4 new\nline' "$RUN_OUT"

ln -s hello hi
run ./hi x
check_eq "a symlink's name is kept as argv[0]" $'arch x86_64\nargv0 ./hi\narg 1 x' "$RUN_OUT"
run "$W/hello"
check_eq "an absolute path is kept as argv[0]" $'arch x86_64\nargv0 '"$W/hello" "$RUN_OUT"
run bash -c 'exec -a custom-name ./hello'
check_eq "argv[0] set by the caller (exec -a) is what the program sees" \
	$'arch x86_64\nargv0 custom-name' "$RUN_OUT"

check_exit 0 "exit 0 reaches the shell" ./hello exit 0
check_exit 3 "exit 3 reaches the shell" ./hello exit 3
check_exit 255 "exit 255 reaches the shell" ./hello exit 255

# How the program ended, from wait(2): "SIGNAL STATUS".
waitstatus() {
	perl -e 'system { $ARGV[0] } @ARGV; printf "%d %d\n", $? & 127, $? >> 8' -- "$@"
}
check_eq "signal 15: the wait status says killed by SIGTERM" "15 0" "$(waitstatus ./hello signal 15)"
check_eq "signal 9: the wait status says killed by SIGKILL" "9 0" "$(waitstatus ./hello signal 9)"
check_exit 143 "signal 15: the shell sees 143" ./hello signal 15
check_exit 137 "signal 9: the shell sees 137" ./hello signal 9

./hello pause >pause.out 2>&1 &
pid=$!
for _ in $(seq 200); do
	grep -q '^pid' pause.out && break
	sleep 0.02
done
check_eq "pause: the pid it prints is the one the shell started (no fork)" "pid $pid" "$(cat pause.out)"
check_eq "pause: its command line is the caller's" "./hello pause " \
	"$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>&1)"
kill -USR1 "$pid"
wait "$pid"
check_eq "pause: kill -USR1 ends it by SIGUSR1 (shell status 138)" 138 "$?"

run env PROBE_VALUE='a b=c' ./hello env PROBE_VALUE
check_eq "the environment passes through" "a b=c" "$RUN_OUT"
run env -u PROBE_VALUE ./hello env PROBE_VALUE
check_eq "an unset variable stays unset" "unset" "$RUN_OUT"

head -c 100000 /dev/urandom >stdin.in
./hello stdin <stdin.in >stdin.out 2>stdin.err
check_eq "stdin: exits 0" 0 "$?"
check_cmp "stdin is copied to stdout byte for byte (100000 random bytes)" stdin.in stdin.out
check_eq "stderr reaches its redirection" "stderr ok" "$(cat stdin.err)"
out=$(printf 'piped\n' | ./hello stdin 2>/dev/null | cat)
check_eq "stdin and stdout work as pipes" "piped" "$out"

run ./hello exe
exe=${RUN_OUT#exe }
check_match "/proc/self/exe is an entry under the cache directory, named hello" \
	"^exe $CACHE/.+/hello\$" "$RUN_OUT"
n1=$(entries)
ino1=$(stat -c %i "$exe" 2>&1)
run ./hello exe
check_eq "a second run uses the same entry" "exe $exe" "$RUN_OUT"
check_eq "a second run adds nothing to the cache" "$n1" "$(entries)"
check_eq "a second run leaves the entry's inode alone" "$ino1" "$(stat -c %i "$exe" 2>&1)"
check_eq "the entry is owned by the user" "0 0" "$(stat -c '%u %g' "$exe" 2>&1)"

run "$FATELF_RUN" ./hello a b
check_eq "fatelf-run ./hello a b: argv[0] is ./hello" \
	$'arch x86_64\nargv0 ./hello\narg 1 a\narg 2 b' "$RUN_OUT"
run "$FATELF_RUN" -- ./hello -x
check_eq "fatelf-run -- ./hello -x: options after -- belong to the program" \
	$'arch x86_64\nargv0 ./hello\narg 1 -x' "$RUN_OUT"
check_exit 5 "fatelf-run passes the exit status" "$FATELF_RUN" ./hello exit 5
target=$("$FATELF" info --json hello | jq -r '.records[1].target')
check_match "record 1 of the fat hello is x86_64" "^x86_64:64bits:le:" "$target"
run "$FATELF_RUN" --which ./hello
check_eq "fatelf-run --which: the x86_64 record, native, and the cache entry" \
	$'record 1 '"$target"$' (native)\ncache '"$exe" "$RUN_OUT"
check_exit 2 "fatelf-run with no file is a usage error" "$FATELF_RUN"
check_exit 127 "fatelf-run on a missing file exits 127" "$FATELF_RUN" ./no-such-file
check_exit 126 "fatelf-run on a plain ELF exits 126" "$FATELF_RUN" ./in-x86_64

# A changed fat file (same inode, same size, new bytes and times) gets a
# new entry, and the old one goes.
fatfile hello2 in-x86_64 in-aarch64 in-i686
cat hello2 >hello
touch -m -d '2001-02-03 04:05:06' hello
run ./hello exe
check_match "a changed fat file still runs from the cache" "^exe $CACHE/.+/hello\$" "$RUN_OUT"
check_nomatch "a changed fat file gets a new entry" "^exe $exe\$" "$RUN_OUT"
check_eq "the changed file's old entry is pruned" no "$([ -e "$exe" ] && echo yes || echo no)"
exe=${RUN_OUT#exe }
touch -m -d '2002-03-04 05:06:07' hello
run ./hello exe
check_match "a new mtime alone (same bytes) gives a new entry too" "^exe $CACHE/.+/hello\$" "$RUN_OUT"
check_nomatch "it is not the previous entry" "^exe $exe\$" "$RUN_OUT"

# ---------------------------------------------------------------- i686
fatfile x32 in-aarch64 in-i686
run ./x32 a
if t_native_i686; then
	check_eq "aarch64 + i686: the i686 record runs" $'arch i686\nargv0 ./x32\narg 1 a' "$RUN_OUT"
else
	# The record is chosen, and the kernel's refusal is told, naming it.
	check_eq "aarch64 + i686 on a kernel without i386: exit 126" 126 "$RC"
	check_match "... fatelf-run names the file, the record and the kernel's reason" \
		"^fatelf-run: \./x32: cannot execute record 1 \(.*\): Exec format error\$" "$RUN_ERR"
fi
run "$FATELF_RUN" --which ./x32
target=$("$FATELF" info --json x32 | jq -r '.records[1].target')
check_match "fatelf-run --which: record 1, i386, compatible" "^record 1 $target \\(compatible\\)\$" \
	"$(sed -n 1p <<<"$RUN_OUT")"
check_match "record 1 of that file is i386" "^i386:32bits:le:" "$target"
t_native_i686 && check_exit 9 "the i686 record's exit status reaches the shell" ./x32 exit 9

# ---------------------------------------------------------------- no record for the host
# ia64 and vax: machines no qemu-user (and no other handler) runs.
"$MKFIXTURE" -o ia64.elf --machine ia64 --class 64 --type exec
"$MKFIXTURE" -o vax.elf --machine vax --class 32 --type exec
fatfile nohost ia64.elf vax.elf
check_exit 126 "ia64 + vax: exits 126" ./nohost
check_one_line "ia64 + vax: one line on stderr" "$RUN_ERR"
offers=$("$FATELF" info --json nohost | jq -r '[.records[].target] | join(".*")')
check_match "ia64 + vax: the message names the file, the host's targets and the file's" \
	"^fatelf-run: \\./nohost: no record runs on this host \\(x86_64: [^)]*x86_64[^)]*i386[^)]*\\); the file offers: .*$offers.*; no binfmt_misc handler runs any of them\$" \
	"$RUN_ERR"
check_eq "ia64 + vax: nothing on stdout" "" "$RUN_OUT"

fatfile ar in-aarch64 in-riscv64
check_exit 126 "aarch64 + riscv64 with no handler for either: exits 126" ./ar
offers=$("$FATELF" info --json ar | jq -r '[.records[].target] | join(".*")')
check_match "aarch64 + riscv64: the message lists both records' targets" \
	"^fatelf-run: \\./ar: no record runs on this host .*the file offers: .*$offers.*no binfmt_misc handler" \
	"$RUN_ERR"

# ---------------------------------------------------------------- qemu-user
aarch64_magic='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
aarch64_mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
if register "$QNAME" ":$QNAME:M::$aarch64_magic:$aarch64_mask:$(command -v qemu-aarch64-static):OPF" 2>reg.err; then
	pass "register qemu-aarch64-static as $QNAME"
else
	fail "register qemu-aarch64-static as $QNAME" "$(cat reg.err)"
fi
run ./ar x 'y z'
check_eq "aarch64 + riscv64: the aarch64 record runs through qemu, argv[0] kept" \
	$'arch aarch64\nargv0 ./ar\narg 1 x\narg 2 y z' "$RUN_OUT"
check_exit 7 "through qemu: the exit status reaches the shell" ./ar exit 7
check_eq "through qemu: signal 15 kills it" "15 0" "$(waitstatus ./ar signal 15)"
run "$FATELF_RUN" --which ./ar
check_match "fatelf-run --which: record 0, emulated by $QNAME" \
	"^record 0 $("$FATELF" info --json ar | jq -r '.records[0].target') \\(emulated by $QNAME\\)\$" "$(sed -n 1p <<<"$RUN_OUT")"
check_match "fatelf-run --which: the aarch64 record's cache entry, named ar" \
	"^cache $CACHE/.+/ar\$" "$(sed -n 2p <<<"$RUN_OUT")"
fatfile ra in-riscv64 in-aarch64
run ./ra
check_eq "riscv64 + aarch64: the first record with a handler (aarch64) runs" \
	$'arch aarch64\nargv0 ./ra' "$RUN_OUT"
run "$FATELF" targets
check_match "fatelf targets reports aarch64 as emulated by $QNAME" \
	"^emulated: +aarch64:64bits:le \\(aarch64\\) by $QNAME\$" "$RUN_OUT"
unregister "$QNAME"
check_eq "$QNAME is unregistered" no "$([ -e "$BM/$QNAME" ] && echo yes || echo no)"
check_exit 126 "without it, aarch64 + riscv64 exits 126 again" ./ar

# ---------------------------------------------------------------- $ORIGIN
build libprobe.so gcc -shared -fPIC -DPROBE_SHLIB "$probe_src"
build dyn-runpath gcc -DPROBE_LIB "$probe_src" -L. -lprobe \
	-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../lib'
build dyn-rpath gcc -DPROBE_LIB "$probe_src" -L. -lprobe \
	-Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib'
build dyn-same gcc -DPROBE_LIB "$probe_src" -L. -lprobe -Wl,-rpath,'$ORIGIN'
check_match "dyn-runpath has DT_RUNPATH \$ORIGIN/../lib" 'RUNPATH.*\[\$ORIGIN/\.\./lib\]' \
	"$(readelf -d dyn-runpath)"
check_match "dyn-rpath has DT_RPATH \$ORIGIN/../lib" '\(RPATH\).*\[\$ORIGIN/\.\./lib\]' \
	"$(readelf -d dyn-rpath)"
# The control: outside its tree, the thin binary does not find the library.
check_exit 127 "the thin dynamic probe alone cannot find libprobe.so" ./dyn-runpath origin

for v in runpath rpath; do
	mkdir -p "o-$v/bin" "o-$v/lib"
	cp libprobe.so "o-$v/lib/"
	fatfile "o-$v/bin/probe" in-aarch64 "dyn-$v"
	run ./"o-$v/bin/probe" origin
	check_eq "\$ORIGIN/../lib ($v): the fat file's record finds ../lib/libprobe.so" \
		"greeting from libprobe" "$RUN_OUT"
	run ./"o-$v/bin/probe" exe
	check_match "\$ORIGIN/../lib ($v): /proc/self/exe is .../bin/probe under the cache" \
		"^exe $CACHE/.+/bin/probe\$" "$RUN_OUT"
done
(cd o-runpath/bin && ./probe origin >../../cwd.out 2>&1)
check_eq "\$ORIGIN/../lib: it works from the binary's own directory too" \
	"greeting from libprobe" "$(cat cwd.out)"

mkdir -p o-same/bin
fatfile o-same/bin/probe in-aarch64 dyn-same
run ./o-same/bin/probe origin
check_match "\$ORIGIN, library not there yet: ld.so says libprobe.so is missing" \
	"libprobe\\.so" "$RUN_ERR"
# Coarse file times: let the directory's mtime move on, as it would for
# any library installed later than the program.
sleep 0.05
cp libprobe.so o-same/bin/
run ./o-same/bin/probe origin
check_eq "\$ORIGIN: a library put next to the fat file afterwards is found" \
	"greeting from libprobe" "$RUN_OUT"

# ---------------------------------------------------------------- setuid, setgid
cp hello suid && chmod 4755 suid
check_exit 126 "a setuid fat file is refused with 126" ./suid
check_match "the message says setuid is refused" \
	"^fatelf-run: \\./suid: refused: a setuid.* fat executable \\(mode 4755\\)" "$RUN_ERR"
check_eq "the refused program did not run" "" "$RUN_OUT"
cp hello sgid && chmod 2755 sgid
check_exit 126 "a setgid fat file is refused with 126" ./sgid
check_match "the message says setgid is refused" \
	"^fatelf-run: \\./sgid: refused: a .*setgid fat executable \\(mode 2755\\)" "$RUN_ERR"

# ---------------------------------------------------------------- cache safety
# exe_with CACHE_DIR: /proc/self/exe of ./hello run with that cache.
exe_with() {
	FATELF_RUN_CACHE_DIR=$1 ./hello exe 2>&1
}
mkdir -m 777 open
out=$(exe_with "$W/open")
check_match "a world-writable cache: the program still runs, from a memfd" "^exe /memfd:" "$out"
check_eq "a world-writable cache is left empty" "" "$(find open -mindepth 1)"

mkdir -m 700 theirs && chown 65534:65534 theirs
out=$(exe_with "$W/theirs")
check_match "another user's cache: the program still runs, from a memfd" "^exe /memfd:" "$out"
check_eq "another user's cache is left empty" "" "$(find theirs -mindepth 1)"

mkdir -m 777 ww
out=$(exe_with "$W/ww/cache")
check_match "a cache below a world-writable (not sticky) directory is not used" "^exe /memfd:" "$out"
check_eq "and no file is written there" "" "$(find ww -type f)"

mkdir -m 1777 sticky
out=$(exe_with "$W/sticky/cache")
check_match "a cache below a sticky directory (like /tmp) is used" "^exe $W/sticky/cache/.+/hello\$" "$out"

# a cache on a noexec file system: the entry is written but cannot be
# exec'd, so the program runs from a memfd
mkdir noexec
if mount -t tmpfs -o noexec,mode=700 fatelf-test "$W/noexec" 2>/dev/null; then
	out=$(exe_with "$W/noexec/cache")
	check_match "a cache on a noexec file system: the program still runs, from a memfd" \
		"^exe /memfd:" "$out"
	umount "$W/noexec"
else
	fail "mount a noexec tmpfs for the cache" "mount failed"
fi

# ---------------------------------------------------------------- execute-only, another user
mkdir xo home65
cp hello xo/hello && chmod 0111 xo/hello
chown 65534:65534 home65 && chmod 700 home65
chmod 755 "$W"
as_nobody() {
	env -u FATELF_RUN_CACHE_DIR HOME="$W/home65" XDG_CACHE_HOME="$W/home65/.cache" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
check_exit 1 "uid 65534 cannot read the execute-only file" as_nobody cat xo/hello
check_exit 126 "uid 65534: the execute-only fat file (mode 0111) is refused with 126" \
	as_nobody ./xo/hello a
check_match "the message says why" \
	"^fatelf-run: \\./xo/hello: refused: an execute-only fat executable \\(mode 0111\\) does not run: its record would be copied into the caller's cache" \
	"$RUN_ERR"
check_eq "the refused program did not run" "" "$RUN_OUT"
check_eq "uid 65534: nothing of it reached a cache" "" \
	"$(find "$W/home65" -type f 2>&1)"
check_exit 126 "uid 65534: --which refuses it too" as_nobody "$FATELF_RUN" --which ./xo/hello
chmod 0755 xo/hello
run as_nobody ./xo/hello a
check_eq "uid 65534 runs it once it may read it (mode 0755)" \
	$'arch x86_64\nargv0 ./xo/hello\narg 1 a' "$RUN_OUT"
run as_nobody ./xo/hello exe
check_match "uid 65534: its entry is in \$XDG_CACHE_HOME/fatelf" \
	"^exe $W/home65/\\.cache/fatelf/.+/hello\$" "$RUN_OUT"
check_eq "uid 65534: its cache is its own, mode 0700" "65534 700" \
	"$(stat -c '%u %a' "$W/home65/.cache/fatelf" 2>&1)"

# Read permission through a group the caller is a member of, or through an
# ACL entry, is read permission: the file runs. An ACL entry that takes
# reading away from the caller (others may read) refuses it.
as_member() {
	env -u FATELF_RUN_CACHE_DIR HOME="$W/home65" XDG_CACHE_HOME="$W/home65/.cache" \
		setpriv --reuid=65534 --regid=65534 --groups=4242 "$@"
}
# set_acl FILE USER-PERMS GROUP-OBJ-PERMS MASK OTHER: a POSIX access ACL with
# one named-user entry for uid 65534 (the xattr's binary form: no setfacl
# needed).
set_acl() {
	python3 - "$@" <<'PY'
import os, struct, sys
path, user, group, mask, other = sys.argv[1], *map(int, sys.argv[2:])
und = 0xffffffff
ents = [(0x01, 7, und), (0x02, user, 65534), (0x04, group, und), (0x10, mask, und), (0x20, other, und)]
os.setxattr(path, "system.posix_acl_access",
            struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in ents))
PY
}
chown 0:4242 xo/hello && chmod 0750 xo/hello
run as_member ./xo/hello a
check_eq "a member of the file's group runs it (mode 0750, group 4242)" \
	"0 arch x86_64" "$RC $(head -1 <<<"$RUN_OUT")"
chown 0:0 xo/hello && chmod 0711 xo/hello
if set_acl xo/hello 5 1 5 1 2>acl.err; then
	run as_nobody ./xo/hello a
	check_eq "uid 65534 runs it through an ACL entry u:65534:r-x (mode 0711)" \
		"0 arch x86_64" "$RC $(head -1 <<<"$RUN_OUT")"
	chmod 0755 xo/hello && set_acl xo/hello 1 5 5 5
	check_exit 1 "an ACL entry u:65534:--x: uid 65534 cannot read it, though others may" \
		as_nobody cat xo/hello
	check_exit 126 "... and the fat file is refused as execute-only" as_nobody ./xo/hello a
	check_match "... saying why" "refused: an execute-only fat executable" "$RUN_ERR"
else
	fail "set a POSIX ACL on a file of the work directory" "$(cat acl.err)"
fi
chmod 0755 xo/hello && python3 -c 'import os; os.removexattr("xo/hello", "system.posix_acl_access")' 2>/dev/null

# ---------------------------------------------------------------- bad input, full disk
# A truncated fat file: the kernel still hands it to fatelf-run (the magic
# is there), which refuses it naming the rule, and writes nothing.
before=$(entries)
head -c 6000 hello >trunc && chmod 755 trunc
check_exit 126 "a fat file cut after its first record exits 126" ./trunc
check_match "and names the rule broken" \
	"^fatelf-run: \./trunc: not a valid FatELF file: .*\(FATELF_E_OUTSIDE\)\$" "$RUN_ERR"
head -c 6 hello >stub && chmod 755 stub
check_exit 126 "a file of the magic and version only exits 126" ./stub
check_match "and says the header is short" "not a valid FatELF file: .*\(FATELF_E_" "$RUN_ERR"
check_eq "neither wrote a cache entry" "$before" "$(entries)"

# A cache on a file system too small for the record: the program runs
# from a memfd, and no partial binary or temp directory is left behind.
mkdir full
if mount -t tmpfs -o size=64k,mode=700 fatelf-test "$W/full" 2>/dev/null; then
	out=$(FATELF_RUN_CACHE_DIR=$W/full/cache ./hello exe 2>&1)
	check_match "a full cache file system: the program still runs, from a memfd" \
		"^exe /memfd:" "$out"
	check_eq "and nothing is left in the cache" "" "$(find "$W/full/cache" -mindepth 2 2>&1)"
	umount "$W/full"
else
	fail "mount a small tmpfs for the cache" "mount failed"
fi

# ---------------------------------------------------------------- concurrent first runs
# Twenty runs of a fat file nobody ran yet, at once: each builds its entry
# in a temp directory and renames it into place, so every run works and
# one entry is left, with no temp directory behind.
export FATELF_RUN_CACHE_DIR=$W/cache-race
fatfile race in-x86_64 in-aarch64
for i in $(seq 20); do
	(./race exit 0 >"race.$i.out" 2>&1; echo "rc $?" >>"race.$i.out") &
done
wait
check_eq "20 concurrent first runs all run the x86_64 record and exit 0" \
	"20" "$(cat race.*.out | grep -c '^rc 0$')"
check_eq "and none printed anything else" "" "$(cat race.*.out | grep -v '^rc 0$')"
check_eq "one cache entry is left" 1 "$(find "$W/cache-race" -type f | wc -l)"
check_eq "and no temp directory" 0 "$(find "$W/cache-race" -name '.fatelf.*' | wc -l)"
check_cmp "the entry holds the x86_64 record's bytes" in-x86_64 "$(find "$W/cache-race" -type f)"
export FATELF_RUN_CACHE_DIR=$CACHE

# ---------------------------------------------------------------- unregistered
unregister "$NAME"
check_eq "$NAME is unregistered" no "$([ -e "$BM/$NAME" ] && echo yes || echo no)"
run "$FATELF" targets
check_nomatch "fatelf targets no longer names $NAME" "$NAME" "$RUN_OUT"
if [ -z "$OTHER_FATELF" ]; then
	check_match "fatelf targets says not registered" "binfmt_misc: +not registered" "$RUN_OUT"
fi
check_exit 126 "without the handler, the shell cannot execute ./hello (126)" ./hello
check_match "and says so" "cannot execute binary file" "$RUN_ERR"

t_done
