#!/bin/bash
# Real binaries: hello.c cross-compiled statically for seven architectures
# with Debian's cross compilers, glued into one FatELF, then taken apart
# again by every operation. Each record that comes out is compared byte
# for byte with what went in, and run (natively, or under
# qemu-<arch>-static named explicitly, so no binfmt_misc set-up is needed)
# to prove it is the program it claims to be.
. "$(dirname "$0")/lib.sh"

t_init cross
t_require_exec "$FATELF"
t_require_tool jq cmp readelf

# key  compiler  runner  e_machine  names (uname, Debian, multiarch triplet)
ARCHES="x86_64 i686 aarch64 armhf riscv64 ppc64le s390x"
declare -A CC RUNNER MACHINE NAMES
CC[x86_64]=gcc;                       RUNNER[x86_64]=;                    MACHINE[x86_64]=62
CC[i686]=i686-linux-gnu-gcc;          RUNNER[i686]=;                      MACHINE[i686]=3
CC[aarch64]=aarch64-linux-gnu-gcc;    RUNNER[aarch64]=qemu-aarch64-static; MACHINE[aarch64]=183
CC[armhf]=arm-linux-gnueabihf-gcc;    RUNNER[armhf]=qemu-arm-static;      MACHINE[armhf]=40
CC[riscv64]=riscv64-linux-gnu-gcc;    RUNNER[riscv64]=qemu-riscv64-static; MACHINE[riscv64]=243
CC[ppc64le]=powerpc64le-linux-gnu-gcc; RUNNER[ppc64le]=qemu-ppc64le-static; MACHINE[ppc64le]=21
CC[s390x]=s390x-linux-gnu-gcc;        RUNNER[s390x]=qemu-s390x-static;    MACHINE[s390x]=22
NAMES[x86_64]="x86_64 amd64 x86_64-linux-gnu"
NAMES[i686]="i686 i386 i386-linux-gnu"
NAMES[aarch64]="aarch64 arm64 aarch64-linux-gnu"
NAMES[armhf]="armv7l armhf arm-linux-gnueabihf"
NAMES[riscv64]="riscv64 riscv64-linux-gnu"
NAMES[ppc64le]="ppc64le ppc64el powerpc64le-linux-gnu"
NAMES[s390x]="s390x s390x-linux-gnu"

for a in $ARCHES; do
	t_require_tool "${CC[$a]}"
	[ -n "${RUNNER[$a]}" ] && t_require_tool "${RUNNER[$a]}"
done
[ "$(uname -m)" = x86_64 ] || t_skip "the host is $(uname -m), this test expects x86_64"
t_native_i686 || { t_require_tool qemu-i386-static; RUNNER[i686]=qemu-i386-static; }

hello=$top_srcdir/tests/integration/hello.c

# runs FILE [ARGS] as architecture A; prints its output
run_as() {
	local a=$1 f=$2
	shift 2
	if [ -n "${RUNNER[$a]}" ]; then
		"${RUNNER[$a]}" "$f" "$@"
	else
		"$f" "$@"
	fi
}

# The largest PT_LOAD p_align of an ELF, in decimal, as readelf sees it.
elf_max_align() {
	local a m=0
	for a in $(readelf -lW "$1" | awk '$1 == "LOAD" { print $NF }'); do
		[ $((a)) -gt "$m" ] && m=$((a))
	done
	echo "$m"
}

# ---- build the seven inputs
for a in $ARCHES; do
	if "${CC[$a]}" -static -O2 -o "in-$a" "$hello" 2>cc-$a.err; then
		pass "compile hello for $a with ${CC[$a]}"
	else
		fail "compile hello for $a with ${CC[$a]}" "$(cat cc-$a.err)"
	fi
	out=$(run_as "$a" "./in-$a" 2>&1)
	check_eq "the $a input runs" "hello from $a (in-$a)" "$out"
done

# aarch64 first: the host's record is not the first one, so every host
# selection below has to skip a record it cannot run.
ORDER="aarch64 x86_64 i686 armhf riscv64 ppc64le s390x"
inputs=()
for a in $ORDER; do inputs+=("in-$a"); done

check "glue seven architectures" "$FATELF" glue -o fat "${inputs[@]}"
check "validate the glued file" "$FATELF" validate fat
check_eq "validate -q prints nothing" "" "$("$FATELF" validate -q fat 2>&1)"
run "$FATELF" validate --json fat
check_eq "validate --json says valid" "true" "$(jq -r .valid <<<"$RUN_OUT")"

run "$FATELF" info --json fat
printf '%s\n' "$RUN_OUT" >info.json
check_eq "info --json exits 0" 0 "$RC"
check_eq "info --json lists 7 records" 7 "$(json info.json '.records | length')"
check_eq "info --json names the file" fat "$(json info.json .file)"
check_eq "info --json gives the file size" "$(file_size fat)" "$(json info.json .size)"
check_eq "info --json picks the x86_64 record for this host" 1 "$(json info.json .host_record)"

i=0
for a in $ORDER; do
	check_eq "record $i is $a (machine ${MACHINE[$a]})" "${MACHINE[$a]}" \
		"$(json info.json ".records[$i].machine")"
	check_eq "record $i size is the $a input's size" "$(file_size "in-$a")" \
		"$(json info.json ".records[$i].size")"
	want_align=$(elf_max_align "in-$a")
	check_eq "record $i p_align is the $a ELF's largest PT_LOAD p_align" "$want_align" \
		"$(json info.json ".records[$i].p_align")"
	off=$(json info.json ".records[$i].offset")
	[ "$want_align" -lt 4096 ] && want_align=4096
	if [ -n "$off" ] && [ $((off % want_align)) -eq 0 ]; then
		pass "record $i ($a) offset $off is aligned to $want_align"
	else
		fail "record $i ($a) offset '$off' is aligned to $want_align"
	fi
	i=$((i + 1))
done
for i in 0 5; do
	check_eq "record $i (64 KiB pages) is aligned to 0x10000" 65536 \
		"$(json info.json ".records[$i].p_align")"
done

# ---- extract every record by every name style, and run it
i=0
for a in $ORDER; do
	target=$(json info.json ".records[$i].target")
	name=$(json info.json ".records[$i].name")
	for n in ${NAMES[$a]} "$target" "$name" "record$i"; do
		rm -f x
		check "extract $a as '$n'" "$FATELF" extract -o x fat "$n"
		check_cmp "extract '$n' gives the $a input byte for byte" "in-$a" x
	done
	"$FATELF" extract -o "run-$a" fat "$a" 2>/dev/null
	out=$(run_as "$a" "./run-$a" 2>&1)
	check_eq "the extracted $a record runs" "hello from $a (run-$a)" "$out"
	run_as "$a" "./run-$a" 7 >/dev/null 2>&1
	check_eq "the extracted $a record exits with its status" 7 "$?"
	check_exit 0 "verify finds $a" "$FATELF" verify fat "$a"
	i=$((i + 1))
done
check_exit 1 "verify: no mips record" "$FATELF" verify fat mips
check_exit 1 "extract: no mips record" "$FATELF" extract -o nomips fat mips
check_eq "a failed extract leaves no output" no "$([ -e nomips ] && echo yes || echo no)"

# ---- the host
check "extract host" "$FATELF" extract -o h fat host
check_cmp "the host record is the x86_64 input" in-x86_64 h
out=$(./h 2>&1)
check_eq "the host record runs" "hello from x86_64 (h)" "$out"

check "thin -o t fat (host)" "$FATELF" thin -o t fat
check_cmp "thin to the host gives the x86_64 binary byte for byte" in-x86_64 t
out=$(./t 2>&1)
check_eq "the thinned binary runs" "hello from x86_64 (t)" "$out"

check "thin --host --elf" "$FATELF" thin -o t2 --host --elf fat
check_cmp "thin --host --elf is the x86_64 binary" in-x86_64 t2

check "thin --compatible keeps what the host runs" "$FATELF" thin -o tc --compatible fat
check_eq "thin --compatible keeps x86_64 and i386, in order" "62 3" \
	"$("$FATELF" info --json tc | jq -r '[.records[].machine] | join(" ")')"
"$FATELF" extract -o tc-x tc x86_64
check_cmp "x86_64 out of the compatible file" in-x86_64 tc-x
"$FATELF" extract -o tc-i tc i386
check_cmp "i386 out of the compatible file" in-i686 tc-i

check "thin to two named targets" "$FATELF" thin -o t3 fat riscv64 s390x
check_eq "the thinned file holds riscv64 and s390x, in input order" "243 22" \
	"$("$FATELF" info --json t3 | jq -r '[.records[].machine] | join(" ")')"
check "thin --fat to one target" "$FATELF" thin -o t4 --fat fat arm64
check_eq "thin --fat keeps a one-record FatELF" 1 "$("$FATELF" info --json t4 | jq -r '.records | length')"
"$FATELF" extract -o t4-x t4 aarch64
check_cmp "and its record is the aarch64 input" in-aarch64 t4-x
check "thin --elf to one named target" "$FATELF" thin -o t5 --elf fat ppc64el
check_cmp "thin --elf ppc64el is the ppc64le input" in-ppc64le t5

# ---- split
mkdir -p sp
check "split -p sp/hello" "$FATELF" split -p sp/hello fat
nsplit=$(ls sp | wc -l)
check_eq "split writes seven files" 7 "$nsplit"
for a in $ORDER; do
	found=
	for f in sp/hello-*; do
		cmp -s "$f" "in-$a" && found=$f
	done
	if [ -n "$found" ]; then
		pass "split gives the $a input byte for byte ($found)"
	else
		fail "split gives the $a input byte for byte" "$(ls -l sp)"
	fi
done

# ---- remove and replace round trips
check "remove s390x" "$FATELF" remove -o rm1 fat s390x
check "the file without s390x validates" "$FATELF" validate rm1
check_eq "it has six records" 6 "$("$FATELF" info --json rm1 | jq '.records | length')"
check_exit 1 "s390x is gone" "$FATELF" verify rm1 s390x
for a in aarch64 x86_64 riscv64; do
	rm -f x
	"$FATELF" extract -o x rm1 "$a"
	check_cmp "$a survives the removal byte for byte" "in-$a" x
done
check "remove two targets at once" "$FATELF" remove -o rm2 fat i386 armhf
check_eq "five records remain" "183 62 243 21 22" \
	"$("$FATELF" info --json rm2 | jq -r '[.records[].machine] | join(" ")')"
check "glue s390x back" "$FATELF" glue -o back rm1 in-s390x
for a in $ORDER; do
	rm -f x
	"$FATELF" extract -o x back "$a"
	check_cmp "$a after remove + glue is the input" "in-$a" x
done

aarch64-linux-gnu-gcc -static -O0 -DHELLO_GREETING='"howdy"' -o new-aarch64 "$hello"
check "replace the aarch64 record" "$FATELF" replace -o rp fat new-aarch64
check "the replaced file validates" "$FATELF" validate rp
rm -f x
"$FATELF" extract -o x rp arm64
check_cmp "the aarch64 record is the new one" new-aarch64 x
out=$(qemu-aarch64-static ./x 2>&1)
check_eq "the new aarch64 record runs" "howdy from aarch64 (x)" "$out"
check_eq "replace keeps the record order" "183 62 3 40 243 21 22" \
	"$("$FATELF" info --json rp | jq -r '[.records[].machine] | join(" ")')"
for a in x86_64 ppc64le s390x; do
	rm -f x
	"$FATELF" extract -o x rp "$a"
	check_cmp "$a is untouched by the replace" "in-$a" x
done
check "replace it back" "$FATELF" replace -o rp2 rp in-aarch64
for a in $ORDER; do
	rm -f x
	"$FATELF" extract -o x rp2 "$a"
	check_cmp "$a after two replaces is the input" "in-$a" x
done
check_exit 1 "replace with an ELF whose target is not in the file fails" \
	"$FATELF" replace -o rp3 rm1 in-s390x

t_done
