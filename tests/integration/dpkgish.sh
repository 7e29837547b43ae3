#!/bin/bash
# The smaller things a dpkg user expects of fatelfctl, against a private
# fatelfd: info shows license, homepage, targets, sizes, the installed
# form of the fat files as they are now and where the package came from
# (a file, standard input, a URL without its credentials, a repository);
# files lists directories too, marked; owner takes a glob pattern (and a
# word, as dpkg -S does) besides a plain path; list's policy column
# follows a later thin; history takes a package, by name or --package.
# Each in words and in --json, line by line.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init dpkgish
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq nginx curl gcc aarch64-linux-gnu-gcc minisign
[ "$(uname -m)" = x86_64 ] || t_skip "the kept records are computed for an x86_64 host"

gcc -static -O2 -o in-x86_64 "$top_srcdir/tests/integration/hello.c" || fail "gcc" "hello.c"
aarch64-linux-gnu-gcc -static -O2 -o in-aarch64 "$top_srcdir/tests/integration/hello.c" ||
	fail "aarch64-linux-gnu-gcc" "hello.c"

# hello: a fat program, a symlink to it, a document and a config file
mkdir -p t1/opt/hello/bin t1/opt/hello/share/doc t1/etc
"$FATELF" glue -o t1/opt/hello/bin/hello in-x86_64 in-aarch64 >/dev/null || fail "glue" "hello"
ln -s hello t1/opt/hello/bin/hi
echo "read me" >t1/opt/hello/share/doc/README
echo "a=1" >t1/etc/hello.conf
# other: data only, sharing /opt with hello
mkdir -p t2/opt/other
echo "other" >t2/opt/other/data.txt
run "$FATELF" bundle create -o hello-1.fatbundle --name hello --version 1.0 --summary "says hello" \
	--license GPL-3.0-or-later --homepage https://example.org/hello t1
check_eq "bundle create hello 1.0 with a license and a homepage" 0 "$RC"
run "$FATELF" bundle create -o other-1.fatbundle --name other --version 1 t2
check_eq "bundle create other 1 (no license, no homepage)" 0 "$RC"
mkdir -p www && cp other-1.fatbundle www/

daemon_init
port=$(free_port)
nginx_www "$port" || fail "nginx starts" "$(cat ngx/logs/stderr)"
trap 'kill $NGPID 2>/dev/null; daemon_cleanup' EXIT
daemon_prepare d RequireSignature=no "Repositories=$T_WORK/d/repos.d"
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"

# ---------------------------------------------------------------- info
check "install --policy keep hello-1.fatbundle (a file, passed as fd)" ctl install --policy keep hello-1.fatbundle
run ctl info hello
check_eq "info exits 0" 0 "$RC"
grep -v '^installed: ' <<<"$RUN_OUT" >got
cat >want <<EOF
name: hello
version: 1.0
summary: says hello
vendor: -
license: GPL-3.0-or-later
homepage: https://example.org/hello
signer: unsigned
source: file $T_WORK/hello-1.fatbundle
policy: keep
installed form: fat
targets: x86_64 aarch64
files: 4
EOF
check_eq "info: the lines up to the files, fat as installed with keep" "$(cat want)" "$(head -12 got)"
check_match "... the install time" '^installed: [0-9]{4}-' "$RUN_OUT"
check_match "... the sizes as shipped and on disk" $'size as shipped: [0-9.]+ [KM]i?B\nsize on disk: [0-9.]+ [KM]i?B' "$RUN_OUT"
run ctl --json info hello
check_eq "info --json: license, homepage, targets, form, source" \
	"GPL-3.0-or-later|https://example.org/hello|x86_64:64bits:le:linux:osabiver0,aarch64:64bits:le:linux:osabiver0|fat|file|$T_WORK/hello-1.fatbundle|keep" \
	"$(jq -r '.package | [.license, .homepage, (.targets | join(",")), .form, .source_type, .source, .policy] | join("|")' <<<"$RUN_OUT")"
check_eq "info --json: installed size is the bytes in the root" \
	"$(find d/root -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')" \
	"$(jq -r .package.installed_size <<<"$RUN_OUT")"

# ---------------------------------------------------------------- list after thin
run ctl list
check_match "list: hello's policy is keep" '^hello +1\.0 +4 +[0-9.]+ [KM]i?B +0 B +keep +(- +)?says hello$' "$RUN_OUT"
check "thin hello" ctl thin hello
run ctl list
check_match "list after thin: hello's policy is native, as on disk" \
	'^hello +1\.0 +4 +[0-9.]+ [KM]i?B +[0-9.]+ [KM]i?B +native +(- +)?says hello$' "$RUN_OUT"
run ctl --json list
check_eq "list --json after thin: policy native, form thinned" "hello native thinned" \
	"$(jq -r '.packages[] | "\(.name) \(.policy) \(.form)"' <<<"$RUN_OUT")"
run ctl info hello
check_eq "info after thin: policy native, installed form thinned" "policy: native
installed form: thinned" "$(grep -e '^policy: ' -e '^installed form: ' <<<"$RUN_OUT")"
check_cmp "... and on disk hello is the x86_64 build itself" in-x86_64 d/root/opt/hello/bin/hello
check "thin hello again: nothing to do" ctl thin hello
run ctl --json info hello
check_eq "... the policy stays native" "native thinned" "$(jq -r '.package | "\(.policy) \(.form)"' <<<"$RUN_OUT")"

# other sources: standard input, a URL with credentials
run ctl install - <other-1.fatbundle
check_eq "install - <other-1.fatbundle" 0 "$RC"
run ctl info other
check_eq "info of a package from standard input: source fd, no license, no fat file" "license: -
homepage: -
source: fd
installed form: none
targets: -" "$(grep -e '^license: ' -e '^homepage: ' -e '^source: ' -e '^installed form: ' -e '^targets: ' <<<"$RUN_OUT")"
check "remove other" ctl remove other
run ctl install "http://user:secret@127.0.0.1:$port/other-1.fatbundle"
check_eq "install of a URL with user:password@" 0 "$RC"
run ctl --json info other
check_eq "info --json: source url, without the credentials" "url http://127.0.0.1:$port/other-1.fatbundle" \
	"$(jq -r '.package | "\(.source_type) \(.source)"' <<<"$RUN_OUT")"
check_nomatch "... the password is nowhere in info" secret "$RUN_OUT"

# ---------------------------------------------------------------- files
run ctl files hello
check_eq "files exits 0" 0 "$RC"
check_eq "files: every directory (marked /), file and symlink, by path" "/etc/
/etc/hello.conf
/opt/
/opt/hello/
/opt/hello/bin/
/opt/hello/bin/hello
/opt/hello/bin/hi -> hello
/opt/hello/share/
/opt/hello/share/doc/
/opt/hello/share/doc/README" "$RUN_OUT"
run ctl --json files hello
check_eq "files --json: path and type of each entry" "/etc dir
/etc/hello.conf file
/opt dir
/opt/hello dir
/opt/hello/bin dir
/opt/hello/bin/hello file
/opt/hello/bin/hi symlink
/opt/hello/share dir
/opt/hello/share/doc dir
/opt/hello/share/doc/README file" "$(jq -r '.files[] | "\(.path) \(.type)"' <<<"$RUN_OUT")"
check_eq "files --json: a directory's mode is the one installed" \
	"$(stat -c %a d/root/opt/hello/share/doc)" \
	"$(jq -r '.files[] | select(.path == "/opt/hello/share/doc") | .mode' <<<"$RUN_OUT" | xargs printf '%o\n')"

# ---------------------------------------------------------------- owner
run ctl owner /opt/hello/bin/hello
check_eq "owner of a plain path, as before" "hello: /opt/hello/bin/hello" "$RUN_OUT"
run ctl owner '*bin/h*'
check_eq "owner '*bin/h*': the program and its symlink" "hello: /opt/hello/bin/hello
hello: /opt/hello/bin/hi" "$RUN_OUT"
run ctl owner '/opt*'
check_eq "owner '/opt*': every path under /opt, a shared directory with both owners" "hello, other: /opt/
hello: /opt/hello/
hello: /opt/hello/bin/
hello: /opt/hello/bin/hello
hello: /opt/hello/bin/hi
hello: /opt/hello/share/
hello: /opt/hello/share/doc/
hello: /opt/hello/share/doc/README
other: /opt/other/
other: /opt/other/data.txt" "$RUN_OUT"
run ctl owner README
check_eq "owner WORD: the paths that contain it, as dpkg -S" "hello: /opt/hello/share/doc/README" "$RUN_OUT"
run ctl owner '/etc/hello.con[fg]'
check_eq "owner with a bracket expression" "hello: /etc/hello.conf" "$RUN_OUT"
run ctl --json owner '*/bin/h?'
check_eq "owner --json PATTERN: path, package, type and link target" "/opt/hello/bin/hi hello symlink hello" \
	"$(jq -r '.files[] | "\(.path) \(.package) \(.type) \(.link_target)"' <<<"$RUN_OUT")"
run ctl --json owner '/op[t]'
check_eq "owner --json PATTERN: a directory once per package" "hello dir|other dir" \
	"$(jq -r '[.files[] | "\(.package) \(.type)"] | join("|")' <<<"$RUN_OUT")"
run ctl owner '/nothing/*'
check_eq "owner PATTERN matching nothing exits 1" 1 "$RC"
check_eq "... saying so in one line" 1 "$(wc -l <<<"$RUN_ERR")"
check_match "... naming the pattern" '/nothing/\*' "$RUN_ERR"
check_eq "... and prints nothing" "" "$RUN_OUT"

# ---------------------------------------------------------------- repository source
mkdir -p t3/opt/third && echo third >t3/opt/third/t.txt
"$FATELF" bundle create -o third-1.fatbundle --name third --version 1 t3 >/dev/null
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G" "no key"
check "repo init" "$FATELF" repo init --sign repo.key www/repo
check "repo add third" "$FATELF" repo add --sign repo.key www/repo third-1.fatbundle
check "fatelfctl repo add main" ctl repo add main "http://127.0.0.1:$port/repo" --key repo.pub
check "fatelfctl update" ctl update
check "install third (from the repository)" ctl install third
run ctl info third
check_eq "info of a repository's package: source repository main" "source: repository main" \
	"$(grep '^source: ' <<<"$RUN_OUT")"

# ---------------------------------------------------------------- history
run ctl --json history hello
check_eq "history hello: its rows only, newest first" "thin hello|install hello" \
	"$(jq -r '[.transactions[] | "\(.kind) \(.package)"] | join("|")' <<<"$RUN_OUT")"
run ctl --json history --package other
check_eq "history --package other: its rows only" "install other|remove other|install other" \
	"$(jq -r '[.transactions[] | "\(.kind) \(.package)"] | join("|")' <<<"$RUN_OUT")"
run ctl history -p other --limit 1
check_eq "history -p other --limit 1: the header and one row" "2 install other" \
	"$(wc -l <<<"$RUN_OUT") $(awk 'NR == 2 { print $2, $3 }' <<<"$RUN_OUT")"
run ctl history --package hello other
check_eq "history --package hello other: a usage error" 2 "$RC"
run ctl history nosuch
check_eq "history of a package with none" "no transactions" "$RUN_OUT"

daemon_stop
check_no_sanitizer_report
t_done
