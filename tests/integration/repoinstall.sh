#!/bin/bash
# Installs from a repository through fatelfd, served by a real nginx on
# 127.0.0.1 (doc/repository.md). A 4-architecture package (hello
# cross-compiled for every compiler installed, glued) plus 40 small files
# and one of 1 MB is published with fatelf repo; a private fatelfd is told
# of the repository (repo add), updates, searches and installs it. Checks:
# the installed tree equals a bundle install of the same package; nginx's
# access log holds exactly the files a native install needs (the index,
# the manifest, its signature, the pack list, the x86_64 record and the
# data objects: computed here from the manifest); an upgrade where one
# file changed fetches that one object and the version's metadata; a
# second package sharing a file reads it from the installed copy; a dry
# run fetches nothing and says how much it would; failover to the second
# mirror; and each failure (an object missing or corrupt, an index with a
# bad signature, an older index replayed, an expired one) gives its error
# with nothing installed. A file:// repository installs offline.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init repoinstall
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq python3 minisign bsdtar nginx curl setpriv gcc aarch64-linux-gnu-gcc
[ "$(uname -m)" = x86_64 ] || t_skip "the expected objects are computed for an x86_64 host"

hello_inputs

minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G (vendor)" "no key"
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G (repository)" "no key"
minisign -G -W -f -p other.pub -s other.key >/dev/null 2>&1 || fail "minisign -G (other)" "no key"
mkdir -p keys && cp vendor.pub keys/vendor.pub
DAEMON_KEYS=$T_WORK/keys

# make_tree DIR VERSION: the package's tree; file f07 differs in version 2
make_tree() {
	mkdir -p "$1/opt/hello/bin" "$1/opt/hello/share" "$1/etc"
	"$FATELF" glue -o "$1/opt/hello/bin/hello" "${inputs[@]}" >/dev/null
	for i in $(seq -w 0 39); do
		if [ "$i" = 07 ]; then echo "file $i version $2"; else echo "file $i"; fi >"$1/opt/hello/share/f$i"
	done
	head -c 1048576 /dev/urandom >"$1/opt/hello/share/big"
	# the same bytes twice in one package: one object, staged twice
	cp "$1/opt/hello/share/f01" "$1/opt/hello/share/f01-again"
	echo "a=1" >"$1/etc/hello.conf"
}
make_tree t1 1
cp -a t1 t2
echo "file 07 version 2" >t2/opt/hello/share/f07
mkdir -p t3/srv && cp t1/opt/hello/share/big t3/srv/same && echo other >t3/srv/own
"$FATELF" bundle create -o hello-1.fatbundle --name hello --version 1.0 --sign vendor.key t1 >/dev/null
"$FATELF" bundle create -o hello-2.fatbundle --name hello --version 2.0 --sign vendor.key t2 >/dev/null
"$FATELF" bundle create -o copy-1.fatbundle --name copy --version 1 --sign vendor.key t3 >/dev/null

check "repo init --sign" "$FATELF" repo init --sign repo.key www/repo
check "repo add --sign hello 1.0" "$FATELF" repo add --sign repo.key www/repo hello-1.fatbundle
cp -a www/repo old-repo        # serial 2, for the rollback check

# ---- nginx, serving www/
port=$(free_port)
nginx_www "$port" || fail "nginx starts" "$(cat ngx/logs/stderr)"
trap 'kill $NGPID 2>/dev/null; daemon_cleanup' EXIT
URL=http://127.0.0.1:$port/repo
: >ngx/logs/files.log

daemon_init
trap 'kill $NGPID 2>/dev/null; daemon_cleanup' EXIT
# the bundle installed from its file, by a daemon of its own, to compare
daemon_prepare d2
daemon_start d2 || fail "a fatelfd for the bundle install starts" "see $T_WORK/d2/log"
check "a bundle install of hello 1.0" ctl install hello-1.fatbundle
daemon_stop
daemon_prepare d1 "Repositories=$T_WORK/d1/repos.d"
daemon_start d1 || fail "fatelfd starts" "see $T_WORK/d1/log"

check "repo add main URL --key repo.pub" ctl repo add main "$URL" --key repo.pub
check_eq "repo.d holds main.conf, root's only" 600 "$(stat -c %a d1/repos.d/main.conf)"
run ctl --json repo list
check_eq "repo list shows main, never updated" "main null" "$(jq -r '.repositories[0] | "\(.name) \(.serial)"' <<<"$RUN_OUT")"
run ctl --json update
check_eq "update exits 0" 0 "$RC"
check_eq "... and accepts serial 2 with 1 package" "2 1" \
	"$(jq -r 'select(.repositories) | .repositories[0] | "\(.serial) \(.packages)"' <<<"$RUN_OUT" | tail -1)"
run ctl --json search hel
check_eq "search hel finds hello 1.0" "hello 1.0 main" \
	"$(jq -r '.packages[] | "\(.name) \(.version) \(.repository)"' <<<"$RUN_OUT")"

# ---- what a user who is neither root nor an admin may do
as_nobody() { timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$FATELFCTL" --socket "$SOCK" "$@"; }
check "a mirror URL with a password" ctl repo add secret "http://user:hunter2@127.0.0.1:$port/repo" --key repo.pub
run as_nobody --json repo list
check_eq "repo list is open to every user" 0 "$RC"
check_nomatch "... and shows no URL's password" "hunter2" "$RUN_OUT"
check "remove that repository" ctl repo remove secret
run as_nobody search hel
check_eq "search is open to every user" 0 "$RC"
run as_nobody repo add evil "$URL" --key repo.pub
check_eq "repo add by a user: permission denied (exit 4)" 4 "$RC"
run as_nobody update
check_eq "update by a user: permission denied (exit 4)" 4 "$RC"
run as_nobody install hello
check_eq "install NAME by a user: permission denied (exit 4)" 4 "$RC"
check_eq "... and nothing was added" "main.conf" "$(ls d1/repos.d)"

# ---- what a native install must fetch, from the signed manifest
bsdtar -xOf hello-1.fatbundle fatbundle.json >m1.json
bsdtar -xOf hello-2.fatbundle fatbundle.json >m2.json
# expected MANIFEST: object paths of the files, and of the x86_64 record
expected() {
	python3 - "$1" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
out = set()
for e in m["entries"]:
    if e["type"] != "file":
        continue
    elf = e.get("elf")
    if elf and elf["kind"] == "fatelf":
        for r in elf["records"]:
            if r["target"].startswith("x86_64:"):
                out.add(r["sha256"])
                break
    else:
        out.add(e["sha256"])
for s in sorted(out):
    print("/repo/objects/%s/%s.zst" % (s[:2], s))
EOF
}
# fetched: the object GETs of the log since it was emptied
fetched() { awk '$1 == "GET" && $3 == 200 && $2 ~ /^\/repo\/objects\// {print $2}' ngx/logs/files.log | sort; }
metadata() { awk '$1 == "GET" && $3 == 200 && $2 !~ /^\/repo\/objects\// {print $2}' ngx/logs/files.log | sort; }
pack_of() { "$FATELF" repo list --json www/repo | jq -r ".packages[] | select(.name == \"$1\") | .versions[] | select(.version == \"$2\") | .pack"; }
man_of() { "$FATELF" repo list --json www/repo | jq -r ".packages[] | select(.name == \"$1\") | .versions[] | select(.version == \"$2\") | .manifest"; }

: >ngx/logs/files.log
run ctl --json install --dry-run hello
check_eq "install --dry-run hello exits 0" 0 "$RC"
dry_bytes=$(jq -r 'select(.fetch) | .fetch.bytes' <<<"$RUN_OUT" | tail -1)
check_eq "... and fetches no object but the pack list (for the compressed sizes)" "/repo/objects/$(pack_of hello 1.0 | cut -c1-2)/$(pack_of hello 1.0).zst" "$(fetched)"
check_eq "... installs nothing" "" "$(ls d1/root)"

: >ngx/logs/files.log
run ctl --json install hello
check_eq "install hello (from the repository) exits 0" 0 "$RC"
check_eq "... and fetches what the dry run said, in compressed bytes" "$dry_bytes" \
	"$(jq -r 'select(.fetch) | .fetch.bytes' <<<"$RUN_OUT" | tail -1)"
expected m1.json | sort >want-1
fetched >got-1
check_cmp "nginx served exactly the x86_64 record and the data objects (no pack list: no stored frame)" want-1 got-1
m1=$(man_of hello 1.0)
check_eq "... and of the rest only the manifest and its signature" \
	"$(printf '/repo/manifests/%s/fatbundle.json\n/repo/manifests/%s/fatbundle.json.minisig\n' "$m1" "$m1")" "$(metadata)"
check_cmp "the installed program is the x86_64 record" in-x86_64 d1/root/opt/hello/bin/hello
check "... which runs" d1/root/opt/hello/bin/hello
check_cmp "the 1 MB file is the vendor's" t1/opt/hello/share/big d1/root/opt/hello/share/big

check "... gives the same tree as a bundle install of it" diff -r d1/root/opt d2/root/opt

# ---- an upgrade where one file changed
check "repo add hello 2.0" "$FATELF" repo add --sign repo.key www/repo hello-2.fatbundle
check "update sees it" ctl update
: >ngx/logs/files.log
run ctl --json install hello
check_eq "install hello (upgrade to 2.0) exits 0" 0 "$RC"
check_eq "... an upgrade" "upgrade 2.0" "$(jq -r 'select(.result) | "\(.result.kind) \(.result.new_version)"' <<<"$RUN_OUT" | tail -1)"
f07=$(sha256sum t2/opt/hello/share/f07 | cut -c1-64)
m2=$(man_of hello 2.0)
check_eq "... fetching the changed file's object alone" "/repo/objects/${f07:0:2}/$f07.zst" "$(fetched)"
check_eq "... and the new manifest and its signature" \
	"$(printf '/repo/manifests/%s/fatbundle.json\n/repo/manifests/%s/fatbundle.json.minisig\n' "$m2" "$m2")" "$(metadata)"
check_cmp "... and the file is the new one" t2/opt/hello/share/f07 d1/root/opt/hello/share/f07

# ---- a file an installed package already has is read from it
check "repo add copy 1" "$FATELF" repo add --sign repo.key www/repo copy-1.fatbundle
check "update" ctl update
: >ngx/logs/files.log
run ctl --json install copy
check_eq "install copy exits 0" 0 "$RC"
check_eq "... reading the 1 MB file from the installed one" 1 "$(jq -r 'select(.fetch) | .fetch.local' <<<"$RUN_OUT" | tail -1)"
own=$(sha256sum t3/srv/own | cut -c1-64)
check_eq "... and fetching only its own file" "/repo/objects/${own:0:2}/$own.zst" "$(fetched)"
check_cmp "... whose copy is the vendor's bytes" t3/srv/same d1/root/srv/same
check "remove copy" ctl remove copy

# ---- failures, each leaving nothing installed
check "remove hello" ctl remove hello
big=$(sha256sum t1/opt/hello/share/big | cut -c1-64)
bigobj=www/repo/objects/${big:0:2}/$big.zst
mv "$bigobj" big.zst.saved
run ctl install hello
check_eq "an object that is not there (404): install fails" 1 "$((RC != 0))"
check_match "... saying the download failed, naming the object" "download failed|404|$big" "$RUN_ERR"
check_eq "... and nothing is installed" "" "$(ctl --json list | jq -r '.packages[].name')"
check_eq "... nor left in the root" "" "$(find d1/root -type f ! -name ld.so.cache)"
cp big.zst.saved "$bigobj"
flip_byte "$bigobj" 100
run ctl install hello
check_eq "a corrupt object: install fails" 1 "$((RC != 0))"
check_match "... with FATELF_E_REPO_OBJECT" "FATELF_E_REPO_OBJECT|corrupt|zstd|SHA-256" "$RUN_ERR"
check_eq "... and nothing is installed" "" "$(ctl --json list | jq -r '.packages[].name')"
cp big.zst.saved "$bigobj"

# failover: a dead first mirror
dead=$(free_port)
check "repo add main with a dead first mirror" ctl repo add main "http://127.0.0.1:$dead/repo" "$URL" --key repo.pub
check "update through the second mirror" ctl update
check "install hello through the second mirror" ctl install hello
check "remove hello" ctl remove hello

# a bad index signature: the repository's key did not sign it
cp -a www/repo bad-repo
idx=$(cut -d' ' -f3 bad-repo/index)
minisign -S -s other.key -m "bad-repo/indexes/$idx.json" -x "bad-repo/indexes/$idx.json.minisig" -W >/dev/null 2>&1 ||
	minisign -S -s other.key -m "bad-repo/indexes/$idx.json" -x "bad-repo/indexes/$idx.json.minisig" </dev/null >/dev/null 2>&1
mv www/repo good-repo && mv bad-repo www/repo
run ctl update
check_eq "an index signed by another key: update fails" 1 "$((RC != 0))"
check_match "... naming the signature" "signature|SIG_|key" "$RUN_ERR"
mv www/repo bad-repo && mv good-repo www/repo

# rollback: the serial-2 repository replayed
mv www/repo good-repo && cp -a old-repo www/repo && chmod -R go+rX www
run ctl update
check_eq "an older index replayed: update fails" 1 "$((RC != 0))"
check_match "... with FATELF_E_REPO_ROLLBACK" "ROLLBACK|older|lower" "$RUN_ERR"
rm -rf www/repo && mv good-repo www/repo
check "the current index is accepted again" ctl update

# expiry
check "repo add --expires 1 (re-signed, expiring)" "$FATELF" repo remove --sign repo.key --expires 1 www/repo copy
sleep 2
run ctl update
check_eq "an expired index: update fails" 1 "$((RC != 0))"
check_match "... with FATELF_E_REPO_EXPIRED" "EXPIRED|expired" "$RUN_ERR"

# ---- upgrade, and the versions info shows
# A repository of its own, www/up, with hello 1.0 alone; main (whose index
# expired, and which still offers hello 2.0) goes. Nothing is installed.
up_fetched() { awk '$1 == "GET" && $3 == 200 && $2 ~ /^\/up\/objects\// {print $2}' ngx/logs/files.log | sort; }
up_pack() { "$FATELF" repo list --json www/up | jq -r ".packages[] | select(.name == \"$1\") | .versions[] | select(.version == \"$2\") | .pack"; }
check "repo remove main" ctl repo remove main
check "repo init --sign www/up" "$FATELF" repo init --sign repo.key www/up
check "repo add --sign hello 1.0 to www/up" "$FATELF" repo add --sign repo.key www/up hello-1.fatbundle
chmod -R go+rX www
check "repo add up URL --key repo.pub" ctl repo add up "http://127.0.0.1:$port/up" --key repo.pub
check "update" ctl update
check "install hello (1.0, from up)" ctl install hello
run ctl upgrade
check_eq "upgrade with nothing newer exits 0" 0 "$RC"
check_eq "... saying everything is up to date" "nothing to upgrade: every package is up to date" "$RUN_OUT"
run ctl upgrade hello
check_eq "upgrade hello with nothing newer: exit 0, hello is up to date" "0 hello is up to date" "$RC $RUN_OUT"
run ctl --json upgrade hello
check_eq "... --json: {package, up_to_date}" "hello true" "$(jq -r '"\(.package) \(.up_to_date)"' <<<"$RUN_OUT")"
run ctl upgrade hello nosuch
check_eq "upgrade of a package that is not installed exits 1" 1 "$RC"
check_eq "... with PackageNotFound's words" "fatelfctl: upgrade: package not installed: nosuch" "$RUN_ERR"
check_eq "... before anything else is done" "" "$RUN_OUT"
run ctl upgrade hello=2.0
check_eq "upgrade NAME=VERSION is a usage error" 2 "$RC"
check_match "... pointing at install" "fatelfctl install hello=2.0" "$RUN_ERR"

check "repo add --sign hello 2.0 to www/up" "$FATELF" repo add --sign repo.key www/up hello-2.fatbundle
chmod -R go+rX www
check "update sees it" ctl update
run ctl list --upgradable
check_eq "list --upgradable shows hello 1.0 -> 2.0" "hello 1.0 -> 2.0 (up)" "$RUN_OUT"

: >ngx/logs/files.log
run ctl upgrade --dry-run
check_eq "upgrade --dry-run exits 0" 0 "$RC"
check_match "... says what it would upgrade" "^would upgrade hello 1\.0 -> 2\.0: " "$RUN_OUT"
check_match "... and the would-fetch figures: the changed file's object" \
	"would fetch: 1 object \([0-9.]+ [KMG]?i?B\), 0 from installed files" "$RUN_OUT"
check_eq "... installs nothing: hello is still 1.0" 1.0 "$(ctl --json info hello | jq -r .package.version)"
check_cmp "... with its old f07" t1/opt/hello/share/f07 d1/root/opt/hello/share/f07
check_eq "... and fetches no file's object" "" "$(up_fetched | grep -vF "/$(up_pack hello 2.0).zst")"

: >ngx/logs/files.log
run ctl upgrade
check_eq "upgrade exits 0" 0 "$RC"
check_match "... upgrading hello, in install's words" "^upgraded hello 1\.0 -> 2\.0: " "$RUN_OUT"
check_match "... with the fetch figures" "fetch: 1 object \([0-9.]+ [KMG]?i?B\), 0 from installed files" "$RUN_OUT"
check_eq "... hello is 2.0" 2.0 "$(ctl --json info hello | jq -r .package.version)"
check_cmp "... with the new f07" t2/opt/hello/share/f07 d1/root/opt/hello/share/f07
f07=$(sha256sum t2/opt/hello/share/f07 | cut -c1-64)
check_eq "... and nginx served, of the files' objects, the changed file's alone" \
	"/up/objects/${f07:0:2}/$f07.zst" "$(up_fetched | grep -vF "/$(up_pack hello 2.0).zst")"
run ctl upgrade
check_eq "upgrade again: nothing to upgrade" "0 nothing to upgrade: every package is up to date" "$RC $RUN_OUT"

# ---- several packages, one transaction
for v in 1 2; do
	for p in pa pb; do
		mkdir -p "t-$p-$v/opt/$p" && echo "$p $v" >"t-$p-$v/opt/$p/file"
		"$FATELF" bundle create -o "$p-$v.fatbundle" --name "$p" --version "$v" --sign vendor.key "t-$p-$v" >/dev/null
	done
done
check "repo add --sign pa 1, pb 1 to www/up" "$FATELF" repo add --sign repo.key www/up pa-1.fatbundle pb-1.fatbundle
chmod -R go+rX www
check "update" ctl update
run ctl install pa pb
check_eq "install pa pb exits 0" 0 "$RC"
check_eq "... saying it was one transaction" "committed: 2 packages in one transaction" "$(tail -1 <<<"$RUN_OUT")"
check_eq "... both installed" "pa 1|pb 1" "$(cat d1/root/opt/pa/file)|$(cat d1/root/opt/pb/file)"
run ctl --json history
check_eq "... each with its committed history row" "install committed pa
install committed pb" \
	"$(jq -r '.transactions | sort_by(.id) | .[] | select(.package == "pa" or .package == "pb") | "\(.kind) \(.state) \(.package)"' <<<"$RUN_OUT")"
check "repo add --sign pa 2, pb 2 to www/up" "$FATELF" repo add --sign repo.key www/up pa-2.fatbundle pb-2.fatbundle
chmod -R go+rX www
check "update" ctl update
run ctl list --upgradable
check_eq "list --upgradable: pa and pb" "pa 1 -> 2 (up)
pb 1 -> 2 (up)" "$RUN_OUT"
run ctl upgrade --dry-run
check_eq "upgrade --dry-run of pa and pb exits 0" 0 "$RC"
check_match "... saying what pa's upgrade would do" "^would upgrade pa 1 -> 2: " "$RUN_OUT"
check_match "... and pb's" "^would upgrade pb 1 -> 2: " "$RUN_OUT"
check_eq "... as one transaction" "dry run: 2 packages in one transaction" "$(tail -1 <<<"$RUN_OUT")"
run ctl --json upgrade --dry-run
check_eq "... --json: a result and a fetch for each, in order" "pa pb 2" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r '"\([.results[].package] | join(" ")) \(.fetches | length)"')"
check_eq "... and nothing changed" "pa 1|pb 1" "$(cat d1/root/opt/pa/file)|$(cat d1/root/opt/pb/file)"
# pb 2's object corrupt: pb fails after pa is staged, and pa goes back
pb2=$(sha256sum t-pb-2/opt/pb/file | cut -c1-64)
pbobj=www/up/objects/${pb2:0:2}/$pb2.zst
cp "$pbobj" pb2.zst.saved
flip_byte "$pbobj" $(($(stat -c %s "$pbobj") - 6))
run ctl upgrade
check_eq "upgrade of pa and pb, pb's object corrupt: fails" 1 "$((RC != 0))"
check_match "... with pb's error" "FATELF_E_REPO_OBJECT|corrupt|zstd|SHA-256|pb" "$RUN_ERR"
check_eq "... and neither is upgraded, pa (staged first) neither" "pa 1|pb 1" \
	"$(cat d1/root/opt/pa/file)|$(cat d1/root/opt/pb/file)"
check_eq "... nor recorded as upgraded" "1 1" \
	"$(ctl --json info pa | jq -r .package.version) $(ctl --json info pb | jq -r .package.version)"
check_eq "... nothing staged is left" "" "$(find d1/root/opt/pa d1/root/opt/pb -name '.fatelf*')"
run ctl --json history
check_eq "... both upgrade rows failed" "upgrade failed pa
upgrade failed pb" \
	"$(jq -r '.transactions | sort_by(.id) | .[] | select((.package == "pa" or .package == "pb") and .kind == "upgrade") | "\(.kind) \(.state) \(.package)"' <<<"$RUN_OUT")"
cp pb2.zst.saved "$pbobj"
run ctl upgrade
check_eq "upgrade again, the object mended: exit 0" 0 "$RC"
check_match "... pa upgraded" "^upgraded pa 1 -> 2: " "$RUN_OUT"
check_match "... pb upgraded" "^upgraded pb 1 -> 2: " "$RUN_OUT"
check_eq "... in one transaction" "committed: 2 packages in one transaction" "$(tail -1 <<<"$RUN_OUT")"
check_eq "... both new" "pa 2|pb 2" "$(cat d1/root/opt/pa/file)|$(cat d1/root/opt/pb/file)"
run ctl --json upgrade
check_eq "upgrade --json with nothing newer" 0 "$RC"
run ctl install pa pa
check_eq "install pa pa: a package named twice is refused" 1 "$((RC != 0))"
check "remove pa" ctl remove pa
check "remove pb" ctl remove pb

run ctl info hello
check_eq "info hello exits 0" 0 "$RC"
check_match "... shows what it did before" "^version: 2\.0$" "$(grep '^version:' <<<"$RUN_OUT")"
check_eq "... then the versions the repositories offer" "available: 2.0 (up), 1.0 (up)" "$(tail -1 <<<"$RUN_OUT")"
run ctl --json info hello
check_eq "info --json: the package, and the Available objects" "2.0 2.0,1.0 up,up 2.0" \
	"$(jq -r '"\(.package.version) \([.available[].version] | join(",")) \([.available[].repository] | join(",")) \(.available[0].installed)"' <<<"$RUN_OUT")"
check "repo add --sign copy 1 to www/up" "$FATELF" repo add --sign repo.key www/up copy-1.fatbundle
chmod -R go+rX www
check "update" ctl update
run ctl info copy
check_eq "info of a package offered but not installed exits 1" 1 "$RC"
check_eq "... showing what is offered" "$(printf 'name: copy\navailable: 1 (up)')" "$RUN_OUT"
check_eq "... and that it is not installed" "fatelfctl: info: package not installed: copy" "$RUN_ERR"
run ctl --json info copy
check_eq "... --json: the available array, then the error" "1 1 io.fatelf.Manager.PackageNotFound" \
	"$RC $(jq -rs '"\(.[0].available[0].version) \(.[1].error)"' <<<"$RUN_OUT")"
run ctl info nosuch
check_eq "info of a package nothing offers: exit 1, nothing on stdout" "1 " "$RC $RUN_OUT"

# An older fatelfd, which knows Info but not Search: info leaves the line out.
cat >olddaemon.py <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(4)
s.settimeout(60)
for _ in range(int(sys.argv[2])):
    c, _ = s.accept()
    buf = b""
    while not buf.endswith(b"\0"):
        d = c.recv(65536)
        if not d:
            break
        buf += d
    m = json.loads(buf[:-1]).get("method", "")
    if m == "io.fatelf.Manager.Info":
        r = {"parameters": {"package": {"name": "hello", "version": "1.0", "summary": "", "vendor": "",
             "installed_at": 0, "policy": "native", "files": 1, "shipped_size": 1, "installed_size": 1}}}
    else:
        r = {"error": "org.varlink.service.MethodNotFound", "parameters": {"method": m}}
    c.sendall(json.dumps(r).encode() + b"\0")
    c.close()
EOF
old=$DAEMON_SOCKDIR/old.sock
python3 olddaemon.py "$old" 4 &
OLDPID=$!
for ((i = 0; i < 50; i++)); do [ -S "$old" ] && break; sleep 0.1; done
run timeout 60 "$FATELFCTL" --socket "$old" info hello
check_eq "info against a daemon without Search: exit 0, no available line" "0 saved by thinning: 0 B" \
	"$RC $(tail -1 <<<"$RUN_OUT")"
check_eq "... and no error" "" "$RUN_ERR"
run timeout 60 "$FATELFCTL" --socket "$old" --json info hello
check_eq "... --json: the package, without available" "0 1.0 false" \
	"$RC $(jq -r '"\(.package.version) \(has("available"))"' <<<"$RUN_OUT")"
kill $OLDPID 2>/dev/null
wait $OLDPID 2>/dev/null

# ---- offline: a file:// repository
daemon_stop
daemon_prepare d3 "Repositories=$T_WORK/d3/repos.d"
"$FATELF" repo init --sign repo.key offline >/dev/null
"$FATELF" repo add --sign repo.key offline hello-1.fatbundle >/dev/null
daemon_start d3 || fail "fatelfd d3 starts" "see $T_WORK/d3/log"
check "repo add offline file://" ctl repo add offline "file://$T_WORK/offline" --key repo.pub
check "update from file://" ctl update
check "install hello from file://" ctl install hello
check_cmp "... the program is the x86_64 record" in-x86_64 d3/root/opt/hello/bin/hello
daemon_stop

# ---- a full disk under the download: the state directory on a small tmpfs
# (mounted on the state directory itself: fatelfd refuses one that is a link)
daemon_prepare d5 "Repositories=$T_WORK/d5/repos.d"
if mount -t tmpfs -o size=4m,mode=0700 tmpfs "$T_WORK/d5/state" 2>/dev/null; then
	trap 'kill $NGPID 2>/dev/null; daemon_cleanup; umount "$T_WORK/d5/state" 2>/dev/null' EXIT
	daemon_start d5 || fail "fatelfd d5 starts" "see $T_WORK/d5/log"
	check "repo add offline (state on a 4 MiB tmpfs)" ctl repo add offline "file://$T_WORK/offline" --key repo.pub
	check "update" ctl update
	# full, then 256 KiB free: less than the objects' 1.3 MB
	dd if=/dev/zero of=d5/state/filler bs=64k 2>/dev/null
	truncate -s -256K d5/state/filler
	run ctl install hello
	check_eq "the download's disk fills up: install fails (exit 1)" 1 "$RC"
	check_match "... naming the object and the cause" "cannot keep its bytes: No space left on device" "$RUN_ERR"
	run ctl --json install hello
	check_eq "... --json: DiskFull, the machine's error, not the mirror's" "io.fatelf.Manager.DiskFull" \
		"$(tail -1 <<<"$RUN_OUT" | jq -r .error)"
	check_eq "... nothing is installed" "" "$(ctl --json list | jq -r '.packages[].name')"
	check_eq "... nor left in the root" "" "$(find d5/root -type f ! -name ld.so.cache)"
	check_eq "... nor in the download cache" "" "$(find d5/state/cache -type f)"
	rm -f d5/state/filler
	check "with room again, the install goes through" ctl install hello
	check_cmp "... the program is the x86_64 record" in-x86_64 d5/root/opt/hello/bin/hello
	daemon_stop
	umount "$T_WORK/d5/state"
else
	echo "# skipping the full disk check: cannot mount a tmpfs here"
fi

check_no_sanitizer_report 2>/dev/null || true

kill $NGPID 2>/dev/null
wait $NGPID 2>/dev/null
t_done
