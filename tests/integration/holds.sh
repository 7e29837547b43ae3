#!/bin/bash
# fatelfctl hold and unhold against a private fatelfd with bundle files and
# a file:// repository: a hold of a package not installed is
# PackageNotFound; a held package shows in list (HELD column, --json held)
# and status (held line, --json held) and has its row in the store's holds
# table; installing another version of it from a file, a URL or the
# repository is refused with PackageHeld (nothing changes on disk), unless
# root gives --force (the hold stays); the same version reinstalls;
# upgrade skips it and says so (text and --json) while it upgrades the
# others; unhold releases it; removing the package drops its hold; the
# hold outlives a restart; a user is refused, a member of the admin
# group may hold.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init holds
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq sqlite3 setpriv

"$FATELF" bundle keygen --no-password -p vendor.pub -s vendor.key >/dev/null || fail "keygen (vendor)" "no key"
"$FATELF" bundle keygen --no-password -p repo.pub -s repo.key >/dev/null || fail "keygen (repository)" "no key"
mkdir -p keys && cp vendor.pub keys/
DAEMON_KEYS=$T_WORK/keys

# bundle NAME VERSION: NAME-VERSION.fatbundle, one file saying its version
bundle() {
	mkdir -p "t-$1-$2/opt/$1"
	echo "$1 $2" >"t-$1-$2/opt/$1/VERSION"
	"$FATELF" bundle create -o "$1-$2.fatbundle" --name "$1" --version "$2" --sign vendor.key "t-$1-$2" >/dev/null
}
for v in 1.0 2.0; do bundle demo $v; bundle other $v; done
"$FATELF" repo init --sign repo.key repo >/dev/null
"$FATELF" repo add --sign repo.key repo demo-2.0.fatbundle other-2.0.fatbundle >/dev/null

daemon_init
ADMGID=$(getent group adm | cut -d: -f3)
daemon_prepare d "Repositories=$T_WORK/d/repos.d" ${ADMGID:+AdminGroup=adm}
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"
DB=$T_WORK/d/state/fatelf.db
version_on_disk() { cat "$ROOT/opt/$1/VERSION" 2>/dev/null; }
held_of() { ctl --json list | jq -r --arg n "$1" '.packages[] | select(.name == $n) | .held'; }
error_of() { jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.package) \(.parameters.installed) \(.parameters.offered)"' <<<"$1"; }

check "install demo 1.0" ctl install demo-1.0.fatbundle
check "install other 1.0" ctl install other-1.0.fatbundle
check "repo add local file://" ctl repo add local "file://$T_WORK/repo" --key repo.pub
check "update" ctl update

# ---- hold
run ctl hold nosuch
check_eq "hold of a package not installed fails (exit 1)" 1 "$RC"
check_eq "... saying so" "fatelfctl: hold: package not installed: nosuch" "$RUN_ERR"
run ctl --json hold nosuch
check_eq "... PackageNotFound with the package" "io.fatelf.Manager.PackageNotFound nosuch" \
	"$(jq -r '"\(.error) \(.parameters.package)"' <<<"$RUN_OUT")"
run ctl hold demo
check_eq "hold demo" "0 demo held" "$RC $RUN_OUT"
run ctl --json hold demo
check_eq "hold demo again: held, nothing changed" "0 demo true false" \
	"$RC $(jq -r '"\(.package) \(.held) \(.changed)"' <<<"$RUN_OUT")"
check_eq "the store holds one row, demo's" "demo" \
	"$(sqlite3 "$DB" 'SELECT p.name FROM holds h JOIN packages p ON p.id = h.package_id')"

run ctl list
check_match "list: a HELD column" '^NAME +VERSION +FILES +SIZE +SAVED +POLICY +HELD +SUMMARY' "$RUN_OUT"
check_match "... demo is held" '^demo +1\.0 .* held( |$)' "$RUN_OUT"
check_match "... other is not" '^other +1\.0 .* - ?' "$RUN_OUT"
check_eq "list --json: held true for demo, false for other" "true false" "$(held_of demo) $(held_of other)"
check_eq "info --json: held" "true" "$(ctl --json info demo | jq -r .package.held)"
run ctl status
check_match "status: held demo" '^held: demo$' "$RUN_OUT"
check_eq "status --json: held [demo]" '["demo"]' "$(ctl --json status | jq -c .held)"

# ---- another version is refused, from each source
run ctl install demo-2.0.fatbundle
check_eq "install of demo 2.0 from a file: refused (exit 1)" 1 "$RC"
check_eq "... in one line saying why" \
	"fatelfctl: install: held: demo is held at 1.0 and the bundle has 2.0 ('fatelfctl unhold demo' releases it, or install it as root with --force)" \
	"$RUN_ERR"
run ctl --json install demo-2.0.fatbundle
check_eq "... PackageHeld with package, installed and offered" "io.fatelf.Manager.PackageHeld demo 1.0 2.0" \
	"$(error_of "$RUN_OUT")"
run ctl --json install "file://$T_WORK/demo-2.0.fatbundle"
check_eq "install from a URL: PackageHeld" "io.fatelf.Manager.PackageHeld demo 1.0 2.0" "$(error_of "$RUN_OUT")"
run ctl --json install demo
check_eq "install NAME from the repository: PackageHeld" "io.fatelf.Manager.PackageHeld demo 1.0 2.0" \
	"$(error_of "$RUN_OUT")"
run ctl --json install demo=2.0 --dry-run
check_eq "... and a dry run says so too" "io.fatelf.Manager.PackageHeld demo 1.0 2.0" "$(error_of "$RUN_OUT")"
check_eq "demo is still 1.0, on disk and in the store" "demo 1.0|1.0" \
	"$(version_on_disk demo)|$(ctl --json info demo | jq -r .package.version)"
check "the same version reinstalls (a repair)" ctl install demo-1.0.fatbundle

# ---- upgrade skips it
run ctl --json upgrade --dry-run
check_eq "upgrade --dry-run --json: demo skipped as held" '{"package":"demo","held":true,"skipped":true}' \
	"$(jq -c 'select(.skipped)' <<<"$RUN_OUT")"
check_eq "... other would be upgraded" "other 1.0 2.0" \
	"$(jq -r 'select(.result) | .result | "\(.package) \(.old_version) \(.new_version)"' <<<"$RUN_OUT")"
run ctl upgrade
check_eq "upgrade exits 0" 0 "$RC"
check_match "... saying demo is held" "^demo is held: not upgraded \('fatelfctl unhold demo' releases it\)$" "$RUN_OUT"
check_eq "... and upgrades other alone" "demo 1.0|other 2.0" "$(version_on_disk demo)|$(version_on_disk other)"
run ctl upgrade demo
check_eq "upgrade demo (named) skips it too" "0 demo is held: not upgraded ('fatelfctl unhold demo' releases it)" \
	"$RC $RUN_OUT"
check_eq "... demo is still 1.0" "demo 1.0" "$(version_on_disk demo)"

# ---- who may
as_nobody() { timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$FATELFCTL" --socket "$SOCK" "$@"; }
run as_nobody unhold demo
check_eq "unhold by a user: permission denied (exit 4)" 4 "$RC"
check_match "... in words" "releasing a hold needs root or the admin group" "$RUN_ERR"
run as_nobody hold other
check_eq "hold by a user: permission denied (exit 4)" 4 "$RC"
check_eq "... other is not held" false "$(held_of other)"
if [ -n "$ADMGID" ]; then
	run timeout 60 setpriv --reuid=65534 --regid="$ADMGID" --clear-groups "$FATELFCTL" --socket "$SOCK" hold other
	check_eq "a member of the admin group may hold" "0 other held" "$RC $RUN_OUT"
	run timeout 60 setpriv --reuid=65534 --regid="$ADMGID" --clear-groups "$FATELFCTL" --socket "$SOCK" \
		--json install --force demo-2.0.fatbundle
	check_eq "... but not force an install over a hold (root's)" "4 io.fatelf.Manager.RootRequired" \
		"$RC $(jq -rs 'map(select(.error)) | last | .error' <<<"$RUN_OUT")"
	check "... and unhold" timeout 60 setpriv --reuid=65534 --regid="$ADMGID" --clear-groups "$FATELFCTL" \
		--socket "$SOCK" unhold other
fi

# ---- the hold outlives a restart
daemon_stop
daemon_start d || fail "fatelfd starts again" "see $T_WORK/d/log"
check_eq "after a restart demo is still held" true "$(held_of demo)"

# ---- --force installs over it, and the hold stays
run ctl install --force demo-2.0.fatbundle
check_eq "install --force demo 2.0 over the hold" 0 "$RC"
check_eq "... demo is 2.0, still held" "demo 2.0 true" "$(version_on_disk demo) $(held_of demo)"

# ---- unhold
run ctl unhold demo
check_eq "unhold demo" "0 demo no longer held" "$RC $RUN_OUT"
run ctl unhold demo
check_eq "unhold again: was not held" "0 demo was not held" "$RC $RUN_OUT"
check_eq "the holds table is empty" 0 "$(sqlite3 "$DB" 'SELECT count(*) FROM holds')"
check_eq "status --json: held []" '[]' "$(ctl --json status | jq -c .held)"
check "an older version installs again (with --allow-downgrade)" ctl install --allow-downgrade demo-1.0.fatbundle
check "upgrade now upgrades demo" ctl upgrade
check_eq "... to 2.0" "demo 2.0" "$(version_on_disk demo)"

# ---- removing a package drops its hold
check "hold demo again" ctl hold demo
check "remove demo" ctl remove demo
check_eq "... its hold is gone from the store" 0 "$(sqlite3 "$DB" 'SELECT count(*) FROM holds')"
check "install demo 1.0 again" ctl install demo-1.0.fatbundle
check_eq "... not held" false "$(held_of demo)"
run ctl hold
check_eq "hold without a package: usage error (exit 2)" 2 "$RC"

daemon_stop
check_no_sanitizer_report
t_done
