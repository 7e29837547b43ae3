#!/bin/bash
# The ABI of libfatelf.so.0 against the last release's: abidiff compares
# the built library (its exported functions and the types they reach
# through the public headers) with tests/abi/libfatelf.so.0-0.1.0.xml,
# the abidw dump of release 0.1.0. Any change, an addition included,
# fails: a new release records a new dump on purpose.
. "$(dirname "$0")/lib.sh"

t_init abi
t_require_tool abidiff abidw

SO=$top_builddir/lib/.libs/libfatelf.so.0.0.0
BASE=$top_srcdir/tests/abi/libfatelf.so.0-0.1.0.xml
HD=(--hd2 "$top_srcdir/include/fatelf" --hd2 "$top_srcdir/lib/basic")
check "the library is built" test -f "$SO"
check "the release's dump is in the tree" test -s "$BASE"

run abidiff "$BASE" "$SO" "${HD[@]}"
check_eq "abidiff finds no ABI change against release 0.1.0" 0 "$RC"
[ "$RC" -eq 0 ] || printf '%s\n' "$RUN_OUT" | sed 's/^/# /'

# The comparison can fail: a dump without one of the functions (as if the
# release had not had it) and a library without it (as if it were removed).
grep -v '<elf-symbol name=.fatelf_version.' "$BASE" >"$T_WORK/less.xml"
run abidiff "$T_WORK/less.xml" "$SO" "${HD[@]}"
check_eq "a function the release lacked is an ABI change (abidiff exit 4)" 4 "$RC"
run abidiff "$SO" "$T_WORK/less.xml" --hd1 "$top_srcdir/include/fatelf" --hd1 "$top_srcdir/lib/basic"
check_eq "a function removed is an incompatible change (abidiff exit 12)" 12 "$RC"

t_done
