#!/bin/bash
# OCI registry benchmarks: bench/bench-oci.sh [BUILDDIR]   (default BUILDDIR: build/)
#
# fatelf repo push into Debian's docker-registry (CNCF Distribution),
# started here on 127.0.0.1. The package: BENCH_OCI_FILES files (default
# 2,000) of 50 KB random bytes, and version 2, in which one of them
# changed. Rows:
#   (1) push of version 2 after version 1: the bytes sent (blobs and
#       manifests, as fatelf repo push --json counts them)  vs  the changed
#       file's blob + the new config (the fat manifest) + the manifests and
#       the index, as the registry serves them (<= 1.0: nothing else);
#   (2) the same bytes  vs  the whole bundle of version 2 (<= 0.01).
#   (3) a native install (x86_64) by a private fatelfd of a 4-architecture
#       package (hello built static by gcc and the aarch64, i686 and
#       riscv64 cross compilers, glued, plus 40 files): the bytes the
#       registry served (its access log)  vs  the index + this machine's
#       manifest + its config + its blobs (<= 1.05); the whole bundle's
#       size beside.
# The registry's log gives the count of blob uploads, printed beside.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$top/build}" && pwd) || exit 2
FATELF=$builddir/tools/fatelf
FATELFD=$builddir/daemon/fatelfd
FATELFCTL=$builddir/client/fatelfctl
NFILES=${BENCH_OCI_FILES:-2000}
for t in docker-registry skopeo jq python3 curl minisign gcc aarch64-linux-gnu-gcc i686-linux-gnu-gcc \
	riscv64-linux-gnu-gcc; do
	command -v "$t" >/dev/null || { echo "bench: skipped: $t is not installed" >&2; exit 77; }
done

work=$(mktemp -d "${BENCH_DIR:-$builddir}/bench-oci.XXXXXX") || exit 3
PIDS=()
cleanup() {
	kill "${PIDS[@]}" 2>/dev/null
	wait 2>/dev/null
	cd / && [ -z "${BENCH_KEEP:-}" ] && rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 3
RUNS=1
. "$top/bench/lib.sh"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "n/a" }'; }

# ---- the package
minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || exit 1
upgrade_pair "$NFILES" || exit 1

# ---- the registry
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p reg/data
printf 'version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: %s/reg/data\nhttp:\n  addr: 127.0.0.1:%s\n' \
	"$work" "$port" >reg/config.yml
docker-registry serve reg/config.yml >reg/log 2>&1 &
PIDS+=($!)
for ((i = 0; i < 100; i++)); do
	curl -s -o /dev/null "http://127.0.0.1:$port/v2/" && break
	sleep 0.1
done
REF=oci://127.0.0.1:$port/bench/up

# ---- (1), (2)
"$FATELF" repo push up-1.fatbundle "$REF" >/dev/null || { echo "bench: push of 1 failed" >&2; exit 1; }
before=$(grep -c '"PUT /v2/bench/up/blobs/uploads/' reg/log)
out=$("$FATELF" repo push --json up-2.fatbundle "$REF") || { echo "bench: push of 2 failed" >&2; exit 1; }
blobs=$(($(grep -c '"PUT /v2/bench/up/blobs/uploads/' reg/log) - before))
sent=$(jq -r '.uploaded_bytes + .manifest_bytes' <<<"$out")
index=$(skopeo inspect --tls-verify=false --raw "docker://127.0.0.1:$port/bench/up:2")
index_b=$(printf '%s' "$index" | wc -c)
man_b=$(jq -r '[.manifests[].size] | add' <<<"$index")
first=$(jq -r '.manifests[0].digest' <<<"$index")
m=$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://127.0.0.1:$port/v2/bench/up/manifests/$first")
ch=$(sha256sum <u2/srv/data/f0007 | cut -c1-64)
obj_b=$(jq -r --arg o "$ch" '.layers[] | select(.annotations["io.fatelf.object"] == $o) | .size' <<<"$m")
cfg_b=$(jq -r '.config.size' <<<"$m")
base=$((obj_b + cfg_b + man_b + index_b))
addrow "(1) push, 1 of $NFILES changed: bytes sent" "$sent" "$base" "$(ratio "$sent" "$base")" 1.0
addrow "(2) ... against the bundle" "$sent" "$(stat -c %s up-2.fatbundle)" \
	"$(ratio "$sent" "$(stat -c %s up-2.fatbundle)")" 0.01
notes+=("(1) the push of version 2 sent $sent bytes in $blobs blob upload(s) (the registry's log) and $(jq -r .manifests_put <<<"$out") manifest(s) and the index: the changed file's blob $obj_b + the config $cfg_b + the manifests $man_b + the index $index_b = $base; the bundle is $(stat -c %s up-2.fatbundle) bytes")

# ---- (3)
mkdir -p fat/opt/hello/bin fat/opt/hello/share
for cc in gcc aarch64-linux-gnu-gcc i686-linux-gnu-gcc riscv64-linux-gnu-gcc; do
	"$cc" -static -O2 -o "in-$cc" "$top/tests/integration/hello.c" || exit 1
done
"$FATELF" glue -o fat/opt/hello/bin/hello in-* >/dev/null || exit 1
for i in $(seq -w 0 39); do echo "file $i" >"fat/opt/hello/share/f$i"; done
"$FATELF" bundle create -o hello.fatbundle --name hello --version 1.0 --sign vendor.key fat >/dev/null || exit 1
"$FATELF" repo push hello.fatbundle "oci://127.0.0.1:$port/bench/hello" >/dev/null || exit 1
mkdir -p keys && cp vendor.pub keys/
bench_daemon || { echo "bench: fatelfd does not start" >&2; exit 1; }
# served BYTES of the log's GETs after its first N lines
served() { tail -n +$(($1 + 1)) reg/log | sed -n 's/.*"GET [^ ]* HTTP[^"]*" [0-9]* \([0-9]*\) .*/\1/p' | awk '{ s += $1 } END { printf "%d\n", s }'; }
n=$(wc -l <reg/log)
ctl install "oci://127.0.0.1:$port/bench/hello:1.0" >/dev/null ||
	{ echo "bench: the install from the registry failed" >&2; tail daemon.log >&2; exit 1; }
pulled=$(served "$n")
hidx=$(skopeo inspect --tls-verify=false --raw "docker://127.0.0.1:$port/bench/hello:1.0")
amd=$(jq -r '.manifests[] | select(.platform.architecture == "amd64") | .digest' <<<"$hidx")
amd_b=$(jq -r '.manifests[] | select(.platform.architecture == "amd64") | .size' <<<"$hidx")
hm=$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://127.0.0.1:$port/v2/bench/hello/manifests/$amd")
own=$(( $(printf '%s' "$hidx" | wc -c) + amd_b + $(jq -r '.config.size + ([.layers[].size] | add)' <<<"$hm") ))
addrow "(3) native install, 4 archs: bytes pulled" "$pulled" "$own" "$(ratio "$pulled" "$own")" 1.05
notes+=("(3) the registry served $pulled bytes for the x86_64 install; its index, manifest, config and blobs are $own bytes; the whole bundle is $(stat -c %s hello.fatbundle) bytes ($(ratio "$pulled" "$(stat -c %s hello.fatbundle)") of it)")

printf '\n%-46s %11s %11s %7s %7s  %s\n' "benchmark (one run: bytes)" "fatelf" "baseline" ratio target result
for r in "${rows[@]}"; do
	echo "$r"
done
echo "$(( ${#rows[@]} - failures )) passed, $failures failed"
printf '%s\n' "${notes[@]}"
[ "$failures" -eq 0 ]
