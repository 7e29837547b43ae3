#!/bin/bash
# fatelf-fetch --batch: a repository's objects from its mirrors, as frames
# on stdout (fetch/fetch_batch.h). A small script rebuilds each object
# from the frames, checking them as it goes (offsets, sizes, one end per
# id), and the objects are compared with the served files byte for byte.
#
#  - 50 files of 1 B to 3 MB from nginx, 4 at a time: all arrive, their
#    frames interleave, and nginx's log shows at most 4 connections; over
#    https (a failpoints build, which takes the tests' CA), all over HTTP/2
#    on one connection;
#  - a mirror that is down, first: every file comes from the second;
#  - a server that closes the connection after half of each file: each
#    file arrives whole, the second request asking for "Range: bytes=
#    HALF-"; one that answers such a request with 200: the file starts
#    again at offset 0 and arrives whole;
#  - a file missing on every mirror: "fail ID 404 URL: ..." naming the last
#    mirror without its password, exit 1, the others done;
#  - a body longer than the size given: fail, and no frame goes past the
#    size (also for a server that announces no length);
#  - the deny list: every mirror is one root configured, so a mirror on
#    127.0.0.2 is used with 127.0.0.0/8 or 127.0.0.2/32 denied, whatever
#    the first mirror is; a redirect into a denied network is refused;
#  - file: mirrors with --allow-file, refused without;
#  - input refused: exit 2, one line on stderr, nothing on stdout;
#  - --deadline bounds each object against a server that drips, and
#    --min-rate sends it to the next mirror;
#  - a redirect to file: is refused.
. "$(dirname "$0")/lib.sh"

t_init fetchbatch
FETCH=$top_builddir/fetch/fatelf-fetch
t_require_exec "$FETCH"
t_require_tool python3 nginx cmp

SECRET=s3cretpw
OTHER_PIDS=()
cleanup() {
	local p
	for p in "${OTHER_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}
trap cleanup EXIT

connects() { # HOST PORT
	python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)' "$1" "$2" \
		2>/dev/null
}

# ---------------------------------------------------------------- the files
mkdir -p www/files www/empty ngx
python3 - <<'EOF'
import os, random
rng = random.Random(20261206)
sizes = [1, 2, 3 << 20, (3 << 20) - 1, 4096, 65536, 65537]
while len(sizes) < 50:
    sizes.append(rng.choice([rng.randint(1, 4096), rng.randint(4096, 256 << 10), rng.randint(256 << 10, 3 << 20)]))
for i, n in enumerate(sizes):
    with open("www/files/f%02d" % i, "wb") as f:
        f.write(os.urandom(n))
EOF
ls www/files >files.list
NFILES=$(wc -l <files.list)
check_eq "50 files to serve" 50 "$NFILES"

# gets FILE [SIZE-OF-ZERO-EVERY-N]: "get ID files/NAME SIZE" lines, ids 100+i;
# every other one with size 0 (not known).
gets() {
	local i=0 n
	while read -r n; do
		if [ $((i % 2)) -eq 1 ]; then
			echo "get $((100 + i)) $n 0"
		else
			echo "get $((100 + i)) $n $(file_size "www/files/$n")"
		fi
		i=$((i + 1))
	done <files.list
}

# The frame reader: rebuilds each object in DIR from the frames, checks
# the protocol, and prints one line per end ("done ID TOTAL", "fail ID CODE
# TEXT"), "restart ID" when an object's data starts again at 0, and
# "interleaved N" (data frames that follow another id's before that one
# ended), or "error ..." for a broken rule; every frame's first line goes
# to HEADS.
cat >frames.py <<'EOF'
import os, sys
frames, inp, outdir, heads = sys.argv[1:5]
heads = open(heads, "w")
sizes = {}
for line in open(inp):
    w = line.split()
    if w and w[0] == "get":
        sizes[int(w[1])] = int(w[3])
os.makedirs(outdir, exist_ok=True)
data = open(frames, "rb").read()
ended, last_off, files, open_ids = set(), {}, {}, set()
i = inter = 0
prev = None
def err(msg):
    print("error " + msg)
    sys.exit(0)
while i < len(data):
    nl = data.find(b"\n", i)
    if nl < 0:
        err("a frame without its newline at byte %d" % i)
    line = data[i:nl].decode("ascii", "replace")
    i = nl + 1
    w = line.split(" ")
    heads.write(line + "\n")
    if w[0] == "data" and len(w) == 4:
        fid, off, ln = int(w[1]), int(w[2]), int(w[3])
        if fid not in sizes or fid in ended:
            err("data for id %d, unknown or ended" % fid)
        if sizes[fid] and off + ln > sizes[fid]:
            err("data %d %d %d past the size %d" % (fid, off, ln, sizes[fid]))
        if i + ln > len(data):
            err("data %d cut short" % fid)
        if off == 0 and last_off.get(fid, 0) > 0:
            print("restart %d" % fid)
        last_off[fid] = off + ln
        if prev is not None and prev != fid and prev in open_ids:
            inter += 1
        open_ids.add(fid)
        prev = fid
        f = files.get(fid)
        if f is None:
            f = files[fid] = open(os.path.join(outdir, str(fid)), "wb")
        f.seek(off)
        f.write(data[i:i + ln])
        i += ln
    elif w[0] == "done" and len(w) == 3:
        fid, total = int(w[1]), int(w[2])
        if fid not in sizes or fid in ended:
            err("done for id %d, unknown or ended" % fid)
        ended.add(fid)
        open_ids.discard(fid)
        f = files.pop(fid, None) or open(os.path.join(outdir, str(fid)), "wb")
        f.truncate(total)
        f.close()
        print(line)
    elif w[0] == "fail" and len(w) >= 4:
        fid = int(w[1])
        if fid not in sizes or fid in ended:
            err("fail for id %d, unknown or ended" % fid)
        ended.add(fid)
        open_ids.discard(fid)
        print(line)
    else:
        err("not a frame: %r" % line[:80])
missing = sorted(set(sizes) - ended)
if missing:
    err("no end for ids %s" % missing)
print("interleaved %d" % inter)
EOF

# batch NAME OPTION...: runs fatelf-fetch --batch with NAME.in on stdin;
# NAME.out, NAME.err, $RC; NAME.sum the frame reader's lines, objects in
# NAME.d/, frames' first lines in NAME.heads.
batch() {
	local name=$1
	shift
	timeout 120 "$FETCH" --batch "$@" <"$name.in" >"$name.out" 2>"$name.err"
	RC=$?
	python3 frames.py "$name.out" "$name.in" "$name.d" "$name.heads" >"$name.sum" 2>&1
}
# ends NAME: the done and fail lines' count by kind, "DONE FAIL"
ends() {
	echo "$(grep -c '^done ' "$1.sum") $(grep -c '^fail ' "$1.sum")"
}
# same NAME: every file of files.list with its id in NAME.d is the served one
same() {
	local i=0 n bad=
	while read -r n; do
		cmp -s "www/files/$n" "$1.d/$((100 + i))" || bad="$bad $n"
		i=$((i + 1))
	done <files.list
	echo "${bad:-all equal}"
}

# ---------------------------------------------------------------- servers
PORT=$(free_port)
SPORT=$(free_port)
# https (HTTP/2) with a certificate for 127.0.0.1, when this build of
# fatelf-fetch takes the tests' CA (FATELF_FETCH_TEST_CAINFO).
TLS=no
if [ "${FATELF_FAILPOINTS:-}" = yes ] && command -v openssl >/dev/null 2>&1; then
	mkdir -p tls
	if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout tls/key.pem -out tls/cert.pem >tls/openssl.out 2>&1; then
		TLS=yes
	else
		fail "openssl makes a certificate for 127.0.0.1" "$(cat tls/openssl.out)"
	fi
fi
TLS_SERVER=
[ "$TLS" = yes ] && TLS_SERVER="	server {
		listen 127.0.0.1:$SPORT ssl http2;
		ssl_certificate $T_WORK/tls/cert.pem;
		ssl_certificate_key $T_WORK/tls/key.pem;
		root $T_WORK/www;
		access_log $T_WORK/ngx/logs/tls.log batch;
	}"
nginx_conf "$T_WORK/ngx" \
	"	log_format batch '\$connection \$request_uri \$status \"\$http_range\" \$server_protocol';
	server {
		listen 127.0.0.1:$PORT;
		listen [::1]:$PORT;
		root $T_WORK/www;
		access_log $T_WORK/ngx/logs/batch.log batch;
		location ~ ^/hop/(.*)\$ {
			return 302 http://127.0.0.2:$PORT/files/\$1;
		}
		location /tofile/ {
			return 302 file:///etc/passwd;
		}
	}" \
	"	server {
		listen 127.0.0.2:$PORT;
		root $T_WORK/www;
		access_log $T_WORK/ngx/logs/lo2.log batch;
	}" \
	"$TLS_SERVER"
nginx -c "$T_WORK/ngx/nginx.conf" -p "$T_WORK/ngx" -g 'daemon off;' 2>ngx/logs/stderr &
OTHER_PIDS+=($!)
if ! wait_for 10 connects 127.0.0.1 "$PORT" || ! wait_for 10 connects 127.0.0.2 "$PORT"; then
	fail "nginx answers on 127.0.0.1:$PORT and 127.0.0.2:$PORT" "$(cat ngx/logs/stderr ngx/logs/error.log)"
	t_done
fi
BASE=http://127.0.0.1:$PORT
HAVE_V6=no
connects ::1 "$PORT" && HAVE_V6=yes

# A server that cuts: /cut/NAME honours Range, and the first request for
# each path gets half its body, then the connection closes; /norange/NAME
# cuts the same way but answers every request with the whole (200);
# /nolen/NAME sends the whole body without a length, ending it by
# closing. Each request is logged as "PATH RANGE".
cat >cutserver.py <<'EOF'
import os, socket, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
root, log = sys.argv[2], sys.argv[3]
seen, lock = set(), threading.Lock()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        mode, _, name = self.path.lstrip("/").partition("/")
        rng = self.headers.get("Range") or "-"
        with lock:
            with open(log, "a") as f:
                f.write("%s %s\n" % (self.path, rng))
            first = self.path not in seen
            seen.add(self.path)
        try:
            with open(os.path.join(root, os.path.basename(name)), "rb") as f:
                data = f.read()
        except OSError:
            self.send_error(404)
            return
        start = 0
        if mode == "cut" and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
        if start:
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        body = data[start:]
        if mode == "nolen":
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if first and mode in ("cut", "norange"):
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)
        if mode == "nolen":
            self.close_connection = True

srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("ready", flush=True)
srv.serve_forever()
EOF
CPORT=$(free_port)
: >cut.log
python3 cutserver.py "$CPORT" "$T_WORK/www/files" "$T_WORK/cut.log" >cut.out 2>&1 &
OTHER_PIDS+=($!)
wait_for 10 grep -q ready cut.out || fail "the cutting server starts" "$(cat cut.out)"

# ================================================================ 50 files, 4 at a time
{ echo "mirror $BASE/files"; gets; } >all.in
: >ngx/logs/batch.log
batch all --parallel 4
check_eq "50 files from nginx, 4 at a time: exit 0" 0 "$RC"
check_eq "... no stderr" "" "$(cat all.err)"
check_eq "... 50 done, none failed" "50 0" "$(ends all)"
check_eq "... the frames keep the protocol" "" "$(grep '^error' all.sum)"
check_eq "... every file is the served one" "all equal" "$(same all)"
check_match "... frames of different files interleave" '^interleaved [1-9]' "$(grep '^interleaved' all.sum)"
check_eq "... done gives each file's length" "" \
	"$(i=0; while read -r n; do grep -qx "done $((100 + i)) $(file_size "www/files/$n")" all.sum || echo "$n"; i=$((i + 1)); done <files.list)"
check_eq "... nginx served 50 requests" 50 "$(grep -c ' 200 ' ngx/logs/batch.log)"
CONNS=$(awk '{print $1}' ngx/logs/batch.log | sort -u | wc -l)
if [ "$CONNS" -ge 1 ] && [ "$CONNS" -le 4 ]; then
	pass "... over $CONNS connections (kept alive, at most 4)"
else
	fail "... over at most 4 connections" "$CONNS: $(awk '{print $1}' ngx/logs/batch.log | sort | uniq -c | tr '\n' ' ')"
fi

if [ "$TLS" = yes ]; then
	{ echo "mirror https://127.0.0.1:$SPORT/files"; gets; } >tls.in
	FATELF_FETCH_TEST_CAINFO=$T_WORK/tls/cert.pem batch tls --parallel 4
	check_eq "the 50 files over https, 4 at a time: exit 0, every file the served one" "0 50 0 all equal" \
		"$RC $(ends tls) $(same tls)"
	check_eq "... every request over HTTP/2" "50 HTTP/2.0" "$(awk '{print $NF}' ngx/logs/tls.log | sort | uniq -c | awk '{print $1, $2}')"
	check_eq "... multiplexed over one connection" 1 "$(awk '{print $1}' ngx/logs/tls.log | sort -u | wc -l)"
else
	echo "# not a failpoints build, or no openssl: fatelf-fetch takes no test CA, https is not tried"
fi

{ echo "mirror $BASE/files/"; gets; } >one.in
batch one --parallel 1
check_eq "one at a time, the mirror ending in /: exit 0, every file the served one" "0 50 0 all equal" \
	"$RC $(ends one) $(same one)"

# ================================================================ failover
DOWN=$(free_port)
{ echo "mirror http://127.0.0.1:$DOWN/files"; echo "mirror $BASE/files"; gets; } >down.in
batch down
check_eq "a mirror that is down, then a good one: exit 0" 0 "$RC"
check_eq "... every file arrives, the served one" "50 0 all equal" "$(ends down) $(same down)"

{ echo "mirror $BASE/empty"; echo "mirror $BASE/files"; gets; } >m404.in
batch m404
check_eq "a mirror that answers 404, then a good one: exit 0, every file the served one" "0 50 0 all equal" \
	"$RC $(ends m404) $(same m404)"

# ================================================================ cut connections
BIG=f02
BIGSIZE=$(file_size www/files/$BIG)
printf 'mirror http://127.0.0.1:%s/cut\nget 1 %s %s\nget 2 f06 0\nget 3 f00 1\n' "$CPORT" "$BIG" "$BIGSIZE" >cut.in
batch cut
check_eq "a server that closes after half of each file: exit 0, 3 done" "0 3 0" "$RC $(ends cut)"
check_eq "... the files are whole" "same same same" \
	"$(cmp -s www/files/$BIG cut.d/1 && echo same) $(cmp -s www/files/f06 cut.d/2 && echo same) $(cmp -s www/files/f00 cut.d/3 && echo same)"
check_eq "... the second request for a file asks for the rest (Range)" \
	"/cut/$BIG - /cut/$BIG bytes=$((BIGSIZE / 2))-" "$(grep "^/cut/$BIG " cut.log | tr '\n' ' ' | sed 's/ $//')"
check_eq "... its data resumed at the half, no restart" "" "$(grep '^restart' cut.sum)"
check_match "... data frames at the half" "^data 1 $((BIGSIZE / 2)) " "$(grep "^data 1 $((BIGSIZE / 2)) " cut.heads)"

printf 'mirror http://127.0.0.1:%s/norange\nget 7 %s %s\n' "$CPORT" "$BIG" "$BIGSIZE" >norange.in
batch norange
check_eq "a server that answers the range request with 200: exit 0, the file whole" "0 1 0 same" \
	"$RC $(ends norange) $(cmp -s www/files/$BIG norange.d/7 && echo same)"
check_eq "... the request asked for a range" "/norange/$BIG bytes=$((BIGSIZE / 2))-" \
	"$(grep "^/norange/$BIG " cut.log | tail -1)"
check_eq "... and the data started again at offset 0" "restart 7" "$(grep '^restart' norange.sum)"

# ================================================================ 404 everywhere
{
	echo "mirror http://fatelf:$SECRET@127.0.0.1:$PORT/files"
	echo "mirror http://fatelf:$SECRET@127.0.0.1:$PORT/empty/"
	gets | head -5
	echo "get 9 missing/object.zst 10"
} >miss.in
batch miss
check_eq "a file that every mirror lacks: exit 1" 1 "$RC"
check_eq "... the others done, it failed" "5 1" "$(ends miss)"
check_eq "... fail, 404, the last mirror's URL without the password, why" \
	"fail 9 404 $BASE/empty/missing/object.zst: the server answered HTTP 404 Not Found" \
	"$(grep '^fail' miss.sum)"
check_eq "... the password is nowhere in stdout or stderr" "" "$(grep -al "$SECRET" miss.out miss.err)"
check_eq "... no stderr" "" "$(cat miss.err)"

# ================================================================ more bytes than the size
SMALL=f05
SMALLSIZE=$(file_size www/files/$SMALL)
printf 'mirror %s/files\nget 1 %s %s\nget 2 %s %s\n' "$BASE" "$BIG" $((BIGSIZE - 1)) "$SMALL" "$SMALLSIZE" >big.in
batch big
check_eq "a body longer than its size (Content-Length): exit 1, it fails, the other is done" "1 1 1" \
	"$RC $(ends big)"
check_match "... saying why" "^fail 1 200 $BASE/files/$BIG: .*$BIGSIZE bytes, not the expected $((BIGSIZE - 1))|^fail 1 200 $BASE/files/$BIG: the body is larger than the expected $((BIGSIZE - 1)) bytes" \
	"$(grep '^fail' big.sum)"
check_eq "... no frame past the size" "" "$(grep '^error' big.sum)"

printf 'mirror http://127.0.0.1:%s/nolen\nget 1 %s %s\nget 2 %s 0\n' "$CPORT" "$BIG" $((BIGSIZE - 1000)) "$SMALL" >nolen.in
batch nolen
check_eq "a body without a length, longer than its size: exit 1, it fails; one of size 0 is done" "1 1 1" \
	"$RC $(ends nolen)"
check_eq "... saying why" \
	"fail 1 200 http://127.0.0.1:$CPORT/nolen/$BIG: the body is larger than the expected $((BIGSIZE - 1000)) bytes" \
	"$(grep '^fail' nolen.sum)"
check_eq "... no frame past the size (the reader checks each)" "" "$(grep '^error' nolen.sum)"
check_eq "... the one of size 0 is whole" same "$(cmp -s www/files/$SMALL nolen.d/2 && echo same)"
check_eq "... --max-bytes bounds an object of size 0" "1 fail 2 200 http://127.0.0.1:$CPORT/nolen/$SMALL: the download is larger than the limit of 100 bytes" \
	"$(timeout 60 "$FETCH" --batch --max-bytes 100 <nolen.in >nolen2.out 2>&1; echo "$?") $(python3 frames.py nolen2.out nolen.in nolen2.d nolen2.heads | grep '^fail 2')"

# ================================================================ the deny list
# Five small files; the first mirror has none of them.
{ gets | awk '$4 != 0 && $4 < 300000' | head -5; } >gets5
lo2_lines() { wc -l <ngx/logs/lo2.log 2>/dev/null || echo 0; }

{ echo "mirror $BASE/empty"; echo "mirror http://127.0.0.2:$PORT/files"; cat gets5; } >deny1.in
before=$(lo2_lines)
batch deny1 --deny-networks 127.0.0.0/8
check_eq "127.0.0.0/8 denied, first mirror on 127.0.0.1 (in it): the mirror on 127.0.0.2 is used, exit 0" \
	"0 5 0" "$RC $(ends deny1)"
check_eq "... 127.0.0.2 served them" 5 "$(($(lo2_lines) - before))"

if [ "$HAVE_V6" = yes ]; then
	{ echo "mirror http://[::1]:$PORT/empty"; echo "mirror http://127.0.0.2:$PORT/files"; cat gets5; } >deny2.in
	before=$(lo2_lines)
	batch deny2 --deny-networks 127.0.0.0/8
	check_eq "127.0.0.0/8 denied, first mirror on ::1 (not in it): the configured mirror on 127.0.0.2 is used, exit 0" \
		"0 5 0" "$RC $(ends deny2)"
	check_eq "... 127.0.0.2 served them" 5 "$(($(lo2_lines) - before))"
else
	echo "# ::1 does not answer here: the first mirror outside 127.0.0.0/8 is not tried"
fi

{ echo "mirror $BASE/empty"; echo "mirror http://127.0.0.2:$PORT/files"; cat gets5; } >deny3.in
before=$(lo2_lines)
batch deny3 --deny-networks 127.0.0.2/32
check_eq "127.0.0.2/32 denied: the configured mirror on 127.0.0.2 is used all the same, exit 0" \
	"0 5 0" "$RC $(ends deny3)"
check_eq "... 127.0.0.2 served them" 5 "$(($(lo2_lines) - before))"
before=$(lo2_lines)

{ echo "mirror $BASE/hop"; cat gets5; } >deny4.in
batch deny4 --deny-networks 127.0.0.2/32
check_eq "a redirect into 127.0.0.2/32, denied: exit 1, all fail" "1 0 5" "$RC $(ends deny4)"
check_match "... naming the hop and the network" \
	"^fail [0-9]+ 302 $BASE/hop/f[0-9]+: redirected to http://127\.0\.0\.2:$PORT/files/f[0-9]+: 127\.0\.0\.2 is in a denied network \(127\.0\.0\.2/32\)$" \
	"$(grep '^fail' deny4.sum | head -1)"
check_eq "... nothing reached 127.0.0.2" "$before" "$(lo2_lines)"
batch deny4
check_eq "... followed without the deny list" "0 5 0" "$RC $(ends deny4)"

printf 'mirror %s/tofile\nget 1 x 0\n' "$BASE" >tofile.in
batch tofile --allow-file
check_eq "a redirect to file:///etc/passwd, even with --allow-file: refused, exit 1" \
	"1 fail 1 302 $BASE/tofile/x: redirected to file:///etc/passwd: only redirects to http and https are followed" \
	"$RC $(grep '^fail' tofile.sum)"
check_eq "... no data" "" "$(grep '^data' tofile.heads)"

# ================================================================ file: mirrors
{ echo "mirror file://$T_WORK/www/empty"; echo "mirror file://$T_WORK/www/files"; gets; } >file.in
batch file --allow-file
check_eq "file: mirrors with --allow-file (the first lacks every file): exit 0" 0 "$RC"
check_eq "... every file is the served one" "50 0 all equal" "$(ends file) $(same file)"
batch file
check_eq "... without --allow-file: exit 2, one line, nothing on stdout" "2 1 0" \
	"$RC $(grep -c . file.err) $(wc -c <file.out)"
check_match "... saying why" "line 1: file://.*: file URLs are not allowed here" "$(cat file.err)"

# ================================================================ input refused
bad_input() { # DESC ERE INPUT
	printf '%b' "$3" >bad.in
	batch bad
	check_eq "input refused, $1: exit 2, one line on stderr, nothing on stdout" "2 1 0" \
		"$RC $(grep -c . bad.err) $(wc -c <bad.out)"
	check_match "... saying why" "$2" "$(cat bad.err)"
}
bad_input "no mirror" 'no "mirror" line' ''
bad_input "a get before the mirrors" 'line 1: a get before any mirror' 'get 1 a 1\nmirror http://x/\n'
bad_input "a mirror after a get" 'line 3: a mirror after a get' 'mirror http://x/\nget 1 a 1\nmirror http://y/\n'
bad_input "a path with .." 'line 2: a path with a ".." component' 'mirror http://x/\nget 1 a/../b 1\n'
bad_input "an absolute path" 'line 2: an absolute path' 'mirror http://x/\nget 1 /etc/passwd 1\n'
bad_input "a path with a space" 'line 2: "get" takes an id, a path and a size' 'mirror http://x/\nget 1 a b 1\n'
bad_input "an id past 2^31" 'line 2: bad id "2147483649"' 'mirror http://x/\nget 2147483649 a 1\n'
bad_input "a size that is not a number" 'line 2: bad size "12k"' 'mirror http://x/\nget 1 a 12k\n'
bad_input "an id twice" 'id 1 in two gets' 'mirror http://x/\nget 1 a 1\nget 1 b 1\n'
bad_input "a last line cut short" 'line 2: no newline at its end' 'mirror http://x/\nget 1 a 1'
bad_input "CRLF" 'line 1: a byte that is not printable ASCII' 'mirror http://x/\r\n'
bad_input "17 mirrors" 'line 17: more than 16 mirrors' "$(for i in $(seq 17); do printf 'mirror http://m%d/\\n' "$i"; done)"
bad_input "an ftp mirror with a password" '^fatelf-fetch: --batch: standard input: line 1: ftp://x/: only http and https URLs are accepted$' \
	"mirror ftp://u:$SECRET@x/\n"
bad_input "a line that is a URL" '^fatelf-fetch: --batch: standard input: line 1: not a "mirror" or "get" line$' \
	"http://u:$SECRET@x/\n"
printf 'mirror http://127.0.0.1:%s/\nget 2147483648 a 0\nget 0 a 0\n' "$DOWN" >edge.in
timeout 20 "$FETCH" --batch <edge.in >edge.out 2>edge.err
check_eq "ids 0 and 2^31 are taken (a mirror that is down: both fail, exit 1)" "1 fail 2147483648 0 fail 0 0 " \
	"$? $(grep -ao '^fail [0-9]* [0-9]*' edge.out | sort -r | tr '\n' ' ')"

# ================================================================ the deadline
DPORT=$(free_port)
python3 "$top_srcdir/tests/reliability/httpstall.py" "$DPORT" >drip.out 2>&1 &
OTHER_PIDS+=($!)
wait_for 10 grep -q ready drip.out || fail "the dripping server starts" "$(cat drip.out)"
printf 'mirror http://127.0.0.1:%s/\nget 1 drip 0\nget 2 drip2 1000000\n' "$DPORT" >drip.in
t0=$(date +%s)
batch drip --deadline 3
secs=$(($(date +%s) - t0))
check_eq "a server that drips, --deadline 3: exit 1, both fail" "1 0 2" "$RC $(ends drip)"
check_match "... saying why" "^fail 1 200 http://127.0.0.1:$DPORT/drip: the download did not end within its deadline of 3 s \([0-9]+ bytes received\)$" \
	"$(grep '^fail 1' drip.sum)"
if [ "$secs" -le 10 ]; then pass "... within 10 s ($secs s)"; else fail "... within 10 s" "after $secs s"; fi

printf 'mirror http://127.0.0.1:%s/\nmirror http://127.0.0.1:%s/\nget 1 drip 0\n' "$DPORT" "$DPORT" >slow.in
t0=$(date +%s)
batch slow --min-rate 100 --low-speed-time 2
secs=$(($(date +%s) - t0))
check_eq "--min-rate 100 --low-speed-time 2, two dripping mirrors: exit 1, it fails" "1 0 1" "$RC $(ends slow)"
check_match "... after the second, saying why" "^fail 1 200 http://127.0.0.1:$DPORT/drip: slower than 100 bytes/s for 2 s" \
	"$(grep '^fail 1' slow.sum)"
if [ "$secs" -le 12 ]; then pass "... within 12 s ($secs s)"; else fail "... within 12 s" "after $secs s"; fi

t_done
