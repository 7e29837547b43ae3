#!/bin/bash
# Installs from OCI registries through fatelfd (doc/repository.md §10):
# Debian's docker-registry (CNCF Distribution) started here on 127.0.0.1
# three times (a plain one, a mirror that skopeo fills, one with htpasswd
# auth), a 4-architecture package pushed by fatelf repo push. Checks:
#   - a dry run says the blobs' bytes it would fetch, and fetches none;
#   - a native install fetches exactly the index, this machine's manifest,
#     its config and its blobs (the registry's access log), and installs
#     the same tree as the bundle's x86_64 extract;
#   - an upgrade to a new tag fetches the index, the manifest, the config
#     and the one blob that changed;
#   - policy keep reads the fat manifest and installs the fat file;
#   - a reference by digest installs; skopeo copy --all to a mirror, and an
#     install from the mirror;
#   - bearer tokens (a stand-in registry whose blobs redirect to storage):
#     one token a batch from the realm, with the credentials;
#   - auth: refused without credentials, installs with a root-only 0600
#     credentials file (one others may read is refused), and the password
#     is in no log, reply, history or database;
#   - failures with nothing installed: a missing tag, a blob whose bytes
#     are not its digest's, a manifest whose signature fails, and the
#     registry going away mid-pull.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init ociinstall
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool docker-registry skopeo jq python3 curl minisign gcc aarch64-linux-gnu-gcc
[ "$(uname -m)" = x86_64 ] || t_skip "the expected objects are computed for an x86_64 host"
python3 -c 'import crypt' 2>/dev/null || t_skip "python3's crypt module makes the htpasswd file"

hello_inputs
minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G" "no key"
mkdir -p keys && cp vendor.pub keys/vendor.pub
DAEMON_KEYS=$T_WORK/keys

hello_pair 1048576 || fail "the bundles of hello 1.0 and 2.0" "bundle create failed"

# ---- registries
PIDS=()
trap 'kill "${PIDS[@]}" "${REGISTRY_PIDS[@]}" 2>/dev/null; daemon_cleanup' EXIT
P1=$(free_port)
oci_registry r1 "$P1" || fail "docker-registry starts" "$(cat r1/log)"
P2=$(free_port)
oci_registry r2 "$P2" || fail "the mirror registry starts" "$(cat r2/log)"
python3 -c "import crypt; print('fleet:' + crypt.crypt('s3cret-pass-42', crypt.mksalt(crypt.METHOD_BLOWFISH)))" >htpasswd
P3=$(free_port)
oci_registry r3 "$P3" "auth:
  htpasswd:
    realm: fatelf-test
    path: $T_WORK/htpasswd" || fail "the registry with auth starts" "$(cat r3/log)"
REF=oci://127.0.0.1:$P1/fatelf/hello
check "push hello 1.0" "$FATELF" repo push hello-1.fatbundle "$REF"
check "push hello 2.0" "$FATELF" repo push hello-2.fatbundle "$REF"
printf 'fleet:s3cret-pass-42\n' >push.creds
chmod 600 push.creds
check "push hello 1.0 to the registry with auth" "$FATELF" repo push --credentials push.creds hello-1.fatbundle \
	"oci://127.0.0.1:$P3/fatelf/hello"

# since N REGISTRY: the GET requests of its log after the first N lines, sorted
since() { registry_requests "$2" | tail -n +$(($1 + 1)) | awk '$1 == "GET" { print $2 " " $3 }' | sort; }
count() { registry_requests "$1" | wc -l; }
# expected TAG ARCH: the requests an install that has nothing fetches:
# the index, the manifest of ARCH (amd64, or "fat"), its config and its blobs
man() { curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://127.0.0.1:$P1/v2/fatelf/hello/manifests/$1"; }
idx() { curl -sf -H 'Accept: application/vnd.oci.image.index.v1+json' "http://127.0.0.1:$P1/v2/fatelf/hello/manifests/$1"; }
digest_of() { # TAG ARCH
	if [ "$2" = fat ]; then idx "$1" | jq -r '.manifests[] | select(.platform | not) | .digest'
	else idx "$1" | jq -r --arg a "$2" '.manifests[] | select(.platform.architecture == $a) | .digest'; fi
}
expected() {
	local d
	d=$(digest_of "$1" "$2")
	{
		echo "/v2/fatelf/hello/manifests/$1 200"
		echo "/v2/fatelf/hello/manifests/$d 200"
		man "$d" | jq -r '.config.digest, (.layers[].digest)' | sort -u | sed 's|^|/v2/fatelf/hello/blobs/|; s|$| 200|'
	} | sort
}
tree_sums() { (cd "$1" && find . -type f -exec sha256sum {} + | sort -k2); }

daemon_init
# after daemon_init, whose own trap this one extends
trap 'kill "${PIDS[@]}" "${REGISTRY_PIDS[@]}" 2>/dev/null; daemon_cleanup' EXIT
mkdir -p registries.d
daemon_prepare d1 "Registries=$T_WORK/registries.d" "Repositories=$T_WORK/d1/repos.d"
daemon_start d1 || fail "fatelfd starts" "see $T_WORK/d1/log"

# ---- a dry run: what it would fetch, from the layers
n=$(count r1)
run ctl --json install --dry-run "$REF:1.0"
check_eq "install --dry-run oci://…:1.0 exits 0" 0 "$RC"
got=$(since "$n" r1)
dm=$(man "$(digest_of 1.0 amd64)")
check_eq "... would fetch every layer, their bytes as the manifest says" \
	"$(jq -r '"\(.layers | length) \([.layers[].size] | add)"' <<<"$dm")" \
	"$(jq -r 'select(.fetch) | "\(.fetch.fetched) \(.fetch.bytes)"' <<<"$RUN_OUT" | tail -1)"
check_eq "... and fetched the index, the manifest and the config alone" 3 "$(wc -l <<<"$got")"
check_eq "... nothing installed" 0 "$(ctl --json list | jq '.packages | length')"

# ---- a native install
n=$(count r1)
run ctl --json install "$REF:1.0"
check_eq "install oci://…/fatelf/hello:1.0 exits 0" 0 "$RC"
out1=$RUN_OUT
got=$(since "$n" r1)
check_eq "... the registry served exactly the index, the amd64 manifest, its config and its blobs" \
	"$(expected 1.0 amd64)" "$got"
"$FATELF" bundle extract --target x86_64 hello-1.fatbundle ex1 >/dev/null
check_eq "... and the tree is the bundle's x86_64 extract" "$(tree_sums ex1)" "$(tree_sums "$ROOT")"
check_eq "... the installed hello is an x86_64 ELF that runs" "hello" "$("$ROOT/opt/hello/bin/hello" | head -c 5)"
nl=$(man "$(digest_of 1.0 amd64)" | jq '.layers | length')
check_eq "... the reply counts its objects, all fetched" "$nl $nl" \
	"$(jq -r 'select(.fetch) | "\(.fetch.objects) \(.fetch.fetched)"' <<<"$out1" | tail -1)"
run ctl --json list
check_eq "... listed: hello 1.0" "hello 1.0" "$(jq -r '.packages[] | "\(.name) \(.version)"' <<<"$RUN_OUT")"

# ---- an upgrade to a new tag
n=$(count r1)
run ctl --json install "$REF:2.0"
check_eq "install of the tag 2.0 (an upgrade) exits 0" 0 "$RC"
got=$(since "$n" r1)
f07=$(sha256sum <t2/opt/hello/share/f07 | cut -c1-64)
d2=$(digest_of 2.0 amd64)
f07blob=$(man "$d2" | jq -r --arg o "$f07" '.layers[] | select(.annotations["io.fatelf.object"] == $o) | .digest')
want=$({
	echo "/v2/fatelf/hello/manifests/2.0 200"
	echo "/v2/fatelf/hello/manifests/$d2 200"
	echo "/v2/fatelf/hello/blobs/$(man "$d2" | jq -r .config.digest) 200"
	echo "/v2/fatelf/hello/blobs/$f07blob 200"
} | sort)
check_eq "... fetching the index, the manifest, the config and the one blob that changed" "$want" "$got"
check_eq "... f07 is version 2's" "file 07 version 2" "$(cat "$ROOT/opt/hello/share/f07")"
check_eq "... listed: hello 2.0" "hello 2.0" "$(ctl --json list | jq -r '.packages[] | "\(.name) \(.version)"')"

# ---- policy keep, from the fat manifest
check "remove hello" ctl remove hello
n=$(count r1)
run ctl install --policy keep "$REF:1.0"
check_eq "install --policy keep exits 0" 0 "$RC"
got=$(since "$n" r1)
check_eq "... from the fat manifest, with every blob" "$(expected 1.0 fat)" "$got"
check_eq "... the hello installed is the fat file, byte for byte" "$(sha256sum <t1/opt/hello/bin/hello)" \
	"$(sha256sum <"$ROOT/opt/hello/bin/hello")"
check "remove hello" ctl remove hello

# ---- by digest; from a mirror skopeo filled
INDEX=sha256:$(idx 1.0 | sha256sum | cut -c1-64)
run ctl install "$REF@$INDEX"
check_eq "install oci://…/fatelf/hello@sha256:… (the index's digest) exits 0" 0 "$RC"
check "remove hello" ctl remove hello
run ctl install "$REF@sha256:$(printf '%064d' 0)"
check_eq "a digest the registry does not have: exit non-zero" 1 "$RC"
check "skopeo copy --all to the mirror" skopeo copy --all --src-tls-verify=false --dest-tls-verify=false \
	"docker://127.0.0.1:$P1/fatelf/hello:1.0" "docker://127.0.0.1:$P2/mirror/hello:1.0"
n=$(count r2)
run ctl install "oci://127.0.0.1:$P2/mirror/hello:1.0"
check_eq "install from the mirror exits 0" 0 "$RC"
check_eq "... the tree is the same" "$(tree_sums ex1)" "$(tree_sums "$ROOT")"
check_eq "... every request went to the mirror" "$(( $(expected 1.0 amd64 | wc -l) ))" "$(since "$n" r2 | grep -c ' 200$')"
check "remove hello" ctl remove hello

# ---- auth
AREF=oci://127.0.0.1:$P3/fatelf/hello:1.0
run ctl --json install "$AREF"
check_eq "a registry with auth, no credentials: refused" "1 io.fatelf.Manager.FetchFailed" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r .error)"
check_match "... saying it wants credentials" "401|credentials" "$(tail -1 <<<"$RUN_OUT" | jq -r .parameters.message)"
auth_out=$RUN_OUT
printf 'fleet:s3cret-pass-42\n' >registries.d/fleet.creds
chmod 644 registries.d/fleet.creds
printf '[Registry]\nCredentials=%s\n' "$T_WORK/registries.d/fleet.creds" >"registries.d/127.0.0.1:$P3.conf"
run ctl install "$AREF"
check_eq "a credentials file others may read: refused" 1 "$RC"
check_match "... saying why" "no one else may" "$RUN_ERR"
chmod 600 registries.d/fleet.creds
run ctl --json install "$AREF"
check_eq "with a root-only 0600 credentials file: installed" 0 "$RC"
auth_out+=$RUN_OUT
run ctl --json history
auth_out+=$RUN_OUT
check_eq "... the password in no reply, history, log or database" "" \
	"$(grep -l 's3cret' <<<"$auth_out"; grep -rl 's3cret' "$DDIR/log" "$DDIR/state" 2>/dev/null)"
check "remove hello" ctl remove hello

# A registry of bearer tokens (a stand-in in front of r1: docker-registry's
# token auth needs a JWT signer) whose blobs redirect to r1 itself, as a
# registry's blob storage does: the token comes from its realm with the
# credentials, once a batch, and the install goes through.
cat >bearer.py <<'EOF'
import base64, http.server, json, sys, threading, urllib.request
port, up, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
good = "Basic " + base64.b64encode(b"fleet:s3cret-pass-42").decode()
lock = threading.Lock()
def note(line):
    with lock, open(log, "a") as f:
        f.write(line + "\n")
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def reply(self, code, headers={}, body=b""):
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        note("%s %s" % (self.path.split("?")[0], auth.split(" ")[0] or "none"))
        if self.path.startswith("/token"):
            if auth != good:
                return self.reply(401, {"WWW-Authenticate": 'Basic realm="t"'})
            return self.reply(200, {}, json.dumps({"token": "tok-abc"}).encode())
        if auth != "Bearer tok-abc":
            return self.reply(401, {"WWW-Authenticate":
                'Bearer realm="http://127.0.0.1:%d/token",service="reg",scope="repository:fatelf/hello:pull"' % port})
        if "/blobs/" in self.path:
            return self.reply(307, {"Location": up + self.path})
        req = urllib.request.Request(up + self.path, headers={"Accept": self.headers.get("Accept", "*/*")})
        with urllib.request.urlopen(req) as r:
            self.reply(200, {"Content-Type": r.headers.get("Content-Type", "")}, r.read())
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
print("ready", flush=True)
srv.serve_forever()
EOF
P5=$(free_port)
python3 bearer.py "$P5" "http://127.0.0.1:$P1" bearer.log >bearer.out 2>&1 &
PIDS+=($!)
for ((i = 0; i < 50; i++)); do grep -q ready bearer.out 2>/dev/null && break; sleep 0.1; done
run ctl --json install "oci://127.0.0.1:$P5/fatelf/hello:1.0"
check_eq "a bearer registry, no credentials: FetchFailed" "1 io.fatelf.Manager.FetchFailed" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r .error)"
printf '[Registry]\nCredentials=%s\n' "$T_WORK/registries.d/fleet.creds" >"registries.d/127.0.0.1:$P5.conf"
: >bearer.log
n=$(count r1)
run ctl --json install "oci://127.0.0.1:$P5/fatelf/hello:1.0"
check_eq "with credentials: the token from its realm, installed" 0 "$RC"
check_eq "... one token request a batch (index, manifest, config, blobs)" 4 "$(grep -c '^/token Basic' bearer.log)"
check_eq "... each blob (the config and the layers) asked for with the token" "$((nl + 1))" \
	"$(grep -c '/blobs/.* Bearer$' bearer.log)"
check_eq "... redirected to the storage and fetched there" "$((nl + 1))" \
	"$(since "$n" r1 | grep -c '/blobs/.* 200$')"
check_eq "... the tree is the same" "$(tree_sums ex1)" "$(tree_sums "$ROOT")"
check "remove hello" ctl remove hello

# ---- a repository of type oci: install NAME, update, upgrade
check "repo add fleet oci://…/fatelf --key vendor.pub" ctl repo add fleet "oci://127.0.0.1:$P1/fatelf" --key vendor.pub
curl -sf -X PUT -H 'Content-Type: application/vnd.oci.image.index.v1+json' --data-binary "$(idx 1.0)" \
	"http://127.0.0.1:$P1/v2/fatelf/hello/manifests/latest" || fail "PUT a tag that is not a version" ""
run ctl --json update
check_eq "update exits 0" 0 "$RC"
check_eq "... the registry's catalog gives one package" "fleet 1" \
	"$(jq -r 'select(.repositories) | .repositories[0] | "\(.name) \(.packages)"' <<<"$RUN_OUT" | tail -1)"
run ctl --json search hello
check_eq "search hello: its tags that are versions, not latest" "hello 1.0 fleet
hello 2.0 fleet" "$(jq -r '.packages[] | "\(.name) \(.version) \(.repository)"' <<<"$RUN_OUT" | sort)"
run ctl install hello=1.0
check_eq "install hello=1.0 from the registry exits 0" 0 "$RC"
check_eq "... listed: hello 1.0" "hello 1.0" "$(ctl --json list | jq -r '.packages[] | "\(.name) \(.version)"')"
n=$(count r1)
run ctl upgrade
check_eq "upgrade exits 0" 0 "$RC"
got=$(since "$n" r1)
check_eq "... to hello 2.0" "hello 2.0" "$(ctl --json list | jq -r '.packages[] | "\(.name) \(.version)"')"
check_eq "... fetching the index, the manifest, the config and the one blob that changed" "$want" "$got"
check "remove hello" ctl remove hello
# a tag that holds another version than it says
curl -sf -X PUT -H 'Content-Type: application/vnd.oci.image.index.v1+json' --data-binary "$(idx 1.0)" \
	"http://127.0.0.1:$P1/v2/fatelf/hello/manifests/3.0" || fail "PUT 1.0's index under the tag 3.0" ""
check "update" ctl update
run ctl --json install hello
check_eq "install hello, whose newest tag 3.0 holds 1.0: RepositoryInvalid" "5 io.fatelf.Manager.RepositoryInvalid" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r .error)"
check_match "... saying what the tag holds" "hello:3.0: the tag holds hello 1.0" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r .parameters.message)"
check "repo remove fleet" ctl repo remove fleet

# ---- failures: each a clear error, nothing installed
before=$(tree_sums "$ROOT")
run ctl --json install "$REF:9.9"
check_eq "a missing tag: PackageNotFound" "1 io.fatelf.Manager.PackageNotFound" "$RC $(tail -1 <<<"$RUN_OUT" | jq -r .error)"
run ctl install "$REF:9.9"
check_match "... naming the reference" "fatelf/hello:9.9" "$RUN_ERR"

# a manifest whose config signature is 2.0's (a good key, other bytes)
d1=$(digest_of 1.0 amd64)
sig2=$(man "$d2" | jq -r '.config.annotations["io.fatelf.signature"]')
man "$d1" | jq -cj --arg s "$sig2" '.config.annotations["io.fatelf.signature"] = $s' >badsig.json
bd=sha256:$(sha256sum <badsig.json | cut -c1-64)
curl -sf -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary @badsig.json \
	"http://127.0.0.1:$P1/v2/fatelf/hello/manifests/$bd" || fail "PUT the manifest with a wrong signature" ""
idx 1.0 | jq -cj --arg d "$d1" --arg b "$bd" --argjson s "$(stat -c %s badsig.json)" \
	'.manifests |= map(if .digest == $d then .digest = $b | .size = $s else . end)' >badidx.json
curl -sf -X PUT -H 'Content-Type: application/vnd.oci.image.index.v1+json' --data-binary @badidx.json \
	"http://127.0.0.1:$P1/v2/fatelf/hello/manifests/badsig" || fail "PUT the index with it" ""
run ctl --json install "$REF:badsig"
check_eq "a manifest whose signature fails: SignatureInvalid" "1 io.fatelf.Manager.SignatureInvalid" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r .error)"

# a blob whose bytes are not its digest's: the big file's, changed in the
# registry's storage (same size)
big=$(sha256sum <t1/opt/hello/share/big | cut -c1-64)
bigd=$(man "$d1" | jq -r --arg o "$big" '.layers[] | select(.annotations["io.fatelf.object"] == $o) | .digest')
bigf=r1/data/docker/registry/v2/blobs/sha256/${bigd:7:2}/${bigd:7}/data
cp "$bigf" big.saved
flip_byte "$bigf" 5000
run ctl --json install "$REF:1.0"
check_eq "a blob whose bytes are not its digest: RepositoryInvalid (exit 5)" "5 io.fatelf.Manager.RepositoryInvalid" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r .error)"
check_match "... naming the blob" "${bigd:7:16}" "$(tail -1 <<<"$RUN_OUT" | jq -r .parameters.message)"
cp big.saved "$bigf"

# the registry going away mid-pull: a stand-in in front of r1 that sends
# half of the big blob, then stops listening
cat >dying.py <<'EOF'
import http.server, os, sys, urllib.request
port, up, blob = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        req = urllib.request.Request(up + self.path, headers={"Accept": self.headers.get("Accept", "*/*")})
        with urllib.request.urlopen(req) as r:
            body = r.read()
            ctype = r.headers.get("Content-Type", "application/octet-stream")
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if blob in self.path:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            os._exit(0)
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
P4=$(free_port)
python3 dying.py "$P4" "http://127.0.0.1:$P1" "${bigd:7}" 2>dying.err &
PIDS+=($!)
for ((i = 0; i < 50; i++)); do curl -s -o /dev/null "http://127.0.0.1:$P4/v2/" && break; sleep 0.1; done
run ctl --json install "oci://127.0.0.1:$P4/fatelf/hello:1.0"
check_eq "the registry going away mid-pull: FetchFailed" "1 io.fatelf.Manager.FetchFailed" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r .error)"
check_match "... naming the registry" "127.0.0.1:$P4" "$(tail -1 <<<"$RUN_OUT" | jq -r '.parameters.url + " " + .parameters.message')"
check_eq "after every failure: nothing installed" "$before" "$(tree_sums "$ROOT")"
check_eq "... and no package listed" "0" "$(ctl --json list | jq '.packages | length')"
run ctl install "oci://127.0.0.1:$P1/Fatelf/Hello:1.0"
check_eq "a reference that is not one: refused" 1 "$RC"

daemon_stop
t_done
