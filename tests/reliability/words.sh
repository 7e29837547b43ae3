#!/bin/bash
# What an admin and a vendor read: the words and exit statuses of fatelfctl
# and fatelf, and the data behind them in fatelfd's replies.
#
#  - BundleInvalid names the entry (its "entry" field, and the message
#    names that same entry, once) for every reader error about one entry;
#  - the messages of the tools name the right thing: an empty or device
#    source, a package name's broken rule, a key of the other kind, the
#    option that keeps setuid bits, an HTTP status once, and a failed
#    extract leaves no directory behind;
#  - an install says installed, upgraded, reinstalled or downgraded (in
#    the future tense for a dry run), names what --force took and from
#    whom, and the packages left with no file;
#  - fat files that cannot load here: policy compatible thins a fat shared
#    library (install and thin), and what stays fat gets a warning;
#  - fatelfctl's exit statuses (130 on Ctrl-C) and --json errors.
. "$(dirname "$0")/lib.sh" || exit 99

: "${MKHOSTILE:=$top_builddir/tests/fixtures/mkhostile}"

rl_init words
t_require_exec "$MKHOSTILE" "$MKFIXTURE"
t_require_tool python3 jq
# --force, --policy, URL installs and --allow-downgrade are root's alone.
[ "$(id -u)" -eq 0 ] || t_skip "the install words need root's options (--force, --policy, URLs)"

vlc() {
	timeout 60 python3 "$VLC" "$@"
}

check "mkhostile writes the corpus" "$MKHOSTILE" hostile
cp hostile/trusted.pub rl-keys/hostile.pub
daemon_prepare main
if daemon_start main; then
	pass "a private fatelfd answers"
else
	fail "a private fatelfd answers" "$(tail -20 "$DLOG")"
	t_done
fi

# ================================================================ BundleInvalid.entry
# CASE ENTRY: each corpus bundle whose rule is about one entry, and that entry.
while read -r f entry; do
	run vlc call "$SOCK" '{"method":"io.fatelf.Manager.Install","parameters":{"fd":0}}' \
		--fd "hostile/$f"
	got=$(jq -r '"\(.error) \(.parameters.entry)"' <<<"$RUN_OUT" 2>&1)
	check_eq "$f: BundleInvalid names entry '$entry'" \
		"io.fatelf.Manager.BundleInvalid $entry" "$got"
	msg=$(jq -r '.parameters.message' <<<"$RUN_OUT" 2>&1)
	check_match "$f: the message names that entry and no other" \
		"^entry '$entry': " "$msg"
	run ctl install "hostile/$f"
	n=$(grep -o "entry '[^']*'" <<<"$RUN_ERR" | sort -u | wc -l)
	check_eq "$f: fatelfctl's line names one entry" "1 $entry" \
		"$n $(grep -o "entry '[^']*'" <<<"$RUN_ERR" | head -1 | cut -d"'" -f2)"
done <<'LIST'
19-member-unknown.fatbundle opt/game/extra
20-member-outside-files.fatbundle elsewhere/x
21-member-missing.fatbundle opt/game/data
22-member-duplicate.fatbundle opt/game/data
25-hardlink.fatbundle opt/game/data2
26-device.fatbundle opt/game/data
27-fifo.fatbundle opt/game/data
28-type-mismatch.fatbundle opt/game/data
29-symlink-target.fatbundle opt/game/link
30-size-mismatch.fatbundle opt/game/data
32-payload-tampered.fatbundle opt/game/data
33-record-hash.fatbundle opt/game/game
34-fatelf-invalid.fatbundle opt/game/unaligned
35-elf-target.fatbundle opt/game/tool
01-path-absolute.fatbundle /aaa
02-path-dotdot.fatbundle ../aaa
06-path-duplicate.fatbundle aaa
08-path-parent.fatbundle opt/nodir/x
09-setuid.fatbundle opt/game/tool
LIST

# A path with a byte that may not be shown raw: the entry as the message
# quotes it.
while read -r f entry rule; do
	run vlc call "$SOCK" '{"method":"io.fatelf.Manager.Install","parameters":{"fd":0}}' \
		--fd "hostile/$f"
	check_eq "$f: BundleInvalid names entry '$entry', and its message the same" \
		"io.fatelf.Manager.BundleInvalid $entry|entry '$entry': the path $rule" \
		"$(jq -r '"\(.error) \(.parameters.entry)|\(.parameters.message)"' <<<"$RUN_OUT" 2>&1)"
done <<'LIST'
03-path-newline.fatbundle a\x0aaa holds the control character U+000A at byte 1
04-path-utf8.fatbundle a\xff\xfeaa is not valid UTF-8 (byte 1)
LIST

# The tool names the same entry in its line and in --json, and names the
# bundle file in front.
for f in 32-payload-tampered 33-record-hash 21-member-missing; do
	run "$FATELF" bundle verify --json "hostile/$f.fatbundle"
	e=$(jq -r .error.entry <<<"$RUN_OUT" 2>&1)
	m=$(jq -r .error.message <<<"$RUN_OUT" 2>&1)
	check_eq "fatelf bundle verify --json $f: error.entry is the entry its message names" \
		"$(grep -o "^entry '[^']*'" <<<"$m" | cut -d"'" -f2)" "$e"
	run "$FATELF" bundle verify "hostile/$f.fatbundle"
	check_match "fatelf bundle verify $f: the bundle, then that entry, once" \
		"^fatelf: hostile/$f\\.fatbundle: entry '$e': " "$RUN_ERR"
	check_eq "fatelf bundle verify $f: one entry named" 1 \
		"$(grep -o "entry '[^']*'" <<<"$RUN_ERR" | sort -u | wc -l)"
done
# ================================================================ messages that must be right
# install from an empty standard input or a device: the source, in words
run ctl install - </dev/null
check_eq "install - </dev/null exits 1" 1 "$RC"
check_eq "... says standard input is a device, not a bundle" \
	"fatelfctl: install: standard input is a character device, not a bundle (a bundle comes from a file or a pipe)" \
	"$RUN_ERR"
: >empty.fatbundle
run ctl install - <empty.fatbundle
check_eq "install - <an empty file: standard input is empty" \
	"1 fatelfctl: install: standard input is empty, not a bundle" "$RC $RUN_ERR"
run ctl install empty.fatbundle
check_eq "install of an empty file: names it, empty" \
	"1 fatelfctl: install: empty.fatbundle is empty, not a bundle" "$RC $RUN_ERR"

# a package name of one character: the rule it breaks is its length
mkdir -p tree-h/opt/h && echo h >tree-h/opt/h/f
run "$FATELF" bundle create -o h.fatbundle --name h --version 1.0 tree-h
check_eq "bundle create --name h exits 1" 1 "$RC"
check_match "... names the length rule, and the whole rule" \
	"package name 'h' is 1 character long; a package name has 2 to 255 characters: lowercase letters, digits, and \+ \. - after the first\$" \
	"$RUN_ERR"
run "$FATELF" bundle create -o h.fatbundle --name Hx --version 1.0 tree-h
check_match "bundle create --name Hx: names the character" "package name 'Hx' has 'H' at position 1; " \
	"$RUN_ERR"

# a public key where a secret key goes, and the other way round
run "$FATELF" bundle create -o h.fatbundle --name hh --version 1.0 --sign "$RL_PUB" tree-h
check_eq "bundle create --sign PUBLIC-KEY exits 1" 1 "$RC"
check_match "... says it is a public key, not a secret key" \
	"this is a minisign public key, not a secret key" "$RUN_ERR"
check_eq "... and not 'wrong length'" "" "$(grep -o 'wrong length' <<<"$RUN_ERR")"
check "bundle create hh" rl_bundle hh.fatbundle hh 1.0 tree-h
run "$FATELF" bundle verify --key "$RL_KEY" hh.fatbundle
check_match "bundle verify --key SECRET-KEY: says it is a secret key, not a public key" \
	"this is a minisign secret key, not a public key" "$RUN_ERR"

# a setuid file in a tree: the option that keeps it
mkdir -p tree-su/opt/su && cp tree-h/opt/h/f tree-su/opt/su/tool && chmod 4755 tree-su/opt/su/tool
run "$FATELF" bundle create -o su.fatbundle --name su --version 1.0 tree-su
check_eq "bundle create of a setuid file exits 1" 1 "$RC"
check_match "... and names --allow-setid, which keeps it" \
	"opt/su/tool: has the setuid or setgid bit \(mode 4755\); it is bundled only with --allow-setid\$" \
	"$RUN_ERR"
check "... which does" "$FATELF" bundle create -o su.fatbundle --name su --version 1.0 --allow-setid tree-su

# extract --target with no record for it: nothing of the bundle is left
run "$FATELF" bundle extract --target riscv64 hostile/00-valid.fatbundle ex-new
check_eq "bundle extract --target riscv64 (no such record) exits 1" 1 "$RC"
check_match "... naming the machine asked for, not this host" \
	"entry 'opt/game/game': no record runs on a riscv64 machine; the file offers: x86_64:64bits:le:sysv:osabiver0, aarch64:64bits:le:sysv:osabiver0\$" \
	"$RUN_ERR"
check_eq "... and leaves no directory it made" "absent" "$([ -e ex-new ] && find ex-new || echo absent)"
mkdir ex-old
run "$FATELF" bundle extract --target riscv64 hostile/00-valid.fatbundle ex-old
check_eq "... into an existing directory: it stays, empty" "" "$(find ex-old -mindepth 1)"
check "bundle extract --target x86_64 still extracts" \
	"$FATELF" bundle extract --target x86_64 hostile/00-valid.fatbundle ex-ok
check_eq "... every directory and file" 8 "$(find ex-ok -mindepth 1 | wc -l)"

# ================================================================ install words
mkdir -p tree-w1/opt/ww tree-w2/opt/ww
echo one >tree-w1/opt/ww/data && echo two >tree-w2/opt/ww/data
check "bundle ww 1.0" rl_bundle ww1.fatbundle ww 1.0 tree-w1
check "bundle ww 2.0" rl_bundle ww2.fatbundle ww 2.0 tree-w2
run ctl install ww1.fatbundle
check_match "first install: installed" "^installed ww 1\.0: 1 file" "$RUN_OUT"
run ctl install --dry-run ww1.fatbundle
check_match "dry run of the same version: would reinstall, future tense" \
	"^would reinstall ww 1\.0: 1 file, .* to write, .* would be saved by thinning\$" "$RUN_OUT"
run ctl install ww1.fatbundle
check_match "the same version again: reinstalled" "^reinstalled ww 1\.0: 1 file" "$RUN_OUT"
check_eq "... the result says so as data" "reinstall" \
	"$(ctl --json install ww1.fatbundle | tail -1 | jq -r .result.change 2>&1)"
run ctl install ww2.fatbundle
check_match "a newer version: upgraded" "^upgraded ww 1\.0 -> 2\.0: " "$RUN_OUT"
run ctl install --allow-downgrade --dry-run ww1.fatbundle
check_match "dry run of an older version: would downgrade" "^would downgrade ww 2\.0 -> 1\.0: " "$RUN_OUT"
run ctl install --allow-downgrade ww1.fatbundle
check_match "an older version: downgraded" "^downgraded ww 2\.0 -> 1\.0: " "$RUN_OUT"
check_eq "history says what each install did to the package" \
	"downgrade upgrade reinstall reinstall install" \
	"$(ctl --json history ww | jq -r '[.transactions[].kind] | join(" ")' 2>&1)"
check_match "... and the daemon's log" "^job [0-9]+ downgrade ww 2\.0 -> 1\.0 \(uid 0\): done \(transaction [1-9]" \
	"$(cat "$DLOG")"
check_match "... which says a dry run is one" \
	"^job [0-9]+ downgrade ww 2\.0 -> 1\.0 \(uid 0\): dry run done \(1 files, [0-9]+ bytes to write" "$(cat "$DLOG")"
run ctl history ww --limit 1
check_match "... and so does its table" "^[0-9]+ +downgrade +ww +2\.0 -> 1\.0 +committed " \
	"$(sed -n 2p <<<"$RUN_OUT")"

# A failed install's history row names the path or the package once, in
# the words of the error.
check "upgrade ww again" ctl install ww2.fatbundle
run ctl install ww1.fatbundle
check_eq "a refused downgrade: the history row says why, naming the package once" \
	"downgrade failed ww 1.0 is older than the installed 2.0" \
	"$(ctl --json history ww --limit 1 | jq -r '.transactions[0] | "\(.kind) \(.state) \(.error)"' 2>&1)"
mkdir -p tree-pl/opt/pl && echo pl >tree-pl/opt/pl/f
check "bundle pl" rl_bundle pl.fatbundle pl 1.0 tree-pl
mkdir -p "$ROOT/opt/pl" && echo planted >"$ROOT/opt/pl/f"
run ctl install pl.fatbundle
check_eq "install over an unowned file exits 1" 1 "$RC"
check_eq "... the history row names the path once" \
	"/opt/pl/f exists on disk and belongs to no package" \
	"$(ctl --json history pl --limit 1 | jq -r '.transactions[0].error' 2>&1)"
check_eq "... as the error did" 1 "$(grep -o '/opt/pl/f' <<<"$RUN_ERR" | wc -l)"
rm -rf "$ROOT/opt/pl"

# --force names each path it takes and where it came from; an owner left
# with no file is named too.
mkdir -p tree-o1/opt/ow tree-o2/opt/ow
echo a >tree-o1/opt/ow/a && echo b >tree-o1/opt/ow/b
echo a2 >tree-o2/opt/ow/a && echo b2 >tree-o2/opt/ow/b && echo c >tree-o2/opt/ow/c
check "bundle ow-one" rl_bundle ow1.fatbundle ow-one 1.0 tree-o1
check "bundle ow-two" rl_bundle ow2.fatbundle ow-two 1.0 tree-o2
check "install ow-one" ctl install ow1.fatbundle
echo planted >"$ROOT/opt/ow/c"
run ctl install --force --dry-run ow2.fatbundle
check_eq "--force --dry-run: the paths it would take, and from whom" \
	"would take over /opt/ow/a from package ow-one (--force)
would take over /opt/ow/b from package ow-one (--force)
would replace /opt/ow/c, which no package owned (--force)
package ow-one would stay installed with no files left ('fatelfctl remove ow-one' removes it)" \
	"$(grep -v '^would install' <<<"$RUN_OUT")"
run ctl install --force ow2.fatbundle
check_eq "--force: the paths it took, and from whom" \
	"took over /opt/ow/a from package ow-one (--force)
took over /opt/ow/b from package ow-one (--force)
replaced /opt/ow/c, which no package owned (--force)
package ow-one stays installed with no files left ('fatelfctl remove ow-one' removes it)" \
	"$(grep -v '^installed' <<<"$RUN_OUT")"
check_eq "... ow-one is still installed and owns no file (its directories stay, shared)" "0" \
	"$(ctl --json files ow-one | jq '[.files[] | select(.type != "dir")] | length' 2>&1)"

# ================================================================ fat files that cannot run here
# A daemon that sees no FatELF binfmt_misc handler (an empty binfmt_misc
# directory): a fat executable installed fat is named in a warning, and so
# is a fat shared library, which no dynamic linker loads.
mkdir -p nobinfmt && : >nobinfmt/register
main_daemon=("$DPID" "$SOCK" "$ROOT" "$DDIR" "$DLOG" "$DSTATUS" "$DLOG_FROM")
daemon_prepare fat "[Policy]" "Policy=compatible"
daemon_start fat FATELF_BINFMT_MISC_DIR="$T_WORK/nobinfmt" ||
	fail "a fatelfd with no binfmt handler answers" "$(tail -20 "$DLOG")"
mkdir -p tree-fat/opt/fat/lib tree-fat/opt/fat/bin
"$MKFIXTURE" -o so.x86_64 --machine x86_64 --type dyn --size 6000 --seed 31 &&
	"$MKFIXTURE" -o so.i386 --machine i386 --class 32 --type dyn --size 5000 --seed 32 &&
	"$MKFIXTURE" --fat -o tree-fat/opt/fat/lib/libfat.so so.x86_64 so.i386 &&
	"$MKFIXTURE" -o exe.x86_64 --machine x86_64 --type exec --size 6000 --seed 33 &&
	"$MKFIXTURE" -o exe.i386 --machine i386 --class 32 --type exec --size 5000 --seed 34 &&
	"$MKFIXTURE" --fat -o tree-fat/opt/fat/bin/tool exe.x86_64 exe.i386 ||
	fail "mkfixture makes the fat library and executable" ""
chmod 0755 tree-fat/opt/fat/lib/libfat.so tree-fat/opt/fat/bin/tool
check "bundle fat" rl_bundle fat.fatbundle fatpkg 1.0 tree-fat
run ctl install --policy keep fat.fatbundle
check_eq "policy keep: installed, and one warning line per file that cannot load" \
	"installed fatpkg 1.0: 2 files
warning: /opt/fat/bin/tool stays fat and cannot run here: the FatELF binfmt_misc handler (fatelf-run) is not registered
warning: /opt/fat/lib/libfat.so stays fat: no dynamic linker loads a FatELF shared library (policy native or compatible thins it)" \
	"$(sed 's/: 2 files,.*/: 2 files/' <<<"$RUN_OUT")"
check_eq "... the warnings are data: path and reason" \
	"/opt/fat/bin/tool no-binfmt-handler
/opt/fat/lib/libfat.so fat-shared-library" \
	"$(ctl --json install --policy keep fat.fatbundle | tail -1 |
		jq -r '.result.warnings[] | "\(.path) \(.reason)"' 2>&1)"
if ctl status 2>/dev/null | grep -q 'i386'; then
	# thin by the configured policy (compatible): the same rule
	run ctl thin fatpkg
	check_cmp "thin under policy compatible: the fat library becomes its x86_64 record" \
		so.x86_64 "$ROOT/opt/fat/lib/libfat.so"
	check_cmp "... the fat executable keeps both records" \
		tree-fat/opt/fat/bin/tool "$ROOT/opt/fat/bin/tool"
	run ctl install --policy compatible fat.fatbundle
	check_cmp "policy compatible: the fat library is thinned to its x86_64 record" \
		so.x86_64 "$ROOT/opt/fat/lib/libfat.so"
	check_cmp "... the fat executable keeps both records" \
		tree-fat/opt/fat/bin/tool "$ROOT/opt/fat/bin/tool"
	check_eq "... and only the executable is warned about" \
		"warning: /opt/fat/bin/tool stays fat and cannot run here: the FatELF binfmt_misc handler (fatelf-run) is not registered" \
		"$(grep '^warning' <<<"$RUN_OUT")"
	run ctl verify fatpkg
	check_eq "... and verify agrees with what is on disk" 0 "$RC"
	# A library may have a PT_INTERP (glibc's libc.so.6 has one, and
	# DF_1_PIE too): it is still a library. A PIE executable is one with
	# a PT_INTERP and no DT_SONAME.
	LIBC=$(ls /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libc.so.6 2>/dev/null | head -1)
	if [ "$(uname -m)" = x86_64 ] && [ -n "$LIBC" ]; then
		mkdir -p tree-libc/opt/libc/lib tree-libc/opt/libc/bin
		"$MKFIXTURE" --fat -o tree-libc/opt/libc/lib/libc.so.6 "$LIBC" so.i386 &&
			"$MKFIXTURE" --fat -o tree-libc/opt/libc/bin/true /usr/bin/true exe.i386 ||
			fail "mkfixture glues libc.so.6 and true" ""
		chmod 0755 tree-libc/opt/libc/lib/libc.so.6 tree-libc/opt/libc/bin/true
		check "bundle fatlibc" rl_bundle libc.fatbundle fatlibc 1.0 tree-libc
		run ctl install --policy compatible libc.fatbundle
		check_cmp "policy compatible: a fat libc.so.6 (PT_INTERP, DT_SONAME) is thinned to its x86_64 record" \
			"$LIBC" "$ROOT/opt/libc/lib/libc.so.6"
		check_cmp "... a fat PIE executable (PT_INTERP, no DT_SONAME) keeps both records" \
			tree-libc/opt/libc/bin/true "$ROOT/opt/libc/bin/true"
		check_eq "... and only the executable is warned about" \
			"warning: /opt/libc/bin/true stays fat and cannot run here: the FatELF binfmt_misc handler (fatelf-run) is not registered" \
			"$(grep '^warning' <<<"$RUN_OUT")"
	fi
else
	echo "# this host does not run i386: policy compatible keeps one record anyway"
fi
daemon_stop
# back to the suite's main daemon, which kept running
DPID=${main_daemon[0]} SOCK=${main_daemon[1]} ROOT=${main_daemon[2]}
DDIR=${main_daemon[3]} DLOG=${main_daemon[4]} DSTATUS=${main_daemon[5]} DLOG_FROM=${main_daemon[6]}

# ================================================================ exit statuses
# --json: every error is one JSON object on stdout, even one that never
# reached the daemon.
run "$FATELFCTL" --socket "$DAEMON_SOCKDIR/nothing-here" --json status
check_eq "unreachable daemon: exit 3" 3 "$RC"
check_eq "... --json: the error object on stdout, with the socket and errno" \
	"fatelfctl.Unreachable $DAEMON_SOCKDIR/nothing-here ENOENT" \
	"$(jq -r '"\(.error) \(.parameters.socket) \(.parameters.errno)"' <<<"$RUN_OUT" 2>&1)"
check_match "... and the line on stderr" "^fatelfctl: status: cannot reach fatelfd at " "$RUN_ERR"
run ctl --json info nosuchpkg
check_eq "a daemon error with --json: the error object on stdout" \
	"1 io.fatelf.Manager.PackageNotFound nosuchpkg" \
	"$RC $(jq -r '"\(.error) \(.parameters.package)"' <<<"$RUN_OUT" 2>&1)"
run ctl --json install - </dev/null
check_eq "a refusal of fatelfctl's own with --json: an error object on stdout" \
	"1 fatelfctl.Failed" "$RC $(jq -r .error <<<"$RUN_OUT" 2>&1)"
run ctl --json nosuchverb
check_eq "a usage error with --json: an error object on stdout" \
	"2 fatelfctl.UsageError" "$RC $(jq -r .error <<<"$RUN_OUT" 2>&1)"

# Ctrl-C while an install waits: exit 130, and the transaction goes on. A
# server that answers with headers and then one byte a second keeps the
# install in its fetch for as long as the test needs.
python3 "$top_srcdir/tests/reliability/httpstall.py" 0 >slow.port &
SLOW_PID=$!
for ((i = 0; i < 100; i++)); do [ -s slow.port ] && break; sleep 0.05; done
port=$(awk '{ print $2 }' slow.port)
for json in "" --json; do
	"$FATELFCTL" --socket "$SOCK" $json install "http://127.0.0.1:$port/slow.fatbundle" \
		>int.out 2>int.err &
	cpid=$!
	# until the daemon has taken the job
	for ((i = 0; i < 100; i++)); do
		ctl status 2>/dev/null | grep -Eq 'fetching|slow\.fatbundle|^running: [^n]' && break
		sleep 0.1
	done
	sleep 0.5
	kill -INT "$cpid"
	wait "$cpid"
	rc=$?
	check_eq "Ctrl-C during install ${json:-(words)}: exit 130" 130 "$rc"
	check_match "... says the transaction goes on in fatelfd" \
		"^fatelfctl: install: interrupted; a transaction already started goes on in fatelfd" \
		"$(cat int.err)"
	if [ -n "$json" ]; then
		check_eq "... --json: the last line is the error object, SIGINT" \
			"fatelfctl.Interrupted SIGINT" \
			"$(tail -1 int.out | jq -r '"\(.error) \(.parameters.signal)"' 2>&1)"
	fi
	ctl cancel >/dev/null 2>&1
	for ((i = 0; i < 100; i++)); do
		ctl status 2>/dev/null | grep -q 'slow.fatbundle' || break
		sleep 0.1
	done
done
kill "$SLOW_PID" 2>/dev/null
wait "$SLOW_PID" 2>/dev/null

# Ctrl-C during every other verb that waits for the daemon: remove, thin
# and cancel. A stopped daemon keeps each of them waiting for its reply.
# int_wait PID: SIGINT, then its exit status; one that ignores the signal
# is killed after ~10 s (status 137).
int_wait() {
	local i
	kill -INT "$1"
	for ((i = 0; i < 200; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	kill -9 "$1" 2>/dev/null
	wait "$1"
}
for verb in "remove nosuch" "thin nosuch" "cancel 999999"; do
	for json in "" --json; do
		kill -STOP "$DPID"
		"$FATELFCTL" --socket "$SOCK" $json $verb >int.out 2>int.err &
		cpid=$!
		sleep 0.5
		int_wait "$cpid"
		rc=$?
		kill -CONT "$DPID"
		check_eq "Ctrl-C during $verb ${json:-(words)}: exit 130" 130 "$rc"
		if [ "${verb%% *}" = cancel ]; then
			check_match "... says the rollback goes on" \
				"^fatelfctl: cancel: interrupted; a rollback already started goes on in fatelfd" \
				"$(cat int.err)"
		else
			check_match "... says the transaction goes on" \
				"^fatelfctl: ${verb%% *}: interrupted; a transaction already started goes on" \
				"$(cat int.err)"
		fi
		if [ -n "$json" ]; then
			check_eq "... --json: the error object, SIGINT" "fatelfctl.Interrupted SIGINT" \
				"$(tail -1 int.out | jq -r '"\(.error) \(.parameters.signal)"' 2>&1)"
		fi
	done
done
# A verb that only reads is interrupted too, with the same exit status
# and, with --json, the same object.
kill -STOP "$DPID"
"$FATELFCTL" --socket "$SOCK" --json verify >int.out 2>int.err &
cpid=$!
sleep 0.5
int_wait "$cpid"
rc=$?
kill -CONT "$DPID"
check_eq "Ctrl-C during verify --json: exit 130, the error object" "130 fatelfctl.Interrupted SIGINT" \
	"$rc $(tail -1 int.out | jq -r '"\(.error) \(.parameters.signal)"' 2>&1)"
check_eq "... which says only that it was interrupted" "fatelfctl: verify: interrupted" "$(cat int.err)"
check "the daemon answers after them" ctl status

t_done
