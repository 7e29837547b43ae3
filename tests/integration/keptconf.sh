#!/bin/bash
# Config files a removal keeps, as dpkg's "config-files" state, against a
# private fatelfd: remove (no purge) keeps a changed config and records it
# (a kept_configs row); installing the package again takes it back (the
# admin's copy stays, the new version goes beside it as PATH.fatelf-new,
# no --force needed); an admin copy put back as shipped is simply
# replaced; another package that ships the path is refused naming the
# package that left it, and install --force of it names that package in
# what it took over; remove --purge of the package, no longer
# installed, deletes the kept file, its .fatelf-new and the row; an
# upgrade that stops shipping a changed config keeps it the same way,
# and a purge of the installed package deletes it too; a kill -9 at the
# commit of such a removal, or of such an upgrade, leaves the row and the
# package as one.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init keptconf
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq sqlite3

daemon_vendor_key

# bundle NAME VERSION [CONF...]: one data file and config files
# (default: etc/NAME/NAME.conf), marked --config
bundle() {
	local name=$1 version=$2 c args=()
	shift 2
	[ $# -gt 0 ] || set -- "etc/$name/$name.conf"
	mkdir -p "t-$name-$version/opt/$name"
	echo "$name $version" >"t-$name-$version/opt/$name/VERSION"
	for c in "$@"; do
		mkdir -p "t-$name-$version/$(dirname "$c")"
		echo "setting=$name-$version" >"t-$name-$version/$c"
		args+=(--config "$c")
	done
	"$FATELF" bundle create -o "$name-$version.fatbundle" --name "$name" --version "$version" \
		"${args[@]}" --sign vendor.key "t-$name-$version" >/dev/null ||
		fail "bundle create $name $version" "failed"
}
bundle app 1.0
bundle app 2.0
bundle app 3.0 etc/app/other.conf
bundle app 4.0
bundle rival 1.0 etc/app/app.conf

daemon_init
daemon_prepare d
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"
DB=$T_WORK/d/state/fatelf.db
CONF=$ROOT/etc/app/app.conf
kept_rows() { sqlite3 -separator " " "$DB" "SELECT path, package, version FROM kept_configs WHERE type = 'file' ORDER BY path"; }
kept_dirs() { sqlite3 "$DB" "SELECT path FROM kept_configs WHERE type = 'dir' ORDER BY path" | tr '\n' ' ' | sed 's/ $//'; }

check "install app 1.0" ctl install app-1.0.fatbundle
check_eq "... app.conf is a config file" "true" "$(ctl --json files app | jq -r '[.files[] | select(.path == "/etc/app/app.conf")][0].config')"
echo "mine" >"$CONF"

# ---- remove keeps the changed config and records it
run ctl --json remove app
check_eq "remove app with a changed config" 0 "$RC"
check_eq "... the reply lists it as kept" "/etc/app/app.conf" "$(jq -rs 'map(select(.result)) | last | .result.config_kept | join(",")' <<<"$RUN_OUT")"
check_eq "... the admin's bytes stay" "mine" "$(cat "$CONF")"
check_eq "... a kept_configs row names it, the package and its version" "/etc/app/app.conf app 1.0" "$(kept_rows)"
check_eq "... with the bytes the package had installed there" "$(sha256sum <t-app-1.0/etc/app/app.conf | cut -d' ' -f1)" \
	"$(sqlite3 "$DB" "SELECT installed_sha256 FROM kept_configs WHERE type = 'file'")"
check_eq "... no package owns it" "" "$(sqlite3 "$DB" "SELECT path FROM files WHERE path = '/etc/app/app.conf'")"
check_eq "... the package's directories it stays in are recorded, for the purge" "/etc /etc/app" "$(kept_dirs)"
check "... the others are gone" test ! -e "$ROOT/opt/app"
run ctl --json owner /etc/app/app.conf
check_eq "owner of the kept file: PathNotOwned, naming who left it (exit 1)" \
	"1 io.fatelf.Manager.PathNotOwned /etc/app/app.conf app 1.0" \
	"$RC $(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.path) \(.parameters.kept_by) \(.parameters.kept_version)"' <<<"$RUN_OUT")"
run ctl owner /etc/app/app.conf
check_eq "... in words" \
	"fatelfctl: owner: no package owns /etc/app/app.conf: a config file app 1.0 left behind (remove --purge app deletes it)" \
	"$RUN_ERR"
run ctl --json owner /opt/app/VERSION
check_eq "... a path nothing left: no kept_by" "io.fatelf.Manager.PathNotOwned null" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.kept_by)"' <<<"$RUN_OUT")"
run ctl --json list
check_eq "list: app is in config-files state, not installed" "[] app 1.0 1" \
	"$(jq -rs 'last | "\(.packages | tostring) \(.config_files[0].name) \(.config_files[0].version) \(.config_files[0].files)"' <<<"$RUN_OUT")"
run ctl --json info app
check_eq "info app: PackageNotFound, with what it left (exit 1)" "1 io.fatelf.Manager.PackageNotFound app 1.0 1" \
	"$RC $(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.package) \(.parameters.kept_version) \(.parameters.kept_files)"' <<<"$RUN_OUT")"
run ctl info app
check_eq "... in words" \
	"fatelfctl: info: package not installed: app (removed; 1 config file of app 1.0 kept: remove --purge app deletes it)" \
	"$RUN_ERR"
run ctl list
check_eq "... in words, after the (empty) table" \
	"no packages installed

removed, their changed config files kept ('fatelfctl remove --purge NAME' deletes them):
  app 1.0: 1 config file" "$RUN_OUT"

# ---- another package that ships the path: refused, naming who left it
run ctl --json install rival-1.0.fatbundle
check_eq "rival ships /etc/app/app.conf: refused (exit 1)" 1 "$RC"
check_eq "... Conflict on the path" "io.fatelf.Manager.Conflict /etc/app/app.conf" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.path)"' <<<"$RUN_OUT")"
check "... naming app 1.0 and the purge" jq -es \
	'map(select(.error)) | last | .parameters.message | test("package app 1.0 left behind") and test("remove --purge app")' <<<"$RUN_OUT"
check_eq "... the admin's bytes stay" "mine" "$(cat "$CONF")"

# ---- install again: taken back, as an upgrade would
run ctl --json install app-2.0.fatbundle
check_eq "install app 2.0 after the removal, no --force" 0 "$RC"
check_eq "... the admin's copy stays" "mine" "$(cat "$CONF")"
check_eq "... the new version goes beside it" "setting=app-2.0" "$(cat "$CONF.fatelf-new" 2>/dev/null)"
check_eq "... the reply lists it as kept" "/etc/app/app.conf" "$(jq -rs 'map(select(.result)) | last | .result.config_kept | join(",")' <<<"$RUN_OUT")"
check_eq "... app owns the path again" "app" \
	"$(sqlite3 "$DB" "SELECT p.name FROM files f JOIN packages p ON p.id = f.package_id WHERE f.path = '/etc/app/app.conf'")"
check_eq "... the kept row is gone" "" "$(kept_rows)"
check_eq "... and the directories' rows" "" "$(kept_dirs)"
run ctl verify app
check_eq "... verify: the admin's change is a config change, not damage (exit 0)" 0 "$RC"

# ---- the admin makes the kept copy what the package ships: replaced
rm -f "$CONF.fatelf-new"
check "remove app (changed config kept)" ctl remove app
check_eq "... kept at 2.0" "/etc/app/app.conf app 2.0" "$(kept_rows)"
cp t-app-2.0/etc/app/app.conf "$CONF"
check "install app 2.0 over a kept config that is as it ships" ctl install app-2.0.fatbundle
check_eq "... written as shipped" "setting=app-2.0" "$(cat "$CONF")"
check "... nothing beside it" test ! -e "$CONF.fatelf-new"
check_eq "... the kept row is gone" "" "$(kept_rows)"
run ctl verify app
check_eq "... verify is clean" "2 files checked, 0 problems" "$RUN_OUT"

# ---- purge of a package no longer installed: what it left behind
echo "mine" >"$CONF"
check "remove app" ctl remove app
echo "left by an upgrade" >"$CONF.fatelf-new"
run ctl remove app
check_eq "remove (no purge) of a package that is not installed (exit 1)" 1 "$RC"
check_eq "... says so, and what it left" \
	"fatelfctl: remove: package not installed: app (removed; 1 config file of app 2.0 kept: remove --purge app deletes it)" \
	"$RUN_ERR"
run ctl --json hold app
check_eq "hold of it: PackageNotFound with what it left" "io.fatelf.Manager.PackageNotFound 2.0 1" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.kept_version) \(.parameters.kept_files)"' <<<"$RUN_OUT")"
run ctl --json files app
check_eq "files of it: the same" "io.fatelf.Manager.PackageNotFound 2.0 1" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.kept_version) \(.parameters.kept_files)"' <<<"$RUN_OUT")"
run ctl --json remove --dry-run --purge app
check_eq "remove --dry-run --purge app" 0 "$RC"
check_eq "... the reply: a remove of 2.0, config files only, a purge" "remove 2.0 true true true" \
	"$(jq -rs 'map(select(.result)) | last | .result | "\(.kind) \(.old_version) \(.config_files_only) \(.purge) \(.dry_run)"' <<<"$RUN_OUT")"
run ctl remove --dry-run --purge app
check_eq "... in words" "would purge the config files app 2.0 left behind: 2 files" "$RUN_OUT"
check "... changes nothing" test -e "$CONF" -a -e "$CONF.fatelf-new"
run ctl remove --purge app
check_eq "remove --purge app (not installed, config kept)" 0 "$RC"
check_eq "... says it purged what the removal left" "purged the config files app 2.0 left behind: 2 files" "$RUN_OUT"
check "... the kept config is gone" test ! -e "$CONF"
check "... so is its .fatelf-new" test ! -e "$CONF.fatelf-new"
check_eq "... and the row" "" "$(kept_rows)"
check "... and the directories emptied by it" test ! -e "$ROOT/etc/app" -a ! -e "$ROOT/etc"
check_eq "... and their rows" "" "$(kept_dirs)"
run ctl --json list
check_eq "... list has no config_files any more" "null" "$(jq -rs 'last | .config_files' <<<"$RUN_OUT")"
run ctl --json info app
check_eq "... info: PackageNotFound with nothing kept" "io.fatelf.Manager.PackageNotFound null" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.kept_version)"' <<<"$RUN_OUT")"
check_eq "... history has a committed remove of app 2.0" "remove committed 2.0" \
	"$(sqlite3 -separator " " "$DB" "SELECT kind, state, old_version FROM transactions WHERE package='app' ORDER BY id DESC LIMIT 1")"
run ctl --json remove --purge app
check_eq "a second purge: nothing left (exit 1)" 1 "$RC"
check_eq "... PackageNotFound" "io.fatelf.Manager.PackageNotFound app" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.package)"' <<<"$RUN_OUT")"
check "rival installs now" ctl install rival-1.0.fatbundle
check "remove rival" ctl remove rival

# ---- the kept file's directory swapped for a symlink out of the root:
# the purge removes nothing through it
check "install app 2.0" ctl install app-2.0.fatbundle
echo "mine" >"$CONF"
check "remove app" ctl remove app
mkdir -p "$T_WORK/outside"
echo "not the root's" >"$T_WORK/outside/app.conf"
mv "$ROOT/etc/app" "$ROOT/etc/app.real"
ln -s "$T_WORK/outside" "$ROOT/etc/app"
run ctl remove --purge app
check_eq "purge with /etc/app a symlink out of the root: the file beyond it stays" "not the root's" \
	"$(cat "$T_WORK/outside/app.conf" 2>/dev/null)"
check "... and so does the symlink's target directory" test -d "$T_WORK/outside"
rm -f "$ROOT/etc/app"
mv "$ROOT/etc/app.real" "$ROOT/etc/app"
ctl remove --purge app >/dev/null 2>&1
rm -rf "$ROOT/etc/app"
check_eq "... the rows are gone after a purge" "" "$(kept_rows)$(kept_dirs)"

# ---- an upgrade that stops shipping a changed config keeps it the same way
check "install app 2.0" ctl install app-2.0.fatbundle
echo "mine" >"$CONF"
run ctl --json install app-3.0.fatbundle
check_eq "upgrade to 3.0, which ships other.conf instead" 0 "$RC"
check_eq "... the changed app.conf stays" "mine" "$(cat "$CONF")"
check_eq "... kept at 2.0" "/etc/app/app.conf app 2.0" "$(kept_rows)"
run ctl --json remove --purge app
check_eq "remove --purge app (installed, with a config an upgrade left)" 0 "$RC"
check_eq "... the reply: a purge, not of config files only" "true null" \
	"$(jq -rs 'map(select(.result)) | last | .result | "\(.purge) \(.config_files_only)"' <<<"$RUN_OUT")"
check "... the left config is gone too" test ! -e "$CONF"
check "... as is other.conf" test ! -e "$ROOT/etc/app/other.conf"
check_eq "... and the row" "" "$(kept_rows)"

# ---- a config kept by an upgrade, with the sidecar an earlier upgrade
# left beside it: a later version that ships it again takes both back
check "install app 1.0" ctl install app-1.0.fatbundle
echo "mine" >"$CONF"
check "upgrade to 2.0 (its app.conf beside the admin's)" ctl install app-2.0.fatbundle
check_eq "... the sidecar holds 2.0's" "setting=app-2.0" "$(cat "$CONF.fatelf-new" 2>/dev/null)"
check "upgrade to 3.0, which no longer ships app.conf" ctl install app-3.0.fatbundle
check_eq "... the row has the bytes 2.0 shipped and installed there" \
	"$(sha256sum <t-app-2.0/etc/app/app.conf | cut -d' ' -f1) $(sha256sum <t-app-1.0/etc/app/app.conf | cut -d' ' -f1) $(stat -c %s t-app-1.0/etc/app/app.conf)" \
	"$(sqlite3 -separator " " "$DB" "SELECT sha256, installed_sha256, installed_size FROM kept_configs WHERE type = 'file'")"
run ctl --json install app-4.0.fatbundle
check_eq "upgrade to 4.0, which ships app.conf again: no conflict on the old sidecar" 0 "$RC"
check_eq "... the admin's copy stays, 4.0's beside it" "mine setting=app-4.0" \
	"$(cat "$CONF") $(cat "$CONF.fatelf-new" 2>/dev/null)"
check_eq "... the kept row is gone" "" "$(kept_rows)"
run ctl remove --purge app
check_eq "remove --purge app, in words" "purged app 4.0: 3 files" "$RUN_OUT"
check "... leaves nothing of it" test ! -e "$ROOT/etc/app"

# ---- install --force of another package over a config file a removed
# package left behind: it goes, and the result names who left it, as
# dpkg's --force-overwrite names the package the file is also in
check "install app 1.0" ctl install app-1.0.fatbundle
echo "mine" >"$CONF"
check "remove app (changed config kept)" ctl remove app
run ctl install --dry-run --force rival-1.0.fatbundle
check_eq "install --dry-run --force rival: exit 0" 0 "$RC"
check_match "... says it would replace the config file app 1.0 left behind" \
	"^would replace /etc/app/app.conf, a config file package app 1.0 left behind \(--force" "$(grep app.conf <<<"$RUN_OUT")"
run ctl --json install --force rival-1.0.fatbundle
check_eq "install --force rival over the config file app left: exit 0" 0 "$RC"
check_eq "... taken[]: the path, no owner, kept_by app at 1.0" "/etc/app/app.conf null app 1.0" \
	"$(jq -rs 'map(select(.result)) | last | .result.taken[] | select(.path == "/etc/app/app.conf") | "\(.path) \(.from) \(.kept_by) \(.kept_version)"' <<<"$RUN_OUT")"
check_eq "... rival's bytes are there" "setting=rival-1.0" "$(cat "$CONF")"
check_eq "... rival owns the path" "rival" \
	"$(sqlite3 "$DB" "SELECT p.name FROM files f JOIN packages p ON p.id = f.package_id WHERE f.path = '/etc/app/app.conf'")"
check_eq "... and app keeps it no more" "" "$(kept_rows)"
check "remove --purge rival" ctl remove --purge rival
ctl remove --purge app >/dev/null 2>&1
rm -rf "$ROOT/etc/app"

# ---- the same through fatelf --root (an image build, no daemon)
IMG=$T_WORK/img
mkdir -p "$IMG/etc/fatelf/keys.d" && cp vendor.pub "$IMG/etc/fatelf/keys.d/"
check "fatelf install --root" "$FATELF" install --root "$IMG" app-1.0.fatbundle
echo "mine" >"$IMG/etc/app/app.conf"
check "fatelf remove --root (changed config kept)" "$FATELF" remove --root "$IMG" app
run "$FATELF" list --root "$IMG" --json
check_eq "fatelf list --root --json: app in config-files state" "0 app 1.0 1" \
	"$RC $(jq -r '.config_files[0] | "\(.name) \(.version) \(.files)"' <<<"$RUN_OUT")"
run "$FATELF" list --root "$IMG"
check_eq "... in words" "no packages installed

removed, their changed config files kept ('fatelf remove --root DIR --purge NAME' deletes them):
  app 1.0: 1 config file" "$RUN_OUT"
run "$FATELF" owner --root "$IMG" /etc/app/app.conf
check_eq "fatelf owner --root of the kept file names who left it (exit 1)" \
	"1 fatelf: owner: /etc/app/app.conf: no package owns it: a config file app 1.0 left behind (remove --purge app deletes it)" \
	"$RC $RUN_ERR"
check "fatelf install --root takes it back" "$FATELF" install --root "$IMG" app-2.0.fatbundle
check_eq "... the admin's copy stays, the new one beside it" "mine setting=app-2.0" \
	"$(cat "$IMG/etc/app/app.conf") $(cat "$IMG/etc/app/app.conf.fatelf-new")"
check "fatelf remove --root" "$FATELF" remove --root "$IMG" app
run "$FATELF" remove --root "$IMG" --purge app
check_eq "fatelf remove --root --purge of the removed package" \
	"0 purged the config files app 2.0 left behind: 2 files" "$RC $RUN_OUT"
check "... leaves no file of it" test ! -e "$IMG/etc/app"
check "fatelf install --root app 1.0" "$FATELF" install --root "$IMG" app-1.0.fatbundle
echo "mine" >"$IMG/etc/app/app.conf"
check "fatelf remove --root (changed config kept)" "$FATELF" remove --root "$IMG" app
run "$FATELF" install --root "$IMG" --force rival-1.0.fatbundle
check_eq "fatelf install --root --force rival: names the package that left the config file" \
	"0 took over /etc/app/app.conf, a config file package app 1.0 left behind" "$RC $(grep app.conf <<<"$RUN_OUT")"
"$FATELF" remove --root "$IMG" --purge rival >/dev/null 2>&1
"$FATELF" remove --root "$IMG" --purge app >/dev/null 2>&1

# ---- kill -9 on either side of the commit of a removal that keeps a config
if [ "${FATELF_FAILPOINTS:-}" = yes ]; then
	for fp in remove.before-store-commit remove.after-store-commit; do
		case $fp in
		*before*) want="1 " ;;
		*) want="0 /etc/app/app.conf app 2.0" ;;
		esac
		ctl install app-2.0.fatbundle >/dev/null 2>&1
		echo "mine" >"$CONF"
		daemon_stop
		daemon_start d "FATELF_FAILPOINT=$fp" || fail "fatelfd starts with $fp" "see $T_WORK/d/log"
		run ctl remove app
		daemon_reap
		check_eq "killed at $fp: the daemon died of it" 137 "$DAEMON_STATUS"
		daemon_start d || fail "fatelfd starts again" "see $T_WORK/d/log"
		check_eq "... the package and its kept row, as one (installed: $want)" "$want" \
			"$(sqlite3 "$DB" "SELECT count(*) FROM packages WHERE name='app'") $(kept_rows)"
		check_eq "... the admin's bytes stay" "mine" "$(cat "$CONF")"
		ctl remove --purge app >/dev/null 2>&1
		check_eq "... a purge then leaves neither" "0 " \
			"$(sqlite3 "$DB" "SELECT count(*) FROM packages WHERE name='app'") $(kept_rows)"
	done
	# ... and of an upgrade that keeps a config its new version drops
	for fp in upgrade.before-store-commit upgrade.after-store-commit; do
		case $fp in
		*before*) want="2.0 " ;;
		*) want="3.0 /etc/app/app.conf app 2.0" ;;
		esac
		ctl install app-2.0.fatbundle >/dev/null 2>&1
		echo "mine" >"$CONF"
		daemon_stop
		daemon_start d "FATELF_FAILPOINT=$fp" || fail "fatelfd starts with $fp" "see $T_WORK/d/log"
		run ctl install app-3.0.fatbundle
		daemon_reap
		check_eq "upgrade to 3.0 killed at $fp: the daemon died of it" 137 "$DAEMON_STATUS"
		daemon_start d || fail "fatelfd starts again" "see $T_WORK/d/log"
		check_eq "... the version and the kept row, as one" "$want" \
			"$(sqlite3 "$DB" "SELECT version FROM packages WHERE name='app'") $(kept_rows)"
		check_eq "... the admin's bytes stay" "mine" "$(cat "$CONF")"
		ctl remove --purge app >/dev/null 2>&1
		check_eq "... a purge then leaves neither" "" \
			"$(sqlite3 "$DB" "SELECT version FROM packages WHERE name='app'")$(kept_rows)"
	done
else
	echo "# skipping the failpoint runs: this build has no failpoints (configure --enable-failpoints)"
fi

t_done
