#!/bin/bash
# A repository's identity and expiry, as a machine enforces them
# (doc/repository.md, section 5.1), with a private fatelfd and file://
# repositories:
#  - mix-and-match: two repositories signed with one key; the mirror of A
#    serves B's index (a higher serial). update refuses it with
#    RepositoryMismatch naming both identities (exit 5), the serial floor
#    stays (A's own index, of its lower serial, is accepted after), and B's
#    packages are not offered. An index that names no repository is
#    refused once an identity is pinned; repo add --id pins one before
#    the first update.
#  - freeze: an index whose expiry passes after the machine accepted it.
#    install NAME, upgrade, search and list --upgradable refuse with
#    RepositoryExpired naming the repository and the expiry (exit 5), and
#    nothing is installed; info shows the installed package and says the
#    available versions are unknown, and why (available_error with --json);
#    once the vendor re-signs, update and install work again.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init repoid
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq minisign python3

daemon_vendor_key
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G (repository)" "no key"

# bundle NAME VERSION: NAME-VERSION.fatbundle, one file, signed by the vendor
bundle() {
	mkdir -p "tree-$1-$2/opt/$1"
	echo "$1 $2" >"tree-$1-$2/opt/$1/data"
	"$FATELF" bundle create -o "$1-$2.fatbundle" --name "$1" --version "$2" --sign vendor.key \
		"tree-$1-$2" >/dev/null || fail "bundle create $1 $2" "failed"
}
for b in "alpha 1.0" "beta 1.0" "beta 2.0" "gamma 1.0" "gamma 2.0" "gamma 3.0"; do
	bundle $b
done
id_of() { "$FATELF" repo list --json "$1" | jq -r '.repository // "none"'; }
serial_of() { "$FATELF" repo list --json "$1" | jq -r .serial; }

# ---- the vendor's side: init names the repository
check "repo init --sign A" "$FATELF" repo init --sign repo.key A
check "repo init --sign B (the same key)" "$FATELF" repo init --sign repo.key B
ida=$(id_of A)
idb=$(id_of B)
check_match "A's index names its repository: 32 hex digits" '^[0-9a-f]{32}$' "$ida"
check_match "so does B's" '^[0-9a-f]{32}$' "$idb"
check_eq "... and they differ" 1 "$([ "$ida" != "$idb" ] && echo 1)"
check "repo add alpha 1.0 to A" "$FATELF" repo add --sign repo.key A alpha-1.0.fatbundle
check "repo add beta 1.0 to B" "$FATELF" repo add --sign repo.key B beta-1.0.fatbundle
check "repo add beta 2.0 to B" "$FATELF" repo add --sign repo.key B beta-2.0.fatbundle
check "repo remove beta 1.0 from B" "$FATELF" repo remove --sign repo.key B beta 1.0
check_eq "each publish keeps the repository's identity" "$ida $idb" "$(id_of A) $(id_of B)"
check_eq "A is at serial 2, B at 4" "2 4" "$(serial_of A) $(serial_of B)"

# ---- mix-and-match: A's mirror serves B's index
daemon_init
daemon_prepare d1 "Repositories=$T_WORK/d1/repos.d"
daemon_start d1 || fail "fatelfd starts" "see $T_WORK/d1/log"
cp -a A mirror
check "repo add a file://mirror --key repo.pub" ctl repo add a "file://$T_WORK/mirror" --key repo.pub
check "update: A's index, serial 2 (the identity is pinned)" ctl update
run ctl --json repo list
check_eq "repo list shows the identity pinned: A's" "$ida" "$(jq -r '.repositories[0].id' <<<"$RUN_OUT")"
rm -rf mirror && cp -a B mirror
run ctl --json update
check_eq "B's index on A's mirror: update refused (exit 5)" 5 "$RC"
check_eq "... RepositoryMismatch naming a, the pinned id and B's" \
	"io.fatelf.Manager.RepositoryMismatch a $ida $idb" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r '"\(.error) \(.parameters.repository) \(.parameters.expected) \(.parameters.got)"')"
run ctl update
check_match "... in words: another repository's index, both ids" "repository a: .*another repository.*$idb.*$ida" "$RUN_ERR"
run ctl --json repo list
check_eq "the kept index is still A's serial 2 (the floor did not move), A's identity" "2 $ida" \
	"$(jq -r '.repositories[0] | "\(.serial) \(.id)"' <<<"$RUN_OUT")"
run ctl --json search
check_eq "search offers A's packages, none of B's" "alpha" "$(jq -r '.packages[].name' <<<"$RUN_OUT" | sort -u | tr '\n' ' ' | sed 's/ $//')"
run ctl install beta
check_eq "install beta (B's only): not offered (exit 1)" 1 "$RC"
rm -rf mirror && cp -a A mirror
check "A's own index, serial 2, is accepted again" ctl update

# An index of A that names no repository (a writer older than the field,
# or the field cut out), signed with A's key, of a higher serial: refused
# once an identity is pinned.
python3 - A <<'EOF'
import hashlib, json, os, sys
top = sys.argv[1]
with open(os.path.join(top, "index")) as f:
    sha = f.read().split()[2]
text = open(os.path.join(top, "indexes", sha + ".json")).read()
ix = json.loads(text)
del ix["repository"]
ix["serial"] += 10
lines = text.splitlines()
out = "\n".join(l for l in lines if '"repository"' not in l) + "\n"
out = out.replace('"serial": %d' % (ix["serial"] - 10), '"serial": %d' % ix["serial"])
assert json.loads(out) == ix
h = hashlib.sha256(out.encode()).hexdigest()
os.makedirs("noid/indexes", exist_ok=True)
open("noid/indexes/%s.json" % h, "w").write(out)
open("noid/index", "w").write("fatelf-repo 1 %s %d\n" % (h, len(out.encode())))
EOF
noid=$(cut -d' ' -f3 noid/index)
minisign -S -s repo.key -m "noid/indexes/$noid.json" -x "noid/indexes/$noid.json.minisig" \
	-t "fatelf-repo index serial 12" </dev/null >/dev/null 2>&1 || fail "minisign -S (an index without id)" "failed"
cp -a noid/index mirror/index && cp -a noid/indexes/. mirror/indexes/
run ctl --json update
check_eq "an index of A's key naming no repository: RepositoryMismatch, got null" \
	"5 io.fatelf.Manager.RepositoryMismatch $ida null" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r '"\(.error) \(.parameters.expected) \(.parameters.got)"')"
run ctl --json repo list
check_eq "... and the kept index is still serial 2" "2" "$(jq -r '.repositories[0].serial' <<<"$RUN_OUT")"
check "remove repository a" ctl repo remove a

# The identity given at repo add (--id): pinned before the first update,
# so even a first update is not taken in by another repository's index.
rm -rf mirror2 && cp -a B mirror2
run ctl repo add a2 "file://$T_WORK/mirror2" --key repo.pub --id 0123456789ABCDEF0123456789abcdef
check_eq "repo add --id that is not 32 lower-case hex digits: refused (exit 1)" 1 "$RC"
check "repo add a2 --id (A's), its mirror serving B" ctl repo add a2 "file://$T_WORK/mirror2" --key repo.pub --id "$ida"
check_eq "... written to a2.conf" "ID=$ida" "$(grep '^ID=' d1/repos.d/a2.conf)"
run ctl --json update a2
check_eq "the first update: B's index refused, RepositoryMismatch" \
	"5 io.fatelf.Manager.RepositoryMismatch a2 $ida $idb" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r '"\(.error) \(.parameters.repository) \(.parameters.expected) \(.parameters.got)"')"
run ctl --json repo list
check_eq "... nothing kept: never updated, the identity given" "null $ida" \
	"$(jq -r '.repositories[] | select(.name == "a2") | "\(.serial) \(.id)"' <<<"$RUN_OUT")"
rm -rf mirror2 && cp -a A mirror2
check "A's index on it: accepted" ctl update a2
check "remove repository a2" ctl repo remove a2

# ---- freeze: the kept index expires
check "repo init --sign E" "$FATELF" repo init --sign repo.key E
check "repo add gamma 1.0 to E" "$FATELF" repo add --sign repo.key E gamma-1.0.fatbundle
check "repo add e file://E" ctl repo add e "file://$T_WORK/E" --key repo.pub
check "update" ctl update
check "install gamma (1.0)" ctl install gamma
# gamma 2.0 in an index that expires 6 s from now
now=$(date +%s)
check "repo add gamma 2.0, --expires 6" env SOURCE_DATE_EPOCH="$now" \
	"$FATELF" repo add --sign repo.key --expires 6 E gamma-2.0.fatbundle
expires=$((now + 6))
check "update within the expiry" ctl update
run ctl --json search gamma
check_eq "search, not expired yet: gamma 2.0 is offered" "1.0 2.0" "$(jq -r '.packages[].version' <<<"$RUN_OUT" | sort | tr '\n' ' ' | sed 's/ $//')"
while [ "$(date +%s)" -le "$expires" ]; do sleep 0.5; done

expired_check() {
	local what=$1
	shift
	run ctl --json "$@"
	check_eq "$what: RepositoryExpired of e at its expiry (exit 5)" \
		"5 io.fatelf.Manager.RepositoryExpired e $expires" \
		"$RC $(tail -1 <<<"$RUN_OUT" | jq -r '"\(.error) \(.parameters.repository) \(.parameters.expires)"')"
}
expired_check "install gamma" install gamma
expired_check "install gamma=2.0" install gamma=2.0
expired_check "upgrade" upgrade
expired_check "upgrade gamma" upgrade gamma
expired_check "search" search
expired_check "list --upgradable" list --upgradable
expired_check "update (the mirror has nothing newer)" update
run ctl install gamma
check_eq "install gamma in words: exit 5" 5 "$RC"
check_match "... naming e, its expiry, and the way out" \
	"repository e: its index expired at .* UTC.*fatelfctl update.*fatelfctl repo remove e" "$RUN_ERR"
run ctl --json info gamma
check_eq "gamma is still 1.0" "1.0" "$(jq -r '.package.version' <<<"$RUN_OUT" | head -1)"
check_eq "info --json: exit 0, no available, available_error RepositoryExpired of e at its expiry" \
	"0 null io.fatelf.Manager.RepositoryExpired e $expires" \
	"$RC $(jq -r '"\(.available) \(.available_error.error) \(.available_error.parameters.repository) \(.available_error.parameters.expires)"' <<<"$RUN_OUT")"
run ctl info gamma
check_eq "info in words: exit 0" 0 "$RC"
check_match "... available: unknown, naming e, its expiry and fatelfctl update" \
	"^available: unknown: repository e: its index expired at $(date -u -d "@$expires" '+%Y-%m-%d %H:%M:%S') UTC.*fatelfctl update" \
	"$(grep '^available:' <<<"$RUN_OUT")"
run ctl --json info delta
check_eq "info of a package not installed: PackageNotFound (exit 1), after available_error RepositoryExpired" \
	"1 io.fatelf.Manager.RepositoryExpired io.fatelf.Manager.PackageNotFound" \
	"$RC $(jq -rs '"\(.[0].available_error.error) \(.[-1].error)"' <<<"$RUN_OUT")"

check "the vendor re-signs: repo add gamma 3.0 (no expiry)" "$FATELF" repo add --sign repo.key E gamma-3.0.fatbundle
check "update takes the new index" ctl update
check "upgrade" ctl upgrade
run ctl --json info gamma
check_eq "gamma is 3.0" "3.0" "$(jq -r '.package.version' <<<"$RUN_OUT" | head -1)"

daemon_stop
check_eq "fatelfd stops cleanly" 0 "$DAEMON_STATUS"
check_no_sanitizer_report
t_done
