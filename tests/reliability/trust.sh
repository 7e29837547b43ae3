#!/bin/bash
# Which bundles fatelfd trusts, and how an admin changes that without a
# restart:
#
#  - a daemon with no trusted key refuses a signed bundle with
#    SignatureRequired naming its TrustedKeys directory and the key that
#    signed (not "bad signature"); an unsigned bundle gets SignatureRequired
#    with no key;
#  - root's --allow-unsigned installs a bundle signed by a key that is not
#    trusted as unsigned, and the result, fatelfctl and the log say that
#    the signature was not verified (the package has no signer);
#  - without --allow-unsigned such a bundle is refused naming the key id,
#    also when other keys are trusted;
#  - a bundle whose manifest was changed after a trusted key signed it is
#    refused, with --allow-unsigned too (SignatureInvalid);
#  - SIGHUP reads fatelfd.conf and the TrustedKeys directory again and logs
#    it: a key copied in is trusted by the same daemon (same pid); a config
#    with a bad line, or a key file that is not a key, is refused, logged,
#    and the old settings stay; a job that
#    runs while SIGHUP arrives ends with the settings it started with, the
#    next job gets the new ones.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
. "$top_srcdir/tests/reliability/lib.sh" || exit 99

rl_init trust
t_require_tool python3 od

FATMAGIC=fa700e1f
magic() { od -An -tx1 -N4 "$1" | tr -d ' \n'; }
# err FILTER: jq FILTER over the error object of the last --json run (the
# lines before it are progress).
err() { printf '%s\n' "$RUN_OUT" | jq -r "select(.error) | $1"; }

# ---------------------------------------------------------------- fixtures
mkdir -p tree-sig/opt/sig
echo "signed data" >tree-sig/opt/sig/README
check "bundle sig 1.0, signed" rl_bundle sig-1.fatbundle sig 1.0 tree-sig --compression none
check "bundle plain 1.0, unsigned" "$FATELF" bundle create -o plain-1.fatbundle --name plain \
	--version 1.0 tree-sig
KEYID=$(sed -n 's/^untrusted comment: minisign public key \([0-9A-F]*\)$/\1/p' "$RL_PUB")
echo "# the suite's key id: $KEYID"
# The same bundle with one byte of its manifest changed after signing.
python3 - sig-1.fatbundle sig-tampered.fatbundle <<'EOF' || fail "make the tampered bundle"
import sys
data = open(sys.argv[1], "rb").read()
old = b"the sig package"
assert data.count(old) == 1, data.count(old)
open(sys.argv[2], "wb").write(data.replace(old, b"the SIG package"))
EOF
# A second key, trusted by some daemons below, that never signs anything.
minisign -G -W -f -p other.pub -s other.key >/dev/null 2>&1 || fail "minisign -G (other key)"

# ---------------------------------------------------------------- no trusted key
daemon_prepare nokey
EMPTY=$T_WORK/nokey/keys.d
mkdir -p "$EMPTY"
sed -i "s|^TrustedKeys=.*|TrustedKeys=$EMPTY|" nokey/fatelfd.conf
daemon_start nokey || fail "nokey: fatelfd starts" "$(tail -20 "$DLOG")"
PID0=$DPID

run ctl --json install sig-1.fatbundle
check_eq "no trusted key: install of a signed bundle exits 1" 1 "$RC"
check_eq "... error SignatureRequired" "io.fatelf.Manager.SignatureRequired" \
	"$(err .error)"
check_eq "... keys_dir names the TrustedKeys directory" "$EMPTY" \
	"$(err .parameters.keys_dir)"
check_eq "... keys is 0" 0 "$(err .parameters.keys)"
check_eq "... key_id is the key that signed" "$KEYID" "$(err .parameters.key_id)"
run ctl install sig-1.fatbundle
check_one_line "... fatelfctl says it in one line" "$RUN_ERR"
check_match "... 'no trusted key is configured in DIR'" \
	"no trusted key is configured in $EMPTY: add the vendor's public key there" "$RUN_ERR"
check_nomatch "... not 'bad signature'" "bad signature" "$RUN_ERR"
check_eq "... nothing installed" "" "$(ls "$ROOT")"

run ctl --json install plain-1.fatbundle
check_eq "unsigned bundle: SignatureRequired" "io.fatelf.Manager.SignatureRequired" \
	"$(err .error)"
check_eq "... with no key_id" null "$(err .parameters.key_id)"
run ctl install plain-1.fatbundle
check_match "... fatelfctl: the bundle is not signed" "signature required: the bundle is not signed" "$RUN_ERR"

# ---------------------------------------------------------------- SIGHUP: a key copied in
cp "$RL_PUB" "$EMPTY/vendor.pub"
grep -c "reloaded" "$DLOG" >/dev/null && fail "no reload logged before SIGHUP"
kill -HUP "$DPID"
for ((i = 0; i < 100; i++)); do
	grep -q "reloaded" "$DLOG" && break
	sleep 0.05
done
check_match "SIGHUP: the log says it reloaded, with 1 trusted key" \
	"reloaded $T_WORK/nokey/fatelfd.conf: 1 trusted key in $EMPTY" "$(grep reloaded "$DLOG")"
check "SIGHUP: the signed bundle installs now" ctl install sig-1.fatbundle
check_eq "... by the same daemon (pid)" "$PID0" "$DPID"
kill -0 "$PID0" 2>/dev/null && pass "... which still runs" || fail "... which still runs"
check_eq "... the package's signer is the key" "$KEYID" \
	"$(ctl --json info sig | jq -r .package.signer)"

# A config with a bad line is refused and the running one stays.
cp nokey/fatelfd.conf nokey/fatelfd.conf.good
echo "NoSuchSetting=1" >>nokey/fatelfd.conf
rm "$EMPTY/vendor.pub"
kill -HUP "$DPID"
for ((i = 0; i < 100; i++)); do
	grep -q "reload refused" "$DLOG" && break
	sleep 0.05
done
check_match "SIGHUP with a bad config: refused, naming the file and the key" \
	"reload refused: .*fatelfd.conf:[0-9]+.*NoSuchSetting.*the running configuration stays" \
	"$(grep 'reload refused' "$DLOG")"
check "... the key loaded before is still trusted" ctl install --dry-run sig-1.fatbundle
kill -0 "$PID0" 2>/dev/null && pass "... and the daemon runs on" || fail "... and the daemon runs on"
mv nokey/fatelfd.conf.good nokey/fatelfd.conf

# A key file that is not a key: refused the same way, naming the file.
echo "not a key" >"$EMPTY/broken.pub"
kill -HUP "$DPID"
for ((i = 0; i < 100; i++)); do
	[ "$(grep -c 'reload refused' "$DLOG")" -ge 2 ] && break
	sleep 0.05
done
check_match "SIGHUP with a broken key file: refused, naming it" \
	"reload refused: trusted keys: $EMPTY/broken.pub: .*the running configuration stays" \
	"$(grep 'reload refused' "$DLOG" | tail -1)"
check "... the keys loaded before stay trusted" ctl install --dry-run sig-1.fatbundle
rm "$EMPTY/broken.pub"
daemon_stop

# ---------------------------------------------------------------- --allow-unsigned and unknown keys
daemon_prepare other
mkdir -p other/keys.d
cp other.pub other/keys.d/
sed -i "s|^TrustedKeys=.*|TrustedKeys=$T_WORK/other/keys.d|" other/fatelfd.conf
daemon_start other || fail "other: fatelfd starts" "$(tail -20 "$DLOG")"

run ctl --json install sig-1.fatbundle
check_eq "unknown key: install exits 1" 1 "$RC"
check_eq "... SignatureRequired" "io.fatelf.Manager.SignatureRequired" "$(err .error)"
check_eq "... naming the key id" "$KEYID" "$(err .parameters.key_id)"
check_eq "... and one trusted key" 1 "$(err .parameters.keys)"
run ctl install sig-1.fatbundle
check_match "... fatelfctl names the key and the directory" \
	"signed by key $KEYID, which is not one of the 1 trusted keys in $T_WORK/other/keys.d" "$RUN_ERR"

run ctl --json install --allow-unsigned sig-1.fatbundle
check_eq "root, --allow-unsigned, unknown key: installs" 0 "$RC"
RES=$(printf '%s\n' "$RUN_OUT" | jq -c 'select(.result) | .result')
check_eq "... result signature: unverified" unverified "$(printf '%s' "$RES" | jq -r .signature)"
check_eq "... result signer: the key id" "$KEYID" "$(printf '%s' "$RES" | jq -r .signer)"
check_eq "... the file is there" "signed data" "$(cat "$ROOT/opt/sig/README")"
check_eq "... the package has no signer" null "$(ctl --json info sig | jq -r .package.signer)"
check_match "... the log says the signature was not verified" \
	"signature was not verified: key $KEYID is not trusted" "$(cat "$DLOG")"
ctl remove sig >/dev/null
run ctl install --allow-unsigned sig-1.fatbundle
check_match "... fatelfctl says so" "signature not verified: signed by key $KEYID, which is not trusted; installed as unsigned" "$RUN_OUT"
daemon_stop

# A trusted key whose signature does not match: refused, whatever the options.
daemon_prepare trusted
daemon_start trusted || fail "trusted: fatelfd starts" "$(tail -20 "$DLOG")"
for opt in "" --allow-unsigned; do
	run ctl --json install $opt sig-tampered.fatbundle
	check_eq "tampered manifest ${opt:-(no option)}: SignatureInvalid" "io.fatelf.Manager.SignatureInvalid" \
		"$(err .error)"
	check_eq "... FATELF_E_SIG_INVALID" FATELF_E_SIG_INVALID "$(err .parameters.code)"
	check_eq "... nothing installed" "" "$(ls "$ROOT")"
done

# ---------------------------------------------------------------- SIGHUP during a job
# Package slow: a 3 MiB blob first (an uncompressed bundle streams it byte
# for byte, so a pipe that stops after 256 KiB holds the job in staging),
# then a fat file that the native policy thins and Policy=keep keeps fat.
mkdir -p tree-slow/opt/slow tree-next/opt/next
head -c $((3 * 1024 * 1024)) /dev/urandom >tree-slow/opt/slow/a-blob
rl_fat_file tree-slow/opt/slow/z-prog 7 8192 || fail "fat file for slow"
rl_fat_file tree-next/opt/next/z-prog 9 8192 || fail "fat file for next"
check "bundle slow 1.0" rl_bundle slow-1.fatbundle slow 1.0 tree-slow --compression none
check "bundle next 1.0" rl_bundle next-1.fatbundle next 1.0 tree-next --compression none
PID0=$DPID
run python3 "$VLC" slowinstall "$SOCK" slow-1.fatbundle 262144 staging \
	"echo '[Policy]' >>'$DDIR/fatelfd.conf'; echo 'Policy=keep' >>'$DDIR/fatelfd.conf'; kill -HUP $DPID;
	 for i in \$(seq 100); do grep -q 'running job keeps' '$DLOG' && break; sleep 0.05; done"
check_match "SIGHUP during a job: the job was staging" "phase_seen=1" "$RUN_OUT"
check_match "... the job ends well" '"result"' "$RUN_OUT"
check_match "... the log says the running job keeps its settings" \
	"reloaded .*; the running job keeps the settings it started with" "$(grep reloaded "$DLOG")"
check_eq "... which thinned its fat file (native, the old policy)" 7f454c46 "$(magic "$ROOT/opt/slow/z-prog")"
check "... the next job" ctl install next-1.fatbundle
check_eq "... keeps its fat file fat (keep, the new policy)" "$FATMAGIC" "$(magic "$ROOT/opt/next/z-prog")"
check_eq "... GetPolicy shows the new policy" keep "$(ctl --json policy | jq -r .policy.policy)"
check_eq "... all by the same daemon" "$PID0" "$DPID"
daemon_stop
check_eq "the daemon stops cleanly" 0 "$DAEMON_STATUS"

t_done
