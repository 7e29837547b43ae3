#!/bin/bash
# fatelf-fetch --batch against OCI registries (fetch/fetch_batch.h,
# "Registry auth"): a stand-in registry in python on 127.0.0.1, whose
# behaviour each mirror's first path component picks, and Debian's real
# docker-registry with htpasswd auth when it is installed. Checks:
#
#  - a Bearer registry: a manifest by tag (served only to a request that
#    accepts the OCI index type), one by digest, and blobs by digest, one
#    of them redirected (307) to blob storage on another port; the bytes
#    of the frames are the served bytes; the token is asked for once for
#    the whole batch, with the credentials as HTTP Basic; every request
#    sends the Accept lines in their order; the storage gets no
#    Authorization header;
#  - without the accept lines the manifest is not found (404);
#  - a wrong password, and no credentials: exit 1, fail frames of code 401
#    saying so, with neither the password nor a token anywhere;
#  - a registry whose token expires within the batch: one fresh token,
#    every get done; one that refuses every token: fail 401, "refused";
#  - a Basic registry: works with a basic line, fails 401 without;
#  - a realm that is not http(s), and one in a denied network (a realm is
#    a hop the registry chose): fail with a clear text; the mirror's own
#    host denied is still used (it is root's choice), its realm with it;
#  - docker-registry with htpasswd: a blob and a manifest pushed there
#    with curl are fetched with a basic line (skipped when not installed).
. "$(dirname "$0")/lib.sh"

t_init fetchbatch-registry
FETCH=$top_builddir/fetch/fatelf-fetch
t_require_exec "$FETCH"
t_require_tool python3 curl cmp base64 sha256sum

USER_=vendor
PASS=hunter2-secret
GOOD=$(printf '%s:%s' "$USER_" "$PASS" | base64 -w0)
BAD=$(printf '%s:%s' "$USER_" wrong-pass | base64 -w0)
TOKEN_MARK=tok-Zq81   # every token the stand-in hands out starts so
MT_INDEX=application/vnd.oci.image.index.v1+json
MT_MANIFEST=application/vnd.oci.image.manifest.v1+json

OTHER_PIDS=()
cleanup() {
	local p
	for p in "${OTHER_PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}
trap cleanup EXIT

# ---------------------------------------------------------------- content
mkdir -p content
python3 - <<'EOF'
import hashlib, json, os, random
rng = random.Random(20261207)
blobs = []
for i, n in enumerate([1, 777, 65536 + 3, 1 << 20, 300000]):
    b = bytes(rng.getrandbits(8) for _ in range(n)) if n < 4096 else os.urandom(n)
    d = hashlib.sha256(b).hexdigest()
    open("content/" + d, "wb").write(b)
    blobs.append((d, n))
manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": "sha256:" + blobs[0][0],
                                  "size": blobs[0][1]},
                       "layers": [{"mediaType": "application/octet-stream", "digest": "sha256:" + d, "size": n}
                                  for d, n in blobs[1:]]}, indent=1).encode()
md = hashlib.sha256(manifest).hexdigest()
open("content/" + md, "wb").write(manifest)
index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                    "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                   "digest": "sha256:" + md, "size": len(manifest)}]}).encode()
open("content/index.json", "wb").write(index)
with open("content/list", "w") as f:
    for d, n in blobs:
        f.write("blob %s %d\n" % (d, n))
    f.write("manifest %s %d\n" % (md, len(manifest)))
EOF
mapfile -t BLOBS < <(awk '$1 == "blob" { print $2 }' content/list)
MDIGEST=$(awk '$1 == "manifest" { print $2 }' content/list)
# The blob that the registry sends to its storage on another port.
REDIR=${BLOBS[3]}

# ---------------------------------------------------------------- the stand-in
# reg.py PORT STORE-PORT LOG: the registry on 127.0.0.1:PORT and
# 127.0.0.2:PORT, blob storage on 127.0.0.1:STORE-PORT. The first path
# component is the mode:
#   bearer   Bearer challenge; token at /bearer/token for Basic USER:PASS
#   rotate   as bearer, but a token serves 3 requests, then is refused
#   never    as bearer, but no token is ever good enough
#   basic    Basic challenge, Basic USER:PASS
#   badrealm a Bearer challenge whose realm is ftp://
#   farrealm as bearer, but the realm is on 127.0.0.2
# LOG lines: "reg MODE PATH AUTH ACCEPT", "token MODE AUTH",
# "store PATH AUTH", AUTH one of none, Basic-good, Basic-bad, Bearer-good,
# Bearer-bad (never the credentials or the token themselves).
cat >reg.py <<'EOF'
import base64, http.server, json, os, sys, threading
port, store_port, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
redir = os.environ["REDIR"]
good_basic = "Basic " + base64.b64encode(os.environ["CREDS"].encode()).decode()
mark = os.environ["TOKEN_MARK"]
lock = threading.Lock()
state = {"serial": 0, "latest": {}, "uses": {}}
def note(line):
    with lock, open(log, "a") as f:
        f.write(line + "\n")
def kind(auth, good_bearer):
    if not auth:
        return "none"
    if auth.startswith("Basic "):
        return "Basic-good" if auth == good_basic else "Basic-bad"
    if auth.startswith("Bearer "):
        return "Bearer-good" if auth[7:] in good_bearer else "Bearer-bad"
    return "other"
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
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
    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        parts = self.path.split("?")[0].split("/")
        mode, rest = parts[1], "/".join(parts[2:])
        with lock:
            latest = state["latest"].get(mode)
        if rest == "token":
            ok = auth == good_basic
            note("token %s %s" % (mode, kind(auth, [])))
            if not ok:
                return self.reply(401, {"WWW-Authenticate": 'Basic realm="token"'})
            with lock:
                state["serial"] += 1
                tok = "%s-%d-%s" % (mark, state["serial"], mode)
                state["latest"][mode] = tok
                state["uses"][tok] = 0
            body = {"token": tok, "expires_in": 300}
            if "service=stand-in" not in self.path or "scope=repository%3Afatelf%2Fhello%3Apull" not in self.path:
                body = {"error": "service or scope missing: " + self.path}
            return self.reply(200, {"Content-Type": "application/json"}, json.dumps(body).encode())
        good = [latest] if latest and mode != "never" else []
        note("reg %s /%s %s %s" % (mode, rest, kind(auth, good), self.headers.get("Accept", "-").replace(" ", "")))
        realm = "http://127.0.0.1:%d/%s/token" % (port, mode)
        if mode == "badrealm":
            realm = "ftp://127.0.0.1:%d/token" % port
        if mode == "farrealm":
            realm = "http://127.0.0.2:%d/farrealm/token" % port
        if mode == "basic":
            if auth != good_basic:
                return self.reply(401, {"WWW-Authenticate": 'Basic realm="stand-in"'}, b"who are you\n")
        else:
            ok = auth.startswith("Bearer ") and auth[7:] in good
            if ok and mode == "rotate":
                with lock:
                    state["uses"][latest] += 1
                    ok = state["uses"][latest] <= 3
            if not ok:
                ch = 'Bearer realm="%s",service="stand-in",scope="repository:fatelf/hello:pull"' % realm
                return self.reply(401, {"WWW-Authenticate": ch, "Content-Type": "application/json"},
                                  b'{"errors":[{"code":"UNAUTHORIZED"}]}\n')
        if rest.startswith("v2/fatelf/hello/blobs/sha256:"):
            d = rest.split(":", 1)[1]
            if d == redir:
                return self.reply(307, {"Location": "http://127.0.0.1:%d/store/%s" % (store_port, d)})
            try:
                body = open("content/" + d, "rb").read()
            except OSError:
                return self.reply(404)
            return self.reply(200, {"Content-Type": "application/octet-stream"}, body)
        if rest.startswith("v2/fatelf/hello/manifests/"):
            ref = rest.rsplit("/", 1)[1]
            accept = self.headers.get("Accept", "")
            if ref == "1.0" and "application/vnd.oci.image.index.v1+json" in accept:
                return self.reply(200, {"Content-Type": "application/vnd.oci.image.index.v1+json"},
                                  open("content/index.json", "rb").read())
            if ref.startswith("sha256:") and "application/vnd.oci.image.manifest.v1+json" in accept:
                try:
                    body = open("content/" + ref[7:], "rb").read()
                except OSError:
                    return self.reply(404)
                return self.reply(200, {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}, body)
            return self.reply(404, {}, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}\n')
        return self.reply(404)
class Store(H):
    def do_GET(self):
        note("store %s %s" % (self.path, "present" if "Authorization" in self.headers else "none"))
        d = self.path.rsplit("/", 1)[1]
        self.reply(200, {}, open("content/" + d, "rb").read())
servers = [(("127.0.0.1", port), H), (("127.0.0.2", port), H), (("127.0.0.1", store_port), Store)]
for addr, cls in servers:
    srv = http.server.ThreadingHTTPServer(addr, cls)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
EOF
PORT=$(free_port)
SPORT=$(free_port)
REDIR=$REDIR CREDS="$USER_:$PASS" TOKEN_MARK=$TOKEN_MARK python3 reg.py "$PORT" "$SPORT" reg.log >reg.out 2>&1 &
OTHER_PIDS+=($!)
for ((i = 0; i < 100; i++)); do grep -q ready reg.out 2>/dev/null && break; sleep 0.05; done
grep -q ready reg.out || fail "the stand-in registry starts" "$(cat reg.out)"
: >reg.log

# The frame reader: rebuilds each id's bytes in DIR/ID and prints one line
# per end ("done ID TOTAL", "fail ID CODE TEXT"), or "error ..." for a
# frame that breaks the protocol.
cat >frames.py <<'EOF'
import os, sys
frames, outdir = sys.argv[1:3]
os.makedirs(outdir, exist_ok=True)
data = open(frames, "rb").read()
i, files, ended = 0, {}, set()
while i < len(data):
    nl = data.find(b"\n", i)
    if nl < 0:
        print("error a frame without its newline"); break
    w = data[i:nl].decode("ascii", "replace").split(" ")
    line = data[i:nl].decode("ascii", "replace")
    i = nl + 1
    if w[0] == "data" and len(w) == 4:
        fid, off, ln = int(w[1]), int(w[2]), int(w[3])
        f = files.get(fid) or open(os.path.join(outdir, str(fid)), "wb")
        files[fid] = f
        f.seek(off)
        f.write(data[i:i + ln])
        i += ln
    elif w[0] in ("done", "fail") and w[1] not in ended:
        ended.add(w[1])
        f = files.pop(int(w[1]), None)
        if f:
            if w[0] == "done":
                f.truncate(int(w[2]))
            f.close()
        print(line)
    else:
        print("error not a frame: %r" % line[:80]); break
EOF

# batch NAME OPTION...: fatelf-fetch --batch with NAME.in on stdin;
# NAME.out, NAME.err, $RC, NAME.sum (the frame reader's lines), NAME.d/.
batch() {
	local name=$1
	shift
	timeout 120 "$FETCH" --batch "$@" <"$name.in" >"$name.out" 2>"$name.err"
	RC=$?
	python3 frames.py "$name.out" "$name.d" >"$name.sum" 2>&1
}
ends() { echo "$(grep -c '^done ' "$1.sum") $(grep -c '^fail ' "$1.sum")"; }
# lines MODE [ACCEPT] [BASIC]: a whole input for the stand-in's MODE: the
# index by tag (id 1), the manifest by digest (id 2), every blob (10+i).
lines() {
	echo "mirror http://127.0.0.1:$PORT/$1"
	[ "${2:-}" = accept ] && printf 'accept %s\naccept %s\n' "$MT_INDEX" "$MT_MANIFEST"
	[ -n "${3:-}" ] && echo "basic $3"
	echo "get 1 v2/fatelf/hello/manifests/1.0 0"
	echo "get 2 v2/fatelf/hello/manifests/sha256:$MDIGEST 0"
	local i
	for i in "${!BLOBS[@]}"; do
		echo "get $((10 + i)) v2/fatelf/hello/blobs/sha256:${BLOBS[$i]} $(file_size "content/${BLOBS[$i]}")"
	done
}
# same NAME: the objects rebuilt are the served bytes
same() {
	local bad= i
	cmp -s content/index.json "$1.d/1" || bad="$bad index"
	cmp -s "content/$MDIGEST" "$1.d/2" || bad="$bad manifest"
	for i in "${!BLOBS[@]}"; do
		cmp -s "content/${BLOBS[$i]}" "$1.d/$((10 + i))" || bad="$bad blob$i"
	done
	echo "${bad:-all equal}"
}
# log_since N: reg.log from its line N+1
log_since() { tail -n +$(($1 + 1)) reg.log; }
# no_secret DESC FILE...: neither the password nor a token nor the
# credentials' base64 in the files
no_secret() {
	local d=$1
	shift
	check_eq "$d" "" "$(grep -l -e "$PASS" -e wrong-pass -e "$TOKEN_MARK" -e "$GOOD" -e "$BAD" "$@")"
}
NGETS=$((2 + ${#BLOBS[@]}))

# ---------------------------------------------------------------- bearer
lines bearer accept "$GOOD" >ok.in
n0=$(wc -l <reg.log)
batch ok
check_eq "a Bearer registry, with credentials and accept lines: exit 0" 0 "$RC"
check_eq "... every get done" "$NGETS 0" "$(ends ok)"
check_eq "... the frames' bytes are the served bytes (index, manifest, blobs)" "all equal" "$(same ok)"
check_eq "... one token request for the whole batch, with the credentials as Basic" "token bearer Basic-good" \
	"$(log_since "$n0" | grep '^token ')"
check_eq "... every registry request that was served carried the token" "" \
	"$(log_since "$n0" | awk '$1 == "reg" && $4 != "Bearer-good" && $4 != "none"')"
check_eq "... at most one request per get went without it (the first round)" yes \
	"$([ "$(log_since "$n0" | awk '$1 == "reg" && $4 == "none"' | wc -l)" -le "$NGETS" ] && echo yes)"
check_eq "... each request accepting the two types, in their order" "$MT_INDEX,$MT_MANIFEST" \
	"$(log_since "$n0" | awk '$1 == "reg" { print $5 }' | sort -u)"
check_eq "... the redirected blob came from the storage, which got no Authorization" "store /store/$REDIR none" \
	"$(log_since "$n0" | grep '^store ')"
no_secret "... no secret on stdout or stderr" ok.out ok.err

# A later batch is a new process: one token again, and the accept lines
# are what makes the manifest found.
lines bearer "" "$GOOD" >noaccept.in
n0=$(wc -l <reg.log)
batch noaccept
check_eq "without accept lines: exit 1, the two manifests not found, the blobs done" "1 $((NGETS - 2)) 2" \
	"$RC $(ends noaccept)"
check_match "... fail 404 for the index by tag" "^fail 1 404 http://127.0.0.1:$PORT/bearer/v2/fatelf/hello/manifests/1.0: " \
	"$(cat noaccept.sum)"
check_eq "... and curl's own Accept header sent" "*/*" "$(log_since "$n0" | awk '$1 == "reg" { print $5 }' | sort -u)"

# ---------------------------------------------------------------- refused
lines bearer accept "$BAD" >bad.in
n0=$(wc -l <reg.log)
batch bad
check_eq "a wrong password: exit 1, every get failed" "1 0 $NGETS" "$RC $(ends bad)"
check_eq "... each with code 401" "401" "$(awk '{ print $3 }' bad.sum | sort -u)"
check_match "... saying the registry refused the credentials" \
	"^fail 10 401 http://127.0.0.1:$PORT/bearer/v2/fatelf/hello/blobs/sha256:${BLOBS[0]}: the registry refused the credentials \(its token service answered HTTP 401\)$" \
	"$(grep '^fail 10 ' bad.sum)"
no_secret "... with no password, token or credentials on stdout or stderr" bad.out bad.err
check_eq "... the token service saw the wrong ones" "Basic-bad" \
	"$(log_since "$n0" | awk '$1 == "token" { print $3 }' | sort -u)"

lines bearer accept >anon.in
batch anon
check_eq "no credentials, a token service that wants them: exit 1, fail 401" "1 0 $NGETS 401" \
	"$RC $(ends anon) $(awk '{ print $3 }' anon.sum | sort -u)"
check_match "... saying the registry wants credentials" \
	": the registry wants credentials \(its token service answered HTTP 401\)$" "$(grep '^fail 10 ' anon.sum)"

# ---------------------------------------------------------------- tokens that expire
lines rotate accept "$GOOD" >rotate.in
n0=$(wc -l <reg.log)
batch rotate --parallel 1
check_eq "a token that serves 3 requests, one get at a time: exit 0, every get done" "0 $NGETS 0" \
	"$RC $(ends rotate)"
check_eq "... the bytes are the served bytes" "all equal" "$(same rotate)"
# 7 gets: the first without a token; 3 on token 1; a 401; 3 on token 2;
# a 401 for the seventh; token 3.
check_eq "... a fresh token each time the registry refused the old one" 3 \
	"$(log_since "$n0" | grep -c '^token rotate Basic-good')"

lines never accept "$GOOD" >never.in
n0=$(wc -l <reg.log)
batch never --parallel 1
check_eq "a registry that refuses every token: exit 1, every get failed, code 401" "1 0 $NGETS 401" \
	"$RC $(ends never) $(awk '{ print $3 }' never.sum | sort -u)"
check_match "... saying the registry refused the credentials" \
	"^fail 1 401 http://127.0.0.1:$PORT/never/v2/fatelf/hello/manifests/1.0: the registry refused the credentials \(HTTP 401\)$" \
	"$(cat never.sum)"
check_eq "... one token per get, none asked again and again" "$NGETS" \
	"$(log_since "$n0" | grep -c '^token never ')"
no_secret "... nothing secret in its output" never.out never.err

# ---------------------------------------------------------------- Basic
lines basic accept "$GOOD" >basic.in
n0=$(wc -l <reg.log)
batch basic
check_eq "a Basic registry with a basic line: exit 0, every get done" "0 $NGETS 0" "$RC $(ends basic)"
check_eq "... the bytes are the served bytes" "all equal" "$(same basic)"
check_eq "... the served requests carried the credentials, no token asked for" "Basic-good none|0" \
	"$(log_since "$n0" | awk '$1 == "reg" { print $4 }' | sort -u | tr '\n' ' ' | sed 's/ $//')|$(log_since "$n0" | grep -c '^token ')"
check_eq "... the storage got no Authorization" "store /store/$REDIR none" "$(log_since "$n0" | grep '^store ')"
lines basic accept >nobasic.in
batch nobasic
check_eq "a Basic registry without a basic line: exit 1, fail 401" "1 0 $NGETS 401" \
	"$RC $(ends nobasic) $(awk '{ print $3 }' nobasic.sum | sort -u)"
check_match "... saying the registry wants credentials" \
	"^fail 10 401 http://127.0.0.1:$PORT/basic/v2/fatelf/hello/blobs/sha256:${BLOBS[0]}: the registry wants credentials \(HTTP 401\)$" \
	"$(cat nobasic.sum)"

# ---------------------------------------------------------------- realms
lines badrealm accept "$GOOD" >badrealm.in
batch badrealm
check_eq "a realm that is ftp://: exit 1, fail 401" "1 0 $NGETS 401" \
	"$RC $(ends badrealm) $(awk '{ print $3 }' badrealm.sum | sort -u)"
check_match "... saying so" ": the registry's token realm ftp://127.0.0.1:$PORT/token is not https or http \(HTTP 401\)$" \
	"$(grep '^fail 10 ' badrealm.sum)"
lines farrealm accept "$GOOD" >farrealm.in
n0=$(wc -l <reg.log)
batch farrealm --deny-networks 127.0.0.2/32
check_eq "a realm in a denied network: exit 1, fail 401" "1 0 $NGETS 401" \
	"$RC $(ends farrealm) $(awk '{ print $3 }' farrealm.sum | sort -u)"
check_match "... saying so" ": the registry's token realm http://127.0.0.2:$PORT/farrealm/token: 127\.0\.0\.2 is in a denied network \(127\.0\.0\.2/32\)$" \
	"$(grep '^fail 10 ' farrealm.sum)"
check_eq "... and never reached" 0 "$(log_since "$n0" | grep -c '^token ')"
batch farrealm
check_eq "... allowed without the deny list: exit 0" "0 $NGETS 0" "$RC $(ends farrealm)"
lines bearer accept "$GOOD" >denyown.in
batch denyown --deny-networks 127.0.0.0/8
check_eq "127.0.0.0/8 denied, a mirror and realm on 127.0.0.1: the mirror's own host, so exit 0" "0 $NGETS 0" \
	"$RC $(ends denyown)"
check_eq "... the bytes are the served bytes" "all equal" "$(same denyown)"

# ---------------------------------------------------------------- docker-registry
if ! command -v docker-registry >/dev/null 2>&1; then
	echo "# SKIP docker-registry: not installed (the stand-in's checks ran)"
elif ! python3 -c 'import crypt' 2>/dev/null && ! command -v htpasswd >/dev/null 2>&1; then
	echo "# SKIP docker-registry: neither python3's crypt module nor htpasswd makes the htpasswd file"
else
	if python3 -c 'import crypt' 2>/dev/null; then
		python3 -c "import crypt, sys; print(sys.argv[1] + ':' + crypt.crypt(sys.argv[2], crypt.mksalt(crypt.METHOD_BLOWFISH)))" \
			"$USER_" "$PASS" >htpasswd 2>/dev/null
	else
		htpasswd -nbB "$USER_" "$PASS" | sed '/^$/d' >htpasswd
	fi
	RPORT=$(free_port)
	mkdir -p dr/data
	printf 'version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\nauth:\n  htpasswd:\n    realm: fatelf-test\n    path: %s\n' \
		"$T_WORK/dr/data" "$RPORT" "$T_WORK/htpasswd" >dr/config.yml
	docker-registry serve dr/config.yml >dr/log 2>&1 &
	OTHER_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RPORT/v2/")" != 000 ] && break
		sleep 0.1
	done
	R=http://127.0.0.1:$RPORT/v2/fatelf/hello
	# push DIGEST FILE: a monolithic upload
	push() {
		local loc
		loc=$(curl -sf -u "$USER_:$PASS" -X POST -D - -o /dev/null "$R/blobs/uploads/" |
			sed -n 's/^[Ll]ocation: *\([^\r]*\).*/\1/p')
		case $loc in http*) ;; *) loc=http://127.0.0.1:$RPORT$loc ;; esac
		case $loc in *\?*) loc="$loc&digest=sha256:$1" ;; *) loc="$loc?digest=sha256:$1" ;; esac
		curl -sf -u "$USER_:$PASS" -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$2" "$loc" \
			-o /dev/null -w '%{http_code}'
	}
	ok=yes
	for b in "${BLOBS[@]}"; do
		[ "$(push "$b" "content/$b")" = 201 ] || ok=no
	done
	[ "$(curl -sf -u "$USER_:$PASS" -X PUT -H "Content-Type: $MT_MANIFEST" --data-binary "@content/$MDIGEST" \
		-o /dev/null -w '%{http_code}' "$R/manifests/1.0")" = 201 ] || ok=no
	check_eq "docker-registry with htpasswd: the blobs and a manifest pushed with curl" yes "$ok"
	{
		echo "mirror http://127.0.0.1:$RPORT/"
		echo "accept $MT_MANIFEST"
		echo "basic $GOOD"
		echo "get 2 v2/fatelf/hello/manifests/1.0 0"
		for i in "${!BLOBS[@]}"; do
			echo "get $((10 + i)) v2/fatelf/hello/blobs/sha256:${BLOBS[$i]} 0"
		done
	} >dr.in
	batch dr
	check_eq "... fetched with a basic line: exit 0, every get done" "0 $((NGETS - 1)) 0" "$RC $(ends dr)"
	bad=
	cmp -s "content/$MDIGEST" dr.d/2 || bad="$bad manifest"
	for i in "${!BLOBS[@]}"; do
		cmp -s "content/${BLOBS[$i]}" "dr.d/$((10 + i))" || bad="$bad blob$i"
	done
	check_eq "... the bytes are the pushed bytes" "all equal" "${bad:-all equal}"
	no_secret "... nothing secret in its output" dr.out dr.err
	sed "s|^basic .*|basic $BAD|" dr.in >dr-bad.in
	batch dr-bad
	check_eq "... a wrong password: exit 1, fail 401" "1 0 $((NGETS - 1)) 401" \
		"$RC $(ends dr-bad) $(awk '{ print $3 }' dr-bad.sum | sort -u)"
	check_match "... the registry refused the credentials" ": the registry refused the credentials \(HTTP 401\)$" \
		"$(grep '^fail 2 ' dr-bad.sum)"
	no_secret "... nothing secret in its output" dr-bad.out dr-bad.err
	sed '/^basic /d' dr.in >dr-none.in
	batch dr-none
	check_match "... no basic line: fail 401, the registry wants credentials" \
		"^fail 2 401 http://127.0.0.1:$RPORT/v2/fatelf/hello/manifests/1.0: the registry wants credentials \(HTTP 401\)$" \
		"$(cat dr-none.sum)"
fi

t_done
