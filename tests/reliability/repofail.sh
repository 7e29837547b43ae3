#!/bin/bash
# Repository installs when the network misbehaves (doc/repository.md):
#  - a server that cuts every object's first answer at half: the install
#    resumes each with a Range request and the files are the vendor's;
#  - an object truncated on the server: the install fails naming the
#    repository, with nothing installed;
#  - an nginx proxy_cache in front of the repository: a second machine (a
#    second private fatelfd with its own root and state) installs the same
#    package with every object a cache HIT and no object request reaching
#    the origin;
#  - fatelfd killed with SIGKILL while it downloads: no helper outlives
#    it, the restart recovers, nothing is installed, and the next install
#    works and leaves the download cache empty.
. "$(dirname "$0")/../integration/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init repofail
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq python3 minisign nginx curl gcc aarch64-linux-gnu-gcc

gcc -static -O2 -o in-x86_64 "$top_srcdir/tests/integration/hello.c"
aarch64-linux-gnu-gcc -static -O2 -o in-aarch64 "$top_srcdir/tests/integration/hello.c"
minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G" "no key"
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G" "no key"
mkdir -p keys && cp vendor.pub keys/
DAEMON_KEYS=$T_WORK/keys

mkdir -p t/opt/hello/bin t/opt/hello/share
"$FATELF" glue -o t/opt/hello/bin/hello in-x86_64 in-aarch64 >/dev/null
head -c 3000000 /dev/urandom >t/opt/hello/share/big
for i in 1 2 3 4 5; do head -c 200000 /dev/urandom >"t/opt/hello/share/mid$i"; done
echo small >t/opt/hello/share/small
"$FATELF" bundle create -o hello.fatbundle --name hello --version 1.0 --sign vendor.key t >/dev/null
"$FATELF" repo init --sign repo.key www/repo >/dev/null
"$FATELF" repo add --sign repo.key www/repo hello.fatbundle >/dev/null || fail "repo add" "see above"
chmod -R go+rX www
big=$(sha256sum t/opt/hello/share/big | cut -c1-64)
BIGOBJ=objects/${big:0:2}/$big.zst

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	daemon_cleanup
}
daemon_init
trap cleanup EXIT

wait_http() {
	local i
	for ((i = 0; i < 100; i++)); do
		curl -s -o /dev/null "$1" && return 0
		sleep 0.1
	done
	return 1
}

# ---- a server that cuts each object's first answer at half
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
        rng = self.headers.get("Range") or "-"
        path = os.path.normpath(self.path.lstrip("/"))
        with lock:
            with open(log, "a") as f:
                f.write("%s %s\n" % (self.path, rng))
            first = self.path not in seen
            seen.add(self.path)
        try:
            with open(os.path.join(root, path), "rb") as f:
                data = f.read()
        except OSError:
            self.send_error(404)
            return
        start = int(rng[6:-1]) if rng.startswith("bytes=") and rng.endswith("-") else 0
        if start:
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if first and path.startswith("objects/") and len(body) > 65536:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)

srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("ready", flush=True)
srv.serve_forever()
EOF
CPORT=$(free_port)
: >cut.log
python3 cutserver.py "$CPORT" "$T_WORK/www/repo" "$T_WORK/cut.log" >cut.out 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$CPORT/index" || fail "the cutting server starts" "$(cat cut.out)"

daemon_prepare d1 "Repositories=$T_WORK/d1/repos.d"
daemon_start d1 || fail "fatelfd starts" "see $T_WORK/d1/log"
check "repo add cut" ctl repo add cut "http://127.0.0.1:$CPORT" --key repo.pub
check "update" ctl update
run ctl install hello
check_eq "install through a server that cuts every object at half exits 0" 0 "$RC"
check_match "... the big object was asked again from where it was cut" "^/$BIGOBJ bytes=[1-9][0-9]*-$" "$(cat cut.log)"
check_cmp "... and the big file is the vendor's" t/opt/hello/share/big d1/root/opt/hello/share/big
check_cmp "... as is the program (the x86_64 record)" in-x86_64 d1/root/opt/hello/bin/hello
check "remove hello" ctl remove hello

# ---- a truncated object
cp "www/repo/$BIGOBJ" big.saved
head -c 100000 big.saved >"www/repo/$BIGOBJ"
run ctl install hello
check_eq "an object truncated on the server: install fails" 1 "$((RC != 0))"
check_match "... naming the repository" "repository cut" "$RUN_ERR"
check_eq "... nothing is installed" "" "$(ctl --json list | jq -r '.packages[].name')"
check_eq "... nor left in the root" "" "$(find d1/root -type f ! -name ld.so.cache)"
cp big.saved "www/repo/$BIGOBJ"
daemon_stop

# ---- a caching proxy in front of the repository
OPORT=$(free_port)
PPORT=$(free_port)
mkdir -p ngx/cache
nginx_conf "$T_WORK/ngx" "	log_format origin '\$uri \$status';
	log_format cache '\$uri \$status \$upstream_cache_status';
	proxy_cache_path $T_WORK/ngx/cache levels=1:2 keys_zone=repo:10m max_size=1g inactive=1h use_temp_path=off;
	server {
		listen 127.0.0.1:$OPORT;
		root $T_WORK/www;
		access_log $T_WORK/ngx/logs/origin.log origin;
	}
	server {
		listen 127.0.0.1:$PPORT;
		access_log $T_WORK/ngx/logs/cache.log cache;
		location / {
			proxy_pass http://127.0.0.1:$OPORT;
			proxy_cache repo;
			proxy_cache_valid 200 1h;
			proxy_cache_key \$uri;
		}
	}"
nginx -c "$T_WORK/ngx/nginx.conf" -p "$T_WORK/ngx" -g 'daemon off;' 2>ngx/logs/stderr &
PIDS+=($!)
wait_http "http://127.0.0.1:$PPORT/repo/index" || fail "nginx starts" "$(cat ngx/logs/stderr ngx/logs/error.log 2>/dev/null)"
: >ngx/logs/origin.log
: >ngx/logs/cache.log

daemon_prepare m1 "Repositories=$T_WORK/m1/repos.d"
daemon_start m1 || fail "machine 1's fatelfd starts" "see $T_WORK/m1/log"
check "machine 1: repo add through the cache" ctl repo add main "http://127.0.0.1:$PPORT/repo" --key repo.pub
check "machine 1: update" ctl update
check "machine 1: install hello" ctl install hello
daemon_stop
objs1=$(awk '$1 ~ /^\/repo\/objects\// {print $1}' ngx/logs/origin.log | sort -u)
check "machine 1's objects came from the origin" test -n "$objs1"
: >ngx/logs/origin.log
: >ngx/logs/cache.log

daemon_prepare m2 "Repositories=$T_WORK/m2/repos.d"
daemon_start m2 || fail "machine 2's fatelfd starts" "see $T_WORK/m2/log"
check "machine 2: repo add through the cache" ctl repo add main "http://127.0.0.1:$PPORT/repo" --key repo.pub
check "machine 2: update" ctl update
check "machine 2: install hello" ctl install hello
check "... the same tree as machine 1's" diff -r m1/root/opt m2/root/opt
objs2=$(awk '$1 ~ /^\/repo\/objects\// {print $1}' ngx/logs/cache.log | sort -u)
check_eq "machine 2 asked for the same objects" "$objs1" "$objs2"
check_eq "... every one a cache HIT" "" "$(awk '$1 ~ /^\/repo\/objects\// && $3 != "HIT"' ngx/logs/cache.log)"
check_eq "... and no object request reached the origin" "" "$(awk '$1 ~ /^\/repo\/objects\//' ngx/logs/origin.log)"
daemon_stop

# ---- fatelfd killed while it downloads
SPORT=$(free_port)
nginx_conf "$T_WORK/ngs" "	server {
		listen 127.0.0.1:$SPORT;
		root $T_WORK/www;
		limit_rate 300k;
	}"
mkdir -p ngs
nginx -c "$T_WORK/ngs/nginx.conf" -p "$T_WORK/ngs" -g 'daemon off;' 2>ngs/logs/stderr &
PIDS+=($!)
wait_http "http://127.0.0.1:$SPORT/repo/index" || fail "the slow nginx starts" "$(cat ngs/logs/stderr)"
daemon_prepare k1 "Repositories=$T_WORK/k1/repos.d"
daemon_start k1 || fail "fatelfd starts" "see $T_WORK/k1/log"
check "repo add slow" ctl repo add slow "http://127.0.0.1:$SPORT/repo" --key repo.pub
check "update" ctl update
check "install --no-wait hello (a download of several seconds)" ctl install --no-wait hello
# staging: the objects' download runs beside it, each staged as it comes
staging() { ctl --json status | jq -e '.progress.phase == "staging" and .progress.bytes_done > 0' >/dev/null; }
for ((i = 0; i < 100; i++)); do
	staging && break
	sleep 0.1
done
check "... it is downloading and staging what came" staging
check "... through the helper" test -n "$(pgrep -P "$DPID" -f fatelf-fetch)"
helpers=$(pgrep -P "$DPID" -f fatelf-fetch)
daemon_kill
# alive: a process that is not a zombie waiting for init to reap it
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
left=
for ((i = 0; i < 30; i++)); do
	left=
	for p in $helpers; do alive "$p" && left="$left $p"; done
	[ -z "$left" ] && break
	sleep 0.1
done
check_eq "no download helper outlives the killed daemon" "" "$left"
daemon_start k1 || fail "fatelfd restarts" "see $T_WORK/k1/log"
check_eq "after the restart nothing is installed" "" "$(ctl --json list | jq -r '.packages[].name')"
check_eq "... nothing is left in the root" "" "$(find k1/root -type f ! -name ld.so.cache)"
check_eq "... and no transaction is pending" "" \
	"$(ctl --json history | jq -r '.transactions[] | select(.state == "pending") | .id')"
check "install hello again" ctl install hello
check_cmp "... the big file is the vendor's" t/opt/hello/share/big k1/root/opt/hello/share/big
check_eq "... and the download cache is empty" "" "$(find k1/state/cache -type f)"
daemon_stop
check_no_sanitizer_report

t_done
