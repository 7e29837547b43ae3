#!/bin/bash
# Image builds without a daemon: fatelf install|remove|list|files|owner|
# verify --root DIR run the install engine on DIR, its store in
# DIR/var/lib/fatelf. An image is built from two signed bundles in one
# transaction (a FatELF program thinned to this host: its bytes on disk
# are the host's record; a data package), listed, queried, verified,
# and one package removed. A failing install (a conflict beside a good
# bundle, a corrupt bundle, an unsigned bundle without --allow-unsigned)
# leaves the tree and the store's packages and files as they were. Then
# fatelfd is started on that root with --state-dir DIR/var/lib/fatelf:
# fatelfctl list/files/verify see what the offline commands did, an
# upgrade from a file:// repository works, an offline install meanwhile
# is Busy (exit 4, ENGINE_E_LOCKED) while the read commands still answer,
# and after the daemon stops the offline commands see its upgrade.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init rootbuild
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq minisign sqlite3 gcc aarch64-linux-gnu-gcc
[ "$(uname -m)" = x86_64 ] || t_skip "the host's record is x86_64's here"

hello_inputs
[ -e in-x86_64 ] && [ -e in-aarch64 ] || t_skip "needs hello for x86_64 and aarch64"

minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G (vendor)" "no key"
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G (repository)" "no key"

# The trees: hello (a fat program, a config file, a doc), data (plain files)
mkdir -p t1/usr/bin t1/etc t1/usr/share/doc/hello
"$FATELF" glue -o t1/usr/bin/hello "${inputs[@]}" >/dev/null
echo "greeting=hi" >t1/etc/hello.conf
echo "hello 1.0" >t1/usr/share/doc/hello/README
cp -a t1 t2
echo "hello 2.0" >t2/usr/share/doc/hello/README
mkdir -p td/usr/share/data tc/usr/bin tu/opt/unsigned tx/opt/extra
echo "first" >td/usr/share/data/a
head -c 65536 /dev/urandom >td/usr/share/data/b
echo "not hello" >tc/usr/bin/hello
echo "unsigned" >tu/opt/unsigned/file
echo "extra" >tx/opt/extra/file
mkdir -p tb/opt/big
echo "small" >tb/opt/big/a
head -c 262144 /dev/urandom >tb/opt/big/z
"$FATELF" bundle create -o hello-1.fatbundle --name hello --version 1.0 --sign vendor.key t1 >/dev/null
"$FATELF" bundle create -o hello-2.fatbundle --name hello --version 2.0 --sign vendor.key t2 >/dev/null
"$FATELF" bundle create -o data-1.fatbundle --name data --version 1 --sign vendor.key td >/dev/null
"$FATELF" bundle create -o clash-1.fatbundle --name clash --version 1 --sign vendor.key tc >/dev/null
"$FATELF" bundle create -o extra-1.fatbundle --name extra --version 1 --sign vendor.key tx >/dev/null
"$FATELF" bundle create -o big-1.fatbundle --name big --version 1 --sign vendor.key tb >/dev/null
"$FATELF" bundle create -o unsigned-1.fatbundle --name unsigned --version 1 tu >/dev/null

# The image is the root of the daemon started later: d/root.
daemon_prepare d "Repositories=$T_WORK/d/repos.d"
IMG=$T_WORK/d/root
mkdir -p "$IMG/etc/fatelf/keys.d"
cp vendor.pub "$IMG/etc/fatelf/keys.d/vendor.pub"
DB=$IMG/var/lib/fatelf/fatelf.db

# snapshot: every path of the image but the state (type, mode, size,
# hash), and the store's packages and files
snapshot() {
	(cd "$IMG" && find . -path ./var/lib/fatelf -prune -o -printf '%p %y %m %s\n' | sort &&
		find . -path ./var/lib/fatelf -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum)
	sqlite3 "$DB" "SELECT name, version FROM packages ORDER BY name; SELECT path, installed_sha256 FROM files ORDER BY path;"
}

# ---- usage
run "$FATELF" install hello-1.fatbundle
check_eq "install without --root: usage error (exit 2)" 2 "$RC"
check_match "... naming --root" "--root DIR is required" "$RUN_ERR"
run "$FATELF" list --root "$IMG"
check_eq "list of a root with no store: exit 0" 0 "$RC"
check_eq "... no packages installed" "no packages installed" "$RUN_OUT"
check_eq "... and it made no store" "no" "$([ -e "$IMG/var/lib/fatelf" ] && echo yes || echo no)"

# ---- build the image: two bundles, one transaction
run "$FATELF" install --root "$IMG" hello-1.fatbundle data-1.fatbundle
check_eq "install --root of two bundles exits 0" 0 "$RC"
check_match "... installed hello 1.0, thinned" "^installed hello 1.0: 3 files, .* written, .* saved by thinning" "$RUN_OUT"
check_match "... installed data 1" "installed data 1: 2 files" "$RUN_OUT"
check_match "... in one transaction" "committed: 2 packages in one transaction" "$RUN_OUT"
check_cmp "/usr/bin/hello on disk is the x86_64 record, byte for byte" in-x86_64 "$IMG/usr/bin/hello"
check_match "... it runs" "^hello from x86_64" "$("$IMG/usr/bin/hello")"
check_cmp "/usr/share/data/b is the shipped file" td/usr/share/data/b "$IMG/usr/share/data/b"
check_cmp "/etc/hello.conf is the shipped file" t1/etc/hello.conf "$IMG/etc/hello.conf"
check_eq "the store is DIR/var/lib/fatelf/fatelf.db, mode 0600" 600 "$(stat -c %a "$DB")"
check_eq "its packages" "data|1 hello|1.0" \
	"$(sqlite3 "$DB" "SELECT name || '|' || version FROM packages ORDER BY name" | tr '\n' ' ' | sed 's/ $//')"
check_eq "one history row, a committed install each" "install committed install committed" \
	"$(sqlite3 "$DB" "SELECT t.kind, t.state FROM transactions t ORDER BY t.id" 2>/dev/null | tr '|\n' '  ' | sed 's/ $//')"
check_eq "hello's file row: thinned, the x86_64 record's hash" "thinned $(sha256sum <in-x86_64 | cut -d' ' -f1)" \
	"$(sqlite3 "$DB" "SELECT installed_form || ' ' || installed_sha256 FROM files WHERE path = '/usr/bin/hello'")"

# ---- list, files, owner, verify
run "$FATELF" list --root "$IMG"
check_eq "list exits 0" 0 "$RC"
check_match "... shows hello 1.0" "^hello +1.0 +3 " "$(grep '^hello' <<<"$RUN_OUT")"
check_match "... and data 1" "^data +1 +2 " "$(grep '^data' <<<"$RUN_OUT")"
run "$FATELF" list --root "$IMG" --json
check_eq "list --json: names, versions, forms" "data 1 none,hello 1.0 thinned" \
	"$(jq -r '[.packages[] | "\(.name) \(.version) \(.form)"] | join(",")' <<<"$RUN_OUT")"
check_eq "... hello came from its file" "file $T_WORK/hello-1.fatbundle" \
	"$(jq -r '.packages[] | select(.name == "hello") | "\(.source_type) \(.source)"' <<<"$RUN_OUT")"
run "$FATELF" files --root "$IMG" hello
check_eq "files hello" "/etc/
/etc/hello.conf
/usr/
/usr/bin/
/usr/bin/hello
/usr/share/
/usr/share/doc/
/usr/share/doc/hello/
/usr/share/doc/hello/README" "$RUN_OUT"
run "$FATELF" files --root "$IMG" --json hello
check_eq "files --json: hello's records as shipped, the x86_64 one alone kept" "${#inputs[@]} x86_64" \
	"$(jq -r '.files[] | select(.path == "/usr/bin/hello") | "\(.records | length) \([.records[] | select(.kept) | .target | split(":")[0]] | join(" "))"' <<<"$RUN_OUT")"
run "$FATELF" files --root "$IMG" nosuch
check_eq "files of a package not installed: exit 1" 1 "$RC"
check_match "... says so" "nosuch: not installed" "$RUN_ERR"
run "$FATELF" owner --root "$IMG" /usr/bin/hello
check_eq "owner /usr/bin/hello" "hello: /usr/bin/hello" "$RUN_OUT"
run "$FATELF" owner --root "$IMG" "$IMG/usr/share/data/a"
check_eq "owner DIR/usr/share/data/a" "data: /usr/share/data/a" "$RUN_OUT"
run "$FATELF" owner --root "$IMG" --json 'README'
check_eq "owner --json WORD" "hello /usr/share/doc/hello/README file" \
	"$(jq -r '.files[] | "\(.package) \(.path) \(.type)"' <<<"$RUN_OUT")"
run "$FATELF" owner --root "$IMG" /usr/bin/nothing
check_eq "owner of an unowned path: exit 1" 1 "$RC"
run "$FATELF" verify --root "$IMG"
check_eq "verify exits 0" 0 "$RC"
check_eq "... 5 files checked, 0 problems" "5 files checked, 0 problems" "$RUN_OUT"
cp "$IMG/usr/share/data/a" a.saved
echo "changed" >"$IMG/usr/share/data/a"
run "$FATELF" verify --root "$IMG" --json data
check_eq "verify of a changed file: exit 1" 1 "$RC"
check_eq "... a content problem" "data /usr/share/data/a content" \
	"$(jq -r '.problems[] | "\(.package) \(.path) \(.problem)"' <<<"$RUN_OUT")"
cp a.saved "$IMG/usr/share/data/a"
run "$FATELF" verify --root "$IMG" data
check_eq "verify after the fix: exit 0" 0 "$RC"

# ---- failures leave the image as it was
before=$(snapshot)
run "$FATELF" install --root "$IMG" extra-1.fatbundle clash-1.fatbundle
check_eq "a conflict beside a good bundle: exit 1" 1 "$RC"
check_match "... the conflict on /usr/bin/hello, owned by hello" "/usr/bin/hello.*hello" "$RUN_ERR"
check_eq "... the image and its store are as they were" "$before" "$(snapshot)"
check_eq "... no /opt/extra" "no" "$([ -e "$IMG/opt/extra" ] && echo yes || echo no)"
run "$FATELF" install --root "$IMG" --json clash-1.fatbundle
check_eq "--json: the error's code" "ENGINE_E_CONFLICT" "$(jq -r '.error.code' <<<"$RUN_OUT")"
# a byte of /opt/big/z's payload: its file is staged, then its hash fails
cp big-1.fatbundle corrupt.fatbundle
flip_byte corrupt.fatbundle $(($(stat -c %s corrupt.fatbundle) / 2))
run "$FATELF" install --root "$IMG" corrupt.fatbundle
check_match "a corrupt bundle fails (exit 1 or 3)" "^[13]$" "$RC"
check_match "... naming the bundle's entry or the archive" "opt/big/z: .*SHA-256" "$RUN_ERR"
check_eq "... the image and its store are as they were" "$before" "$(snapshot)"
run "$FATELF" install --root "$IMG" unsigned-1.fatbundle
check_eq "an unsigned bundle: exit 1" 1 "$RC"
check_match "... a signature is required" "unsigned-1.fatbundle: .*signature is required" "$RUN_ERR"
check_eq "... the image and its store are as they were" "$before" "$(snapshot)"
run "$FATELF" install --root "$IMG" --dry-run extra-1.fatbundle
check_eq "install --dry-run exits 0" 0 "$RC"
check_match "... would install extra 1" "^would install extra 1: 1 file" "$RUN_OUT"
check_eq "... and writes nothing" "$before" "$(snapshot)"
run "$FATELF" install --root "$IMG" --allow-unsigned unsigned-1.fatbundle
check_eq "an unsigned bundle with --allow-unsigned: exit 0" 0 "$RC"
check_eq "... installed" "unsigned" "$(cat "$IMG/opt/unsigned/file")"

# ---- remove
run "$FATELF" remove --root "$IMG" unsigned data
check_eq "remove --root unsigned data exits 0" 0 "$RC"
check_eq "... says what it removed, in one transaction" "removed unsigned 1: 1 file
removed data 1: 2 files
committed: 2 packages in one transaction" "$RUN_OUT"
check_eq "... their files are gone" "no no" \
	"$([ -e "$IMG/opt/unsigned" ] && echo yes || echo no) $([ -e "$IMG/usr/share/data" ] && echo yes || echo no)"
check_eq "... the store has hello alone" "hello" "$(sqlite3 "$DB" "SELECT name FROM packages")"
run "$FATELF" remove --root "$IMG" data
check_eq "remove of a package not installed: exit 1" 1 "$RC"
check_match "... says so" "data is not installed" "$RUN_ERR"
run "$FATELF" remove -o thin.fatelf t1/usr/bin/hello aarch64
check_eq "fatelf remove without --root still edits FatELF files" "0 $((${#inputs[@]} - 1))" \
	"$RC $("$FATELF" info --json thin.fatelf | jq '.records | length')"

# ---- fatelfd on the same root and store
"$FATELF" repo init --sign repo.key repo >/dev/null
"$FATELF" repo add --sign repo.key repo hello-2.fatbundle >/dev/null
daemon_init
DAEMON_KEYS=$IMG/etc/fatelf/keys.d
daemon_prepare d "Repositories=$T_WORK/d/repos.d"
DAEMON_STATE_DIR=$IMG/var/lib/fatelf
daemon_start d || fail "fatelfd starts on the image's store" "see $T_WORK/d/log"
run ctl --json list
check_eq "fatelfctl list sees hello 1.0, from the offline install" "hello 1.0" \
	"$(jq -r '.packages[] | "\(.name) \(.version)"' <<<"$RUN_OUT")"
run ctl files hello
check_match "fatelfctl files hello lists /usr/bin/hello" "^/usr/bin/hello$" "$RUN_OUT"
run ctl verify
check_eq "fatelfctl verify: exit 0" 0 "$RC"
check_match "... 3 files, 0 problems" "3 files checked, 0 problems" "$RUN_OUT"
run "$FATELF" install --root "$IMG" extra-1.fatbundle
check_eq "fatelf install --root while fatelfd runs: busy (exit 4)" 4 "$RC"
check_match "... says busy" "busy: another process holds the lock" "$RUN_ERR"
run "$FATELF" install --root "$IMG" --json extra-1.fatbundle
check_eq "... --json: ENGINE_E_LOCKED" "ENGINE_E_LOCKED" "$(jq -r '.error.code' <<<"$RUN_OUT")"
check_eq "... nothing installed" "no" "$([ -e "$IMG/opt/extra" ] && echo yes || echo no)"
run "$FATELF" list --root "$IMG"
check_eq "fatelf list --root answers beside the daemon" 0 "$RC"
check "repo add local file://" ctl repo add local "file://$T_WORK/repo" --key repo.pub
check "update" ctl update
run ctl upgrade
check_eq "fatelfctl upgrade exits 0" 0 "$RC"
check_match "... upgraded hello 1.0 -> 2.0" "upgraded hello 1.0 -> 2.0" "$RUN_OUT"
check_eq "the new README is on disk" "hello 2.0" "$(cat "$IMG/usr/share/doc/hello/README")"
check_cmp "... and /usr/bin/hello is still the x86_64 record" in-x86_64 "$IMG/usr/bin/hello"
daemon_stop
check_eq "fatelfd stops cleanly" 0 "$DAEMON_STATUS"
DAEMON_STATE_DIR=

run "$FATELF" list --root "$IMG" --json
check_eq "after the daemon: fatelf list --root sees hello 2.0 from the repository" "hello 2.0 repository" \
	"$(jq -r '.packages[] | "\(.name) \(.version) \(.source_type)"' <<<"$RUN_OUT")"
run "$FATELF" verify --root "$IMG"
check_eq "... verify --root: 3 files, 0 problems" "3 files checked, 0 problems" "$RUN_OUT"
check "... and an offline install works again" "$FATELF" install --root "$IMG" extra-1.fatbundle
check_eq "... extra installed" "extra" "$(cat "$IMG/opt/extra/file")"

t_done
