#!/bin/bash
# The Debian packages of fatelf, end to end, as root on Debian 12:
#
#   bash tests/packaging/deb.sh
#
# 1. clones this repository's committed tree (HEAD) into a temporary
#    directory, so nothing uncommitted and no build directory leaks in;
# 2. builds it with `dpkg-buildpackage -us -uc -b` (DEB_BUILD_OPTIONS
#    nocheck: the unit tests run in the suite's own builds);
# 3. runs lintian on the .changes: no error and no warning that is not
#    overridden (debian/*.lintian-overrides);
# 4. installs fatelf, fatelfd, libfatelf0 and libfatelf-dev with apt-get
#    and checks what a user sees: fatelfd.socket enabled, the conffile,
#    the directories, the library through pkg-config, and `fatelfctl
#    status` through the installed socket (started the way fatelfd.socket
#    starts fatelfd when PID 1 is not systemd);
# 5. removes them (the store stays), then purges them (it goes), and
#    checks that nothing of the packages is left on the machine.
#
# It prints "ok N - ..." / "not ok N - ..." lines and exits 0 when every
# check passed, 77 when it cannot run here (not root, a package tool
# missing), 99 when this machine already has fatelf installed or its
# state directories (the purge would delete them). tests/run-all.sh runs
# it as its last step (unless FATELF_NO_DEB=1), after every test that
# uses the build trees' programs. The build's files stay in the temporary
# directory it names when a check failed.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
PKGS="fatelf fatelfd libfatelf0 libfatelf-dev"
# What the packages may create outside their own files; none of it may
# exist before (but fatelf-run's cache, which is kept aside meanwhile),
# and none may remain after the purge.
STATE_PATHS="/etc/fatelf /var/lib/fatelf /var/cache/fatelf /run/fatelfd"
CACHE=/var/cache/fatelf
SOCK=/run/fatelfd/io.fatelf.Manager

W=$(mktemp -d /tmp/fatelf-deb.XXXXXX) || exit 99
top_builddir=$W
export top_builddir
. "$top/tests/integration/lib.sh"

# The machine's own traces of the units (enablement symlinks and
# deb-systemd-helper's state), one path a line.
unit_traces() {
	find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled \
		/var/lib/systemd/deb-systemd-helper-masked -name '*fatelfd*' 2>/dev/null | sort
}

installed_pkgs() {
	local p
	for p in $PKGS; do
		dpkg-query -W -f='${db:Status-Status} ${Package}\n' "$p" 2>/dev/null
	done | awk '$1 != "not-installed" { print $2 }'
}

SAPID=
stop_daemon() {
	if [ -n "$SAPID" ]; then
		kill "$SAPID" 2>/dev/null
		wait "$SAPID" 2>/dev/null
		SAPID=
	fi
	rm -f "$SOCK"
}

# However the script ends: the daemon stopped, the packages purged.
cleanup() {
	local left
	stop_daemon
	left=$(installed_pkgs)
	if [ -n "$left" ]; then
		echo "# cleanup: purging $left"
		# shellcheck disable=SC2086
		dpkg --purge $left >/dev/null 2>&1
	fi
	[ -d /run/fatelfd ] && rmdir /run/fatelfd 2>/dev/null
	if [ -e "$W/cache-saved" ]; then
		rm -rf "$CACHE" && mv "$W/cache-saved" "$CACHE"
	fi
	if [ "$T_FAILED" -eq 0 ] && [ "$T_COUNT" -gt 0 ]; then
		rm -rf "$W"
	else
		echo "# deb: the build and its logs are kept in $W"
	fi
}

[ "$(id -u)" -eq 0 ] || { echo "# SKIP deb: needs root (it installs packages)"; rm -rf "$W"; exit 77; }
for c in git dpkg-buildpackage dh lintian apt-get; do
	command -v "$c" >/dev/null 2>&1 ||
		{ echo "# SKIP deb: $c is not installed (apt-get install debhelper lintian)"; rm -rf "$W"; exit 77; }
done
git -C "$top" rev-parse --verify -q HEAD >/dev/null ||
	{ echo "# SKIP deb: $top is not a git repository"; rm -rf "$W"; exit 77; }
if [ -n "$(installed_pkgs)" ]; then
	echo "Bail out! fatelf packages are installed already: $(installed_pkgs | tr '\n' ' ')"
	rm -rf "$W"
	exit 99
fi
for p in $STATE_PATHS; do
	if [ -e "$p" ] && [ "$p" != "$CACHE" ]; then
		echo "Bail out! $p exists already; purging the packages would delete it"
		rm -rf "$W"
		exit 99
	fi
done
TRACES_BEFORE=$(unit_traces)

t_init deb
trap cleanup EXIT
# fatelf-run's cache (root's), if a test made it: the purge would remove
# it, so it waits aside and comes back at the end.
if [ -e "$CACHE" ]; then
	echo "# keeping $CACHE aside while the packages are installed"
	mv "$CACHE" "$W/cache-saved" || { echo "Bail out! cannot move $CACHE aside"; exit 99; }
fi
START=$(date +%s)

# ================================================================ build
run git clone -q "$top" "$W/src"
check_eq "a clean clone of the committed tree" 0 "$RC"
VERSION=$(sed -n 's/^AC_INIT(\[fatelf\], \[\([^]]*\)\].*/\1/p' "$W/src/configure.ac")
DEBVER=$(cd "$W/src" && dpkg-parsechangelog -S Version)
check_eq "debian/changelog's version is configure.ac's ($VERSION) plus a Debian revision" \
	"$VERSION" "${DEBVER%-*}"

(cd "$W/src" && DEB_BUILD_OPTIONS="nocheck parallel=${JOBS:-2}" dpkg-buildpackage -us -uc -b) \
	>"$W/build.log" 2>&1
RC=$?
check_eq "dpkg-buildpackage -us -uc -b succeeds" 0 "$RC"
if [ "$RC" -ne 0 ]; then
	tail -30 "$W/build.log" | sed 's/^/# /'
	t_done
fi
ARCH=$(dpkg --print-architecture)
CHANGES=$W/fatelf_${DEBVER}_$ARCH.changes
DEBS=()
for p in $PKGS; do
	DEBS+=("$W/${p}_${DEBVER}_$ARCH.deb")
done
check "the four packages and the .changes are built" test -f "$CHANGES" -a -f "${DEBS[0]}" \
	-a -f "${DEBS[1]}" -a -f "${DEBS[2]}" -a -f "${DEBS[3]}"
check_nomatch "the build installs nothing that no package ships (dh_missing)" \
	"not installed|missing files" "$(sed -n '/dh_missing/,/dh_dwz\|dh_strip/p' "$W/build.log")"

# ================================================================ lintian
lintian --no-cfg --fail-on none "$CHANGES" >"$W/lintian.log" 2>&1
check_eq "lintian: no errors and no warnings that are not overridden" "" \
	"$(grep -E '^[EW]: ' "$W/lintian.log")"

# ================================================================ contents
contents() { dpkg-deb -c "$1" | awk '{ sub(/^\.\//, "/", $6); print $6 }'; }
C_TOOL=$(contents "${DEBS[0]}")
C_DAEMON=$(contents "${DEBS[1]}")
C_LIB=$(contents "${DEBS[2]}")
C_DEV=$(contents "${DEBS[3]}")
for f in /usr/bin/fatelf /usr/bin/fatelf-run /usr/bin/fatelf-glue /usr/bin/fatelf-validate \
	/usr/libexec/fatelf/fatelf-bundle /usr/libexec/fatelf/fatelf-oci /usr/libexec/fatelf/fatelf-fetch \
	/usr/lib/sysusers.d/fatelf.conf \
	/usr/share/man/man1/fatelf.1.gz /usr/share/man/man1/fatelf-run.1.gz /usr/share/man/man5/fatbundle.5.gz \
	/usr/share/fatelf/binfmt.d/fatelf.conf; do
	check_match "fatelf ships $f" "^$f\$" "$C_TOOL"
done
check_nomatch "fatelf does not activate fatelf-run's binfmt_misc entry (no binfmt.d under /usr/lib)" \
	"/lib/binfmt.d/" "$C_TOOL"
for f in /usr/sbin/fatelfd /usr/bin/fatelfctl /lib/systemd/system/fatelfd.service \
	/lib/systemd/system/fatelfd.socket /usr/lib/tmpfiles.d/fatelf.conf /etc/fatelf/fatelfd.conf \
	/etc/fatelf/keys.d/ /etc/fatelf/repos.d/ /etc/fatelf/registries.d/ \
	/usr/share/man/man8/fatelfd.8.gz /usr/share/man/man1/fatelfctl.1.gz /usr/share/man/man5/fatelfd.conf.5.gz; do
	check_match "fatelfd ships $f" "^$f\$" "$C_DAEMON"
done
if [ -d "$W/src/data/completions" ]; then
	BC=/usr/share/bash-completion/completions
	check_match "fatelf ships fatelf's bash completion" "^$BC/fatelf\$" "$C_TOOL"
	check_match "... and its historical names'" "^$BC/fatelf-glue\$" "$C_TOOL"
	check_match "fatelfd ships fatelfctl's" "^$BC/fatelfctl\$" "$C_DAEMON"
fi
check_match "libfatelf0 ships libfatelf.so.0" "/libfatelf\.so\.0\$" "$C_LIB"
check_nomatch "... and no development link" "/libfatelf\.so\$" "$C_LIB"
for f in /usr/include/fatelf/libfatelf.h "/usr/lib/[^/]*/libfatelf\.so" "/usr/lib/[^/]*/pkgconfig/fatelf\.pc" \
	/usr/share/man/man3/libfatelf.3.gz; do
	check_match "libfatelf-dev ships $f" "^$f\$" "$C_DEV"
done
check_eq "only /etc/fatelf/fatelfd.conf is a conffile" "/etc/fatelf/fatelfd.conf" \
	"$(dpkg-deb -I "${DEBS[1]}" conffiles 2>&1)"
check_match "fatelfd depends on this very fatelf (its fetch helper)" "fatelf \(= $DEBVER\)" \
	"$(dpkg-deb -f "${DEBS[1]}" Depends)"
check_match "fatelf depends on what runs its sysusers.d file" "systemd \| systemd-standalone-sysusers" \
	"$(dpkg-deb -f "${DEBS[0]}" Depends)"

# ================================================================ install
export DEBIAN_FRONTEND=noninteractive
run apt-get install -y --no-install-recommends "${DEBS[@]}"
check_eq "apt-get installs the four packages" 0 "$RC"
[ "$RC" -eq 0 ] || { echo "$RUN_OUT$RUN_ERR" | tail -20 | sed 's/^/# /'; t_done; }
check_eq "... and dpkg has them all installed" "$(tr ' ' '\n' <<<"$PKGS" | sort)" "$(installed_pkgs | sort)"

run systemctl is-enabled fatelfd.socket
check_eq "fatelfd.socket is enabled" "0 enabled" "$RC $RUN_OUT"
check_eq "... through sockets.target" "/lib/systemd/system/fatelfd.socket" \
	"$(readlink /etc/systemd/system/sockets.target.wants/fatelfd.socket)"
run systemctl is-enabled fatelfd.service
check_nomatch "fatelfd.service is not enabled itself (the socket starts it)" "^enabled" "$RUN_OUT"
check_eq "/var/lib/fatelf is made by tmpfiles.d, root's alone" "700 root" \
	"$(stat -c '%a %U' /var/lib/fatelf 2>&1)"
for d in keys.d repos.d registries.d fatelfd.conf.d; do
	check "/etc/fatelf/$d exists" test -d "/etc/fatelf/$d"
done
# The download helper's group (sysusers.d); a system group, kept after
# a purge as Debian keeps the users and groups a package made.
FGID=$(getent group fatelf-fetch | cut -d: -f3)
if [ -n "$FGID" ] && [ "$FGID" -gt 0 ] && [ "$FGID" -lt 1000 ]; then
	pass "the postinst made the download helper's system group fatelf-fetch (gid $FGID)"
else
	fail "the postinst made the download helper's system group fatelf-fetch" "gid '${FGID}'"
fi
check_eq "binfmt.d registration is not active" "" "$(ls /usr/lib/binfmt.d/fatelf.conf /lib/binfmt.d/fatelf.conf 2>/dev/null)"

run /usr/bin/fatelf --version
check_match "the installed fatelf runs (fatelf --version)" "$VERSION" "$RUN_OUT"
run /usr/bin/fatelf-info --help
check_eq "... and its historical names too (fatelf-info --help)" 0 "$RC"
# `fatelf bundle` runs the installed helper in /usr/libexec/fatelf.
run /usr/bin/fatelf bundle --help
check_eq "fatelf bundle --help runs the installed fatelf-bundle" 0 "$RC"

# libfatelf-dev: a program builds with pkg-config alone and runs against
# the installed libfatelf.so.0.
mkdir -p "$W/hello"
run sh -c "gcc -o '$W/hello/hello' '$W/src/tests/pkgconfig/hello.c' \$(pkg-config --cflags --libs fatelf)"
check_eq "a program builds against libfatelf-dev with pkg-config" 0 "$RC"
run sh -c "cd '$W/hello' && ./hello"
check_eq "... and runs against libfatelf0" 0 "$RC"
check_match "... loading the installed libfatelf.so.0" "libfatelf\.so\.0 => /(usr/)?lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libfatelf\.so\.0 " \
	"$(ldd "$W/hello/hello" 2>&1)"

# ================================================================ the socket
LISTEN=$(sed -n 's/^ListenStream=//p' /lib/systemd/system/fatelfd.socket)
EXEC=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/fatelfd.service)
check_eq "fatelfd.socket listens where fatelfctl connects by default" "$SOCK" "$LISTEN"
if [ "$(ps -p 1 -o comm=)" = systemd ] && [ -d /run/systemd/system ]; then
	echo "# PID 1 is systemd: the socket the postinst started"
	run systemctl is-active fatelfd.socket
	check_eq "fatelfd.socket is active" "active" "$RUN_OUT"
else
	# As fatelfd.socket would: its directory with DirectoryMode=, the
	# socket with SocketMode=, then ExecStart= on the first connection.
	echo "# PID 1 is $(ps -p 1 -o comm=), not systemd: starting $EXEC as fatelfd.socket would"
	mkdir -p -m "$(sed -n 's/^DirectoryMode=//p' /lib/systemd/system/fatelfd.socket)" "${LISTEN%/*}"
	# shellcheck disable=SC2086
	systemd-socket-activate -l "$LISTEN" $EXEC 2>"$W/fatelfd.log" &
	SAPID=$!
	for ((i = 0; i < 50; i++)); do
		[ -S "$LISTEN" ] && break
		sleep 0.1
	done
	chmod "$(sed -n 's/^SocketMode=//p' /lib/systemd/system/fatelfd.socket)" "$LISTEN"
fi
run fatelfctl status
check_eq "fatelfctl status answers through the installed socket" 0 "$RC"
[ "$RC" -eq 0 ] || echo "$RUN_ERR" | sed 's/^/# /'
run fatelfctl --json status
check_eq "... from the installed daemon, its root /, its store in /var/lib/fatelf" \
	"$VERSION / $SOCK" \
	"$(jq -r '"\(.version) \(.root) \(.socket)"' <<<"$RUN_OUT" 2>&1)"
check_match "... whose database is in /var/lib/fatelf" "^/var/lib/fatelf/" "$(jq -r .database <<<"$RUN_OUT" 2>&1)"
run runuser -u nobody -- fatelfctl status
check_eq "... and answers any user (SocketMode=0666)" 0 "$RC"
if [ -f "$W/fatelfd.log" ]; then
	check_match "... and runs downloads in the group fatelf-fetch" \
		"download helper /usr/libexec/fatelf/fatelf-fetch: executable by a download uid of its own \([0-9-]+, gid $FGID\)" \
		"$(cat "$W/fatelfd.log")"
fi
stop_daemon
check "the daemon made its store" test -f /var/lib/fatelf/fatelf.db

# ================================================================ remove, purge
# shellcheck disable=SC2086
run apt-get remove -y $PKGS
check_eq "apt-get remove succeeds" 0 "$RC"
check "... the programs are gone" test ! -e /usr/sbin/fatelfd -a ! -e /usr/bin/fatelf -a ! -e /usr/libexec/fatelf
check "... the store stays (only a purge removes it)" test -f /var/lib/fatelf/fatelf.db
check "... and the conffile" test -f /etc/fatelf/fatelfd.conf
# shellcheck disable=SC2086
run dpkg --purge $PKGS
check_eq "dpkg --purge succeeds" 0 "$RC"
check_eq "... no fatelf package is left" "" "$(installed_pkgs)"
for p in $STATE_PATHS; do
	check "... $p is gone" test ! -e "$p"
done
check_eq "... and no unit symlink or deb-systemd-helper state is left" "$TRACES_BEFORE" "$(unit_traces)"
check_eq "... nor any file of the packages" "" \
	"$(for f in $C_TOOL $C_DAEMON $C_LIB $C_DEV; do case $f in */) ;; *) [ -e "$f" ] && echo "$f" ;; esac; done)"

echo "# deb: $(($(date +%s) - START)) s"
t_done
