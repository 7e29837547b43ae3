#!/bin/bash
# Long answers come in chunks. A package of 2,500 files:
#  - Files called with "more" gets several replies of at most 1,000 files,
#    every one but the last with continues, whose files together are the
#    package's, in path order; a call sent right behind it on the same
#    connection is answered after the last chunk;
#  - Files without "more" is still one reply with every file;
#  - fatelfctl files prints exactly the package's paths, and with --json
#    one JSON line per reply whose files together are the package's;
#  - after every file's mode changed, Verify with "more" gives the 2,500
#    problems in chunks, each reply with checked 2,500, and fatelfctl
#    verify prints one line per file and the count, exit 1;
#  - List with "more" and fatelfctl list still show the package.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
export top_srcdir
. "$top_srcdir/tests/reliability/lib.sh" || exit 99

rl_init stream
trap daemon_cleanup EXIT

N=2500
mkdir -p tree/opt/many/a tree/opt/many/b
for ((i = 0; i < N; i++)); do
	if ((i % 2)); then echo "$i" >"tree/opt/many/a/f$i"; else echo "$i" >"tree/opt/many/b/f$i"; fi
done
(cd tree && find opt -type f | sed 's|^|/|' | LC_ALL=C sort) >want
# fatelfctl files: the directories too, each with a / after it
(cd tree && { find opt -type f; find opt -type d | sed 's|$|/|'; } | sed 's|^|/|' | LC_ALL=C sort) >want-ctl
check "bundle many ($N files)" rl_bundle many.fatbundle many 1.0 tree --compression none

daemon_prepare d
daemon_start d || fail "fatelfd starts" "$(tail -20 "$DLOG")"
check "install many" ctl install many.fatbundle

vl() { "$SYS_PYTHON" "$VLC" call "$SOCK" "$@"; }
FILES='{"method":"io.fatelf.Manager.Files","parameters":{"package":"many"},"more":true}'
STATUS='{"method":"io.fatelf.Manager.Status","parameters":{}}'

# ---------------------------------------------------------------- Files with more
vl "$FILES" "$STATUS" >replies
check_eq "Files with more: 3 replies, then Status's" 4 "$(wc -l <replies)"
check_eq "Files with more: continues on all but the last" "true true false" \
	"$(head -3 replies | jq -r '.continues // false' | xargs)"
check_eq "Files with more: 1000, 1000, 500 files" "1000 1000 500" \
	"$(head -3 replies | jq -r '.parameters.files | length' | xargs)"
head -3 replies | jq -r '.parameters.files[].path' >got
check "Files with more: the replies' files together are the package's, in path order" cmp want got
check_eq "the call behind the stream is answered after it" "true" \
	"$(tail -1 replies | jq -r '.parameters | has("packages")')"

vl '{"method":"io.fatelf.Manager.Files","parameters":{"package":"many"}}' >one
check_eq "Files without more: one reply of $N files" "1 $N" \
	"$(wc -l <one) $(jq -r '.parameters.files | length' one)"
vl '{"method":"io.fatelf.Manager.Files","parameters":{"package":"nosuch"},"more":true}' >none
check_eq "Files with more of an unknown package: PackageNotFound" "io.fatelf.Manager.PackageNotFound" \
	"$(jq -r '.error' none)"

# ---------------------------------------------------------------- fatelfctl files
run ctl files many
check_eq "fatelfctl files: exit 0" 0 "$RC"
printf '%s\n' "$RUN_OUT" >got
check "fatelfctl files prints every path once, in order, directories with a /" cmp want-ctl got
run ctl --json files many
check_eq "fatelfctl --json files: one JSON line per reply" 3 "$(printf '%s\n' "$RUN_OUT" | wc -l)"
check_eq "fatelfctl --json files: 1000, 1000, then the last files and the 4 directories" "1000 1000 504" \
	"$(printf '%s\n' "$RUN_OUT" | jq -r '.files | length' | xargs)"
printf '%s\n' "$RUN_OUT" | jq -r '.files[] | select(.type != "dir") | .path' >got
check "fatelfctl --json files: the lines' files together are the package's" cmp want got

# ---------------------------------------------------------------- Verify with more
chmod 0600 "$T_WORK/d/root/opt/many/a/"* "$T_WORK/d/root/opt/many/b/"*
vl '{"method":"io.fatelf.Manager.Verify","parameters":{"package":"many"},"more":true}' >vreplies
check_eq "Verify with more: 1000, 1000, 500 problems" "1000 1000 500" \
	"$(jq -r '.parameters.problems | length' vreplies | xargs)"
check_eq "Verify with more: checked $N in every reply" "$N $N $N" \
	"$(jq -r '.parameters.checked' vreplies | xargs)"
check_eq "Verify with more: every problem a mode change, one per file, in path order" "$(cat want)" \
	"$(jq -r '.parameters.problems[] | select(.problem == "mode") | .path' vreplies)"
run ctl verify many
check_eq "fatelfctl verify: exit 1 (problems)" 1 "$RC"
check_eq "fatelfctl verify: one line per problem, then the count" "$((N + 1)) $N files checked, $N problems" \
	"$(printf '%s\n' "$RUN_OUT" | wc -l) $(printf '%s\n' "$RUN_OUT" | tail -1)"

# ---------------------------------------------------------------- List with more
vl '{"method":"io.fatelf.Manager.List","parameters":{},"more":true}' >lreplies
check_eq "List with more: one reply, the package with its $N files" "1 many $N" \
	"$(wc -l <lreplies) $(jq -r '.parameters.packages[] | "\(.name) \(.files)"' lreplies)"
run ctl list
check_eq "fatelfctl list: the header and the package" "NAME many" \
	"$(printf '%s\n' "$RUN_OUT" | awk '{ print $1 }' | xargs)"

check_no_sanitizer_report
t_done
