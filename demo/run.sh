#!/bin/bash
# The demo, from a fresh clone on a fresh Debian 12 x86_64 machine (root):
#
#   bash demo/run.sh
#
# It installs what it needs (skipped when FATELF_NO_APT=1), builds fatelf,
# cross-compiles a small hello program for x86_64, aarch64, riscv64 and
# i686, glues the four into one FatELF file, validates it, shows what is
# inside, extracts the record this machine runs and runs it, and runs the
# aarch64 and riscv64 records under qemu-user. Then it builds signed
# bundles, installs them through a private fatelfd, publishes one in a
# signed repository and installs and upgrades it from there by name. Its
# files are left in demo-out/ to look at.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

if [ "${FATELF_NO_APT:-0}" != 1 ]; then
	say "Installing packages"
	bash "$top/deps/apt-install.sh" build demo
fi

say "Building fatelf"
[ -x configure ] || ./autogen.sh
mkdir -p build
if [ ! -f build/Makefile ]; then
	(cd build && ../configure -q)
fi
make -C build -j"$(nproc)" >/dev/null
fatelf=$top/build/tools/fatelf
show "$fatelf" --version

out=$top/demo-out
rm -rf "$out"
mkdir -p "$out"
cd "$out"

say "Cross-compiling hello.c for four architectures"
declare -A cc=(
	[x86_64]=x86_64-linux-gnu-gcc [aarch64]=aarch64-linux-gnu-gcc
	[riscv64]=riscv64-linux-gnu-gcc [i686]=i686-linux-gnu-gcc
)
host=$(uname -m)
cc[$host]=gcc
for a in aarch64 riscv64 x86_64 i686; do
	show "${cc[$a]}" -static -O2 -o "hello-$a" "$top/tests/integration/hello.c"
done
ls -l hello-*

say "Gluing them into one FatELF file (aarch64 first: the order is the vendor's preference)"
show "$fatelf" glue -o hello hello-aarch64 hello-riscv64 hello-x86_64 hello-i686
show file -m "$top/data/fatelf.magic" hello
show "$fatelf" validate hello && echo "valid"
show "$fatelf" info hello

say "A stock kernel cannot run it"
if ./hello 2>&1; then
	echo "(this kernel ran it: it has FatELF support or a binfmt_misc handler)"
else
	echo "(as expected: the kernel does not know the FatELF format)"
fi

say "This machine's targets, and the record the kernel would pick"
show "$fatelf" targets
show "$fatelf" extract -o hello-host hello host
show ./hello-host
cmp hello-host "hello-$host" && echo "hello-host is hello-$host, byte for byte"

say "The other records run under qemu-user"
show "$fatelf" extract -o hello-arm64 hello arm64
show qemu-aarch64-static ./hello-arm64
show "$fatelf" extract -o hello-rv hello riscv64-linux-gnu
show qemu-riscv64-static ./hello-rv

say "fatelf-run: the fat file runs as it is, on this stock kernel"
export FATELF_RUN_CACHE_DIR=$out/run-cache
show "$top/build/tools/fatelf-run" --which ./hello
show "$top/build/tools/fatelf-run" ./hello
bf=/proc/sys/fs/binfmt_misc
if [ "$(id -u)" = 0 ] && { [ -e $bf/register ] || mount -t binfmt_misc binfmt_misc $bf 2>/dev/null; }; then
	# registered for the next three commands only, as data/binfmt.d/fatelf.conf does at boot
	bfname=fatelf-demo-$$
	echo "\$ echo ':$bfname:M::\\xfa\\x70\\x0e\\x1f\\x01\\x00::$top/build/tools/fatelf-run:PO' > $bf/register"
	printf ':%s:M::\\xfa\\x70\\x0e\\x1f\\x01\\x00::%s:PO\n' "$bfname" "$top/build/tools/fatelf-run" > $bf/register
	rc=0
	{ show "$fatelf" targets && show ./hello; } || rc=$?
	echo -1 > "$bf/$bfname"
	echo "(binfmt_misc entry $bfname removed again)"
	[ "$rc" = 0 ]
else
	echo "(not root or no binfmt_misc: skipping the binfmt_misc registration)"
fi
unset FATELF_RUN_CACHE_DIR

say "Thinning a copy to this machine (what an installer keeps)"
show cp hello hello-thin
show "$fatelf" thin hello-thin
ls -l hello hello-thin
show ./hello-thin

say "A signed fat bundle: one archive for every architecture"
rm -rf tree && mkdir -p tree/opt/hello/bin tree/etc/hello
cp hello tree/opt/hello/bin/hello
printf 'greeting = hello\n' > tree/etc/hello/hello.conf
show minisign -G -W -p demo.pub -s demo.key </dev/null >/dev/null
show "$fatelf" bundle create -o hello-1.0.fatbundle --name hello --version 1.0 \
	--summary "hello for four architectures" --sign demo.key tree
show "$fatelf" bundle inspect hello-1.0.fatbundle
# The same program again, as a second package that an admin installs fat
# (say, on an NFS tree shared by several architectures) and thins later.
rm -rf tree2 && mkdir -p tree2/opt/hello-shared/bin
cp hello tree2/opt/hello-shared/bin/hello
"$fatelf" bundle create -o hello-shared-1.0.fatbundle --name hello-shared --version 1.0 \
	--summary "hello, shared tree" --sign demo.key tree2

say "One bundle from each architecture's own build: four .deb packages unified"
# What a vendor already ships: one .deb per architecture, each with its
# own build of hello, the same documentation, and a file under its own
# multiarch directory.
declare -A debarch=([x86_64]=amd64 [aarch64]=arm64 [riscv64]=riscv64 [i686]=i386)
declare -A triplet=([x86_64]=x86_64-linux-gnu [aarch64]=aarch64-linux-gnu
	[riscv64]=riscv64-linux-gnu [i686]=i386-linux-gnu)
from=()
for a in x86_64 aarch64 riscv64 i686; do
	d=deb-${debarch[$a]}
	rm -rf "$d" && mkdir -p "$d/DEBIAN" "$d/usr/bin" "$d/usr/share/doc/hello-multi" \
		"$d/usr/lib/${triplet[$a]}/hello-multi"
	cp "hello-$a" "$d/usr/bin/hello-multi"
	printf 'hello, the documentation\n' > "$d/usr/share/doc/hello-multi/README"
	printf '%s\n' "$a" > "$d/usr/lib/${triplet[$a]}/hello-multi/arch"
	printf 'Package: hello-multi\nVersion: 1.0-1\nArchitecture: %s\nMaintainer: Demo <demo@example.org>\nDescription: hello, built per architecture\n' \
		"${debarch[$a]}" > "$d/DEBIAN/control"
	dpkg-deb --root-owner-group -Zxz --build "$d" "hello-multi_1.0-1_${debarch[$a]}.deb" >/dev/null
	from+=(--from "${debarch[$a]}=hello-multi_1.0-1_${debarch[$a]}.deb")
done
ls -l hello-multi_*.deb
# The ELF files are glued in --from order, the identical README is kept
# once, each multiarch file becomes a per-arch entry; name and version
# come from the packages' control files.
show "$fatelf" bundle create -o hello-multi.fatbundle --sign demo.key "${from[@]}"
show "$fatelf" bundle inspect hello-multi.fatbundle
echo "# A README that differs between two builds is refused, with its own exit status:"
printf 'different\n' > deb-arm64/usr/share/doc/hello-multi/README
dpkg-deb --root-owner-group -Zxz --build deb-arm64 bad_arm64.deb >/dev/null
show "$fatelf" bundle create -o bad.fatbundle --from amd64=hello-multi_1.0-1_amd64.deb \
	--from arm64=bad_arm64.deb || echo "(exit $?)"

say "A private fatelfd in a temporary directory"
state=$(mktemp -d /tmp/fatelf-demo.XXXXXX)
mkdir -p "$state/root" "$state/keys"
printf '[Daemon]\nTrustedKeys=%s/keys\nRepositories=%s/repos.d\n[Policy]\nPolicy=native\n' "$state" "$state" \
	> "$state/fatelfd.conf"
fatelfd=$top/build/daemon/fatelfd
export FATELF_SOCKET=$state/fatelfd.sock
ctl() { show "$top/build/client/fatelfctl" "$@"; }
echo "\$ fatelfd --socket $FATELF_SOCKET --root $state/root --state-dir $state/state --config $state/fatelfd.conf &"
"$fatelfd" --socket "$FATELF_SOCKET" --root "$state/root" --state-dir "$state/state" \
	--config "$state/fatelfd.conf" 2> "$state/fatelfd.log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$state"' EXIT
for _ in $(seq 100); do
	"$top/build/client/fatelfctl" status >/dev/null 2>&1 && break
	sleep 0.05
done

say "Trusting the vendor's key, without a restart"
echo "# No key is trusted yet: the signed bundle is refused, naming the keys directory."
ctl install hello-1.0.fatbundle || echo "(exit $?)"
show cp demo.pub "$state/keys/demo.pub"
show kill -HUP "$daemon"
for _ in $(seq 100); do
	grep -q "reloaded" "$state/fatelfd.log" && break
	sleep 0.05
done
grep "reloaded" "$state/fatelfd.log"
echo "# The state directory is root's alone:"
show ls -ld "$state/state"

say "Install: the bundle is checked, and the fat file is thinned to this machine on the way"
ctl install hello-1.0.fatbundle
show ls -l "$state/root/opt/hello/bin/hello"
show file "$state/root/opt/hello/bin/hello"

say "Run the installed program"
show "$state/root/opt/hello/bin/hello"

say "What is installed"
ctl status
ctl list
ctl files hello
ctl owner /opt/hello/bin/hello

say "Install the unified bundle: this machine's record and its own per-arch file"
ctl install hello-multi.fatbundle
show "$state/root/usr/bin/hello-multi"
show find "$state/root/usr/lib" -path '*hello-multi*' -type f

say "Install fat (policy keep), then thin it later"
ctl install --policy keep hello-shared-1.0.fatbundle
show "$fatelf" info "$state/root/opt/hello-shared/bin/hello"
ctl thin hello-shared
show "$state/root/opt/hello-shared/bin/hello"

say "Verify every file against the store"
ctl verify
ctl history

say "A signed repository: the bundle published, and installed again by name"
# A repository holds each file (each FatELF record) as an object of its
# own, so a machine fetches only what its install writes; its index is
# signed with a key of its own.
show minisign -G -W -p repo.pub -s repo.key </dev/null >/dev/null
show "$fatelf" repo init --sign repo.key repo
show "$fatelf" repo add --sign repo.key repo hello-1.0.fatbundle
show "$fatelf" repo list repo
ctl repo add demo "file://$out/repo" --key repo.pub
ctl update
echo "# The signed index names its repository (the id made by repo init), and the"
echo "# first update pinned it: a mirror that serves another repository's index,"
echo "# even one the same vendor signed with the same key, is refused."
ctl repo list
show "$fatelf" repo init --sign repo.key other
show "$fatelf" repo add --sign repo.key other hello-1.0.fatbundle
mv repo repo.real && mv other repo
if ctl update; then
	echo "(another repository's index was accepted: not expected)"
	exit 1
fi
mv repo other && mv repo.real repo
ctl update
ctl search hello
ctl info hello
ctl remove hello
echo "# A file named hello is in this directory, and an existing file always wins:"
echo "# name the version. Only this machine's record is read, and hello-shared"
echo "# (thinned above) holds it already: it comes from that file, not the repository."
ctl install hello=1.0
show "$state/root/opt/hello/bin/hello"

say "An upgrade from the repository fetches only what changed"
cp -a tree tree-1.1
printf 'greeting = hello, again\n' > tree-1.1/etc/hello/hello.conf
show "$fatelf" bundle create -o hello-1.1.fatbundle --name hello --version 1.1 \
	--summary "hello for four architectures" --sign demo.key tree-1.1
show "$fatelf" repo add --sign repo.key repo hello-1.1.fatbundle
ctl update
ctl list --upgradable
ctl upgrade --dry-run
ctl upgrade
ctl info hello
ctl upgrade hello

say "The same package in an OCI registry"
# Debian's docker-registry (CNCF Distribution) on 127.0.0.1, for the demo
# alone; a fleet would push to the registry it already runs.
if command -v docker-registry >/dev/null && command -v skopeo >/dev/null; then
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p registry
	printf 'version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s/registry/data\nhttp:\n  addr: 127.0.0.1:%s\n' \
		"$out" "$port" >registry/config.yml
	printf 'log:\n  accesslog:\n    disabled: false\n' >>registry/config.yml
	docker-registry serve registry/config.yml >registry/log 2>&1 &
	regpid=$!
	trap 'kill $regpid $daemon 2>/dev/null; wait $regpid $daemon 2>/dev/null; rm -rf "$state"' EXIT
	for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/v2/" && break; sleep 0.1; done
	echo "# One manifest per architecture (what a native install there fetches) and"
	echo "# one for the whole fat content, under one image index; blobs stored once."
	show "$fatelf" repo push hello-1.1.fatbundle "oci://127.0.0.1:$port/demo/hello"
	echo "# A second push sends nothing but the tag:"
	show "$fatelf" repo push hello-1.1.fatbundle "oci://127.0.0.1:$port/demo/hello"
	echo "# A standard tool reads the index:"
	echo "\$ skopeo inspect --tls-verify=false --raw docker://127.0.0.1:$port/demo/hello:1.1 | jq ..."
	skopeo inspect --tls-verify=false --raw "docker://127.0.0.1:$port/demo/hello:1.1" |
		jq -r '.manifests[] | "\(.platform.architecture // "(fat)")\t\(.digest)"'
	echo "# fatelfd installs from the registry: the index, this machine's manifest,"
	echo "# its config (the signed fat manifest) and only the blobs it lacks:"
	ctl remove hello
	seen=$(wc -l <registry/log)
	ctl install "oci://127.0.0.1:$port/demo/hello:1.1"
	show "$state/root/opt/hello/bin/hello"
	echo "# What the registry served for it (its access log):"
	tail -n +$((seen + 1)) registry/log | sed -n 's/.*"\(GET [^ ]*\) HTTP[^"]*" \([0-9]*\) \([0-9]*\).*/\1 \2 \3 bytes/p' | cut -c1-110
	ctl status
	kill "$regpid" 2>/dev/null || true
	wait "$regpid" 2>/dev/null || true
else
	echo "# docker-registry or skopeo is not installed: skipped"
fi

say "Your config edits outlive a removal, as with dpkg, until you purge"
echo "\$ echo 'greeting = mine' > \$root/etc/hello/hello.conf"
echo 'greeting = mine' > "$state/root/etc/hello/hello.conf"
ctl remove hello
show cat "$state/root/etc/hello/hello.conf"
echo "# list names hello among the removed packages whose config files stay:"
ctl list
echo "# Installing hello again takes it back: your copy stays, the new one goes beside it."
ctl install hello-1.1.fatbundle
show ls "$state/root/etc/hello"
ctl remove --purge hello
echo "# The purge took both files, and their directory with them:"
show test ! -e "$state/root/etc/hello"

say "Done: the files are in $out"
