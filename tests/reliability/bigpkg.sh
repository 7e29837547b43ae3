#!/bin/bash
# A package of many entries, end to end through fatelfd: a signed bundle
# of FATELF_BIG_ENTRIES entries (default 50 000; 200 000, the default
# entry limit, with FATELF_LONG_TESTS=1) of small files in directories of
# 500, made in the test, installs, verifies, lists its files (streamed in
# chunks) and removes. Each step's time is printed as a comment; the
# daemon's peak RSS (VmHWM) while it installed is held to 128 MiB outside
# the sanitizer build.
. "${top_srcdir:?run through make check}/tests/reliability/lib.sh" || exit 99

rl_init bigpkg
t_require_tool python3 sha256sum

N=${FATELF_BIG_ENTRIES:-50000}
[ -n "${FATELF_LONG_TESTS:-}" ] && N=${FATELF_BIG_ENTRIES:-200000}
# entries = files + directories: opt, opt/big, and one per 500 files
ndirs=$(( (N - 2 + 500) / 501 ))
nfiles=$(( N - 2 - ndirs ))

python3 - "$nfiles" <<'PY' || { echo "Bail out! cannot make the tree"; exit 99; }
import os, sys
n = int(sys.argv[1])
for i in range(n):
    d = 'tree/opt/big/d%04d' % (i // 500)
    if i % 500 == 0:
        os.makedirs(d)
    with open('%s/f%06d.txt' % (d, i), 'w') as fh:
        fh.write('file %d of the big package\n' % i)
PY
check_eq "the tree has $N entries" "$N" "$(find tree -mindepth 1 | wc -l)"

elapsed() { echo "# $1: $(( ($(date +%s%N) - T0) / 1000000 )) ms"; }
T0=$(date +%s%N)
check_exit 0 "bundle create of $N entries" rl_bundle "$T_WORK/big.fatbundle" big 1 tree
elapsed "bundle create"

daemon_prepare base
daemon_start base || t_done
big_ctl() { timeout 1200 "$FATELFCTL" --socket "$SOCK" "$@"; }

T0=$(date +%s%N)
run big_ctl install "$T_WORK/big.fatbundle"
elapsed "install"
check_eq "install of $N entries succeeds" 0 "$RC"
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$DPID/status")
echo "# fatelfd VmHWM after the install: $hwm kB"
if daemon_sanitized; then
	check_eq "fatelfd is running (its RSS is not held under ASan)" yes "$([ -n "$hwm" ] && echo yes)"
else
	check_eq "fatelfd's peak RSS stayed within 128 MiB" yes "$([ "${hwm:-999999}" -le 131072 ] && echo yes)"
fi
check_eq "every file is on disk" "$nfiles" "$(find "$ROOT/opt/big" -type f | wc -l)"
want=$( (cd tree && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum)
got=$( (cd "$ROOT" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum)
check_eq "... with the tree's bytes" "$want" "$got"

T0=$(date +%s%N)
run big_ctl verify big
elapsed "verify"
check_eq "verify finds nothing wrong" 0 "$RC"

T0=$(date +%s%N)
big_ctl files big >files.out 2>files.err
check_eq "files exits 0" 0 "$?"
elapsed "files"
check_eq "files lists every file" "$nfiles" "$(grep -c '^/opt/big/d[0-9]*/f[0-9]*\.txt$' files.out)"

T0=$(date +%s%N)
run big_ctl remove big
elapsed "remove"
check_eq "remove succeeds" 0 "$RC"
check_eq "nothing of the package is left" "" "$(ls -A "$ROOT/opt" 2>/dev/null)"

daemon_stop
check_no_sanitizer_report
t_done
