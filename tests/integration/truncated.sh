#!/bin/bash
# A bundle cut short inside one of its files is refused naming that file,
# whichever it is (the first, one in the middle, the last): in what
# `fatelf install --root` prints, in what fatelfd replies, and in the
# failed history row of each. The paths looked up and found unowned on
# the way (every new file is) leave nothing behind in the error.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init truncated
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq sqlite3

daemon_vendor_key

# Uncompressed, so that a byte offset in the file is one in the tar stream.
mkdir -p src/opt/cut
head -c 20000 /dev/urandom >src/opt/cut/a
head -c 5000 /dev/urandom >src/opt/cut/m
printf 'end' >src/opt/cut/z
"$FATELF" bundle create -o cut.fatbundle --compression none --name cut --version 1.0 \
	--sign vendor.key src >/dev/null || fail "bundle create" "failed"

# data_at NAME: the offset of the member's first data byte (its ustar
# header is the 512-byte block that starts with files/NAME).
data_at() {
	local h
	h=$(grep -abo "files/$1" cut.fatbundle | awk -F: '$1 % 512 == 0 { print $1; exit }')
	[ -n "$h" ] && echo $((h + 512))
}

daemon_init
daemon_prepare d
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"

for e in a m z; do
	at=$(data_at "opt/cut/$e")
	[ -n "$at" ] || { fail "the member opt/cut/$e is found in cut.fatbundle" "no header"; continue; }
	size=$(stat -c %s "src/opt/cut/$e")
	head -c $((at + size / 2)) cut.fatbundle >"cut-$e.fatbundle"
	others=$(printf '%s\n' a m z | grep -vx "$e" | sed 's|^|opt/cut/|' | paste -sd'|')

	r=$T_WORK/root-$e
	mkdir -p "$r"
	run "$FATELF" install --root "$r" --keys "$T_WORK/keys" "cut-$e.fatbundle"
	check_eq "fatelf --root: cut inside opt/cut/$e: exit 1" 1 "$RC"
	check_match "... the error names opt/cut/$e" "entry 'opt/cut/$e': .*[Tt]runcated" "$RUN_ERR"
	check_nomatch "... and no other entry" "$others" "$RUN_ERR"
	row=$(sqlite3 "$r/var/lib/fatelf/fatelf.db" \
		"SELECT state || ' ' || error FROM transactions ORDER BY id DESC LIMIT 1")
	check_match "... its history row failed, naming opt/cut/$e" "^failed entry 'opt/cut/$e': " "$row"
	check_nomatch "... and no other entry" "$others" "$row"
	check_eq "... and nothing is installed" "" "$(find "$r" -path "$r/var" -prune -o -mindepth 1 -print)"

	run ctl install "cut-$e.fatbundle"
	check_eq "fatelfd: cut inside opt/cut/$e: exit 1" 1 "$RC"
	check_match "... the reply names opt/cut/$e" "entry 'opt/cut/$e': .*[Tt]runcated" "$RUN_ERR"
	check_nomatch "... and no other entry" "$others" "$RUN_ERR"
	run ctl --json history cut --limit 1
	row=$(jq -r '.transactions[0] | "\(.state) \(.error)"' <<<"$RUN_OUT")
	check_match "... its history row failed, naming opt/cut/$e" "^failed .*entry 'opt/cut/$e': " "$row"
	check_nomatch "... and no other entry" "$others" "$row"
done

# The whole bundle installs: the cut ones failed for their cut alone.
check "fatelfd installs the whole bundle" ctl install cut.fatbundle
check_cmp "... opt/cut/z as shipped" src/opt/cut/z "$ROOT/opt/cut/z"

daemon_stop
t_done
