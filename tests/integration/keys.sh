#!/bin/bash
# fatelfctl key add, list and remove against a private fatelfd that
# requires signatures: a bundle signed by a key the daemon does not trust
# is refused (SignatureRequired); key add makes the same install pass with
# no restart (the daemon's pid does not change) and writes ID.pub, mode
# 0644, into the TrustedKeys directory; key list shows id, comment and
# file (text and --json); adding the key again changes nothing; key remove
# makes the install refused again; an unknown id is KeyNotFound; a
# malformed key, a secret key and a missing file are clear errors; a user
# who is not root is refused every key verb, even a member of the admin
# group.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init keys
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq minisign

"$FATELF" bundle keygen --no-password -p vendor.pub -s vendor.key >/dev/null ||
	fail "keygen (vendor)" "no key"
# A key made by minisign itself, with a comment of its own.
minisign -G -W -f -p other.pub -s other.key >/dev/null 2>&1 || fail "minisign -G" "no key"
vid=$(sed -n 's/^untrusted comment: minisign public key //p' vendor.pub)
oid=$(sed -n 's/^untrusted comment: minisign public key //p' other.pub)
sed -i '1s/.*/untrusted comment: the other vendor, 2024/' other.pub

mkdir -p t1/opt/demo t2/opt/demo
echo "demo 1" >t1/opt/demo/README
echo "demo 2" >t2/opt/demo/README
"$FATELF" bundle create -o demo-1.fatbundle --name demo --version 1.0 --sign vendor.key t1 >/dev/null
"$FATELF" bundle create -o demo-2.fatbundle --name demo --version 2.0 --sign other.key t2 >/dev/null

daemon_init
mkdir -p keys
DAEMON_KEYS=$T_WORK/keys
# The admin group: an existing group other than root's and nobody's.
ADMGRP=$(getent group adm | cut -d: -f1)
ADMGID=$(getent group adm | cut -d: -f3)
daemon_prepare d RequireSignature=yes ${ADMGRP:+AdminGroup=$ADMGRP}
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"
pid0=$DPID

# ---- an unknown key
run ctl install demo-1.fatbundle
check_eq "a bundle signed by an unknown key is refused (exit 1)" 1 "$RC"
run ctl --json install demo-1.fatbundle
check_eq "... with SignatureRequired naming the key" "io.fatelf.Manager.SignatureRequired $vid" \
	"$(jq -rs 'map(select(.error)) | last | "\(.error) \(.parameters.key_id)"' <<<"$RUN_OUT")"
run ctl --json key list
check_eq "key list: no keys yet, and the directory" "0 $T_WORK/keys" \
	"$(jq -r '"\(.keys | length) \(.directory)"' <<<"$RUN_OUT")"
run ctl key list
check_match "key list (text) says there are none" "no trusted keys in $T_WORK/keys" "$RUN_OUT"

# ---- key add: the next install verifies with it
run ctl key add vendor.pub
check_eq "key add vendor.pub exits 0" 0 "$RC"
check_match "... and says which key it trusts, and where" "trusted key $vid .*$T_WORK/keys/$vid.pub" "$RUN_OUT"
check_eq "the key file is ID.pub, mode 644, root's" "644 0" "$(stat -c '%a %u' "keys/$vid.pub")"
check_eq "... holding the key line of vendor.pub" "$(sed -n 2p vendor.pub)" "$(sed -n 2p "keys/$vid.pub")"
check "... and no temporary file is left" test "$(ls -A keys)" = "$vid.pub"
run ctl install demo-1.fatbundle
check_eq "the same install now passes, without a restart" 0 "$RC"
check_eq "... by the same daemon" "$pid0" "$(cat /proc/"$DPID"/stat 2>/dev/null | awk '{ print $1 }')"
check_eq "... and the package is installed" "demo 1.0 $vid" \
	"$(ctl --json list | jq -r '.packages[] | "\(.name) \(.version) \(.signer)"')"

run ctl --json key add vendor.pub
check_eq "adding the same key again is a success that adds nothing" "0 false $vid" \
	"$(jq -r '"\(.added) \(.key.id)"' <<<"$RUN_OUT" | sed "s/^/$RC /")"
run ctl key add vendor.pub
check_match "... in words too" "key $vid is already trusted" "$RUN_OUT"

run ctl --json key add "$(sed -n 2p other.pub)"
check_eq "key add RW... (the key line alone)" "0 true $oid" \
	"$(jq -r '"\(.added) \(.key.id)"' <<<"$RUN_OUT" | sed "s/^/$RC /")"
check_eq "... gets minisign's default comment" "minisign public key $oid" \
	"$(jq -r .key.comment <<<"$RUN_OUT")"
check "key remove of that one" ctl key remove "$oid"
run ctl key add other.pub
check_eq "key add other.pub, a key of minisign -G" 0 "$RC"
check_eq "... keeps its untrusted comment" "untrusted comment: the other vendor, 2024" \
	"$(head -1 "keys/$oid.pub")"

# ---- key list
run ctl --json key list
check_eq "key list --json: both keys with id, comment and file, by file name" \
	"$(printf '%s\n' "$vid|minisign public key $vid|$T_WORK/keys/$vid.pub" \
		"$oid|the other vendor, 2024|$T_WORK/keys/$oid.pub" | sort -t'|' -k3)" \
	"$(jq -r '.keys[] | "\(.id)|\(.comment)|\(.file)"' <<<"$RUN_OUT")"
run ctl key list
check_match "key list (text): a header" '^ID +COMMENT +FILE$' "$(head -1 <<<"$RUN_OUT")"
check_match "... and the other key's row" "^$oid +the other vendor, 2024 +$T_WORK/keys/$oid.pub$" "$RUN_OUT"
check_eq "... one row a key" 3 "$(wc -l <<<"$RUN_OUT")"
run ctl install demo-2.fatbundle
check_eq "a bundle signed by the second key installs" 0 "$RC"

# ---- key remove
run ctl key remove "$vid"
check_eq "key remove ID exits 0" 0 "$RC"
check_match "... naming the key and its file" "removed trusted key $vid \($T_WORK/keys/$vid.pub\)" "$RUN_OUT"
check "... whose file is gone" test ! -e "keys/$vid.pub"
run ctl --json install demo-1.fatbundle
check_eq "an install signed by it is refused again" "1 io.fatelf.Manager.SignatureRequired" \
	"$RC $(jq -rs 'map(select(.error)) | last | .error' <<<"$RUN_OUT")"
check_eq "... still without a restart" "$pid0" "$DPID"
run ctl key remove "$(tr 'A-F' 'a-f' <<<"$oid")"
check_eq "key remove takes the id in lower case too" 0 "$RC"
check_eq "no keys are left" "0" "$(ctl --json key list | jq -r '.keys | length')"
run ctl key remove "$vid"
check_eq "removing an unknown id fails (exit 1)" 1 "$RC"
check_eq "... in one line that names it" "fatelfctl: key remove: no trusted key has the id $vid (fatelfctl key list)" "$RUN_ERR"
run ctl --json key remove "$vid"
check_eq "... KeyNotFound with the id" "io.fatelf.Manager.KeyNotFound $vid" \
	"$(jq -r '"\(.error) \(.parameters.id)"' <<<"$RUN_OUT")"
run ctl key remove not-hex
check_eq "a malformed id is a usage error (exit 2)" 2 "$RC"

# ---- malformed keys
printf 'untrusted comment: broken\nRWnot-a-key\n' >bad.pub
run ctl key add bad.pub
check_eq "a malformed key file is refused (exit 1)" 1 "$RC"
check_match "... naming the file" "^fatelfctl: key add: bad.pub is not a minisign public key" "$RUN_ERR"
run ctl key add vendor.key
check_eq "a secret key is refused" 1 "$RC"
check_match "... saying so" "vendor.key is a minisign secret key" "$RUN_ERR"
run ctl key add nosuch.pub
check_eq "a missing file is refused" 1 "$RC"
check_match "... naming it" "nosuch.pub: no such file" "$RUN_ERR"
check_eq "the refused adds wrote nothing" "" "$(ls -A keys)"
# fatelfctl checks a key's shape; fatelfd parses it all again. A raw call
# with text that is no key, and one whose algorithm is not Ed25519 ("Xx").
vcall() { # METHOD PARAMS-JSON: one Varlink call, the reply on stdout
	python3 - "$SOCK" "$1" "$2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps({"method": sys.argv[2], "parameters": json.loads(sys.argv[3])}).encode() + b"\0")
buf = b""
while not buf.endswith(b"\0"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
print(buf.rstrip(b"\0").decode())
PY
}
run vcall io.fatelf.Manager.KeyAdd '{"key": "untrusted comment: x\nnot a key at all\n"}'
check_eq "KeyAdd of text that is no key: KeyInvalid, FATELF_E_KEY_FORMAT" \
	"io.fatelf.Manager.KeyInvalid FATELF_E_KEY_FORMAT" \
	"$(jq -r '"\(.error) \(.parameters.code)"' <<<"$RUN_OUT")"
check_match "... with the rule in the message" "public key: the key line" \
	"$(jq -r .parameters.message <<<"$RUN_OUT")"
notd=$(printf 'Xx%040d' 0 | base64 -w0)
run vcall io.fatelf.Manager.KeyAdd "{\"key\": \"$notd\"}"
check_match "KeyAdd of a key that is not Ed25519: KeyInvalid saying so" \
	'^io.fatelf.Manager.KeyInvalid .*not Ed25519' "$(jq -r '"\(.error) \(.parameters.message)"' <<<"$RUN_OUT")"
check_eq "nothing was written" "" "$(ls -A keys)"

# ---- who may
as_nobody() { timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$FATELFCTL" --socket "$SOCK" "$@"; }
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
	cp vendor.pub /tmp/fatelf-keys-test.$$.pub && chmod 644 /tmp/fatelf-keys-test.$$.pub
	run as_nobody key add /tmp/fatelf-keys-test.$$.pub
	check_eq "key add by a user: permission denied (exit 4)" 4 "$RC"
	check_match "... saying root is needed" "adding a trusted key needs root" "$RUN_ERR"
	run as_nobody --json key list
	check_eq "key list by a user: PermissionDenied" "4 org.varlink.service.PermissionDenied" \
		"$RC $(jq -r .error <<<"$RUN_OUT")"
	run as_nobody key remove "$vid"
	check_eq "key remove by a user: permission denied (exit 4)" 4 "$RC"
	# A member of the admin group (by its primary group) is not root.
	if [ -n "$ADMGID" ]; then
		run timeout 60 setpriv --reuid=65534 --regid="$ADMGID" --clear-groups "$FATELFCTL" --socket "$SOCK" \
			--json key add /tmp/fatelf-keys-test.$$.pub
		check_eq "key add by a member of the admin group: refused too" "4 org.varlink.service.PermissionDenied" \
			"$RC $(jq -r .error <<<"$RUN_OUT")"
		run timeout 60 setpriv --reuid=65534 --regid="$ADMGID" --clear-groups "$FATELFCTL" --socket "$SOCK" \
			key list
		check_eq "... and key list" 4 "$RC"
	fi
	rm -f /tmp/fatelf-keys-test.$$.pub
	check_eq "nothing was added" "" "$(ls -A keys)"
else
	echo "# skipping the authorization checks: not root or no setpriv"
fi

# ---- a missing TrustedKeys directory is made by the first key add
daemon_stop
DAEMON_KEYS=$T_WORK/newkeys
daemon_prepare e RequireSignature=yes
daemon_start e || fail "a second fatelfd starts" "see $T_WORK/e/log"
check "key add into a TrustedKeys directory that does not exist yet" ctl key add vendor.pub
check_eq "... made, with the key" "755 $vid.pub" "$(stat -c %a newkeys) $(ls newkeys)"
check "... and the install passes" ctl install demo-1.fatbundle
daemon_stop
check_no_sanitizer_report

t_done
