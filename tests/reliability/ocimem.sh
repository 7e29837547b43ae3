#!/bin/bash
# The update of a repository of type oci reads the registry's catalog and
# tag lists, which no one signs, in bounded memory (doc/reliability.md,
# "Registries' lists"). Against a registry on 127.0.0.1 (ociflood.py):
#   - flood: 12 packages, each tag list ~16 MB of valid JSON: the update
#     fails with RepositoryInvalid, code FATELF_E_REPO_LIMIT, naming the
#     tag list's URL and the bound of 1048576 bytes; the daemon's peak
#     resident memory (VmHWM) stays at or below 64 MiB and grows by at
#     most 32 MiB in the update, it still answers Status, and nothing is
#     kept for the repository;
#   - pages: a registry that pages (?n=, &last=): the catalog of 2500
#     names is read in 3 pages and the 2345 versions of fatelf/many in 3;
#     the update takes the two packages that have versions, all of them;
#   - endless: a catalog that pages for ever: the update stops at the
#     limit of 4096 packages with FATELF_E_REPO_LIMIT naming the registry.
. "$(dirname "$0")/lib.sh" || exit 99

rl_init ocimem
t_require_tool python3 curl

# Under AddressSanitizer freed memory sits in its quarantine and the
# shadow counts too: there the bound is only "not without limit"
# (as in limits.sh).
RSS_MAX=$((64 << 10))
daemon_sanitized && RSS_MAX=$((1024 << 10))
vm_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DPID/status" 2>/dev/null; }

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	daemon_cleanup
}
trap cleanup EXIT

# registry MODE: starts ociflood.py MODE; PORT is its port, its requests
# go to MODE.log.
registry() {
	local i
	: >"$1.log"
	"$SYS_PYTHON" "$top_srcdir/tests/reliability/ociflood.py" "$1" "$T_WORK/$1.log" >"$1.out" 2>"$1.err" &
	PIDS+=($!)
	for ((i = 0; i < 200; i++)); do
		PORT=$(awk '$1 == "ready" { print $2 }' "$1.out")
		[ -n "$PORT" ] && return 0
		sleep 0.1
	done
	fail "ociflood.py $1 starts" "$(cat "$1.err")"
}

daemon_prepare d1 "Repositories=$T_WORK/d1/repos.d"
daemon_start d1 || fail "fatelfd starts" "see $T_WORK/d1/log"

# ---- pages: a registry that pages as the API says
registry pages
check "repo add paged oci://…/fatelf" ctl repo add paged "oci://127.0.0.1:$PORT/fatelf" --key "$RL_PUB"
run ctl --json update paged
check_eq "update of a registry that pages exits 0" 0 "$RC"
check_eq "... two packages: those with tags that are versions" "paged 2" \
	"$(jq -r 'select(.repositories) | .repositories[0] | "\(.name) \(.packages)"' <<<"$RUN_OUT" | tail -1)"
run ctl --json search many
check_eq "... all 2345 versions of fatelf/many, from 3 pages" 2345 \
	"$(jq -r '[.packages[] | select(.name == "many")] | length' <<<"$RUN_OUT")"
check_eq "... the catalog asked for by pages of 1000, each past the last name" \
	"n=1000
n=1000&last=other/x0996
n=1000&last=other/x1996" "$(awk '$1 == "/v2/_catalog" { print $2 }' pages.log)"
check_eq "... and the tag list of fatelf/many likewise" \
	"n=1000
n=1000&last=1.1898
n=1000&last=1.688" "$(awk '$1 == "/v2/fatelf/many/tags/list" { print $2 }' pages.log | sort)"
check "repo remove paged" ctl repo remove paged

# ---- flood: tag lists of ~16 MB each
registry flood
check "repo add flood oci://…/fatelf" ctl repo add flood "oci://127.0.0.1:$PORT/fatelf" --key "$RL_PUB"
hwm0=$(vm_kb VmHWM)
run ctl --json update flood
hwm1=$(vm_kb VmHWM)
echo "# 12 tag lists of 16 MB: daemon VmHWM $hwm0 -> $hwm1 kB"
check_eq "update of a registry of 16 MB tag lists: RepositoryInvalid (exit 5)" \
	"5 io.fatelf.Manager.RepositoryInvalid" "$RC $(tail -1 <<<"$RUN_OUT" | jq -r .error)"
check_eq "... code FATELF_E_REPO_LIMIT, repository flood" "FATELF_E_REPO_LIMIT flood" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r '"\(.parameters.code) \(.parameters.repository)"')"
check_match "... the message names the tag list's URL and the bound" \
	"http://127\.0\.0\.1:$PORT/v2/fatelf/p[0-9]+/tags/list\?n=1000: a reply larger than 1048576 bytes" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r .parameters.message)"
if [ -n "$hwm1" ] && [ "$hwm1" -le "$RSS_MAX" ]; then
	pass "... the daemon's peak VmRSS stays at or below $((RSS_MAX >> 10)) MiB ($hwm1 kB)"
else
	fail "... the daemon's peak VmRSS stays at or below $((RSS_MAX >> 10)) MiB" "VmHWM ${hwm1:-?} kB"
fi
# the update's own part, which AddressSanitizer's quarantine does not hide
if [ -n "$hwm1" ] && [ -n "$hwm0" ] && [ "$((hwm1 - hwm0))" -le $((32 << 10)) ]; then
	pass "... and grows by at most 32 MiB in the update ($((hwm1 - hwm0)) kB)"
else
	fail "... and grows by at most 32 MiB in the update" "VmHWM ${hwm0:-?} -> ${hwm1:-?} kB"
fi
check "... and it still answers Status" ctl status
check_eq "... nothing kept for the repository" "flood 0" \
	"$(ctl --json repo list | jq -r '.repositories[] | select(.name == "flood") | "\(.name) \(.packages // 0)"')"
check "repo remove flood" ctl repo remove flood

# ---- endless: a catalog that pages for ever
registry endless
check "repo add endless oci://…/fatelf" ctl repo add endless "oci://127.0.0.1:$PORT/fatelf" --key "$RL_PUB"
run ctl --json update endless
check_eq "update of an endless catalog: RepositoryInvalid, FATELF_E_REPO_LIMIT" \
	"5 io.fatelf.Manager.RepositoryInvalid FATELF_E_REPO_LIMIT" \
	"$RC $(tail -1 <<<"$RUN_OUT" | jq -r '"\(.error) \(.parameters.code)"')"
check_match "... naming the registry and the limit" \
	"registry http://127\.0\.0\.1:$PORT/: more than 4096 packages, the limit of one update" \
	"$(tail -1 <<<"$RUN_OUT" | jq -r .parameters.message)"
check_eq "... after 5 pages" 5 "$(grep -c '^/v2/_catalog ' endless.log)"
check "... and it still answers Status" ctl status

daemon_stop
check_eq "fatelfd exits 0 on SIGTERM" 0 "$DAEMON_STATUS"
check_no_sanitizer_report
t_done
