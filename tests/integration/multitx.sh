#!/bin/bash
# Transactions over several packages against a private fatelfd: three
# bundle files installed by one call are one transaction (their history
# rows commit together, one reply with three results); one bad bundle
# among them installs none and the error names it; remove A B in one call;
# remove A B where B is not installed removes nothing; progress replies
# name the package and the file; install --reinstall FILE rewrites a file
# damaged on disk (verify is clean again); plain remove keeps a changed
# config file, remove --purge removes it and a PATH.fatelf-new file.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init multitx
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq sqlite3

daemon_vendor_key

# bundle NAME VERSION: one data file and one config file
bundle() {
	mkdir -p "t-$1-$2/opt/$1" "t-$1-$2/etc/$1"
	echo "$1 $2" >"t-$1-$2/opt/$1/VERSION"
	echo "setting=$1-$2" >"t-$1-$2/etc/$1/$1.conf"
	"$FATELF" bundle create -o "$1-$2.fatbundle" --name "$1" --version "$2" --sign vendor.key "t-$1-$2" >/dev/null
}
for p in alpha beta gamma; do bundle $p 1.0; done
bundle alpha 2.0
# bad writes alpha's file: a conflict within the transaction
mkdir -p t-bad/opt/alpha && echo bad >t-bad/opt/alpha/VERSION
"$FATELF" bundle create -o bad-1.0.fatbundle --name bad --version 1.0 --sign vendor.key t-bad >/dev/null

daemon_init
daemon_prepare d
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"
DB=$T_WORK/d/state/fatelf.db
installed() { ctl --json list | jq -r '[.packages[].name] | sort | join(",")'; }

# ---- one bad bundle among three: none installed
run ctl --json install alpha-1.0.fatbundle bad-1.0.fatbundle gamma-1.0.fatbundle
check_eq "install with a bad bundle among them fails (exit 1)" 1 "$RC"
check_eq "... Conflict naming the path, alpha, and bad in its message" \
	"io.fatelf.Manager.Conflict /opt/alpha/VERSION alpha true" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.path) \(.parameters.owner) \(.parameters.message | test("\\bbad\\b"))"' <<<"$RUN_OUT")"
check_eq "... and none is installed" "" "$(installed)"
check "... no file of alpha on disk" test ! -e "$ROOT/opt/alpha/VERSION"
check_eq "... alpha's history row failed" "failed" \
	"$(sqlite3 "$DB" "SELECT state FROM transactions WHERE package='alpha' ORDER BY id DESC LIMIT 1")"
run ctl install alpha-1.0.fatbundle bad-1.0.fatbundle
check_eq "... in words" "fatelfctl: install: conflict: /opt/alpha/VERSION belongs to package alpha" "$RUN_ERR"

# ---- a file that is no bundle at all, among two: named in the words
printf 'not a bundle, only words\n%.0s' $(seq 200) >junk.fatbundle
run ctl install alpha-1.0.fatbundle junk.fatbundle
check_eq "install with a file that is no bundle among them (exit 1), naming that file" \
	"1 fatelfctl: install: invalid bundle: $T_WORK/junk.fatbundle: opening the archive: Unrecognized archive format (FATELF_E_ARCHIVE)" \
	"$RC $RUN_ERR"
check_eq "... and none is installed" "" "$(installed)"

# ---- three bundles, one call, one transaction
run ctl --json install alpha-1.0.fatbundle beta-1.0.fatbundle gamma-1.0.fatbundle
check_eq "install of three bundles in one call" 0 "$RC"
check_eq "... one reply with three results" "alpha beta gamma" \
	"$(jq -rs 'map(select(.results)) | last | [.results[].package] | join(" ")' <<<"$RUN_OUT")"
check_eq "... all installed" "alpha,beta,gamma" "$(installed)"
check_eq "... bytes on disk" "beta 1.0" "$(cat "$ROOT/opt/beta/VERSION")"
check_eq "... three committed rows, one commit time" "3 1" \
	"$(sqlite3 -separator " " "$DB" "SELECT count(*), count(DISTINCT finished_at) FROM transactions WHERE state='committed'")"
check_eq "... the packages record their files" "file $T_WORK/gamma-1.0.fatbundle" \
	"$(ctl --json info gamma | jq -r '"\(.package.source_type) \(.package.source)"')"
# progress names the package and the file (progress is sampled: which
# member's states reach the client depends on the machine's speed)
check "... progress names a package and a file" jq -es \
	'[.[] | select((.progress.package | IN("alpha", "beta", "gamma")) and .progress.path != null)] | length > 0' \
	<<<"$RUN_OUT"
run ctl install alpha-2.0.fatbundle beta-1.0.fatbundle
check "two bundles in words" grep -q "committed: 2 packages in one transaction" <<<"$RUN_OUT"

# ---- reinstall repairs a damaged file
echo damaged >"$ROOT/opt/gamma/VERSION"
run ctl verify gamma
check_eq "verify sees the damage (exit 1)" 1 "$RC"
run ctl install --reinstall gamma
check_eq "--reinstall of a package from a file needs the bundle (exit 1)" 1 "$RC"
check "... saying so" grep -q "install --reinstall FILE" <<<"$RUN_ERR"
run ctl install --reinstall gamma-1.0.fatbundle
check_eq "--reinstall FILE" 0 "$RC"
check_eq "... the file is restored" "gamma 1.0" "$(cat "$ROOT/opt/gamma/VERSION")"
check "... verify is clean" ctl verify gamma
check_eq "... the history says reinstall" "reinstall" \
	"$(sqlite3 "$DB" "SELECT kind FROM transactions WHERE package='gamma' ORDER BY id DESC LIMIT 1")"

# ---- remove A B where B is not installed: nothing removed
run ctl --json remove alpha nosuch
check_eq "remove alpha nosuch fails (exit 1)" 1 "$RC"
check_eq "... PackageNotFound naming nosuch" "io.fatelf.Manager.PackageNotFound nosuch" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.package)"' <<<"$RUN_OUT")"
check_eq "... nothing removed" "alpha,beta,gamma" "$(installed)"
check "... alpha's file stays" test -e "$ROOT/opt/alpha/VERSION"

# ---- remove A B in one call
run ctl --json remove alpha beta
check_eq "remove alpha beta" 0 "$RC"
check_eq "... both gone" "gamma" "$(installed)"
check "... their files too" test ! -e "$ROOT/opt/alpha/VERSION" -a ! -e "$ROOT/opt/beta/VERSION"
check_eq "... two committed removes, one commit time" "2 1" \
	"$(sqlite3 -separator " " "$DB" "SELECT count(*), count(DISTINCT finished_at) FROM transactions WHERE kind='remove' AND state='committed'")"

# ---- plain remove keeps a changed config; --purge removes it and .fatelf-new
check "install beta again" ctl install beta-1.0.fatbundle
echo "mine" >"$ROOT/etc/beta/beta.conf"
run ctl remove beta
check_eq "remove beta with a changed config" 0 "$RC"
check_eq "... the changed config is kept" "mine" "$(cat "$ROOT/etc/beta/beta.conf" 2>/dev/null)"
check "... and said so" grep -q "beta.conf" <<<"$RUN_OUT"
rm -f "$ROOT/etc/beta/beta.conf"
check "install beta again" ctl install beta-1.0.fatbundle
echo "mine" >"$ROOT/etc/beta/beta.conf"
echo "left by an upgrade" >"$ROOT/etc/beta/beta.conf.fatelf-new"
run ctl remove --purge beta
check_eq "remove --purge beta" 0 "$RC"
check "... the changed config is gone" test ! -e "$ROOT/etc/beta/beta.conf"
check "... so is beta.conf.fatelf-new" test ! -e "$ROOT/etc/beta/beta.conf.fatelf-new"
check "... and the emptied directory" test ! -e "$ROOT/etc/beta"

t_done
