#!/bin/bash
# Runs one of the README's two commands the way a new user would: on a
# freshly made Debian 12 root with nothing else installed.
#
#   bash tests/fresh-root.sh demo      # bash demo/run.sh in a fresh root
#   bash tests/fresh-root.sh tests     # bash tests/run-all.sh in a fresh root
#   bash tests/fresh-root.sh deb       # only the packages and tests/packaging/deb.sh
#
# As root, with network to the Debian archive. It makes the root with
# `debootstrap --variant=minbase bookworm` in a temporary directory (or
# FRESH_ROOT_DIR), taking the mirror, the suites and the apt settings from
# this machine's own apt configuration at run time, copies a clean clone
# of the committed tree (HEAD) into it, mounts /proc, /sys and /dev for it,
# and runs the command there as root. Its exit status is the command's.
# The root is removed afterwards unless FRESH_ROOT_KEEP=1; the command's
# output is also kept in fresh-root-<what>.log in the current directory.
#
# It does not install the project's packages: the command does that
# itself, from deps/packages, which is the point of the check.
set -euo pipefail

what=${1:-}
case $what in
demo) cmd="bash demo/run.sh" ;;
tests) cmd="bash tests/run-all.sh" ;;
deb) cmd="bash deps/apt-install.sh build demo tests && bash tests/packaging/deb.sh" ;;
*)
	echo "usage: $0 demo|tests|deb" >&2
	exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
	echo "$0: must run as root (debootstrap, chroot and mounts)" >&2
	exit 2
fi

top=$(cd "$(dirname "$0")/.." && pwd)
log=$PWD/fresh-root-$what.log
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }
say() { printf '==== fresh-root %s (%s): %s\n' "$what" "$(elapsed)" "$*"; }

if ! command -v debootstrap >/dev/null; then
	say "installing debootstrap on this machine"
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >/dev/null
fi

# apt_sources: prints "URI SUITE" for every Debian suite this machine's
# apt uses, from the one-line sources.list format and from deb822
# .sources files, in that order.
apt_sources() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		# deb [options] URI SUITE COMPONENT...
		sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\)[[:space:]]\+\([^[:space:]]\+\).*/\2 \3/p' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
		function flush() {
			if (types ~ /(^| )deb( |$)/ && enabled != "no")
				for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j]
			types = ""; nu = ns = 0; enabled = ""
		}
		/^[[:space:]]*$/ { flush(); next }
		/^#/ { next }
		{ key = tolower($1); sub(/:$/, "", key); $1 = "" }
		key == "types" { types = $0 }
		key == "uris" { nu = split($0, u, " ") }
		key == "suites" { ns = split($0, s, " ") }
		key == "enabled" { enabled = tolower($2) }
		END { flush() }' "$f"
	done
}

mirror=$(apt_sources | awk '$2 == "bookworm" { print $1; exit }')
if [ -z "$mirror" ]; then
	echo "$0: this machine's apt sources name no bookworm suite to take a mirror from" >&2
	exit 1
fi

root=${FRESH_ROOT_DIR:-$(mktemp -d /var/tmp/fatelf-fresh.XXXXXX)}
# mktemp's 0700 would be the fresh root's "/": no unprivileged process in
# it (the download helper, nobody's shell) could reach anything.
chmod 0755 "$root"
mounted=()
cleanup() {
	local i p
	# whatever still runs in the root (a run cut short) goes first
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[i]}" 2>/dev/null || true
	done
	if [ "${FRESH_ROOT_KEEP:-0}" != 1 ]; then
		rm -rf --one-file-system "$root"
	else
		say "root kept in $root"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "debootstrap --variant=minbase bookworm $root $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
	tail -20 "$root.debootstrap.log" >&2
	echo "$0: debootstrap failed (log: $root.debootstrap.log)" >&2
	exit 1
}
rm -f "$root.debootstrap.log"

# The root gets this machine's apt view: the same sources (so the same
# point releases and security updates), the keyrings they name, and the
# same apt settings (a snapshot mirror may need Check-Valid-Until off).
say "copying this machine's apt sources and settings"
rm -f "$root/etc/apt/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	mkdir -p "$root$(dirname "$f")"
	cp "$f" "$root$f"
	for k in $(sed -n 's/.*[Ss]igned-[Bb]y[:=][[:space:]]*\([^] ]*\).*/\1/p' "$f"); do
		[ -f "$k" ] && mkdir -p "$root$(dirname "$k")" && cp "$k" "$root$k"
	done
done
cp -r /etc/apt/apt.conf.d/. "$root/etc/apt/apt.conf.d/"
# dpkg without an fsync per file: the same packages, installed faster;
# the root is thrown away after the run anyway.
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/fresh-root-unsafe-io"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

say "copying a clean clone of HEAD ($(git -C "$top" rev-parse --short HEAD))"
mkdir -p "$root/src"
git clone -q "$top" "$root/src/fatelf"

# The root is a mount point of its own, as on a real machine: a test that
# makes its "/" private in a new mount namespace (unshare -m
# --propagation private) needs "/" to be one.
mount --bind "$root" "$root"
mounted+=("$root")
for m in proc sys dev; do
	mount --rbind "/$m" "$root/$m"
	mount --make-rslave "$root/$m"
	mounted+=("$root/$m")
done
mkdir -p "$root/run" "$root/tmp"
mount -t tmpfs tmpfs "$root/run"
mounted+=("$root/run")
mkdir -p "$root/run/lock"

say "running '$cmd' in the fresh root"
set +e
chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	${JOBS:+JOBS=$JOBS} ${FUZZ_SECONDS:+FUZZ_SECONDS=$FUZZ_SECONDS} \
	/bin/bash -c "cd /src/fatelf && $cmd" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
say "'$cmd' exited $rc; its output is in $log"
exit "$rc"
