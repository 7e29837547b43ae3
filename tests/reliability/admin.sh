#!/bin/bash
# The admin group is not root. A member of AdminGroup= (here a real user
# whose supplementary group it is, made for the test and removed at exit)
# may install bundles signed by a trusted key, remove, thin and cancel;
# every option that lifts a safety check or names the daemon's own files
# is refused with io.fatelf.Manager.RootRequired naming the parameter, and
# nothing changes on disk or in the store:
#   Install: allow_unsigned, force, allow_downgrade, policy, targets, path,
#            a file:// URL (and allow_unsigned + force together, the pair
#            that would replace the root's /etc/passwd);
#   Thin:    targets.
# fatelfctl says which option only root may use and exits 4. Root itself
# still may use each of them.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
. "$top_srcdir/tests/reliability/lib.sh" || exit 99

rl_init admin
[ "$(id -u)" -eq 0 ] || t_skip "making a user and a group needs root"
t_require_tool python3 setpriv groupadd useradd userdel groupdel getent minisign

NOGROUP=$(getent group 65534 | cut -d: -f1)
[ -n "$NOGROUP" ] || t_skip "no group 65534"

# A group and a user in it, named for this run; removed at exit.
ADM=fatelft$$
USR=fatelft$$
USER_MADE=no
GROUP_MADE=no
cleanup() {
	daemon_cleanup
	[ "$USER_MADE" = yes ] && userdel "$USR" >/dev/null 2>&1
	[ "$GROUP_MADE" = yes ] && groupdel "$ADM" >/dev/null 2>&1
}
trap cleanup EXIT
groupadd "$ADM" || { echo "Bail out! groupadd $ADM"; exit 99; }
GROUP_MADE=yes
useradd -M -N -g "$NOGROUP" -G "$ADM" -d / -s /usr/sbin/nologin "$USR" ||
	{ echo "Bail out! useradd $USR"; exit 99; }
USER_MADE=yes
check_match "the test user's groups include the admin group" "(^| )$ADM( |\$)" "$(id -nG "$USR")"

# As the member: its primary group is nogroup, the admin group is a
# supplementary one (from the group database, as the daemon sees it).
as_admin() {
	timeout 60 setpriv --reuid="$USR" --regid="$NOGROUP" --init-groups "$@"
}
admin_ctl() {
	as_admin "$FATELFCTL" --socket "$SOCK" "$@"
}
admin_call() { # JSON [--fd PATH]
	as_admin "$SYS_PYTHON" "$VLC" call "$SOCK" "$@"
}

# ---------------------------------------------------------------- bundles
mkdir -p tree-app1/opt/app tree-app2/opt/app tree-passwd/etc tree-fat/opt/fat
printf 'app 1\n' >tree-app1/opt/app/README
printf 'app 2\n' >tree-app2/opt/app/README
printf 'evil::0:0::/:/bin/sh\n' >tree-passwd/etc/passwd
rl_fat_file tree-fat/opt/fat/tool 7 4096
check "bundle app 1 (signed)" rl_bundle "$DAEMON_SOCKDIR/app-1.fatbundle" app 1 tree-app1
check "bundle app 2 (signed)" rl_bundle "$DAEMON_SOCKDIR/app-2.fatbundle" app 2 tree-app2
check "bundle fat 1 (signed, a fat file)" rl_bundle "$DAEMON_SOCKDIR/fat-1.fatbundle" fat 1 tree-fat
check "bundle passwd (signed, ships /etc/passwd)" rl_bundle "$DAEMON_SOCKDIR/passwd-s.fatbundle" \
	passwd 1 tree-passwd
check "bundle passwd (unsigned)" "$FATELF" bundle create -o "$DAEMON_SOCKDIR/passwd-u.fatbundle" \
	--name passwd --version 1 tree-passwd
chmod 0644 "$DAEMON_SOCKDIR"/*.fatbundle

daemon_prepare main "AdminGroup=$ADM"
if daemon_start main; then
	pass "a private fatelfd answers (AdminGroup=$ADM)"
else
	fail "a private fatelfd answers" "$(tail -20 "$DLOG")"
	t_done
fi
mkdir -p "$ROOT/etc"
printf 'root:x:0:0::/root:/bin/sh\n' >"$ROOT/etc/passwd"
chmod 0644 "$ROOT/etc/passwd"
PASSWD_SUM=$(sha256sum <"$ROOT/etc/passwd")

# ---------------------------------------------------------------- what a member may do
run admin_ctl install "$DAEMON_SOCKDIR/app-2.fatbundle"
check_eq "a member installs a bundle signed by a trusted key" "0 app 2" \
	"$RC $(cat "$ROOT/opt/app/README" 2>&1)"
run admin_ctl install "$DAEMON_SOCKDIR/fat-1.fatbundle"
check_eq "a member installs a bundle with a fat file" 0 "$RC"

# state: what must not change when a refusal comes
state() {
	printf '%s\n' "$(sha256sum <"$ROOT/etc/passwd")" "$(rl_snapshot_root "$ROOT")"
	rl_snapshot_store app fat passwd
	ctl --json history --limit 1000 | jq -c '[.transactions[] | .id]'
}
STATE0=$(state)

# refused_root DESC PARAM JSON [--fd PATH]: the member's call gets
# RootRequired{parameter: PARAM}, and nothing changes.
refused_root() {
	local desc=$1 param=$2 err
	shift 2
	run admin_call "$@"
	err=$(tail -1 <<<"$RUN_OUT" | jq -r '"\(.error) \(.parameters.parameter)"' 2>&1)
	check_eq "a member: $desc is RootRequired{parameter: $param}" \
		"io.fatelf.Manager.RootRequired $param" "$err"
	check_eq "... and nothing changed" "$STATE0" "$(state)"
}

I='"method":"io.fatelf.Manager.Install"'
refused_root "Install allow_unsigned" allow_unsigned \
	"{$I,\"parameters\":{\"fd\":0,\"allow_unsigned\":true}}" --fd "$DAEMON_SOCKDIR/passwd-u.fatbundle"
refused_root "Install force" force \
	"{$I,\"parameters\":{\"fd\":0,\"force\":true}}" --fd "$DAEMON_SOCKDIR/passwd-s.fatbundle"
refused_root "Install allow_unsigned and force (the root's /etc/passwd)" allow_unsigned \
	"{$I,\"parameters\":{\"fd\":0,\"allow_unsigned\":true,\"force\":true}}" \
	--fd "$DAEMON_SOCKDIR/passwd-u.fatbundle"
refused_root "Install allow_downgrade" allow_downgrade \
	"{$I,\"parameters\":{\"fd\":0,\"allow_downgrade\":true}}" --fd "$DAEMON_SOCKDIR/app-1.fatbundle"
refused_root "Install policy" policy \
	"{$I,\"parameters\":{\"fd\":0,\"policy\":\"keep\"}}" --fd "$DAEMON_SOCKDIR/fat-1.fatbundle"
refused_root "Install targets" targets \
	"{$I,\"parameters\":{\"fd\":0,\"targets\":[\"aarch64\"]}}" --fd "$DAEMON_SOCKDIR/fat-1.fatbundle"
refused_root "Install path" path \
	"{$I,\"parameters\":{\"path\":\"$DAEMON_SOCKDIR/app-1.fatbundle\"}}"
refused_root "Install of a file URL" url \
	"{$I,\"parameters\":{\"url\":\"file://$DAEMON_SOCKDIR/app-1.fatbundle\"}}"
refused_root "Install of a FILE URL (upper case)" url \
	"{$I,\"parameters\":{\"url\":\"FILE://$DAEMON_SOCKDIR/app-1.fatbundle\"}}"
refused_root "Thin targets" targets \
	'{"method":"io.fatelf.Manager.Thin","parameters":{"targets":["aarch64"]}}'
refused_root "Thin of a package, with targets" targets \
	'{"method":"io.fatelf.Manager.Thin","parameters":{"packages":["fat"],"targets":["aarch64"]}}'

# Repositories are root's to configure: a member may not add or remove one.
RA='"method":"io.fatelf.Manager.RepoAdd"'
refused_root "RepoAdd" name \
	"{$RA,\"parameters\":{\"name\":\"evil\",\"urls\":[\"http://127.0.0.1:9/r\"],\"key\":\"RWQAAAAAAAAAAA\"}}"
refused_root "RepoRemove" name '{"method":"io.fatelf.Manager.RepoRemove","parameters":{"name":"evil"}}'
minisign -G -W -f -p adm.pub -s adm.key >/dev/null 2>&1 || fail "minisign -G" "no key"
run admin_ctl repo add evil http://127.0.0.1:9/r --key "$(tail -1 adm.pub)"
check_eq "fatelfctl repo add as a member exits 4" 4 "$RC"
check_eq "... and no repository is configured" "[]" "$(ctl --json repo list | jq -c '.repositories')"

# false is no override: the member may say it.
run admin_call "{$I,\"parameters\":{\"fd\":0,\"force\":false,\"allow_unsigned\":false,\"dry_run\":true}}" \
	--fd "$DAEMON_SOCKDIR/app-2.fatbundle"
check_eq "a member may pass force: false and allow_unsigned: false" "null" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r .error 2>&1)"

# fatelfctl's words and exit status.
run admin_ctl install --allow-unsigned "$DAEMON_SOCKDIR/passwd-u.fatbundle"
check_eq "fatelfctl install --allow-unsigned as a member exits 4" 4 "$RC"
check_eq "... saying that only root may use it" \
	"fatelfctl: install: permission denied: only root may use --allow-unsigned" "$RUN_ERR"
run admin_ctl install --force "$DAEMON_SOCKDIR/passwd-s.fatbundle"
check_eq "fatelfctl install --force as a member: exit 4, in words" \
	"4 fatelfctl: install: permission denied: only root may use --force" "$RC $RUN_ERR"
run admin_ctl install --allow-downgrade "$DAEMON_SOCKDIR/app-1.fatbundle"
check_eq "fatelfctl install --allow-downgrade as a member: exit 4, in words" \
	"4 fatelfctl: install: permission denied: only root may use --allow-downgrade" "$RC $RUN_ERR"
run admin_ctl install --policy keep "$DAEMON_SOCKDIR/fat-1.fatbundle"
check_eq "fatelfctl install --policy as a member: exit 4, in words" \
	"4 fatelfctl: install: permission denied: only root may use --policy" "$RC $RUN_ERR"
run admin_ctl thin --all --targets aarch64
check_eq "fatelfctl thin --targets as a member: exit 4, in words" \
	"4 fatelfctl: thin: permission denied: only root may use --targets" "$RC $RUN_ERR"
run admin_ctl install "file://$DAEMON_SOCKDIR/app-1.fatbundle"
check_eq "fatelfctl install of a file URL as a member: exit 4, in words" \
	"4 fatelfctl: install: permission denied: only root may use a file URL" "$RC $RUN_ERR"
check_eq "after every refusal: nothing changed" "$STATE0" "$(state)"

# Without the overrides the member still meets the checks themselves.
run admin_ctl install "$DAEMON_SOCKDIR/passwd-u.fatbundle"
check_eq "a member's unsigned bundle: signature required (exit 1)" 1 "$RC"
check_match "... in words" 'signature required' "$RUN_ERR"
run admin_ctl install "$DAEMON_SOCKDIR/passwd-s.fatbundle"
check_eq "a member's signed bundle over the root's /etc/passwd: conflict (exit 1)" 1 "$RC"
check_eq "... and /etc/passwd is the root's" "$PASSWD_SUM" "$(sha256sum <"$ROOT/etc/passwd")"

# ---------------------------------------------------------------- remove, thin, cancel
run admin_ctl thin fat
check_eq "a member thins a package to the configured policy" 0 "$RC"
run admin_ctl thin --all
check_eq "a member thins every package" 0 "$RC"
run admin_ctl remove fat
check_eq "a member removes a package" "0 no" \
	"$RC $([ -e "$ROOT/opt/fat/tool" ] && echo yes || echo no)"

# A job that waits on a pipe that sends nothing: the member cancels it.
"$SYS_PYTHON" "$VLC" call "$SOCK" "{$I,\"more\":true,\"parameters\":{\"fd\":0}}" \
	--fd pipe-silent:30 >bg.out 2>&1 &
BG=$!
for ((i = 0; i < 200; i++)); do
	ctl --json status 2>/dev/null | jq -e '.running != null' >/dev/null && break
	sleep 0.05
done
run admin_ctl cancel
check_eq "a member cancels the running transaction (root's)" 0 "$RC"
wait "$BG"
check_eq "... whose caller gets Cancelled" "io.fatelf.Manager.Cancelled" \
	"$(tail -1 bg.out | jq -r .error 2>&1)"

# ---------------------------------------------------------------- root may
run ctl install --allow-unsigned --force "$DAEMON_SOCKDIR/passwd-u.fatbundle"
check_eq "root may install unsigned with --force over an unowned file" "0 evil::0:0::/:/bin/sh" \
	"$RC $(cat "$ROOT/etc/passwd")"
run ctl install --allow-downgrade "$DAEMON_SOCKDIR/app-1.fatbundle"
check_eq "root may downgrade" "0 app 1" "$RC $(cat "$ROOT/opt/app/README")"
run ctl install --policy keep "$DAEMON_SOCKDIR/fat-1.fatbundle"
check_eq "root may override the policy" 0 "$RC"
run ctl thin --all --targets x86_64
check_eq "root may thin to targets" 0 "$RC"

# Someone outside the group still gets PermissionDenied for the method.
run timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$SYS_PYTHON" \
	"$VLC" call "$SOCK" '{"method":"io.fatelf.Manager.Remove","parameters":{"package":"app"}}'
check_eq "uid 65534 outside the group: Remove is PermissionDenied" \
	"org.varlink.service.PermissionDenied" "$(tail -1 <<<"$RUN_OUT" | jq -r .error 2>&1)"

daemon_stop
check_eq "the daemon stops cleanly" 0 "$DAEMON_STATUS"
t_done
