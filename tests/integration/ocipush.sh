#!/bin/bash
# fatelf repo push into real registries: Debian's docker-registry (CNCF
# Distribution), started here on 127.0.0.1 three times (a plain one, a
# mirror, and one with htpasswd auth), and skopeo. A 4-architecture
# package (hello cross-compiled by every compiler installed, glued, and 40
# data files) is pushed. Checks:
#   - the index has one manifest per target, with its OCI platform, and one
#     for the fat content; skopeo inspect --raw shows it byte for byte;
#   - each target's manifest lists exactly the objects a native install
#     there writes (computed here: the files of `bundle extract --target`),
#     each layer a zstd frame whose digest the registry serves and whose
#     bytes hash to the object the layer names; the config is the signed
#     fat manifest, with its signature;
#   - a second push uploads nothing (HEAD only); a version with one file
#     changed uploads that one blob and the manifests;
#   - skopeo copy --all moves it to a second registry, unchanged;
#   - auth: refused without credentials (exit 4), refused with wrong ones,
#     a credentials file others may read is refused, pushes with them, and
#     the password is in no output;
#   - a registry that is down, and a malformed reference, are clear errors.
. "$(dirname "$0")/lib.sh"

t_init ocipush
t_require_exec "$FATELF"
t_require_tool docker-registry skopeo jq python3 curl zstd minisign gcc aarch64-linux-gnu-gcc
[ "$(uname -m)" = x86_64 ] || t_skip "the expected objects are computed for an x86_64 host"
python3 -c 'import crypt' 2>/dev/null || t_skip "python3's crypt module makes the htpasswd file"

hello_inputs
minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G" "no key"

hello_pair 300000 || fail "the bundles of hello 1.0 and 2.0" "bundle create failed"

# ---- registries
PIDS=()
trap 'kill "${PIDS[@]}" "${REGISTRY_PIDS[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
registry() { oci_registry "$@"; }
P1=$(free_port)
registry r1 "$P1" || fail "docker-registry starts" "$(cat r1/log)"
P2=$(free_port)
registry r2 "$P2" || fail "the mirror registry starts" "$(cat r2/log)"
python3 -c "import crypt; print('vendor:' + crypt.crypt('hunter2-secret', crypt.mksalt(crypt.METHOD_BLOWFISH)))" >htpasswd
P3=$(free_port)
registry r3 "$P3" "auth:
  htpasswd:
    realm: fatelf-test
    path: $T_WORK/htpasswd" || fail "the registry with auth starts" "$(cat r3/log)"

requests() { registry_requests "$1"; }
uploads() { requests "$1" | awk '$1 == "PUT" && $2 ~ /\/blobs\/uploads\// && $3 == 201' | wc -l; }
REF=oci://127.0.0.1:$P1/fatelf/hello

# ---- the first push
run "$FATELF" repo push --json hello-1.fatbundle "$REF"
check_eq "repo push exits 0" 0 "$RC"
check_eq "... tagged with the version" "oci://127.0.0.1:$P1/fatelf/hello:1.0" "$(jq -r .reference <<<"$RUN_OUT")"
nman=$(( ${#inputs[@]} + 1 ))
check_eq "... a manifest per target and one for the fat content" "$nman $nman" \
	"$(jq -r '"\(.manifests) \(.manifests_put)"' <<<"$RUN_OUT")"
check_eq "... every blob uploaded" "$(jq -r .blobs <<<"$RUN_OUT")" "$(jq -r .uploaded <<<"$RUN_OUT")"
check_eq "... as the registry's log says" "$(jq -r .uploaded <<<"$RUN_OUT")" "$(uploads r1)"
INDEX=$(jq -r .index <<<"$RUN_OUT")
check_eq "... one line that python3 parses too, naming the package, version and reference" \
	"hello 1.0 oci://127.0.0.1:$P1/fatelf/hello:1.0 1" \
	"$(python3 -c 'import json, sys
lines = sys.stdin.read().splitlines()
j = json.loads(lines[0])
print(j["package"], j["version"], j["reference"], len(lines))' <<<"$RUN_OUT" 2>&1)"

run skopeo inspect --tls-verify=false --raw "docker://127.0.0.1:$P1/fatelf/hello:1.0"
check_eq "skopeo inspect --raw exits 0" 0 "$RC"
printf '%s' "$RUN_OUT" >index.json
check_eq "... and shows the index the push made, byte for byte" "$INDEX" "sha256:$(sha256sum <index.json | cut -c1-64)"
check_eq "... an OCI image index" "application/vnd.oci.image.index.v1+json" "$(jq -r .mediaType index.json)"
declare -A ARCH=([x86_64]=amd64 [aarch64]=arm64 [i686]=386 [riscv64]=riscv64)
want=$(for i in "${inputs[@]}"; do echo "linux/${ARCH[${i#in-}]}"; done | sort)
check_eq "... with the platforms of the targets" "$want" \
	"$(jq -r '.manifests[] | select(.platform) | "\(.platform.os)/\(.platform.architecture)"' index.json | sort)"
check_eq "... and one without a platform: the fat content" "fat" \
	"$(jq -r '.manifests[] | select(.platform | not) | .annotations["io.fatelf.form"]' index.json)"

# manifest DIGEST: a manifest from the registry
manifest() { curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://127.0.0.1:$P1/v2/fatelf/hello/manifests/$1"; }
# objects TARGET: the objects a native install on TARGET writes, from the bundle
objects() {
	rm -rf "ex-$1" && "$FATELF" bundle extract --target "$1" hello-1.fatbundle "ex-$1" >/dev/null &&
		find "ex-$1" -type f -exec sha256sum {} + | cut -c1-64 | sort -u
}
amd=$(jq -r '.manifests[] | select(.platform.architecture == "amd64") | .digest' index.json)
manifest "$amd" >amd64.json
check_eq "the amd64 manifest: an OCI image manifest of the fatelf artifact type" \
	"application/vnd.oci.image.manifest.v1+json application/vnd.fatelf.bundle.v1" \
	"$(jq -r '"\(.mediaType) \(.artifactType)"' amd64.json)"
check_eq "... whose layers are exactly the x86_64 install's objects" "$(objects x86_64)" \
	"$(jq -r '.layers[].annotations["io.fatelf.object"]' amd64.json | sort)"
arm=$(jq -r '.manifests[] | select(.platform.architecture == "arm64") | .digest' index.json)
check_eq "the arm64 manifest's layers are the aarch64 install's objects" "$(objects aarch64)" \
	"$(manifest "$arm" | jq -r '.layers[].annotations["io.fatelf.object"]' | sort)"
fat=$(jq -r '.manifests[] | select(.platform | not) | .digest' index.json)
allrec=$(for i in "${inputs[@]}"; do sha256sum <"$i" | cut -c1-64; done)
check_eq "the fat manifest lists every record and every data file" \
	"$( (objects x86_64; echo "$allrec") | sort -u)" \
	"$(manifest "$fat" | jq -r '.layers[].annotations["io.fatelf.object"]' | sort -u)"
cfg=$(jq -r .config.digest amd64.json)
curl -sf "http://127.0.0.1:$P1/v2/fatelf/hello/blobs/$cfg" -o config.json
check_eq "the config is the fat manifest, by its digest" "$cfg" "sha256:$(sha256sum <config.json | cut -c1-64)"
check_eq "... the package's" "hello 1.0" "$(jq -r '"\(.package.name) \(.package.version)"' config.json)"
jq -j '.config.annotations["io.fatelf.signature"]' amd64.json >config.json.minisig
check "... and its signature verifies with the vendor's key" minisign -V -q -p vendor.pub -m config.json -x config.json.minisig
big=$(sha256sum <t1/opt/hello/share/big | cut -c1-64)
bigd=$(jq -r --arg o "$big" '.layers[] | select(.annotations["io.fatelf.object"] == $o) | .digest' amd64.json)
curl -sf "http://127.0.0.1:$P1/v2/fatelf/hello/blobs/$bigd" -o big.zst
check_eq "a layer's blob has its digest" "$bigd" "sha256:$(sha256sum <big.zst | cut -c1-64)"
check_eq "... and is one zstd frame of the object's bytes" "$big" "$(zstd -dc big.zst | sha256sum | cut -c1-64)"

# ---- pushes again
before=$(requests r1 | wc -l)
run "$FATELF" repo push --json hello-1.fatbundle "$REF"
check_eq "a second push exits 0" 0 "$RC"
check_eq "... uploads no blob and no manifest" "0 0" "$(jq -r '"\(.uploaded) \(.manifests_put)"' <<<"$RUN_OUT")"
check_eq "... the registry's log: HEADs, and the tag's PUT alone" "PUT /v2/fatelf/hello/manifests/1.0 201" \
	"$(requests r1 | tail -n +$((before + 1)) | grep -v '^HEAD ')"
before=$(requests r1 | wc -l)
run "$FATELF" repo push --json hello-2.fatbundle "$REF"
check_eq "a push of 2.0, where one of 41 files changed, exits 0" "0 oci://127.0.0.1:$P1/fatelf/hello:2.0" \
	"$RC $(jq -r .reference <<<"$RUN_OUT")"
push2=$RUN_OUT
f07=$(sha256sum <t2/opt/hello/share/f07 | cut -c1-64)
check_eq "... uploading two blobs: the changed file's and the new fat manifest (the config)" 2 \
	"$(jq -r .uploaded <<<"$push2")"
check_eq "... the registry's log: those two uploads, nothing else new but manifests" 2 \
	"$(requests r1 | tail -n +$((before + 1)) | awk '$1 == "PUT" && $2 ~ /\/blobs\/uploads\//' | wc -l)"
run skopeo inspect --tls-verify=false --raw "docker://127.0.0.1:$P1/fatelf/hello:2.0"
amd2=$(jq -r '.manifests[] | select(.platform.architecture == "amd64") | .digest' <<<"$RUN_OUT")
manifest "$amd2" >amd64-2.json
check_eq "... of the sizes of f07's blob and of the new config" \
	"$(jq -r --arg o "$f07" '[(.layers[] | select(.annotations["io.fatelf.object"] == $o) | .size), .config.size] | add' amd64-2.json)" \
	"$(jq -r .uploaded_bytes <<<"$push2")"
check_match "... whose amd64 manifest lists the new f07" "$f07" "$(jq -r '.layers[].annotations["io.fatelf.object"]' amd64-2.json)"

# ---- a standard tool moves it
run skopeo copy --all --src-tls-verify=false --dest-tls-verify=false \
	"docker://127.0.0.1:$P1/fatelf/hello:1.0" "docker://127.0.0.1:$P2/mirror/hello:1.0"
check_eq "skopeo copy --all to a second registry exits 0" 0 "$RC"
run skopeo inspect --tls-verify=false --raw "docker://127.0.0.1:$P2/mirror/hello:1.0"
check_eq "... and the mirror's index is the same bytes" "$INDEX" "sha256:$(printf '%s' "$RUN_OUT" | sha256sum | cut -c1-64)"
check_eq "... its amd64 manifest too" "$amd" "$(jq -r '.manifests[] | select(.platform.architecture == "amd64") | .digest' <<<"$RUN_OUT")"

# ---- auth
AREF=oci://127.0.0.1:$P3/fatelf/hello
run "$FATELF" repo push hello-1.fatbundle "$AREF"
check_eq "a registry with auth, no credentials: exit 4" 4 "$RC"
check_match "... saying it wants them" "wants credentials" "$RUN_ERR"
printf 'vendor:wrong-one\n' >bad.creds
chmod 600 bad.creds
run "$FATELF" repo push --credentials bad.creds hello-1.fatbundle "$AREF"
check_eq "wrong credentials: exit 4, refused" "4 fatelf: repo push: 127.0.0.1:$P3: the registry refused the credentials" \
	"$RC $RUN_ERR"
printf 'vendor:hunter2-secret\n' >good.creds
chmod 644 good.creds
run "$FATELF" repo push --credentials good.creds hello-1.fatbundle "$AREF"
check_eq "a credentials file others may read is refused (exit 1)" 1 "$RC"
check_match "... saying why" "no one else may read" "$RUN_ERR"
chmod 600 good.creds
run "$FATELF" repo push --credentials good.creds hello-1.fatbundle "$AREF"
check_eq "the right credentials: pushed" 0 "$RC"
check_eq "... and the password is in none of the output" "" "$(grep -l hunter2 <<<"$RUN_OUT$RUN_ERR")"
run skopeo inspect --tls-verify=false --creds vendor:hunter2-secret --raw "docker://127.0.0.1:$P3/fatelf/hello:1.0"
check_eq "... the same index there" "$INDEX" "sha256:$(printf '%s' "$RUN_OUT" | sha256sum | cut -c1-64)"

# A registry of bearer tokens (a stand-in: docker-registry's token auth
# needs a JWT signer), whose uploads go to another host: the token comes
# from its realm with the credentials; the token and the credentials go to
# the registry alone, never to the upload's other host.
cat >fakereg.py <<'EOF'
import base64, http.server, json, sys, threading
reg_port, store_port, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
good = "Basic " + base64.b64encode(b"vendor:hunter2-secret").decode()
lock = threading.Lock()
def note(line):
    with lock, open(log, "a") as f:
        f.write(line + "\n")
class Reg(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def reply(self, code, headers={}, body=b""):
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
    def handle_any(self):
        self.body()
        auth = self.headers.get("Authorization", "")
        note("reg %s %s %s" % (self.command, self.path.split("?")[0], auth.split(" ")[0] or "none"))
        if self.path.startswith("/token"):
            if auth != good:
                return self.reply(401, {"WWW-Authenticate": 'Basic realm="t"'})
            return self.reply(200, {}, json.dumps({"token": "tok123"}).encode() + b"\n")
        if auth != "Bearer tok123":
            return self.reply(401, {"WWW-Authenticate":
                'Bearer realm="http://127.0.0.1:%d/token",service="fake",scope="repository:x:pull,push"' % reg_port})
        if self.command == "HEAD":
            return self.reply(404)
        if self.command == "POST":
            return self.reply(202, {"Location": "http://127.0.0.1:%d/upload/1" % store_port})
        return self.reply(201)
    do_GET = do_HEAD = do_POST = do_PUT = handle_any
class Store(Reg):
    def handle_any(self):
        self.body()
        note("store %s %s" % (self.command, self.headers.get("Authorization", "none").split(" ")[0]))
        self.reply(201)
    do_PUT = handle_any
for port, cls in ((store_port, Store), (reg_port, Reg)):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), cls)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
EOF
P4=$(free_port)
P5=$(free_port)
python3 fakereg.py "$P4" "$P5" fake.log >fake.out 2>&1 &
PIDS+=($!)
for ((i = 0; i < 50; i++)); do grep -q ready fake.out 2>/dev/null && break; sleep 0.1; done
run "$FATELF" repo push --credentials good.creds hello-1.fatbundle "oci://127.0.0.1:$P4/x:1.0"
check_eq "a registry of bearer tokens whose uploads go to another host: pushed" 0 "$RC"
check_match "... the token asked of its realm with the credentials" "reg GET /token Basic" "$(cat fake.log)"
check_match "... the registry's requests carrying the token" "reg PUT /v2/x/manifests/1.0 Bearer" "$(cat fake.log)"
check_match "... the other host getting the uploads" "store PUT" "$(cat fake.log)"
check_eq "... with neither the token nor the credentials" "" "$(grep '^store' fake.log | grep -v ' none$')"

# ---- failures
dead=$(free_port)
run "$FATELF" repo push hello-1.fatbundle "oci://127.0.0.1:$dead/fatelf/hello"
check_eq "a registry that is down: exit 1" 1 "$RC"
check_match "... naming it" "127\.0\.0\.1:$dead.*(connect|refused)" "$RUN_ERR"
run "$FATELF" repo push hello-1.fatbundle "oci://127.0.0.1:$P1/Fatelf/Hello"
check_eq "upper case in the name: a usage error (exit 2)" 2 "$RC"
run "$FATELF" repo push hello-1.fatbundle "http://127.0.0.1:$P1/fatelf/hello"
check_eq "not an oci:// reference: a usage error (exit 2)" 2 "$RC"
run "$FATELF" repo push nosuch.fatbundle "$REF"
check_eq "a bundle that is not there: exit 3" 3 "$RC"
head -c 1000 hello-1.fatbundle >cut.fatbundle
run "$FATELF" repo push cut.fatbundle "$REF:cut"
check_eq "a cut bundle: exit 1, nothing pushed under its tag" "1 404" \
	"$RC $(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: application/vnd.oci.image.index.v1+json' "http://127.0.0.1:$P1/v2/fatelf/hello/manifests/cut")"

t_done
