#!/bin/bash
# fatelfctl as an apt or dnf user types it, against a private fatelfd with
# a file:// repository: show runs info and purge runs remove --purge;
# -y, --yes and --assume-yes are accepted and change nothing; a mistyped
# verb gets "did you mean", an unknown one not; install of a word that is
# no file and no package says no such package, with the nearest name the
# repositories offer, while a real file of that name stays a file; a
# daemon that is not running (no socket, or nobody listening on it) gets
# the line that says how to start it, and a permission error names
# AdminGroup= and its file. Each message in full, with its exit status
# and its --json members.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init ctlwords
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq

# The configuration file fatelfctl names: sysconfdir of this build.
prefix=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
sysconfdir=$(sed -n 's/^sysconfdir = //p' "$top_builddir/Makefile")
CONF=${sysconfdir//\$\{prefix\}/$prefix}/fatelf/fatelfd.conf

daemon_vendor_key
"$FATELF" bundle keygen --no-password -p repo.pub -s repo.key >/dev/null || fail "keygen (repository)" "no key"
# bundle NAME VERSION: one data file and the config file etc/NAME/NAME.conf
bundle() {
	mkdir -p "t-$1-$2/opt/$1" "t-$1-$2/etc/$1"
	echo "$1 $2" >"t-$1-$2/opt/$1/VERSION"
	echo "setting=$1-$2" >"t-$1-$2/etc/$1/$1.conf"
	"$FATELF" bundle create -o "$1-$2.fatbundle" --name "$1" --version "$2" --config "etc/$1/$1.conf" \
		--sign vendor.key "t-$1-$2" >/dev/null || fail "bundle create $1 $2" "failed"
}
bundle greeter 1.0
bundle hello 1.0
"$FATELF" repo init --sign repo.key repo >/dev/null
"$FATELF" repo add --sign repo.key repo greeter-1.0.fatbundle hello-1.0.fatbundle >/dev/null

daemon_init
daemon_prepare d "Repositories=$T_WORK/d/repos.d"
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"
check "repo add main file://" ctl repo add main "file://$T_WORK/repo" --key repo.pub
check "update" ctl update
err_of() { jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.package) \(.parameters.suggestion)"' <<<"$1"; }

# ---- -y, --yes and --assume-yes: accepted by every verb, before or after it
run ctl -y install greeter
check_eq "install -y greeter: installed (exit 0)" "0 installed greeter 1.0" "$RC $(head -1 <<<"$RUN_OUT" | cut -d: -f1)"
run ctl install --yes hello
check_eq "install --yes hello: installed (exit 0)" "0 installed hello 1.0" "$RC $(head -1 <<<"$RUN_OUT" | cut -d: -f1)"
ctl --json list >plain.json
run ctl --json list --assume-yes
check_eq "list --assume-yes: the same reply as list" "0 $(cat plain.json)" "$RC $RUN_OUT"
run ctl --assume-yes --json list
check_eq "--assume-yes before the verb, too" "0 $(cat plain.json)" "$RC $RUN_OUT"
run ctl remove --dry-run -y greeter
check_eq "remove -y --dry-run greeter: exit 0, nothing removed" "0 1.0" \
	"$RC $(ctl --json info greeter | jq -r .package.version)"

# ---- show is info
ctl info greeter >info.out
run ctl show greeter
check_eq "show greeter prints what info greeter prints (exit 0)" "0 $(cat info.out)" "$RC $RUN_OUT"
run ctl show nosuch
check_eq "show nosuch: info's error, named after info (exit 1)" \
	"1 fatelfctl: info: package not installed: nosuch" "$RC $RUN_ERR"
check_eq "show --help is info's" "$("$FATELFCTL" info --help)" "$("$FATELFCTL" show --help)"
check_eq "--help lists the aliases" $'Aliases:\n  show       info\n  purge      remove --purge' \
	"$("$FATELFCTL" --help | sed -n '/^Aliases:/,/^$/p')"

# ---- purge is remove --purge: the config file the admin changed goes too
echo "mine" >"$ROOT/etc/hello/hello.conf"
check_eq "purge --help is remove's" "$("$FATELFCTL" remove --help)" "$("$FATELFCTL" purge --help)"
run ctl --json purge hello
check_eq "purge hello (exit 0)" 0 "$RC"
check_eq "... the changed config file is deleted, none kept" "no 0" \
	"$([ -e "$ROOT/etc/hello/hello.conf" ] && echo yes || echo no) $(ctl --json list | jq '.config_files // [] | length')"
run ctl purge hello
check_eq "purge of a package not installed: remove's error (exit 1)" \
	"1 fatelfctl: remove: package not installed: hello" "$RC $RUN_ERR"

# ---- a mistyped verb
run "$FATELFCTL" instal greeter
check_eq "instal: did you mean install (exit 2)" \
	"2 fatelfctl: unknown verb 'instal': did you mean install? (see 'fatelfctl --help')" "$RC $RUN_ERR"
run "$FATELFCTL" --json isntall greeter
check_eq "... --json: UsageError with the same words" \
	"fatelfctl.UsageError unknown verb 'isntall': did you mean install?" \
	"$(jq -r '"\(.error) \(.parameters.message)"' <<<"$RUN_OUT")"
run "$FATELFCTL" shwo greeter
check_eq "shwo: did you mean show (an alias is a known word)" \
	"2 fatelfctl: unknown verb 'shwo': did you mean show? (see 'fatelfctl --help')" "$RC $RUN_ERR"
run "$FATELFCTL" autorem
check_eq "autorem: the one verb it begins" \
	"2 fatelfctl: unknown verb 'autorem': did you mean autoremove? (see 'fatelfctl --help')" "$RC $RUN_ERR"
run "$FATELFCTL" frobnicate
check_eq "frobnicate: near no verb, no guess (exit 2)" \
	"2 fatelfctl: unknown verb 'frobnicate' (see 'fatelfctl --help')" "$RC $RUN_ERR"
run "$FATELFCTL" help purg
check_eq "help purg: did you mean purge" \
	"2 fatelfctl: help: unknown verb 'purg': did you mean purge? (see 'fatelfctl help --help')" "$RC $RUN_ERR"

# ---- install of a name no repository offers and no file has
run ctl install Greeter
check_eq "install Greeter (no such file): no such package, did you mean greeter (exit 1)" \
	"1 fatelfctl: install: no such package: no repository offers Greeter, and no file of that name exists (did you mean greeter?)" \
	"$RC $RUN_ERR"
run ctl --json install Greeter
check_eq "... --json: PackageNotFound with the suggestion" \
	"1 io.fatelf.Manager.PackageNotFound Greeter greeter" "$RC $(err_of "$RUN_OUT")"
run ctl install greetr
check_eq "install greetr (a name fatelfd does not know): did you mean greeter" \
	"1 fatelfctl: install: no such package: no repository offers greetr, and no file of that name exists (did you mean greeter?)" \
	"$RC $RUN_ERR"
run ctl --json install greetr=1.0
check_eq "... NAME=VERSION: the name is what is matched" \
	"1 io.fatelf.Manager.PackageNotFound greetr greeter" "$RC $(err_of "$RUN_OUT")"
run ctl install zzzzzzzz
check_eq "install of a name near none: no guess" \
	"1 fatelfctl: install: no such package: no repository offers zzzzzzzz, and no file of that name exists ('fatelfctl search' lists what the repositories offer)" \
	"$RC $RUN_ERR"
run ctl --json install zzzzzzzz
check_eq "... --json: no suggestion member" "1 io.fatelf.Manager.PackageNotFound zzzzzzzz null" \
	"$RC $(err_of "$RUN_OUT")"
run ctl install Zzzzzzzz
check_eq "install Zzzzzzzz (no file, no package shape): no such package, no guess" \
	"1 fatelfctl: install: no such package: no repository offers Zzzzzzzz, and no file of that name exists ('fatelfctl search' lists what the repositories offer)" \
	"$RC $RUN_ERR"
: >Greeter
run ctl install Greeter
check_eq "a file named Greeter is a file still" "1 fatelfctl: install: Greeter is empty, not a bundle" "$RC $RUN_ERR"
rm -f Greeter

# ---- a permission error names AdminGroup= and its file
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
	as_nobody() { timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$FATELFCTL" --socket "$SOCK" "$@"; }
	run as_nobody install greeter
	check_eq "uid 65534: install greeter is denied by fatelfd, naming AdminGroup= (exit 4)" \
		"4 fatelfctl: install: permission denied: installing needs root or the admin group (AdminGroup= in $CONF)" \
		"$RC $RUN_ERR"
	mode=$(stat -c %a "$SOCK")
	chmod 0660 "$SOCK"
	run as_nobody status
	check_eq "uid 65534, a socket of mode 0660 root:root: EACCES, naming AdminGroup= (exit 4)" \
		"4 fatelfctl: status: cannot reach fatelfd at $SOCK: Permission denied
fatelfctl: the socket does not admit you: run this as root, or have root admit your group (AdminGroup= in $CONF, and the socket's mode)" \
		"$RC $RUN_ERR"
	run as_nobody --json status
	check_eq "... --json: Unreachable with the socket, EACCES and the hint" \
		"fatelfctl.Unreachable $SOCK EACCES the socket does not admit you: run this as root, or have root admit your group (AdminGroup= in $CONF, and the socket's mode)" \
		"$(jq -r '"\(.error) \(.parameters.socket) \(.parameters.errno) \(.parameters.hint)"' <<<"$RUN_OUT")"
	chmod "$mode" "$SOCK"
else
	echo "# skipping the permission checks: not root or no setpriv"
fi

# ---- fatelfd not running: no socket, then a socket nobody listens on
run "$FATELFCTL" --socket "$DAEMON_SOCKDIR/nothing-here" status
check_eq "no socket: cannot reach, and how to start one there (exit 3)" \
	"3 fatelfctl: status: cannot reach fatelfd at $DAEMON_SOCKDIR/nothing-here: No such file or directory
fatelfctl: no fatelfd is listening there: start one with 'fatelfd --socket $DAEMON_SOCKDIR/nothing-here' (as root)" \
	"$RC $RUN_ERR"
run "$FATELFCTL" --socket "$DAEMON_SOCKDIR/nothing-here" --json status
check_eq "... --json: Unreachable with the socket, ENOENT and the hint" \
	"fatelfctl.Unreachable $DAEMON_SOCKDIR/nothing-here ENOENT no fatelfd is listening there: start one with 'fatelfd --socket $DAEMON_SOCKDIR/nothing-here' (as root)" \
	"$(jq -r '"\(.error) \(.parameters.socket) \(.parameters.errno) \(.parameters.hint)"' <<<"$RUN_OUT")"
DEFSOCK=/run/fatelfd/io.fatelf.Manager
if [ ! -e "$DEFSOCK" ]; then
	run env -u FATELF_SOCKET "$FATELFCTL" list
	check_eq "the system's socket missing: start it with systemctl (exit 3)" \
		"3 fatelfctl: list: cannot reach fatelfd at $DEFSOCK: No such file or directory
fatelfctl: fatelfd is not running: start it with 'systemctl start fatelfd.socket' (or run fatelfd as root)" \
		"$RC $RUN_ERR"
else
	echo "# skipping the default socket's words: $DEFSOCK exists here"
fi
daemon_kill
check "the killed daemon left its socket" test -S "$SOCK"
run ctl status
check_eq "a socket nobody listens on: refused, and how to start one (exit 3)" \
	"3 fatelfctl: status: cannot reach fatelfd at $SOCK: Connection refused
fatelfctl: no fatelfd is listening there: start one with 'fatelfd --socket $SOCK' (as root)" \
	"$RC $RUN_ERR"
run ctl --json status
check_eq "... --json: ECONNREFUSED" "fatelfctl.Unreachable ECONNREFUSED" \
	"$(jq -r '"\(.error) \(.parameters.errno)"' <<<"$RUN_OUT")"

t_done
