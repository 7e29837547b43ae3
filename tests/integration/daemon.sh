#!/bin/bash
# fatelfd and fatelfctl end to end: real programs and a shared library
# cross-compiled for x86_64, i686 and aarch64, glued into FatELF files,
# packed into signed bundles and installed by a private fatelfd (its own
# root, state directory and config in the work directory, its socket in a
# temp directory) through fatelfctl. Every check looks at what a user sees: the bytes that land in
# the root, whether the installed program runs, fatelfctl's exit codes and
# error words, and its --json rows. It also talks raw Varlink to the
# daemon, downloads a bundle from a real nginx on 127.0.0.1, and serves
# through systemd-socket-activate.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init daemon
t_require_exec "$FATELF"
t_require_tool jq cmp minisign python3 timeout gcc
[ "$(uname -m)" = x86_64 ] || t_skip "the host is $(uname -m), this test expects x86_64"

ARCHES="x86_64 i686 aarch64"
declare -A CC
CC[x86_64]=gcc
CC[i686]=i686-linux-gnu-gcc
CC[aarch64]=aarch64-linux-gnu-gcc
for a in $ARCHES; do
	t_require_tool "${CC[$a]}"
done

# ---- the daemons (tests/lib/daemon.sh), and the other servers this test
# starts (nginx, systemd-socket-activate), stopped however it ends. The
# unprivileged caller below reads a bundle from DAEMON_SOCKDIR too.
daemon_init
PIDS=()
stop_others() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	PIDS=()
}
trap 'stop_others; daemon_cleanup' EXIT

# ---- fixtures: hello, a shared library and a program that uses it
hello=$top_srcdir/tests/integration/hello.c
cat >demo.c <<'EOF'
#if defined(__x86_64__)
#define ARCH "x86_64"
#elif defined(__i386__)
#define ARCH "i686"
#elif defined(__aarch64__)
#define ARCH "aarch64"
#else
#define ARCH "unknown"
#endif
const char *demo_greeting(void)
{
	return "libdemo says hi (" ARCH ")";
}
EOF
cat >usedemo.c <<'EOF'
#include <stdio.h>
const char *demo_greeting(void);
int main(void)
{
	puts(demo_greeting());
	return 0;
}
EOF
for a in $ARCHES; do
	mkdir -p "b-$a"
	if "${CC[$a]}" -static -O2 -o "b-$a/hello" "$hello" 2>"cc-$a.err" &&
		"${CC[$a]}" -shared -fPIC -O2 -Wl,-soname,libdemo.so -o "b-$a/libdemo.so" demo.c 2>>"cc-$a.err" &&
		"${CC[$a]}" -O2 -o "b-$a/usedemo" usedemo.c -L"b-$a" -ldemo \
			-Wl,-rpath,'$ORIGIN/../lib' 2>>"cc-$a.err" &&
		"${CC[$a]}" -shared -fPIC -O2 -Wl,-soname,libdemo.so.1 -o "b-$a/libdemo.so.1" demo.c 2>>"cc-$a.err"; then
		pass "compile hello, libdemo.so and usedemo for $a"
	else
		fail "compile hello, libdemo.so and usedemo for $a" "$(cat "cc-$a.err")"
	fi
done
check_eq "the x86_64 hello runs" "hello from x86_64 (hello)" "$(./b-x86_64/hello 2>&1)"
for f in hello libdemo.so usedemo; do
	check "glue $f for three architectures" \
		"$FATELF" glue -o "$f.fat" b-x86_64/$f b-i686/$f b-aarch64/$f
done

# Version 1 of package demo; version 2 drops NEWS and changes the config.
mk_tree() {
	local t=$1 ver=$2
	mkdir -p "$t/opt/demo/bin" "$t/opt/demo/lib" "$t/etc/demo" "$t/opt/demo/share/doc"
	cp hello.fat "$t/opt/demo/bin/hello"
	cp usedemo.fat "$t/opt/demo/bin/usedemo"
	cp libdemo.so.fat "$t/opt/demo/lib/libdemo.so"
	chmod 0755 "$t/opt/demo/bin/hello" "$t/opt/demo/bin/usedemo" "$t/opt/demo/lib/libdemo.so"
	printf 'greeting=hello\nversion=%s\n' "$ver" >"$t/etc/demo/demo.conf"
	printf 'demo, a test package, version %s\n' "$ver" >"$t/opt/demo/share/doc/README"
	head -c 50000 /dev/urandom >"$t/opt/demo/share/doc/data.bin"
	ln -s bin/hello "$t/opt/demo/hello-link"
	chmod 0644 "$t/etc/demo/demo.conf" "$t/opt/demo/share/doc/README" "$t/opt/demo/share/doc/data.bin"
}
mk_tree tree1 1.0
printf 'news for 1.0\n' >tree1/opt/demo/share/doc/NEWS
mk_tree tree2 2.0
cp tree1/opt/demo/share/doc/data.bin tree2/opt/demo/share/doc/data.bin

# Package other claims demo's README; package web is a small data package
# for downloads; package sys puts a library where the loader looks.
mkdir -p tree-other/opt/demo/share/doc tree-other/opt/other
printf 'not demo\n' >tree-other/opt/demo/share/doc/README
printf 'other\n' >tree-other/opt/other/file
mkdir -p tree-web/opt/web
head -c 200000 /dev/urandom >tree-web/opt/web/blob
printf 'web\n' >tree-web/opt/web/index.txt
mkdir -p tree-sys/usr/lib/x86_64-linux-gnu tree-sys/etc/sys
cp b-x86_64/libdemo.so.1 tree-sys/usr/lib/x86_64-linux-gnu/libdemo.so.1
printf 'sys\n' >tree-sys/etc/sys/sys.conf
chmod -R go+rX tree-other tree-web tree-sys

minisign -G -W -f -p k.pub -s k.key >/dev/null 2>&1
minisign -G -W -f -p other.pub -s other.key >/dev/null 2>&1
check "minisign made two key pairs" test -s k.pub -a -s other.pub
mkb() { # OUT NAME VERSION TREE [OPTIONS...]
	local out=$1 name=$2 ver=$3 tree=$4
	shift 4
	"$FATELF" bundle create -o "$out" --name "$name" --version "$ver" --summary "the $name package" \
		--vendor "fatelf tests" "$@" "$tree"
}
check "bundle demo 1.0, signed" mkb demo-1.fatbundle demo 1.0 tree1 --sign k.key
check "bundle demo 2.0, signed" mkb demo-2.fatbundle demo 2.0 tree2 --sign k.key
check "bundle other 1, signed" mkb other.fatbundle other 1 tree-other --sign k.key
check "bundle web 1, signed" mkb web.fatbundle web 1 tree-web --sign k.key
check "bundle web 1, unsigned" mkb web-unsigned.fatbundle web 1 tree-web
check "bundle sys 1, signed" mkb sys.fatbundle sys 1 tree-sys --sign k.key
check "bundle demo 1.0, unsigned" mkb unsigned.fatbundle demo 1.0 tree1
check "bundle demo 1.0, signed with an untrusted key" mkb wrongkey.fatbundle demo 1.0 tree1 --sign other.key
check "the signed bundle verifies with k.pub" "$FATELF" bundle verify --key k.pub demo-1.fatbundle
# A copy anyone can read, for the unprivileged caller.
cp demo-1.fatbundle "$DAEMON_SOCKDIR/demo-1.fatbundle"
chmod 0644 "$DAEMON_SOCKDIR/demo-1.fatbundle"

# ---- a private daemon per scenario
# start_daemon NAME [CONFIG-LINE...]: a daemon over $T_WORK/NAME whose
# config trusts k.pub, then has the lines; waits until status answers.
DAEMON_KEYS=$T_WORK/keys
mkdir -p "$DAEMON_KEYS"
cp k.pub "$DAEMON_KEYS/k.pub"
start_daemon() {
	local name=$1
	shift
	daemon_prepare "$name" "$@" && daemon_start "$name"
}
nobody() {
	timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$FATELFCTL" --socket "$SOCK" "$@"
}
# The final reply's result of a streamed --json call (JSON lines).
result_of() {
	jq -s 'map(select(.result != null)) | last | .result' <<<"$1" 2>/dev/null
}
tree_bytes() {
	find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}

# ---- a malformed config names the file, the line and the key
mkdir -p badconf
printf '[Policy]\nPolicy=native\n[Daemon]\nRequireSignature=perhaps\n' >badconf/fatelfd.conf
run timeout 10 "$FATELFD" --socket badconf/sock --root badconf --state-dir badconf/state \
	--config badconf/fatelfd.conf
check_match "fatelfd refuses a malformed config (exit != 0)" '^[1-9]' "$RC"
check_match "... naming file, line and key" 'fatelfd\.conf:4.*RequireSignature' "$RUN_ERR"
check_exit 0 "fatelfd --check-interface exits 0" timeout 10 "$FATELFD" --check-interface

# ================================================================ native
if start_daemon n RequireSignature=yes; then
	pass "a private fatelfd answers status on its socket"
else
	fail "a private fatelfd answers status on its socket"
fi

run ctl --json status
check_eq "status --json: the root is the private root" "$ROOT" "$(jq -r .root <<<"$RUN_OUT")"
check_eq "status --json: no packages yet" 0 "$(jq -r .packages <<<"$RUN_OUT")"
check_match "status --json: host targets include x86_64" 'x86_64' "$(jq -r '.host_targets | join(" ")' <<<"$RUN_OUT")"
run ctl policy --json
check_eq "policy --json (after the verb): native, signatures required" "native true" \
	"$(jq -r '"\(.policy.policy) \(.policy.require_signature)"' <<<"$RUN_OUT")"

# signatures first, while nothing is installed
run ctl install unsigned.fatbundle
check_eq "an unsigned bundle is refused under RequireSignature=yes (exit 1)" 1 "$RC"
check_match "... saying the signature is missing" '^fatelfctl: install: .*(signature|signed)' "$RUN_ERR"
check_one_line "... in one line" "$RUN_ERR"
run ctl install wrongkey.fatbundle
check_eq "a bundle signed with an untrusted key is refused (exit 1)" 1 "$RC"
check_match "... saying so" '^fatelfctl: install: .*(key|signature)' "$RUN_ERR"
check_eq "nothing was installed" "0 0" \
	"$(ctl --json list | jq -r '.packages | length') $(find "$ROOT" ! -type d | wc -l)"

# install 1.0, native
run ctl install demo-1.fatbundle
check_eq "install demo 1.0 exits 0" 0 "$RC"
check_match "... and says what it did" '^installed demo 1\.0\b.*\b8 files' "$RUN_OUT"
check_cmp "native: the installed hello is the x86_64 ELF, byte for byte" b-x86_64/hello "$ROOT/opt/demo/bin/hello"
check_cmp "native: the installed libdemo.so is the x86_64 library" b-x86_64/libdemo.so "$ROOT/opt/demo/lib/libdemo.so"
check_cmp "native: the installed usedemo is the x86_64 program" b-x86_64/usedemo "$ROOT/opt/demo/bin/usedemo"
check_eq "native: the installed hello runs" "hello from x86_64 (hello)" "$("$ROOT/opt/demo/bin/hello" 2>&1)"
check_eq "native: usedemo finds libdemo.so through \$ORIGIN/../lib and runs" "libdemo says hi (x86_64)" \
	"$("$ROOT/opt/demo/bin/usedemo" 2>&1)"
check_cmp "the data file is there" tree1/opt/demo/share/doc/data.bin "$ROOT/opt/demo/share/doc/data.bin"
check_cmp "the config file is there" tree1/etc/demo/demo.conf "$ROOT/etc/demo/demo.conf"
check_eq "the symlink is there" bin/hello "$(readlink "$ROOT/opt/demo/hello-link")"
check_eq "modes are kept" "755 644" "$(file_mode "$ROOT/opt/demo/bin/hello") $(file_mode "$ROOT/etc/demo/demo.conf")"
check_eq "no temp file is left in the root" "" "$(find "$ROOT" -name '.*' | head -3)"

# queries
run ctl owner /opt/demo/bin/hello
check_eq "owner prints PKG: PATH" "demo: /opt/demo/bin/hello" "$RUN_OUT"
run ctl --json owner /opt/demo/bin/hello
check_eq "owner --json: package, kind and installed form" "demo fatelf thinned" \
	"$(jq -r '"\(.package) \(.file.kind) \(.file.installed_form)"' <<<"$RUN_OUT")"
check_eq "owner --json: the three shipped records, one kept" "3 1 x86_64" \
	"$(jq -r '"\(.file.records | length) \([.file.records[] | select(.kept)] | length) \([.file.records[] | select(.kept) | .target][0] | split(":")[0])"' <<<"$RUN_OUT")"
check_eq "owner --json: installed size is the ELF's" "$(file_size b-x86_64/hello)" \
	"$(jq -r .file.installed_size <<<"$RUN_OUT")"
run ctl owner /opt/nothing/here
check_eq "owner of an unowned path exits 1" 1 "$RC"
check_match "... saying it is not owned" '^fatelfctl: owner: .*(not owned|no package owns)' "$RUN_ERR"
run ctl files demo
(cd tree1 && find . ! -type d | sed 's|^\.||' | sort) >want-files1
check_eq "files lists every file and symlink of the package" "$(cat want-files1)" \
	"$(grep -v '/$' <<<"$RUN_OUT" | sed 's/ -> .*//' | sort)"
check_eq "... and its directories, each with a / after it" "$(cd tree1 && find . -mindepth 1 -type d | sed 's|^\.||; s|$|/|' | sort)" \
	"$(grep '/$' <<<"$RUN_OUT" | sort)"
check_match "... a symlink with its target" '^/opt/demo/hello-link -> bin/hello$' "$RUN_OUT"
run ctl --json files demo
check_eq "files --json: config flags only /etc/demo/demo.conf" /etc/demo/demo.conf \
	"$(jq -r '.files[] | select(.config) | .path' <<<"$RUN_OUT")"
check_eq "files --json: the symlink row" "symlink bin/hello" \
	"$(jq -r '.files[] | select(.path == "/opt/demo/hello-link") | "\(.type) \(.link_target)"' <<<"$RUN_OUT")"
check_eq "files --json: the data file's sha256" "$(sha256sum <tree1/opt/demo/share/doc/data.bin | cut -d' ' -f1)" \
	"$(jq -r '.files[] | select(.path == "/opt/demo/share/doc/data.bin") | .sha256' <<<"$RUN_OUT")"
run ctl --json list
check_eq "list --json: one row, demo 1.0 native signed" "demo 1.0 native true" \
	"$(jq -r '.packages[] | "\(.name) \(.version) \(.policy) \(.signer != null)"' <<<"$RUN_OUT")"
run ctl list
check_match "list (text) shows demo and 1.0" 'demo +1\.0' "$RUN_OUT"
run ctl --json info demo
check_eq "info --json: version, summary, vendor, file count" "1.0|the demo package|fatelf tests|$(wc -l <want-files1)" \
	"$(jq -r '[.package.version, .package.summary, .package.vendor, .package.files] | map(tostring) | join("|")' <<<"$RUN_OUT")"
check_eq "info --json: installed size is the bytes in the root" "$(tree_bytes "$ROOT")" \
	"$(jq -r .package.installed_size <<<"$RUN_OUT")"
check_eq "info --json: shipped size is the bytes in the tree" "$(tree_bytes tree1)" \
	"$(jq -r .package.shipped_size <<<"$RUN_OUT")"
run ctl info nosuch
check_eq "info of an unknown package exits 1" 1 "$RC"
run env FATELF_SOCKET="$SOCK" timeout 60 "$FATELFCTL" --json status
check_eq "FATELF_SOCKET chooses the daemon; status counts the package and 3 fat files" "1 3 0" \
	"$(jq -r '"\(.packages) \(.fat_files) \(.fat_files_fat)"' <<<"$RUN_OUT")"

# verify: clean, then a changed byte and a deleted file
run ctl verify demo
check_eq "verify of a clean install exits 0" 0 "$RC"
check_match "... and counts the files" "^$(wc -l <want-files1) files checked, 0 problems" "$(tail -1 <<<"$RUN_OUT")"
flip_byte "$ROOT/opt/demo/share/doc/data.bin" 1000
rm -f "$ROOT/opt/demo/share/doc/NEWS"
run ctl verify demo
check_eq "verify after damage exits 1" 1 "$RC"
check_match "... reports the changed byte" '^/opt/demo/share/doc/data\.bin: .*content' "$RUN_OUT"
check_match "... reports the deleted file as missing" '^/opt/demo/share/doc/NEWS: missing' "$RUN_OUT"
check_match "... and the count" 'files checked, 2 problems' "$RUN_OUT"
run ctl --json verify
check_eq "verify --json (all packages): the two problems" \
	"demo /opt/demo/share/doc/NEWS missing
demo /opt/demo/share/doc/data.bin content" \
	"$(jq -r '.problems[] | "\(.package) \(.path) \(.problem)"' <<<"$RUN_OUT" | sort)"
cp tree1/opt/demo/share/doc/data.bin tree1/opt/demo/share/doc/NEWS "$ROOT/opt/demo/share/doc/"
check "verify is clean again once the files are restored" ctl verify demo

# authorization: another uid reads, but may not change anything
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
	run nobody status
	check_eq "uid 65534 can call status" 0 "$RC"
	run nobody --json list
	check_eq "uid 65534 can call list" "0 demo" "$RC $(jq -r '.packages[0].name' <<<"$RUN_OUT")"
	run nobody install "$DAEMON_SOCKDIR/demo-1.fatbundle"
	check_eq "uid 65534: install is permission denied (exit 4)" 4 "$RC"
	check_match "... in words" '^fatelfctl: install: permission denied' "$RUN_ERR"
	run nobody remove demo
	check_eq "uid 65534: remove is permission denied (exit 4)" 4 "$RC"
	check_match "... in words" '^fatelfctl: remove: permission denied' "$RUN_ERR"
	run nobody thin --all
	check_eq "uid 65534: thin is permission denied (exit 4)" 4 "$RC"
	check_match "... in words" '^fatelfctl: thin: permission denied' "$RUN_ERR"
	check_eq "demo is still installed, version 1.0" 1.0 "$(ctl --json info demo | jq -r .package.version)"
else
	echo "# skipping the authorization checks: not root or no setpriv"
fi

# upgrade to 2.0: NEWS goes, the admin's config stays
printf 'greeting=admin was here\n' >"$ROOT/etc/demo/demo.conf"
cp "$ROOT/etc/demo/demo.conf" admin.conf
run ctl --json install demo-2.fatbundle
check_eq "upgrade to 2.0 exits 0" 0 "$RC"
res=$(result_of "$RUN_OUT")
check_eq "the result says upgrade 1.0 -> 2.0" "upgrade 1.0 2.0" \
	"$(jq -r '"\(.kind) \(.old_version) \(.new_version)"' <<<"$res")"
check_eq "the result names the kept config file" /etc/demo/demo.conf "$(jq -r '.config_kept[]' <<<"$res")"
check_eq "the stale file NEWS is removed" no "$([ -e "$ROOT/opt/demo/share/doc/NEWS" ] && echo yes || echo no)"
check_cmp "the changed config file is kept" admin.conf "$ROOT/etc/demo/demo.conf"
check_cmp "the new config is written beside it as .fatelf-new" tree2/etc/demo/demo.conf \
	"$ROOT/etc/demo/demo.conf.fatelf-new"
check_cmp "README is version 2's" tree2/opt/demo/share/doc/README "$ROOT/opt/demo/share/doc/README"
run ctl owner /opt/demo/share/doc/NEWS
check_eq "the store no longer has NEWS (owner exits 1)" 1 "$RC"
check_eq "list shows demo 2.0" "demo 2.0" "$(ctl --json list | jq -r '.packages[] | "\(.name) \(.version)"')"

# downgrade
run ctl install demo-1.fatbundle
check_eq "a downgrade is refused (exit 1)" 1 "$RC"
check_match "... in words naming both versions" '^fatelfctl: install: .*downgrade.*' "$RUN_ERR"
check_match "... naming 2.0 and 1.0" '2\.0.*1\.0|1\.0.*2\.0' "$RUN_ERR"
check_eq "demo is still 2.0" 2.0 "$(ctl --json info demo | jq -r .package.version)"
run ctl install --allow-downgrade demo-1.fatbundle
check_eq "--allow-downgrade installs 1.0" "0 1.0" "$RC $(ctl --json info demo | jq -r .package.version)"
check_match "... and says so" '^(downgraded|upgraded|installed) demo 2\.0 -> 1\.0' "$RUN_OUT"
check_cmp "NEWS is back" tree1/opt/demo/share/doc/NEWS "$ROOT/opt/demo/share/doc/NEWS"

# conflict
cp "$ROOT/opt/demo/share/doc/README" readme.before
run ctl install other.fatbundle
check_eq "a second package claiming a path is refused (exit 1)" 1 "$RC"
check_match "... naming the path and its owner" \
	'^fatelfctl: install: conflict: /opt/demo/share/doc/README .*demo' "$RUN_ERR"
check_cmp "... and the file is untouched" readme.before "$ROOT/opt/demo/share/doc/README"
check_eq "... and other is not installed" no "$([ -e "$ROOT/opt/other/file" ] && echo yes || echo no)"
run ctl info other
check_eq "... nor in the store" 1 "$RC"

# history
run ctl --json history
check_eq "history --json: kinds and states, oldest first" \
	"install committed demo
upgrade committed demo
downgrade committed demo" \
	"$(jq -r '.transactions | sort_by(.id) | .[] | select(.state == "committed") | "\(.kind) \(.state) \(.package)"' <<<"$RUN_OUT")"
check_eq "history --json: the refused installs are not committed" 0 \
	"$(jq -r '[.transactions[] | select(.package == "other" and .state == "committed")] | length' <<<"$RUN_OUT")"
run ctl --json history demo --limit 1
check_eq "history demo --limit 1: the downgrade row" "1 downgrade 2.0 1.0" \
	"$(jq -r '"\(.transactions | length) \(.transactions[0].kind) \(.transactions[0].old_version) \(.transactions[0].new_version)"' <<<"$RUN_OUT")"

# ---- raw Varlink
# vl JSON... [--fd FILE]: the calls in one write (tests/reliability/vlclient.py
# call), each reply one JSON line.
vl() { timeout 60 python3 "$top_srcdir/tests/reliability/vlclient.py" call "$SOCK" "$@"; }
run vl '{"method":"org.varlink.service.GetInfo"}'
check_eq "GetInfo lists io.fatelf.Manager and org.varlink.service" "io.fatelf.Manager org.varlink.service" \
	"$(jq -r '.parameters.interfaces | sort | join(" ")' <<<"$RUN_OUT")"
check_match "GetInfo has vendor, product, version and url" '^true$' \
	"$(jq -r '.parameters | has("vendor") and has("product") and has("version") and has("url")' <<<"$RUN_OUT")"
run vl '{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":"io.fatelf.Manager"}}'
jq -j .parameters.description <<<"$RUN_OUT" >desc.varlink
check_cmp "GetInterfaceDescription is schema/io.fatelf.Manager.varlink" \
	"$top_srcdir/schema/io.fatelf.Manager.varlink" desc.varlink
run vl '{"method":"io.fatelf.Manager.NoSuchMethod"}'
check_eq "an unknown method gives MethodNotFound" org.varlink.service.MethodNotFound "$(jq -r .error <<<"$RUN_OUT")"
run vl '{"method":"io.nosuch.Interface.Method"}'
check_eq "an unknown interface gives InterfaceNotFound" org.varlink.service.InterfaceNotFound \
	"$(jq -r .error <<<"$RUN_OUT")"
run vl '{"method":"io.fatelf.Manager.Info","parameters":{"package":"demo","bogus":1}}'
check_eq "an unknown parameter gives InvalidParameter" "org.varlink.service.InvalidParameter bogus" \
	"$(jq -r '"\(.error) \(.parameters.parameter)"' <<<"$RUN_OUT")"
run vl '{"method":"io.fatelf.Manager.Info","parameters":{"package":42}}'
check_eq "a parameter of the wrong type gives InvalidParameter" "org.varlink.service.InvalidParameter package" \
	"$(jq -r '"\(.error) \(.parameters.parameter)"' <<<"$RUN_OUT")"
run vl '{"method":"io.fatelf.Manager.Info","parameters":{"package":"nosuch"}}'
check_eq "Info of an unknown package gives io.fatelf.Manager.PackageNotFound" \
	"io.fatelf.Manager.PackageNotFound nosuch" "$(jq -r '"\(.error) \(.parameters.package)"' <<<"$RUN_OUT")"
run vl '{"method":"io.fatelf.Manager.Status"}' '{"method":"io.fatelf.Manager.Info","parameters":{"package":"demo"}}'
check_eq "two calls in one write get two replies, in order" "$ROOT demo" \
	"$(jq -r '.parameters.root // .parameters.package.name' <<<"$RUN_OUT" | tr '\n' ' ' | sed 's/ $//')"
check_eq "a plain call's reply has no continues" "" "$(jq -r 'select(.continues) | .continues' <<<"$RUN_OUT")"
run vl '{"method":"io.fatelf.Manager.Install","parameters":{"fd":0},"more":true}' --fd web.fatbundle
check_eq "Install with more exits cleanly" "0 no" "$RC $(grep -qx closed <<<"$RUN_OUT" && echo closed || echo no)"
nrep=$(grep -c . <<<"$RUN_OUT")
if [ "$nrep" -ge 2 ]; then
	pass "Install with more gets several replies ($nrep)"
else
	fail "Install with more gets several replies" "$RUN_OUT"
fi
check_eq "... every one but the last has continues: true" "$((nrep - 1))" \
	"$(jq -r 'select(.continues == true) | 1' <<<"$RUN_OUT" | grep -c .)"
check_eq "... the early ones carry progress" "$((nrep - 1))" \
	"$(jq -r 'select(.continues == true and .parameters.progress.phase != null) | 1' <<<"$RUN_OUT" | grep -c .)"
check_eq "... the last one has the result and no continues" "install web null" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r '"\(.parameters.result.kind) \(.parameters.result.package) \(.continues)"')"
check_cmp "... and web is installed" tree-web/opt/web/blob "$ROOT/opt/web/blob"
check "remove web" ctl remove web
check_eq "remove takes the files and the directories web owned" no \
	"$([ -e "$ROOT/opt/web" ] && echo yes || echo no)"
check_eq "... and keeps the directories others use" yes "$([ -d "$ROOT/opt/demo" ] && echo yes || echo no)"

# ---- downloads
check "install from a file:// URL" ctl install "file://$T_WORK/web.fatbundle"
check_cmp "... installs web" tree-web/opt/web/blob "$ROOT/opt/web/blob"
check "remove web again" ctl remove web
run ctl install - <web.fatbundle
check_eq "install - reads the bundle from stdin" 0 "$RC"
check_cmp "... and installs web" tree-web/opt/web/blob "$ROOT/opt/web/blob"
check "remove web once more" ctl remove web

# ---- install options: dry run, unowned files on disk, unsigned
run ctl --json install --dry-run web.fatbundle
check_eq "install --dry-run exits 0 and reports 2 files" "0 true 2" \
	"$RC $(result_of "$RUN_OUT" | jq -r '"\(.dry_run) \(.files)"')"
check_eq "... and writes nothing" "no 1" \
	"$([ -e "$ROOT/opt/web" ] && echo yes || echo no) $(ctl info web >/dev/null 2>&1; echo $?)"
mkdir -p "$ROOT/opt/web"
printf 'stray\n' >"$ROOT/opt/web/index.txt"
run ctl install web.fatbundle
check_eq "a file on disk that no package owns is a conflict (exit 1)" 1 "$RC"
check_match "... naming it" '^fatelfctl: install: conflict: /opt/web/index\.txt' "$RUN_ERR"
check_eq "... and leaving it alone" stray "$(cat "$ROOT/opt/web/index.txt")"
check "install --force takes it over" ctl install --force web.fatbundle
check_cmp "... with the package's file" tree-web/opt/web/index.txt "$ROOT/opt/web/index.txt"
check "remove web after the forced install" ctl remove web
run ctl install --allow-unsigned web-unsigned.fatbundle
check_eq "install --allow-unsigned (root) takes an unsigned bundle under RequireSignature=yes" 0 "$RC"
check_eq "... and list shows it without a signer" "web null" \
	"$(ctl --json list | jq -r '.packages[] | select(.name == "web") | "\(.name) \(.signer)"')"
check "remove the unsigned web" ctl remove web
if command -v nginx >/dev/null 2>&1; then
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p ngx/www ngx/tmp ngx/logs
	cp web.fatbundle ngx/www/web.fatbundle
	chmod -R go+rX ngx
	nginx_conf "$T_WORK/ngx" \
		"	server {
		listen 127.0.0.1:$port;
		root $T_WORK/ngx/www;
	}"
	nginx -c "$T_WORK/ngx/nginx.conf" -p "$T_WORK/ngx" -g 'daemon off;' 2>ngx/logs/stderr &
	NGPID=$!
	PIDS+=("$NGPID")
	for ((i = 0; i < 50; i++)); do
		python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2).read()' \
			"http://127.0.0.1:$port/web.fatbundle" 2>/dev/null && break
		sleep 0.1
	done
	run ctl install "http://127.0.0.1:$port/web.fatbundle"
	check_eq "install from http:// served by nginx exits 0" 0 "$RC"
	check_match "... says installed web 1" '^installed web 1\b.*\b2 files' "$RUN_OUT"
	check_cmp "... and the file is there" tree-web/opt/web/blob "$ROOT/opt/web/blob"
	check_match "... nginx served it" 'GET /web.fatbundle HTTP/1.1" 200' "$(cat ngx/logs/access.log)"
	run ctl install "http://127.0.0.1:$port/nosuch.fatbundle"
	check_eq "a 404 exits 1" 1 "$RC"
	check_match "... saying the fetch failed" '^fatelfctl: install: .*(fetch|download|404)' "$RUN_ERR"
	check_match "... naming the status once, with its reason" \
		'^fatelfctl: install: download failed: http://[^ ]*/nosuch\.fatbundle: the server answered HTTP 404 Not Found$' \
		"$RUN_ERR"
	kill "$NGPID" 2>/dev/null
	wait "$NGPID" 2>/dev/null
	check "remove web" ctl remove web
else
	echo "# skipping the http download: nginx is not installed"
fi

# ---- ldconfig, as root: a library where the loader looks
if [ "$(id -u)" -eq 0 ]; then
	rm -f "$ROOT/etc/ld.so.cache"
	check "install sys (a library in usr/lib/x86_64-linux-gnu)" ctl install sys.fatbundle
	check "ldconfig -r ROOT wrote ROOT/etc/ld.so.cache" test -s "$ROOT/etc/ld.so.cache"
	run ldconfig -p -C "$ROOT/etc/ld.so.cache"
	check_match "... and libdemo.so.1 is in it" 'libdemo\.so\.1 .*usr/lib/x86_64-linux-gnu/libdemo\.so\.1' "$RUN_OUT"
else
	echo "# skipping the ldconfig check: not root"
fi

# SIGTERM: a clean exit 0
daemon_stop
check_eq "fatelfd exits 0 on SIGTERM" 0 "$DAEMON_STATUS"
if command -v sqlite3 >/dev/null 2>&1; then
	check_eq "... leaving its store with demo and sys" "$([ "$(id -u)" -eq 0 ] && echo "demo sys" || echo demo)" \
		"$(sqlite3 "$T_WORK/n/state/fatelf.db" 'SELECT name FROM packages ORDER BY name' | tr '\n' ' ' | sed 's/ $//')"
fi

# ================================================================ compatible
if start_daemon c "[Policy]" Policy=compatible; then
	check "compatible: install demo 1.0" ctl install demo-1.fatbundle
	run "$FATELF" info --json "$ROOT/opt/demo/bin/hello"
	check_eq "compatible: the installed hello is a FatELF of x86_64 and i386" "i386 x86_64" \
		"$(jq -r '[.records[].arch] | sort | join(" ")' <<<"$RUN_OUT")"
	check "... that validates" "$FATELF" validate "$ROOT/opt/demo/bin/hello"
	check "... whose x86_64 record extracts" "$FATELF" extract -o c-x86 "$ROOT/opt/demo/bin/hello" x86_64
	check_cmp "... as the x86_64 ELF" b-x86_64/hello c-x86
	run ctl --json info demo
	check_eq "compatible: info records the policy" compatible "$(jq -r .package.policy <<<"$RUN_OUT")"
	daemon_stop
else
	fail "a private fatelfd with Policy=compatible answers"
fi

# ================================================================ keep, then thin
if start_daemon k "[Policy]" Policy=native; then
	run ctl --json install --policy keep demo-1.fatbundle
	check_eq "keep: install --policy keep (root) exits 0" 0 "$RC"
	check_cmp "keep: the installed hello is the shipped fat file" hello.fat "$ROOT/opt/demo/bin/hello"
	check_cmp "keep: the installed libdemo.so is the shipped fat file" libdemo.so.fat "$ROOT/opt/demo/lib/libdemo.so"
	check_eq "keep: status counts 3 fat files installed fat" "3 3" \
		"$(ctl --json status | jq -r '"\(.fat_files) \(.fat_files_fat)"')"
	run ctl --json thin demo --dry-run
	dry=$(jq -s 'map(.result // empty, (.results // [])[]) | map(.bytes_saved) | add' <<<"$RUN_OUT")
	check_cmp "thin --dry-run changes nothing" hello.fat "$ROOT/opt/demo/bin/hello"
	before=$(tree_bytes "$ROOT")
	run ctl --json thin demo
	check_eq "thin demo exits 0" 0 "$RC"
	after=$(tree_bytes "$ROOT")
	saved=$(jq -s 'map(.result // empty, (.results // [])[]) | map(.bytes_saved) | add' <<<"$RUN_OUT")
	want=$(( $(file_size hello.fat) + $(file_size libdemo.so.fat) + $(file_size usedemo.fat) -
		$(file_size b-x86_64/hello) - $(file_size b-x86_64/libdemo.so) - $(file_size b-x86_64/usedemo) ))
	check_eq "thin: the bytes in the root shrank by the fat files' surplus" "$want" "$((before - after))"
	check_eq "thin: the reported bytes saved are exactly that" "$want" "$saved"
	check_eq "thin --dry-run reported the same saving" "$want" "$dry"
	check_cmp "thin: hello is now the x86_64 ELF" b-x86_64/hello "$ROOT/opt/demo/bin/hello"
	check_eq "thin: hello still runs" "hello from x86_64 (hello)" "$("$ROOT/opt/demo/bin/hello" 2>&1)"
	check_eq "thin: usedemo runs with the thinned library" "libdemo says hi (x86_64)" \
		"$("$ROOT/opt/demo/bin/usedemo" 2>&1)"
	run ctl --json history
	check_eq "thin: history records the bytes saved" "$want" \
		"$(jq -r '[.transactions[] | select(.kind == "thin" and .state == "committed")] | last | .bytes_saved' <<<"$RUN_OUT")"
	check_eq "thin: status shows no fat file installed fat, and the saving" "0 $want" \
		"$(ctl --json status | jq -r '"\(.fat_files_fat) \(.bytes_saved)"')"
	run ctl --json info demo
	check_eq "thin: shipped minus installed size is the saving" "$want" \
		"$(jq -r '.package.shipped_size - .package.installed_size' <<<"$RUN_OUT")"
	run ctl verify demo
	check_eq "thin: verify is clean (kept records match the vendor's hashes)" 0 "$RC"
	run ctl --json thin demo
	check_eq "a second thin saves nothing" "0 0" \
		"$RC $(jq -s 'map(.result // empty, (.results // [])[]) | map(.bytes_saved) | add // 0' <<<"$RUN_OUT")"
	daemon_stop
else
	fail "a private fatelfd with Policy=native answers (keep scenario)"
fi

# ================================================================ disk space
# The preflight checks free space for exactly the bytes to be written, so
# a root on a 128 KiB tmpfs refuses the 200 KB web bundle before writing.
if [ "$(id -u)" = 0 ] && mkdir -p "$T_WORK/full/root" &&
	mount -t tmpfs -o size=128k fatelf-full "$T_WORK/full/root" 2>/dev/null; then
	if start_daemon full; then
		run ctl install web.fatbundle
		check_eq "a root too small for the bundle: install exits 1" 1 "$RC"
		check_match "... saying the disk is full, with what it needs" 'install: disk full: needs [0-9.]+ [KM]iB' "$RUN_ERR"
		check_eq "... and the root is left empty (no file, no temp)" "" "$(find "$ROOT" -mindepth 1 | head -3)"
		run ctl --json history
		check_eq "... and history records it as failed" failed "$(jq -r '.transactions[0].state' <<<"$RUN_OUT")"
		daemon_stop
	else
		fail "a private fatelfd on a small tmpfs root answers"
	fi
	umount "$T_WORK/full/root"
else
	echo "# skipping the disk space check: needs root to mount a tmpfs"
fi

# ================================================================ socket activation
if command -v systemd-socket-activate >/dev/null 2>&1; then
	d=$T_WORK/sa
	mkdir -p "$d/root" "$d/state"
	printf '[Daemon]\nTrustedKeys=%s\n' "$DAEMON_KEYS" >"$d/fatelfd.conf"
	SOCK=$DAEMON_SOCKDIR/sa.sock
	systemd-socket-activate -l "$SOCK" "$FATELFD" --root "$d/root" --state-dir "$d/state" \
		--config "$d/fatelfd.conf" 2>"$d/log" &
	SAPID=$!
	PIDS+=("$SAPID")
	for ((i = 0; i < 50; i++)); do
		[ -S "$SOCK" ] && break
		sleep 0.1
	done
	run ctl --json status
	check_eq "socket activation: status answers through the passed socket" "0 $d/root" \
		"$RC $(jq -r .root <<<"$RUN_OUT")"
	check "socket activation: install works" ctl install web.fatbundle
	check_cmp "... and lands in the root" tree-web/opt/web/blob "$d/root/opt/web/blob"
	kill "$SAPID"
	wait "$SAPID" 2>/dev/null
else
	echo "# skipping socket activation: systemd-socket-activate is not installed"
fi

stop_others
check_no_sanitizer_report
t_done
