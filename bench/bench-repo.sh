#!/bin/bash
# Repository benchmarks: bench/bench-repo.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# A private fatelfd installs from a repository (doc/repository.md) that
# nginx serves on 127.0.0.1, through a throttling proxy of our own where
# a row says so (one token bucket for all its connections: a link, not a
# per-connection limit). The package has four architectures: BENCH_REPO_PROGS
# programs (default 40), each the FatELF of tests/integration/hello.c
# built (dynamically linked, so that no two programs share a libc) by
# four cross compilers (gcc, aarch64, i686, riscv64; fewer than
# four skips the benchmark), each build given its own .note.salt section
# of 256 KiB to 1.25 MiB of real machine code (a slice of this system's
# libraries, so that no two files compress into each other), plus 200
# data files of text (compressible, 4 MB). Rows:
#   (1) bytes fetched by a native install on x86_64 (update + install:
#       the pointer, the index and its signature, the manifest and its
#       signature, and the objects, as nginx's $body_bytes_sent counts
#       them)  vs  index + manifest + the x86_64-thinned content
#       compressed (its files, extracted by fatelf bundle extract
#       --target x86_64, each compressed by zstd -19, the objects' level)
#       (<= 1.05). The notes give the same against one bsdtar archive of
#       that content (solid, so files compress into each other, which
#       objects fetched one by one cannot), and the whole bundle's size.
#   (2) upgrade bytes: a package of BENCH_REPO_FILES files (default 2,000)
#       of 50 KB random bytes in which one file changed: the bytes the
#       upgrade fetches (update + install)  vs  that object + the index
#       + the manifest (<= 1.0: nothing else), and  vs  the bundle (<= 0.01).
#   (3) time over a slow link (the proxy at BENCH_REPO_RATE MB/s, default
#       20): the repository install  vs  curl of the whole bundle, then its
#       install from the file. The target is 1 / (0.8 x (bundle bytes /
#       fetched bytes)): faster by at least 0.8 x the ratio of bytes.
#   (4) time unthrottled (nginx on loopback): the repository install  vs
#       the install of the same bundle from a local file (<= 1.2).
# Every install in (3) and (4) is after a remove, into the same root, with
# the cache of pages dropped of nothing (the files are served from RAM on
# both sides). BENCH_RUNS (default 5) rounds.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" && pwd) || exit 2
FATELF=$builddir/tools/fatelf
FATELFD=$builddir/daemon/fatelfd
FATELFCTL=$builddir/client/fatelfctl
RUNS=${BENCH_RUNS:-5}
NPROGS=${BENCH_REPO_PROGS:-40}
NFILES=${BENCH_REPO_FILES:-2000}
RATE=${BENCH_REPO_RATE:-20}
for t in nginx python3 curl minisign bsdtar objcopy zstd jq; do
	command -v "$t" >/dev/null || { echo "bench: skipped: $t is not installed" >&2; exit 77; }
done
declare -A CC=([x86_64]=gcc [aarch64]=aarch64-linux-gnu-gcc [i686]=i686-linux-gnu-gcc
	[riscv64]=riscv64-linux-gnu-gcc)
declare -A OBJCOPY=([x86_64]=objcopy [aarch64]=aarch64-linux-gnu-objcopy [i686]=i686-linux-gnu-objcopy
	[riscv64]=riscv64-linux-gnu-objcopy)
for a in x86_64 aarch64 i686 riscv64; do
	command -v "${CC[$a]}" >/dev/null && command -v "${OBJCOPY[$a]}" >/dev/null ||
		{ echo "bench: skipped: ${CC[$a]} or ${OBJCOPY[$a]} is not installed" >&2; exit 77; }
done
[ "$(uname -m)" = x86_64 ] || { echo "bench: skipped: row (1) is for an x86_64 host" >&2; exit 77; }

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-repo.XXXXXX") || exit 3
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	cd / && [ -z "${BENCH_KEEP:-}" ] && rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3
. "$top/bench/lib.sh"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "n/a" }'; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- the 4-architecture package
echo "# making $NPROGS programs for 4 architectures" >&2
for a in x86_64 aarch64 i686 riscv64; do
	"${CC[$a]}" -O2 -o "prog-$a" "$top/tests/integration/hello.c" || exit 1
done
cat /usr/lib/x86_64-linux-gnu/*.so* /usr/lib/gcc-cross/*/*/*.a 2>/dev/null | head -c 200000000 >corpus
mkdir -p t1/opt/bench/bin t1/opt/bench/share
off=0
for ((i = 0; i < NPROGS; i++)); do
	glue=()
	for a in x86_64 aarch64 i686 riscv64; do
		n=$(((256 << 10) + ((i * 37 + ${#a} * 11) % 1024) * 1024))
		dd if=corpus of=salt bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$n" status=none
		off=$((off + n))
		"${OBJCOPY[$a]}" --add-section .note.salt=salt "prog-$a" "p-$a" || exit 1
		glue+=("p-$a")
	done
	"$FATELF" glue -o "t1/opt/bench/bin/p$i" "${glue[@]}" >/dev/null || exit 1
done
python3 - t1/opt/bench/share <<'EOF'
import os, random, sys
r = random.Random(7)
words = ["fat", "elf", "record", "machine", "install", "thin", "repository", "object", "mirror", "index"]
for i in range(200):
    with open(os.path.join(sys.argv[1], "doc%03d.txt" % i), "w") as f:
        n = 0
        while n < 20000:
            line = " ".join(r.choice(words) for _ in range(12)) + "\n"
            f.write(line)
            n += len(line)
EOF
rm -f corpus salt p-*
minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 && minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 ||
	{ echo "bench: minisign -G failed" >&2; exit 1; }
mkdir -p keys && cp vendor.pub keys/
"$FATELF" bundle create -o big.fatbundle --name big --version 1 --sign vendor.key t1 >/dev/null || exit 1

# ---- the upgrade package: NFILES random files, one of them changed in 2
upgrade_pair "$NFILES" || exit 1

"$FATELF" repo init --sign repo.key www/repo >/dev/null &&
	"$FATELF" repo add --sign repo.key www/repo big.fatbundle up-1.fatbundle >/dev/null || exit 1
cp big.fatbundle www/big.fatbundle
chmod -R go+rX www

# ---- nginx, and the throttling proxy
NPORT=$(free_port)
PPORT=$(free_port)
mkdir -p ngx/logs ngx/tmp
cat >ngx/nginx.conf <<EOF
worker_processes 1;
master_process off;
error_log $work/ngx/logs/error.log;
pid $work/ngx/nginx.pid;
events { worker_connections 256; }
http {
	log_format bytes '\$uri \$status \$body_bytes_sent';
	access_log $work/ngx/logs/access.log bytes;
	client_body_temp_path $work/ngx/tmp/body;
	proxy_temp_path $work/ngx/tmp/proxy;
	server {
		listen 127.0.0.1:$NPORT;
		root $work/www;
	}
}
EOF
nginx -c "$work/ngx/nginx.conf" -p "$work/ngx" -g 'daemon off;' 2>ngx/logs/stderr &
PIDS+=($!)
cat >throttle.py <<'EOF'
# A TCP proxy whose connections share one token bucket: a link of RATE MB/s.
import asyncio, sys, time
port, upstream, rate = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) * 1e6
tokens, last, lock = 0.0, time.monotonic(), None

async def take(n):
    global tokens, last
    async with lock:
        while True:
            now = time.monotonic()
            tokens = min(rate * 0.05, tokens + (now - last) * rate)
            last = now
            if tokens >= n:
                tokens -= n
                return
            await asyncio.sleep((n - tokens) / rate)

async def pipe(r, w, throttled):
    try:
        while True:
            data = await r.read(16384)
            if not data:
                break
            if throttled:
                await take(len(data))
            w.write(data)
            await w.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        w.close()

async def handle(cr, cw):
    ur, uw = await asyncio.open_connection("127.0.0.1", upstream)
    await asyncio.gather(pipe(cr, uw, False), pipe(ur, cw, True))

async def main():
    global lock
    lock = asyncio.Lock()
    srv = await asyncio.start_server(handle, "127.0.0.1", port)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()

asyncio.run(main())
EOF
python3 throttle.py "$PPORT" "$NPORT" "$RATE" >throttle.out 2>&1 &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do
	curl -s -o /dev/null "http://127.0.0.1:$NPORT/repo/index" && grep -q ready throttle.out && break
	sleep 0.1
done

# ---- the daemon
bench_daemon "Repositories=$work/repos.d" || { echo "bench: fatelfd does not start" >&2; exit 1; }
ctl repo add fast "http://127.0.0.1:$NPORT/repo" --key repo.pub >/dev/null || exit 1
logbytes() { awk '{ s += $3 } END { printf "%d\n", s }' ngx/logs/access.log; }
objbytes() { awk '$1 ~ /^\/repo\/objects\// { s += $3 } END { printf "%d\n", s }' ngx/logs/access.log; }
size_of() { stat -c %s "$1"; }

# ---- (1) bytes of a native install
: >ngx/logs/access.log
ctl update >/dev/null && ctl install big >/dev/null || { echo "bench: install big failed" >&2; tail daemon.log >&2; exit 1; }
fetched=$(logbytes)
ptr=$(cut -d' ' -f3 www/repo/index)
index_b=$(($(size_of www/repo/index) + $(size_of "www/repo/indexes/$ptr.json") + $(size_of "www/repo/indexes/$ptr.json.minisig")))
man=$("$FATELF" repo list --json www/repo | jq -r '.packages[] | select(.name == "big") | .versions[0].manifest')
man_b=$(($(size_of "www/repo/manifests/$man/fatbundle.json") + $(size_of "www/repo/manifests/$man/fatbundle.json.minisig")))
"$FATELF" bundle extract --target x86_64 big.fatbundle thin >/dev/null || exit 1
bsdtar --zstd --options zstd:compression-level=19 -cf thin.tar.zst -C thin . || exit 1
solid_b=$(size_of thin.tar.zst)
# each file of the thinned tree compressed on its own, as zstd -19 does
thin_b=$(find thin -type f -print0 | xargs -0 -n 1 sh -c 'zstd -19 -q -c "$0" | wc -c' | awk '{ s += $1 } END { printf "%d\n", s }')
base1=$((index_b + man_b + thin_b))
addrow "(1) native install: bytes fetched" "$fetched" "$base1" "$(ratio "$fetched" "$base1")" 1.05
notes+=("(1) fetched $fetched bytes: index $index_b + manifest $man_b + objects $(objbytes) (+ the pointer and signatures); the x86_64-thinned content compressed file by file (zstd -19) $thin_b, as one archive (bsdtar, zstd -19) $solid_b: fetched / (index + manifest + that archive) = $(ratio "$fetched" "$((index_b + man_b + solid_b))"); the whole bundle $(size_of big.fatbundle) bytes ($(ratio "$fetched" "$(size_of big.fatbundle)") of it)")

# ---- (2) upgrade bytes
ctl install up >/dev/null || exit 1
"$FATELF" repo add --sign repo.key www/repo up-2.fatbundle >/dev/null || exit 1
chmod -R go+rX www
: >ngx/logs/access.log
ctl update >/dev/null && ctl install up >/dev/null || { echo "bench: upgrade failed" >&2; exit 1; }
fetched2=$(logbytes)
ptr=$(cut -d' ' -f3 www/repo/index)
index_b=$(($(size_of www/repo/index) + $(size_of "www/repo/indexes/$ptr.json") + $(size_of "www/repo/indexes/$ptr.json.minisig")))
man=$("$FATELF" repo list --json www/repo | jq -r '.packages[] | select(.name == "up") | .versions[] | select(.version == "2") | .manifest')
man_b=$(($(size_of "www/repo/manifests/$man/fatbundle.json") + $(size_of "www/repo/manifests/$man/fatbundle.json.minisig")))
ch=$(sha256sum u2/srv/data/f0007 | cut -c1-64)
obj_b=$(size_of "www/repo/objects/${ch:0:2}/$ch.zst")
nobj=$(awk '$1 ~ /^\/repo\/objects\//' ngx/logs/access.log | wc -l)
addrow "(2) upgrade, 1 of $NFILES changed: bytes" "$fetched2" "$((obj_b + index_b + man_b))" \
	"$(ratio "$fetched2" "$((obj_b + index_b + man_b))")" 1.0
addrow "(2) ... against the bundle" "$fetched2" "$(size_of up-2.fatbundle)" "$(ratio "$fetched2" "$(size_of up-2.fatbundle)")" 0.01
notes+=("(2) the upgrade fetched $nobj object(s): $obj_b bytes, + index $index_b + manifest $man_b = $fetched2 bytes; the bundle is $(size_of up-2.fatbundle) bytes")
ctl remove up >/dev/null

# ---- (3) a slow link, (4) unthrottled
ctl repo add slow "http://127.0.0.1:$PPORT/repo" --key repo.pub >/dev/null && ctl update >/dev/null || exit 1
ctl repo remove fast >/dev/null
ctl remove big >/dev/null
: >ngx/logs/access.log
ctl install big >/dev/null || exit 1
repo_bytes=$(logbytes)
bundle_bytes=$(size_of big.fatbundle)
target3=$(awk -v b="$bundle_bytes" -v r="$repo_bytes" 'BEGIN { printf "%.3f", 1 / (0.8 * b / r) }')
notes+=("(3) over the ${RATE} MB/s link: the repository install fetches $repo_bytes bytes, curl $bundle_bytes: a byte ratio of $(ratio "$bundle_bytes" "$repo_bytes"); the target is 1 / (0.8 x that)")
setup='ctl remove big >/dev/null 2>&1; rm -f dl.fatbundle; sync'
compare "(3) ${RATE} MB/s: repo install vs curl + install" "$target3" "$setup" \
	"ctl install big" \
	"curl -sf -o dl.fatbundle http://127.0.0.1:$PPORT/big.fatbundle && ctl install dl.fatbundle"
ctl repo add fast "http://127.0.0.1:$NPORT/repo" --key repo.pub >/dev/null && ctl repo remove slow >/dev/null &&
	ctl update >/dev/null || exit 1
cp big.fatbundle local.fatbundle
compare "(4) loopback: repo install vs install of the file" 1.2 "$setup" \
	"ctl install big" \
	"ctl install local.fatbundle"
ctl remove big >/dev/null 2>&1

report
rc=$?
printf '%s\n' "${notes[@]}"
exit $rc
