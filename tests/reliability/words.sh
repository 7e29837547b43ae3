#!/bin/bash
# What an admin and a vendor read: the words and exit statuses of fatelfctl
# and fatelf, and the data behind them in fatelfd's replies.
#
#  - BundleInvalid names the entry (its "entry" field, and the message
#    names that same entry, once) for every reader error about one entry;
#  - the messages of the tools name the right thing;
#  - fatelfctl's exit statuses and --json errors.
. "$(dirname "$0")/lib.sh" || exit 99

: "${MKHOSTILE:=$top_builddir/tests/fixtures/mkhostile}"
VLC=$top_srcdir/tests/reliability/vlclient.py

rl_init words
t_require_exec "$MKHOSTILE" "$MKFIXTURE"
t_require_tool python3 jq

vlc() {
	timeout 60 python3 "$VLC" "$@"
}

check "mkhostile writes the corpus" "$MKHOSTILE" hostile
cp hostile/trusted.pub rl-keys/hostile.pub
rl_prepare main
if rl_start main; then
	pass "a private fatelfd answers"
else
	fail "a private fatelfd answers" "$(tail -20 "$DLOG")"
	t_done
fi

# ================================================================ BundleInvalid.entry
# CASE ENTRY: each corpus bundle whose rule is about one entry, and that entry.
while read -r f entry; do
	run vlc call "$SOCK" '{"method":"io.fatelf.Manager.Install","parameters":{"fd":0}}' \
		--fd "hostile/$f"
	got=$(jq -r '"\(.error) \(.parameters.entry)"' <<<"$RUN_OUT" 2>&1)
	check_eq "$f: BundleInvalid names entry '$entry'" \
		"io.fatelf.Manager.BundleInvalid $entry" "$got"
	msg=$(jq -r '.parameters.message' <<<"$RUN_OUT" 2>&1)
	check_match "$f: the message names that entry and no other" \
		"^entry '$entry': " "$msg"
	run rl_ctl install "hostile/$f"
	n=$(grep -o "entry '[^']*'" <<<"$RUN_ERR" | sort -u | wc -l)
	check_eq "$f: fatelfctl's line names one entry" "1 $entry" \
		"$n $(grep -o "entry '[^']*'" <<<"$RUN_ERR" | head -1 | cut -d"'" -f2)"
done <<'LIST'
19-member-unknown.fatbundle opt/game/extra
20-member-outside-files.fatbundle elsewhere/x
21-member-missing.fatbundle opt/game/data
22-member-duplicate.fatbundle opt/game/data
25-hardlink.fatbundle opt/game/data2
26-device.fatbundle opt/game/data
27-fifo.fatbundle opt/game/data
28-type-mismatch.fatbundle opt/game/data
29-symlink-target.fatbundle opt/game/link
30-size-mismatch.fatbundle opt/game/data
32-payload-tampered.fatbundle opt/game/data
33-record-hash.fatbundle opt/game/game
34-fatelf-invalid.fatbundle opt/game/unaligned
35-elf-target.fatbundle opt/game/tool
06-path-duplicate.fatbundle aaa
08-path-parent.fatbundle opt/nodir/x
09-setuid.fatbundle opt/game/tool
LIST

# The tool names the same entry in its line and in --json, and names the
# bundle file in front.
for f in 32-payload-tampered 33-record-hash 21-member-missing; do
	run "$FATELF" bundle verify --json "hostile/$f.fatbundle"
	e=$(jq -r .error.entry <<<"$RUN_OUT" 2>&1)
	m=$(jq -r .error.message <<<"$RUN_OUT" 2>&1)
	check_eq "fatelf bundle verify --json $f: error.entry is the entry its message names" \
		"$(grep -o "^entry '[^']*'" <<<"$m" | cut -d"'" -f2)" "$e"
	run "$FATELF" bundle verify "hostile/$f.fatbundle"
	check_match "fatelf bundle verify $f: the bundle, then that entry, once" \
		"^fatelf: hostile/$f\\.fatbundle: entry '$e': " "$RUN_ERR"
	check_eq "fatelf bundle verify $f: one entry named" 1 \
		"$(grep -o "entry '[^']*'" <<<"$RUN_ERR" | sort -u | wc -l)"
done
t_done
