#!/bin/bash
# What `make install` puts on a machine agrees with itself and with the
# build: installed into a DESTDIR, the systemd units pass
# `systemd-analyze verify` (against the installed binary and man pages),
# fatelfd.service starts the fatelfd that was installed, the default
# config path is the installed fatelfd.conf, fatelfd -h and -V work, and
# every man page carries the same version (fatelfd's) and date.
. "$(dirname "$0")/lib.sh"

t_init install
t_require_tool make

DEST=$T_WORK/dest
run make -C "$top_builddir" install DESTDIR="$DEST"
check_eq "make install DESTDIR=... succeeds" 0 "$RC"
[ "$RC" -eq 0 ] || { echo "$RUN_ERR" | tail -20 | sed 's/^/# /'; t_done; }

FD=$(find "$DEST" -type f -name fatelfd -perm -u+x | head -1)
SVC=$(find "$DEST" -type f -name fatelfd.service | head -1)
SOCKU=$(find "$DEST" -type f -name fatelfd.socket | head -1)
check "fatelfd, fatelfd.service and fatelfd.socket are installed" test -n "$FD" -a -n "$SVC" -a -n "$SOCKU"

# ExecStart= names the installed fatelfd (its path without DESTDIR).
check_eq "fatelfd.service starts the fatelfd that was installed" "ExecStart=${FD#"$DEST"}" \
	"$(grep '^ExecStart=' "$SVC")"

run "$FD" -V
check_eq "fatelfd -V prints the version" "fatelfd $(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")" "$(printf "%s\n" "$RUN_OUT" | head -1)"
VERSION=$(printf "%s\n" "$RUN_OUT" | head -1); VERSION=${VERSION#fatelfd }
run "$FD" -h
check_eq "fatelfd -h exits 0" 0 "$RC"
check_match "... and prints the usage" "^Usage: fatelfd " "$RUN_OUT"
check_match "... naming -h and -V" "-V, --version.*" "$RUN_OUT"
conf=$(sed -n 's/.*--config FILE .*(default \(.*\))$/\1/p' <<<"$RUN_OUT")
check "the default config path is the installed fatelfd.conf ($conf)" test -f "$DEST$conf"
tmpf=$(find "$DEST" -type f -path '*tmpfiles.d/fatelf.conf' | head -1)
check_match "tmpfiles.d makes the keys directory next to that config" \
	"^d ${conf%/fatelfd.conf}/keys.d " "$(grep keys.d "$tmpf")"
check_match "... and the state directory 0700" "^d /var/lib/fatelf 0700 root root" "$(cat "$tmpf")"

# Every installed man page: one version, fatelfd's, and one date. The
# fatelf-NAME.1 pages of the historical names are ".so" links.
man=$(find "$DEST" -type f -path '*/man/man[158]/*' | sort)
th=$(for f in $man; do grep -h '^\.TH ' "$f"; done)
check_eq "six man pages carry a .TH line" 6 "$(grep -c . <<<"$th")"
check_eq "... each with fatelf $VERSION" 6 "$(grep -c "\"fatelf $VERSION\"" <<<"$th")"
dates=$(sed -E 's/^\.TH +("[^"]*"|[^ ]+) +[0-9] +"([^"]*)".*/\2/' <<<"$th" | sort -u)
check_eq "... and one date" 1 "$(grep -c . <<<"$dates")"
check_match "... a full date ($dates)" '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' "$dates"
# The pages in the source tree carry that same line themselves, so that
# `man ./doc/fatelfd.8` says what the installed page says.
rdate=$(sed -n 's/^RELEASE_DATE = //p' "$top_builddir/Makefile")
check_eq "... the date configure.ac sets" "$rdate" "$dates"
for f in $man; do
	grep -q '^\.so ' "$f" && continue
	b=$(basename "$f")
	check_eq "doc/$b carries the installed page's .TH line" "$(grep '^\.TH ' "$f")" \
		"$(grep '^\.TH ' "$top_srcdir/doc/$b")"
done
# The installed pages name the paths this build uses.
m8=$(find "$DEST" -type f -name fatelfd.8 | head -1)
m5=$(find "$DEST" -type f -name fatelfd.conf.5 | head -1)
check "fatelfd(8) names the default config path ($conf)" grep -qxF ".I $conf" "$m8"
check "fatelfd.conf(5) names it too" grep -qxF ".I $conf" "$m5"
fetch=$(sed -n 's|^\.I \(/.*fatelf\\-fetch\)$|\1|p' "$m8" | head -1 | sed 's/\\-/-/g')
check "fatelfd(8) names the download helper by its path" test -n "$fetch"
check "... which is the installed one ($fetch)" test -x "$DEST$fetch"

if command -v systemd-analyze >/dev/null 2>&1 && [ -d /lib/systemd/system ]; then
	# verify --root resolves the units' dependencies (sockets.target...)
	# and their ExecStart= beneath DEST: the system's own units are
	# copied in beside ours.
	mkdir -p "$DEST/usr/lib/systemd"
	cp -a /lib/systemd/system "$DEST/usr/lib/systemd/" 2>/dev/null
	# A prefix outside systemd's unit search path (make distcheck's) puts
	# the units where systemd never looks: link them in from /etc.
	case ${SVC#"$DEST"} in
	/etc/systemd/system/* | /usr/lib/systemd/system/* | /usr/local/lib/systemd/system/* | /lib/systemd/system/*) ;;
	*)
		mkdir -p "$DEST/etc/systemd/system"
		cp "$SVC" "$SOCKU" "$DEST/etc/systemd/system/"
		SVC=$DEST/etc/systemd/system/fatelfd.service
		SOCKU=$DEST/etc/systemd/system/fatelfd.socket
		;;
	esac
	mandir=$(dirname "$(dirname "$(find "$DEST" -type f -name fatelfd.8 | head -1)")")
	run env MANPATH="$mandir" systemd-analyze verify --root="$DEST" "${SVC#"$DEST"}" "${SOCKU#"$DEST"}"
	check_eq "systemd-analyze verify passes on the installed units" "0:" "$RC:$RUN_OUT$RUN_ERR"
	# The same check notices a unit that names a program not installed.
	mv "$FD" "$FD.away"
	run systemd-analyze verify --root="$DEST" --man=no "${SVC#"$DEST"}"
	mv "$FD.away" "$FD"
	check_match "... and fails when ExecStart= names a missing program" "is not executable" "$RUN_ERR"
else
	echo "# systemd-analyze or the system's units are missing: verify not run"
fi

t_done
