#!/bin/bash
# Names, summaries and paths: `fatelf bundle create` (from a tree and
# with --from) refuses what the bundle readers refuse (a control or
# bidirectional formatting character in a text or a path, an entry named
# like the installer's temp files) with exit 1, an error naming the field
# or entry and the rule, and no output; and what would show such a
# character to a terminal (fatelf's and fatelfctl's errors, fatelf
# list|owner|files --root of rows stored before those rules) shows it
# escaped.
. "$(dirname "$0")/lib.sh"

t_init names
t_require_exec "$FATELF" "$FATELFCTL"
t_require_tool jq sqlite3

RLO=$'\xe2\x80\xae'     # U+202E RIGHT-TO-LEFT OVERRIDE
LRI=$'\xe2\x81\xa6'     # U+2066 LEFT-TO-RIGHT ISOLATE
NEL=$'\xc2\x85'         # U+0085, a C1 control

# no_output DESC: nothing was written beside the bundle's name, not
# even the temporary.
no_output() {
	check_eq "$1" "" "$(find . -maxdepth 1 \( -name 'out*' -o -name '.fatelf.*' \) -printf '%f ')"
}

# raw_free DESC FILE...: no raw U+202E or U+2066 in the bytes of the files.
raw_free() {
	local desc=$1
	shift
	if cat "$@" | grep -q -e "$RLO" -e "$LRI"; then
		fail "$desc" "a raw bidirectional control reached the output:" "$(cat "$@" | od -c | head -5)"
	else
		pass "$desc"
	fi
}

mkdir -p tree/opt/t
printf 'a\n' >tree/opt/t/a
check "a plain tree bundles" "$FATELF" bundle create -o ok.fatbundle --name tt --version 1 \
	--summary "plain caf$(printf '\xc3\xa9')" tree
rm -f ok.fatbundle

# ---- (a), (d): a summary with a control or a bidirectional character
for s in "esc a"$'\x1b'"[2Jb U+001B" "nel a${NEL}b U+0085" "lri a${LRI}b U+2066" "rlo a${RLO}b U+202E"; do
	read -r what text cp <<<"$s"
	check_exit 1 "summary with $what ($cp): refused, exit 1" \
		"$FATELF" bundle create -o out.fatbundle --name tt --version 1 --summary "$text" tree
	check_match "... naming the field and the rule" \
		"field 'summary' \\('a.*b'\\) holds the (bidirectional )?control character ${cp/+/\\+} at byte 1" "$RUN_ERR"
	raw_free "... and showing no raw bidirectional control" .run.err
	no_output "... and nothing is written"
done
run "$FATELF" bundle create --json -o out.fatbundle --name tt --version 1 --vendor "x${LRI}y" tree
check_eq "--json: exit 1, FATELF_E_MANIFEST_SCHEMA for a vendor with U+2066" "1 FATELF_E_MANIFEST_SCHEMA" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT")"
no_output "... and nothing is written"

# ---- (b): an entry named like the installer's temp files
printf 'planted\n' >tree/opt/t/.fatelf.abc123
check_exit 1 "an entry named .fatelf.abc123: refused, exit 1" \
	"$FATELF" bundle create -o out.fatbundle --name tt --version 1 tree
check_match "... naming the entry and the rule" \
	"path 'opt/t/\\.fatelf\\.abc123' has a component starting with \"\\.fatelf\\.\": such names are reserved" \
	"$RUN_ERR"
no_output "... and nothing is written"
run "$FATELF" bundle create --json -o out.fatbundle --name tt --version 1 tree
check_eq "--json: ENGINE_E_NAME_RESERVED, the installer's code for the rule" "1 ENGINE_E_NAME_RESERVED" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT")"
rm tree/opt/t/.fatelf.abc123
mkdir tree/opt/.fatelf.d
check_exit 1 "a directory named .fatelf.d: refused, exit 1" \
	"$FATELF" bundle create -o out.fatbundle --name tt --version 1 tree
check_match "... naming it" "path 'opt/\\.fatelf\\.d' .*reserved" "$RUN_ERR"
rmdir tree/opt/.fatelf.d

# ---- (c): a file name with U+202E
printf 'x\n' >"tree/opt/t/invoice${RLO}fdp.exe"
check_exit 1 "a file name with U+202E: refused, exit 1" \
	"$FATELF" bundle create -o out.fatbundle --name tt --version 1 tree
check_match "... naming the entry escaped, and the rule" \
	"path 'opt/t/invoice\\\\u202efdp\\.exe' holds the bidirectional control character U\\+202E at byte 13" \
	"$RUN_ERR"
raw_free "... with no raw U+202E on stderr" .run.err
no_output "... and nothing is written"
rm "tree/opt/t/invoice${RLO}fdp.exe"

# A symlink whose target holds U+202E.
ln -s "lib${RLO}x.so" tree/opt/t/link
check_exit 1 "a symlink to a name with U+202E: refused, exit 1" \
	"$FATELF" bundle create -o out.fatbundle --name tt --version 1 tree
check_match "... naming the entry, its target escaped, and the rule" \
	"entry 'opt/t/link': field 'target' \\('lib\\\\u202ex\\.so'\\) holds the bidirectional control character U\\+202E" \
	"$RUN_ERR"
raw_free "... with no raw U+202E on stderr" .run.err
no_output "... and nothing is written"
rm tree/opt/t/link

# A name refused for another rule first is still shown escaped: a FIFO.
mkfifo "tree/opt/t/p${RLO}ipe"
check_exit 1 "a FIFO named with U+202E: refused, exit 1" \
	"$FATELF" bundle create -o out.fatbundle --name tt --version 1 tree
check_match "... named escaped" 'opt/t/p\\u202eipe: is a FIFO' "$RUN_ERR"
raw_free "... with no raw U+202E on stderr" .run.err
rm "tree/opt/t/p${RLO}ipe"
# The tree's own name, as the user typed it.
mkdir "t${RLO}ree"
check_exit 1 "a tree named with U+202E holding a bad summary: exit 1" \
	"$FATELF" bundle create -o out.fatbundle --name tt --version 1 --summary "a${LRI}b" "t${RLO}ree"
check_match "... naming the tree escaped" "^fatelf: t\\\\u202eree: package: field 'summary'" "$RUN_ERR"
raw_free "... with no raw bidirectional control on stderr" .run.err

# ---- --from: the same rules
mkdir -p from/opt
printf 'x\n' >"from/opt/r${RLO}x"
check_exit 1 "--from a tree with a name holding U+202E: refused, exit 1" \
	"$FATELF" bundle create -o out.fatbundle --name tt --version 1 --from x86_64=from
check_match "... naming the entry escaped and the rule" \
	"opt/r\\\\u202ex.*bidirectional control character U\\+202E" "$RUN_ERR"
raw_free "... with no raw U+202E on stderr" .run.err
no_output "... and nothing is written"
rm "from/opt/r${RLO}x"
printf 'x\n' >from/opt/.fatelf.9
check_exit 1 "--from a tree with .fatelf.9: refused, exit 1" \
	"$FATELF" bundle create -o out.fatbundle --name tt --version 1 --from x86_64=from
check_match "... naming the entry and the rule" "opt/\\.fatelf\\.9.*reserved" "$RUN_ERR"
no_output "... and nothing is written"

# ---- fatelf's offline root queries show the store's rows escaped: rows
# stored before the readers' rules may hold such characters.
mkdir -p rt/opt/rt img
printf 'x\n' >rt/opt/rt/f
check "a bundle for a root" "$FATELF" bundle create -o rt.fatbundle --name rt --version 1 --summary plain rt
check "install --root --allow-unsigned" "$FATELF" install --root "$T_WORK/img" --allow-unsigned rt.fatbundle
DB=img/var/lib/fatelf/fatelf.db
sqlite3 "$DB" "UPDATE packages SET name = 'r${RLO}t', summary = 'sum${LRI}mary' WHERE name = 'rt';
	UPDATE files SET path = '/opt/rt/f${RLO}x' WHERE path = '/opt/rt/f';
	UPDATE records SET path = '/opt/rt/f${RLO}x' WHERE path = '/opt/rt/f';" || fail "sqlite3 (plant the rows)" "failed"
run "$FATELF" list --root "$T_WORK/img"
check_eq "list --root of the planted rows: exit 0" 0 "$RC"
check_match "... the name and the summary escaped" '^r\\u202et +1 .*sum\\u2066mary$' "$(grep '^r' <<<"$RUN_OUT")"
raw_free "... with no raw U+202E or U+2066 on stdout" .run.out
run "$FATELF" owner --root "$T_WORK/img" '/opt/rt/*'
check_eq "owner --root: the package and the path escaped" 'r\u202et: /opt/rt/f\u202ex' "$RUN_OUT"
raw_free "... with no raw U+202E on stdout" .run.out
run "$FATELF" files --root "$T_WORK/img" "r${RLO}t"
check_match "files --root: the path escaped" '^/opt/rt/f\\u202ex$' "$RUN_OUT"
raw_free "... with no raw U+202E on stdout" .run.out
run "$FATELF" list --root "$T_WORK/img" --json
check_eq "list --root --json gives the row as it is" "r${RLO}t sum${LRI}mary" \
	"$(jq -r '.packages[0] | "\(.name) \(.summary)"' <<<"$RUN_OUT")"
run "$FATELF" remove --root "$T_WORK/img" "r${RLO}t"
check_match "remove --root: exit 0, the package escaped" '^0 removed r\\u202et 1: 1 file' "$RC $RUN_OUT"
raw_free "... with no raw U+202E on stdout" .run.out

# ---- fatelfctl shows what it did not make escaped: here, a socket path.
run "$FATELFCTL" --socket "$T_WORK/no${RLO}such/sock" status
check_match "fatelfctl's error names the socket escaped" 'no\\u202esuch/sock' "$RUN_ERR"
raw_free "... with no raw U+202E on stderr" .run.err

t_done
