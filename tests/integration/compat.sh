#!/bin/bash
# The historical fatelf-* names: the positional argument order of the
# original tools, and their exit codes (0 success, 1 any failure, usage
# errors and system errors included), so scripts written for them keep
# working.
. "$(dirname "$0")/lib.sh"

t_init compat
t_require_exec "$FATELF" "$MKFIXTURE" "$MKCORPUS"
t_require_tool jq cmp

bindir=$(dirname "$FATELF")
for n in glue info extract split remove replace verify validate; do
	if [ -x "$bindir/fatelf-$n" ]; then
		pass "fatelf-$n is built"
	else
		fail "fatelf-$n is built" "missing: $bindir/fatelf-$n"
	fi
done
PATH=$bindir:$PATH

"$MKFIXTURE" -o x64 --machine 62 --class 64 --data le --type exec
"$MKFIXTURE" -o a64 --machine 183 --class 64 --data le --type exec --align 65536
"$MKFIXTURE" -o rv --machine 243 --class 64 --data le --type exec
"$MKFIXTURE" -o rv2 --machine 243 --class 64 --data le --type exec --seed 7
if cmp -s rv rv2; then
	fail "mkfixture --seed gives different bytes" "rv and rv2 are identical"
fi

# fatelf-glue OUT IN1 IN2...
check "fatelf-glue OUT IN1 IN2 IN3" fatelf-glue fat x64 a64 rv
check "the result validates with the new tool" "$FATELF" validate fat
check_eq "three records, in argument order" "62 183 243" \
	"$("$FATELF" info --json fat | jq -r '[.records[].machine] | join(" ")')"
check_exit 1 "fatelf-glue with no inputs exits 1" fatelf-glue out
check_exit 1 "fatelf-glue with a missing input exits 1" fatelf-glue out x64 missing
check_exit 1 "fatelf-glue of a duplicate target exits 1" fatelf-glue out x64 x64

# fatelf-info IN, fatelf-validate IN
check "fatelf-info IN" fatelf-info fat
check_match "fatelf-info shows the records" 'aarch64' "$RUN_OUT"
check_exit 1 "fatelf-info on a missing file exits 1" fatelf-info missing
check "fatelf-validate IN" fatelf-validate fat
check_exit 1 "fatelf-validate on a plain ELF exits 1" fatelf-validate x64
check_exit 1 "fatelf-validate on a missing file exits 1" fatelf-validate missing
check_exit 1 "fatelf-validate with no argument exits 1" fatelf-validate
"$MKCORPUS" --no-sparse corpus >/dev/null
n=0
bad=
for f in corpus/*.fatelf; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	fatelf-validate "$f" >/dev/null 2>&1
	rc=$?
	[ "$rc" -eq 1 ] || bad="$bad $f:$rc"
done
if [ "$n" -gt 0 ] && [ -z "$bad" ]; then
	pass "fatelf-validate exits 1 on all $n corpus files"
else
	fail "fatelf-validate exits 1 on every corpus file" "files: $n, wrong exits:$bad"
fi

# fatelf-extract OUT IN TARGET
check "fatelf-extract OUT IN TARGET" fatelf-extract out-a fat aarch64:64bits:le
check_cmp "fatelf-extract gives the aarch64 input" a64 out-a
check "fatelf-extract by recordN" fatelf-extract out-r fat record2
check_cmp "record2 is the riscv input" rv out-r
check_exit 1 "fatelf-extract of a missing target exits 1" fatelf-extract out-x fat s390x
check_exit 1 "fatelf-extract with too few arguments exits 1" fatelf-extract out-x fat

# fatelf-verify IN TARGET
check_exit 0 "fatelf-verify finds x86_64" fatelf-verify fat x86_64
check_exit 1 "fatelf-verify does not find s390x" fatelf-verify fat s390x
check_exit 1 "fatelf-verify on a missing file exits 1" fatelf-verify missing x86_64

# fatelf-remove OUT IN TARGET
check "fatelf-remove OUT IN TARGET" fatelf-remove rm fat riscv
check_eq "two records remain" "62 183" \
	"$("$FATELF" info --json rm | jq -r '[.records[].machine] | join(" ")')"
check_exit 1 "fatelf-remove of a missing target exits 1" fatelf-remove rm2 fat s390x

# fatelf-replace OUT IN NEWELF
check "fatelf-replace OUT IN NEWELF" fatelf-replace rp fat rv2
rm -f x
"$FATELF" extract -o x rp riscv64
check_cmp "the riscv record is the new one" rv2 x
"$FATELF" extract -o x rp x86_64
check_cmp "the x86_64 record is untouched" x64 x
check_exit 1 "fatelf-replace with a non-ELF exits 1" fatelf-replace rp2 fat fat

# fatelf-split IN: writes IN-<name> beside IN
mkdir -p sp
cp fat sp/prog
check "fatelf-split IN" fatelf-split sp/prog
check_eq "fatelf-split writes three files beside the input" 4 "$(ls sp | wc -l)"
for f in x64 a64 rv; do
	found=
	for s in sp/prog-*; do
		cmp -s "$s" "$f" && found=$s
	done
	if [ -n "$found" ]; then
		pass "fatelf-split wrote $f as $found"
	else
		fail "fatelf-split wrote $f" "$(ls sp)"
	fi
done
check_exit 1 "fatelf-split on a missing file exits 1" fatelf-split missing

t_done
