#!/bin/bash
# Every error reply matches its declaration: a private fatelfd is made to
# refuse in each way a test can bring about, every reply is kept, and
# errcheck.py holds each one to its "error" line in
# schema/io.fatelf.Manager.varlink (the parameter names, none missing and
# none extra, and their types). The errors the daemon can produce but a
# test cannot bring about quickly (DiskFull needs a full file system,
# Busy a locked state directory, Cancelled a race) are checked by the
# suites that make them (diskfull.sh, queue.sh) and by test_errmap.
. "$(dirname "$0")/lib.sh" || exit 99

CHECK=$top_srcdir/tests/reliability/errcheck.py
IFACE=$top_srcdir/schema/io.fatelf.Manager.varlink

rl_init errors
t_require_tool python3
[ "$(id -u)" -eq 0 ] || t_skip "the refusals need root's options (path, policy, targets, force)"

REPLIES=$T_WORK/replies.jsonl
: >"$REPLIES"
# call JSON [--fd FILE]: one call; its replies are kept for the check.
call() {
	timeout 60 python3 "$VLC" call "$SOCK" "$@" | tee -a "$REPLIES"
}
install_fd() {
	call '{"method":"io.fatelf.Manager.Install","parameters":{"fd":0}}' --fd "$1"
}
last_error() {
	jq -r 'select(.error) | .error' 2>/dev/null | tail -1
}

mkdir -p tree-a/opt/a tree-b/opt/a tree-u/opt/u tree-fat/opt/fat/bin
echo a >tree-a/opt/a/file
echo b >tree-b/opt/a/file
echo u >tree-u/opt/u/file
check "bundles app 2.0, app 1.0, bpk (the same path), upk" \
	eval 'rl_bundle a-2.fatbundle app 2.0 tree-a && rl_bundle a-1.fatbundle app 1.0 tree-a &&
	      rl_bundle b-1.fatbundle bpk 1.0 tree-b && rl_bundle u-1.fatbundle upk 1.0 tree-u'
check "an unsigned bundle" "$FATELF" bundle create -o plain.fatbundle --name plain --version 1.0 tree-u
minisign -G -W -f -p other.pub -s other.key >/dev/null 2>&1 || fail "minisign -G (a key no one trusts)"
check "a bundle signed by a key that is not trusted" \
	"$FATELF" bundle create -o other.fatbundle --name other --version 1.0 --sign other.key tree-u
check "a fat file (x86_64, aarch64) in a bundle" \
	eval 'rl_fat_file tree-fat/opt/fat/bin/fat 1 8192 && chmod 0755 tree-fat/opt/fat/bin/fat &&
	      rl_bundle fat-1.fatbundle fat 1.0 tree-fat'
check "an uncompressed signed bundle" rl_bundle t-1.fatbundle app 2.0 tree-a --compression none
python3 - t-1.fatbundle tampered.fatbundle <<'PY' || fail "make a tampered bundle"
import sys
data = open(sys.argv[1], "rb").read()
old = b"the app package"
assert data.count(old) == 1, data.count(old)
open(sys.argv[2], "wb").write(data.replace(old, b"the APP package"))
PY
head -c 300 a-2.fatbundle >truncated.fatbundle

daemon_prepare main
if daemon_start main; then
	pass "a private fatelfd answers"
else
	fail "a private fatelfd answers" "$(tail -20 "$DLOG")"
	t_done
fi

check_eq "Info of no package: PackageNotFound" io.fatelf.Manager.PackageNotFound \
	"$(call '{"method":"io.fatelf.Manager.Info","parameters":{"package":"nope"}}' | last_error)"
check_eq "Owner of no path: PathNotOwned" io.fatelf.Manager.PathNotOwned \
	"$(call '{"method":"io.fatelf.Manager.Owner","parameters":{"path":"/nope"}}' | last_error)"
check_eq "Cancel with nothing running: NoSuchTransaction" io.fatelf.Manager.NoSuchTransaction \
	"$(call '{"method":"io.fatelf.Manager.Cancel","parameters":{}}' | last_error)"
check_eq "Cancel of an id no job has: NoSuchTransaction" io.fatelf.Manager.NoSuchTransaction \
	"$(call '{"method":"io.fatelf.Manager.Cancel","parameters":{"id":424242}}' | last_error)"
check_eq "Remove of no package: PackageNotFound" io.fatelf.Manager.PackageNotFound \
	"$(call '{"method":"io.fatelf.Manager.Remove","parameters":{"package":"nope"}}' | last_error)"
check_eq "a policy that does not exist: InvalidPolicy" io.fatelf.Manager.InvalidPolicy \
	"$(call "{\"method\":\"io.fatelf.Manager.Install\",\"parameters\":{\"path\":\"$T_WORK/a-2.fatbundle\",\"policy\":\"bogus\"}}" | last_error)"
check_eq "an unsigned bundle: SignatureRequired" io.fatelf.Manager.SignatureRequired \
	"$(install_fd plain.fatbundle | last_error)"
check_eq "a bundle signed by a key not trusted: SignatureRequired" io.fatelf.Manager.SignatureRequired \
	"$(install_fd other.fatbundle | last_error)"
check_eq "a tampered manifest: SignatureInvalid" io.fatelf.Manager.SignatureInvalid \
	"$(install_fd tampered.fatbundle | last_error)"
check_eq "a truncated bundle: BundleInvalid" io.fatelf.Manager.BundleInvalid \
	"$(install_fd truncated.fatbundle | last_error)"
check_eq "a path that is not there: Failed" io.fatelf.Manager.Failed \
	"$(call "{\"method\":\"io.fatelf.Manager.Install\",\"parameters\":{\"path\":\"$T_WORK/nosuch.fatbundle\"}}" | last_error)"
check_eq "a download that cannot connect: FetchFailed" io.fatelf.Manager.FetchFailed \
	"$(call '{"method":"io.fatelf.Manager.Install","parameters":{"url":"http://127.0.0.1:9/x.fatbundle"}}' | last_error)"
check_eq "targets the fat file does not offer: NoHostRecord" io.fatelf.Manager.NoHostRecord \
	"$(call "{\"method\":\"io.fatelf.Manager.Install\",\"parameters\":{\"path\":\"$T_WORK/fat-1.fatbundle\",\"targets\":[\"mips\"]}}" | last_error)"
check_eq "... naming the file's targets" '["aarch64:64bits:le:sysv:osabiver0","x86_64:64bits:le:sysv:osabiver0"]' \
	"$(jq -c 'select(.error) | .parameters.targets | sort' "$REPLIES" | tail -1)"

check_eq "app 2.0 installs" "" "$(install_fd a-2.fatbundle | last_error)"
check_eq "app 1.0 over 2.0: Downgrade" io.fatelf.Manager.Downgrade "$(install_fd a-1.fatbundle | last_error)"
check_eq "... with both versions" "app 2.0 1.0" \
	"$(jq -r 'select(.error) | .parameters | "\(.package) \(.installed) \(.offered)"' "$REPLIES" | tail -1)"
check_eq "bpk over app's file: Conflict" io.fatelf.Manager.Conflict "$(install_fd b-1.fatbundle | last_error)"
check_eq "... naming the owner" "/opt/a/file app" \
	"$(jq -r 'select(.error) | .parameters | "\(.path) \(.owner)"' "$REPLIES" | tail -1)"
mkdir -p "$ROOT/opt/u"
echo stray >"$ROOT/opt/u/file"
check_eq "upk over a file no package owns: Conflict" io.fatelf.Manager.Conflict \
	"$(install_fd u-1.fatbundle | last_error)"
check_eq "... with no owner" "/opt/u/file null" \
	"$(jq -r 'select(.error) | .parameters | "\(.path) \(.owner)"' "$REPLIES" | tail -1)"
rm -f "$ROOT/opt/u/file"
chown 65534:65534 "$ROOT/opt/u"
chmod 0777 "$ROOT/opt/u"
check_eq "upk into a directory uid 65534 owns: DirectoryUnsafe" io.fatelf.Manager.DirectoryUnsafe \
	"$(install_fd u-1.fatbundle | last_error)"
check_eq "... with its owner and mode" "/opt/u 65534 511" \
	"$(jq -r 'select(.error) | .parameters | "\(.path) \(.uid) \(.mode)"' "$REPLIES" | tail -1)"

run python3 "$CHECK" "$IFACE" "$REPLIES"
check_eq "every reply matches its declaration" 0 "$RC"
check_eq "... no reply is refused" "" "$(grep '^bad ' <<<"$RUN_OUT")"
check_eq "the errors brought about" \
	"covered BundleInvalid Conflict DirectoryUnsafe Downgrade Failed FetchFailed InvalidPolicy NoHostRecord NoSuchTransaction PackageNotFound PathNotOwned SignatureInvalid SignatureRequired" \
	"$(grep '^covered ' <<<"$RUN_OUT")"

# The checker must be able to fail: a missing, an extra and a mistyped
# parameter, and an error the interface does not declare.
cat >bad.jsonl <<'JSON'
{"error":"io.fatelf.Manager.Conflict","parameters":{"path":"/x","owner":null}}
{"error":"io.fatelf.Manager.Conflict","parameters":{"path":"/x","owner":null,"message":"m","extra":1}}
{"error":"io.fatelf.Manager.DiskFull","parameters":{"needed":"1","available":0,"message":"m"}}
{"error":"io.fatelf.Manager.Nonsense","parameters":{}}
{"error":"io.fatelf.Manager.NoHostRecord","parameters":{"path":"/x","targets":["a",1],"host":[]}}
JSON
run python3 "$CHECK" "$IFACE" bad.jsonl
check_eq "the checker refuses five bad replies" "1 5" "$RC $(grep -c '^bad ' <<<"$RUN_OUT")"

daemon_stop
t_done
