#!/bin/bash
# Dependencies against a private fatelfd: app depends on lib (>= 2).
# Installing app alone, with no lib or lib 1.0 installed, is refused with
# DependencyMissing naming lib and the constraint, and installs nothing
# (a dry run too); app and lib 2.0 in one call are one transaction and
# install. Removing lib then is refused with DependencyBroken naming app;
# removing both in one call works. From a file:// repository, install app
# pulls lib 2.0 in (dry run: the plan), one transaction, lib automatic; a
# cycle (cyca, cycb) installs; a dependency no repository offers is
# DependencyMissing. autoremove removes lib once app is gone, not cycb
# which cyca needs; an upgrade keeps cycb automatic, installing it by name
# does not. fatelf install --root refuses the same way.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init depsd
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq sqlite3

daemon_vendor_key

# bundle NAME VERSION [DEPENDS...]: one data file
bundle() {
	local n=$1 v=$2 dep args=()
	shift 2
	for dep; do args+=(--depends "$dep"); done
	mkdir -p "t-$n-$v/opt/$n"
	echo "$n $v" >"t-$n-$v/opt/$n/VERSION"
	"$FATELF" bundle create -o "$n-$v.fatbundle" --name "$n" --version "$v" "${args[@]}" \
		--sign vendor.key "t-$n-$v" >/dev/null || fail "bundle $n $v" "bundle create failed"
}
bundle lib 1.0
bundle lib 2.0
bundle app 1.0 'lib (>= 2)'

daemon_init
daemon_prepare d "Repositories=$T_WORK/d/repos.d"
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"
DB=$T_WORK/d/state/fatelf.db
installed() { ctl --json list | jq -r '[.packages[] | "\(.name)=\(.version)"] | sort | join(",")'; }
error_of() { jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.package) \(.parameters.dependency) [\(.parameters.constraint)]"' <<<"$RUN_OUT"; }

# ---- app alone, nothing installed
run ctl --json install app-1.0.fatbundle
check_eq "install app without lib fails (exit 1)" 1 "$RC"
check_eq "... DependencyMissing naming app, lib and the constraint" \
	"io.fatelf.Manager.DependencyMissing app lib [>= 2]" "$(error_of)"
check_eq "... nothing installed" "" "$(installed)"
check "... no file of app on disk" test ! -e "$ROOT/opt/app/VERSION"
check_eq "... app's history row failed" "failed" \
	"$(sqlite3 "$DB" "SELECT state FROM transactions WHERE package='app' ORDER BY id DESC LIMIT 1")"
run ctl install app-1.0.fatbundle
check_eq "... in words" \
	"fatelfctl: install: dependency: app needs lib (>= 2), installed neither before nor with it (install both in one command)" \
	"$RUN_ERR"
run ctl --json install --dry-run app-1.0.fatbundle
check_eq "... a dry run says so too" "io.fatelf.Manager.DependencyMissing app lib [>= 2]" "$(error_of)"

# ---- lib 1.0 installed: not the version app needs
run ctl install lib-1.0.fatbundle
check_eq "install lib 1.0" 0 "$RC"
run ctl --json install app-1.0.fatbundle
check_eq "install app with lib 1.0 installed fails" \
	"1 io.fatelf.Manager.DependencyMissing app lib [>= 2]" "$RC $(error_of)"
check_eq "... lib 1.0 stays, app is not installed" "lib=1.0" "$(installed)"
run ctl --json install --dry-run lib-1.0.fatbundle app-1.0.fatbundle
check_eq "... a dry run of app with lib 1.0 in the same call fails too" \
	"1 io.fatelf.Manager.DependencyMissing app lib [>= 2]" "$RC $(error_of)"

# ---- app and lib 2.0 in one call: one transaction
run ctl --json install --dry-run app-1.0.fatbundle lib-2.0.fatbundle
check_eq "dry run of app with lib 2.0 in one call" 0 "$RC"
check_eq "... installs nothing" "lib=1.0" "$(installed)"
run ctl --json install app-1.0.fatbundle lib-2.0.fatbundle
check_eq "install app and lib 2.0 in one call" 0 "$RC"
check_eq "... both installed" "app=1.0,lib=2.0" "$(installed)"
check_eq "... bytes on disk" "app 1.0 lib 2.0" "$(cat "$ROOT/opt/app/VERSION") $(cat "$ROOT/opt/lib/VERSION")"
check_eq "... two committed rows, one commit time" "2|1" \
	"$(sqlite3 "$DB" "SELECT COUNT(*), COUNT(DISTINCT finished_at) FROM transactions WHERE state='committed' AND package IN ('app','lib') AND new_version IN ('1.0','2.0') AND id > (SELECT MAX(id) FROM transactions WHERE package='app' AND state='failed')")"

check_eq "... app's dependency recorded in the store" "lib|>= 2" \
	"$(sqlite3 "$DB" "SELECT d.name, d.constraint_text FROM depends d JOIN packages p ON p.id = d.package_id WHERE p.name = 'app'")"

# ---- removing lib would break app
run ctl --json remove lib
check_eq "remove lib while app needs it fails (exit 1)" 1 "$RC"
check_eq "... DependencyBroken naming lib and app" "io.fatelf.Manager.DependencyBroken lib app" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.package) \(.parameters.dependents | join(","))"' <<<"$RUN_OUT")"
check_eq "... nothing removed" "app=1.0,lib=2.0" "$(installed)"
check "... lib's file still on disk" test -e "$ROOT/opt/lib/VERSION"
run ctl remove lib
check_eq "... in words" \
	"fatelfctl: remove: dependency: lib is needed by app (remove them in the same command, or first)" "$RUN_ERR"
run ctl --json remove --dry-run lib
check_eq "... a dry run says so too" "1 io.fatelf.Manager.DependencyBroken" \
	"$RC $(jq -rs 'map(select(.error)) | last | .error' <<<"$RUN_OUT")"
# ---- installing a version of lib that app's constraint refuses
run ctl --json install --allow-downgrade lib-1.0.fatbundle
check_eq "lib 1.0 over 2.0 while app needs lib (>= 2): DependencyBroken naming lib and app" \
	"1 io.fatelf.Manager.DependencyBroken lib app" \
	"$RC $(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.package) \(.parameters.dependents | join(","))"' <<<"$RUN_OUT")"
check_eq "... nothing changed" "app=1.0,lib=2.0" "$(installed)"
run ctl install --allow-downgrade lib-1.0.fatbundle
check_eq "... in words" "fatelfctl: install: dependency: lib is needed by app, whose constraint the version offered does not meet (install a version that meets it, or them too in the same command)" "$RUN_ERR"
run ctl --json remove --dry-run lib app
check_eq "a dry run of removing lib and app together is fine" 0 "$RC"
run ctl --json remove lib app
check_eq "remove lib and app in one call" 0 "$RC"
check_eq "... both removed" "" "$(installed)"
check_eq "... and their dependency rows" "0" "$(sqlite3 "$DB" "SELECT COUNT(*) FROM depends")"
check "... no file left" test ! -e "$ROOT/opt/app/VERSION" -a ! -e "$ROOT/opt/lib/VERSION"

# ---- from a file:// repository: install app pulls lib in
bundle cyca 1.0 'cycb'
bundle cycb 1.0 'cyca (>= 1.0)'
bundle lone 1.0 'ghost'
"$FATELF" bundle keygen --no-password -p repo.pub -s repo.key >/dev/null || fail "keygen" "no repository key"
check "repo init" "$FATELF" repo init --sign repo.key www
for b in lib-1.0 lib-2.0 app-1.0 cyca-1.0 cycb-1.0 lone-1.0; do
	check "repo add $b" "$FATELF" repo add --sign repo.key www $b.fatbundle
done
check "repo add main file://" ctl repo add main "file://$T_WORK/www" --key repo.pub
check "update" ctl update
results() { jq -rs 'map(select(.results)) | last | [.results[] | "\(.package)=\(.new_version)"] | join(" ")' <<<"$RUN_OUT"; }
run ctl --json install --dry-run app
check_eq "dry run of install app from the repository: the plan has lib 2.0 too" "0 app=1.0 lib=2.0" "$RC $(results)"
check_eq "... installs nothing" "" "$(installed)"
run ctl install --dry-run app
out=$RUN_OUT
check "... in words: would install app" grep -q "^would install app 1\.0" <<<"$out"
check "... and lib" grep -q "^would install lib 2\.0" <<<"$out"
check "... as one transaction" grep -qx "dry run: 2 packages in one transaction" <<<"$out"
run ctl --json install app
check_eq "install app from the repository" 0 "$RC"
check_eq "... one reply naming both" "app=1.0 lib=2.0" "$(results)"
check_eq "... both installed, lib at the newest version that fits" "app=1.0,lib=2.0" "$(installed)"
check_eq "... lib is automatic, app is not" "app|0 lib|1" \
	"$(sqlite3 "$DB" "SELECT name, automatic FROM packages ORDER BY name" | tr '\n' ' ' | sed 's/ $//')"
check_eq "... one transaction: one commit time" "2|1" \
	"$(sqlite3 "$DB" "SELECT COUNT(*), COUNT(DISTINCT finished_at) FROM transactions WHERE state='committed' AND kind='install' AND id > (SELECT MAX(id) FROM transactions WHERE package='lib' AND kind='remove')")"
check_eq "... from the repository" "main main" \
	"$(sqlite3 "$DB" "SELECT source FROM packages ORDER BY name" | tr '\n' ' ' | sed 's/ $//')"
run ctl --json install cyca
check_eq "install cyca, which needs cycb, which needs cyca" "0 cyca=1.0 cycb=1.0" "$RC $(results)"
check_eq "... cycb automatic" "1" "$(sqlite3 "$DB" "SELECT automatic FROM packages WHERE name='cycb'")"
run ctl --json install lone
check_eq "install lone, whose dependency no repository offers" \
	"1 io.fatelf.Manager.DependencyMissing lone ghost []" "$RC $(error_of)"
check_eq "... lone not installed" "0" "$(sqlite3 "$DB" "SELECT COUNT(*) FROM packages WHERE name='lone'")"
run ctl --json remove app
check_eq "remove app" 0 "$RC"
check_eq "... lib stays" "cyca=1.0,cycb=1.0,lib=2.0" "$(installed)"

# ---- autoremove: the automatic packages nothing needs
run ctl --json autoremove --dry-run
check_eq "autoremove --dry-run: the plan is lib (cycb is needed by cyca)" "0 lib=null" \
	"$RC $(results)"
check_eq "... removes nothing" "cyca=1.0,cycb=1.0,lib=2.0" "$(installed)"
run ctl autoremove
check_eq "autoremove" 0 "$RC"
out=$RUN_OUT
check "... in words: lib removed" grep -q "^removed lib 2\.0" <<<"$out"
check_eq "... and no count of one package" "" "$(grep "in one transaction" <<<"$out")"
check_eq "... lib removed" "cyca=1.0,cycb=1.0" "$(installed)"
check "... lib's file gone" test ! -e "$ROOT/opt/lib/VERSION"
run ctl autoremove
check_eq "autoremove again: nothing to remove" "0 no automatic package to remove" "$RC $RUN_OUT"
run ctl --json remove cyca
check_eq "remove cyca, which the automatic cycb needs: refused" \
	"1 io.fatelf.Manager.DependencyBroken" "$RC $(jq -rs 'map(select(.error)) | last | .error' <<<"$RUN_OUT")"

# ---- marks: an upgrade keeps cycb automatic, installing it by name does not
bundle cycb 1.1 'cyca (>= 1.0)'
check "repo add cycb 1.1" "$FATELF" repo add --sign repo.key www cycb-1.1.fatbundle
check "update" ctl update
run ctl upgrade
check_eq "upgrade" 0 "$RC"
check_eq "... cycb 1.1, still automatic" "1.1|1" \
	"$(sqlite3 "$DB" "SELECT version, automatic FROM packages WHERE name='cycb'")"
run ctl install cycb
check_eq "install cycb by name" 0 "$RC"
check_eq "... no longer automatic" "1.1|0" "$(sqlite3 "$DB" "SELECT version, automatic FROM packages WHERE name='cycb'")"

# ---- fatelf install --root: the same engine refuses the same way
mkdir -p image
run "$FATELF" install --root image --allow-unsigned app-1.0.fatbundle
check_eq "fatelf install --root app without lib fails (exit 1)" 1 "$RC"
check "... naming lib" grep -q "lib" <<<"$RUN_ERR"
check "... app not in the image" test ! -e image/opt/app/VERSION
run "$FATELF" install --root image --allow-unsigned lib-2.0.fatbundle app-1.0.fatbundle
check_eq "fatelf install --root lib and app together" 0 "$RC"
check "... app in the image" test -e image/opt/app/VERSION

daemon_stop d
daemon_sanitized d
t_done
