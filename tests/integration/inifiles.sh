#!/bin/bash
# The three INI files fatelfd reads, through a private fatelfd and
# fatelfctl (lib/basic/ini.h has the one rule set): a malformed
# fatelfd.conf, repos.d file and registries.d file are each refused with
# the exact FILE:LINE: of the bad line, blank and comment lines counted,
# and the key; files written with blank lines, comments, spaces around
# '=', CRLF line ends and any boolean spelling are read as meant.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init inifiles
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq timeout

"$FATELF" bundle keygen --no-password -p repo.pub -s repo.key >/dev/null || fail "keygen (repository)" "no key"
KEY=$(tail -1 repo.pub)
daemon_init

# ---- fatelfd.conf: the daemon refuses to start, naming the line
mkdir -p bad
printf '# fatelfd.conf\n\n[Daemon]\n\n; a comment\n\nDurable = sometimes\n' >bad/fatelfd.conf
run timeout 10 "$FATELFD" --socket bad/sock --root bad --state-dir bad/state --config bad/fatelfd.conf
check_match "a malformed fatelfd.conf: fatelfd refuses to start (exit != 0)" '^[1-9]' "$RC"
check_match "... naming FILE:LINE: and the key (blank and comment lines counted)" \
	"bad/fatelfd\.conf:7: Durable: 'sometimes' is not a boolean" "$RUN_ERR"
printf '[Daemon]\n\n\nRequireSignature=yes\n[Policy]\n\n\nPolicy=fast\n' >bad/fatelfd.conf
run timeout 10 "$FATELFD" --socket bad/sock --root bad --state-dir bad/state --config bad/fatelfd.conf
check_match "... and in [Policy]" "bad/fatelfd\.conf:8: Policy: unknown policy 'fast'" "$RUN_ERR"

# ---- a daemon with hand-written repos.d and registries.d files
mkdir -p repos.d registries.d
daemon_prepare d "Repositories=$T_WORK/repos.d" "Registries=$T_WORK/registries.d" "  Durable  =  On  " \
	"RunLdconfig=OFF"
daemon_start d || fail "fatelfd starts with 'Durable  =  On' and 'RunLdconfig=OFF'" "see $T_WORK/d/log"

# A repository file written by hand: comments, blank lines, spaces around
# '=', CRLF line ends.
printf '# the main mirror\r\n\r\n  [Repository]  \r\n\r\nURL = file://%s/repo\r\n; its key\r\nKey =  %s \r\n' \
	"$T_WORK" "$KEY" >repos.d/main.conf
run ctl --json repo list
check_eq "a hand-written repos.d file: repo list reads it" "0 main file://$T_WORK/repo" \
	"$RC $(jq -r '.repositories[] | "\(.name) \(.urls[0])"' <<<"$RUN_OUT" 2>/dev/null)"

# One line of another file is wrong, after blank lines and comments.
printf '[Repository]\n\n# mirrors\n\nURL=file://%s/repo\n\nKey=%s\n\n\nMirror=http://b/\n' "$T_WORK" "$KEY" >repos.d/two.conf
run ctl repo list
check_eq "a repos.d file with an unknown key: repo list fails (exit 1)" 1 "$RC"
check_match "... naming FILE:LINE: and the key" "repos\.d/two\.conf:10: Mirror: unknown key in \[Repository\]" "$RUN_ERR"
printf '\n\n[Repository]\n\nURL=file://%s/repo\n' "$T_WORK" >repos.d/two.conf
run ctl repo list
check_match "a repos.d file without Key=: the line of its [Repository]" \
	"repos\.d/two\.conf:3: Key: missing: \[Repository\] needs a Key= line" "$RUN_ERR"
printf '[Repository]\nKey=%s\n\n# a registry\nURL=oci://127.0.0.1:9/fleet\n\nURL=http://b/\n' "$KEY" >repos.d/two.conf
run ctl repo list
check_match "a second URL= beside an oci:// one: its own line" \
	"repos\.d/two\.conf:7: URL: a repository of type oci has one URL= alone" "$RUN_ERR"
printf '[Repository]\n\nURL=file://%s/repo\nKey=%s\n\n\nID=00\0ff\n' "$T_WORK" "$KEY" >repos.d/two.conf
run ctl repo list
check_match "a NUL byte: its line" "repos\.d/two\.conf:7: syntax: line holds a NUL byte" "$RUN_ERR"
rm repos.d/two.conf
check "... without it, repo list works again" ctl repo list

# A registry's file: the install reads it before it asks the registry
# anything, so no registry has to run here.
PORT=$(free_port)
REF=oci://127.0.0.1:$PORT/fleet/hello:1.0
printf '# fleet registry\n\n[Registry]\n\n; plain http\nPlainHTTP = maybe\n' >"registries.d/127.0.0.1:$PORT.conf"
run ctl install "$REF"
check_eq "a registries.d file with a bad boolean: install fails (exit 1)" 1 "$RC"
check_match "... naming FILE:LINE: and the key" \
	"registries\.d/127\.0\.0\.1:$PORT\.conf:6: PlainHTTP: 'maybe' is not a boolean \(yes, no, true, false, on, off, 1 or 0\)" \
	"$RUN_ERR"
printf '[Registry]\n\n\nCredentials=relative/creds\n' >"registries.d/127.0.0.1:$PORT.conf"
run ctl install "$REF"
check_match "Credentials= not an absolute path: its line" \
	"registries\.d/127\.0\.0\.1:$PORT\.conf:4: Credentials: an absolute path" "$RUN_ERR"
printf 'u:p\n' >creds
chmod 644 creds
printf '[Registry]\n\n\n\nCredentials=%s/creds\n' "$T_WORK" >"registries.d/127.0.0.1:$PORT.conf"
run ctl install "$REF"
check_match "a credentials file others may read: the line that names it" \
	"registries\.d/127\.0\.0\.1:$PORT\.conf:5: Credentials: $T_WORK/creds must be a regular file of root's" "$RUN_ERR"
# Read as meant: the install goes on to the registry (which is not there).
printf '[Registry]\r\n\r\n  PlainHTTP  =  ON  \r\n' >"registries.d/127.0.0.1:$PORT.conf"
run ctl install "$REF"
check_eq "a good registries.d file: the install gets as far as the registry (exit 1)" 1 "$RC"
check_nomatch "... and no complaint about the file" "registries\.d" "$RUN_ERR"

daemon_stop
t_done
