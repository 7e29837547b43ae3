#!/bin/bash
# The fatelf command as a user meets it: exit codes, one-line errors that
# name the file, the malformed corpus (every file rejected with its own
# error code), the valid edge cases, --help and --version, names printed
# by info that parse back, thin in place, glue alignment, trailing bytes
# and atomic output. Inputs are small ELF images from mkfixture.
. "$(dirname "$0")/lib.sh"

t_init cli
t_require_exec "$FATELF" "$MKFIXTURE" "$MKCORPUS"
t_require_tool jq cmp

# fixture NAME ARGS...: one ELF image from mkfixture
fixture() {
	local name=$1
	shift
	if ! "$MKFIXTURE" -o "$name" "$@" 2>fixture.err; then
		fail "mkfixture $name $*" "$(cat fixture.err)"
	fi
}

fixture x64 --machine 62 --class 64 --data le --type exec
fixture x64linux --machine 62 --class 64 --data le --osabi 3 --type exec
fixture i386 --machine 3 --class 32 --data le --type exec
fixture a64 --machine 183 --class 64 --data le --type dyn --align 65536
fixture ppcbe --machine 21 --class 64 --data be --type exec
fixture unk --machine 9999 --class 64 --data le --type exec
fixture rv --machine 243 --class 64 --data le --type rel
INPUTS="x64 x64linux i386 a64 ppcbe unk rv"

# ---- exit codes and error lines
check_exit 2 "no arguments is a usage error" "$FATELF"
check_exit 2 "an unknown subcommand is a usage error" "$FATELF" frobnicate
check_exit 2 "an unknown option is a usage error" "$FATELF" validate --no-such-option x64
check_exit 2 "validate without a file is a usage error" "$FATELF" validate
check_exit 2 "extract without a target is a usage error" "$FATELF" extract -o out x64
check_exit 2 "glue without inputs is a usage error" "$FATELF" glue -o out

check_exit 3 "a missing file is a system error" "$FATELF" validate does-not-exist
check_one_line "the system error is one line" "$RUN_ERR"
check_match "the system error names the file" '^fatelf: does-not-exist: ' "$RUN_ERR"
check_exit 3 "info on a missing file is a system error" "$FATELF" info does-not-exist
check_exit 3 "glue into a missing directory is a system error" \
	"$FATELF" glue -o no/such/dir/out x64 i386
check_match "that error names the output's directory" '^fatelf: no/such/dir(/out)?: ' "$RUN_ERR"

echo "this is not a FatELF file" >text
check_exit 1 "validate rejects a text file" "$FATELF" validate text
check_one_line "the rejection is one line" "$RUN_ERR"
check_match "the rejection names the file" '^fatelf: text: ' "$RUN_ERR"
check_exit 1 "info rejects a text file" "$FATELF" info text
check_exit 1 "glue rejects a non-ELF input" "$FATELF" glue -o out x64 text
check_match "the glue error names the bad input" 'text' "$RUN_ERR"
check_exit 1 "glue rejects two inputs with the same target" "$FATELF" glue -o out x64 x64
check_eq "a failed glue writes nothing" no "$([ -e out ] && echo yes || echo no)"

# ---- --help and --version
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
check_exit 0 "--version exits 0" "$FATELF" --version
check_match "--version prints the package version" "$version" "$RUN_OUT"
check_exit 0 "--help exits 0" "$FATELF" --help
for c in glue info validate extract split remove replace thin verify targets; do
	check_match "--help lists $c" "$c" "$RUN_OUT"
done
for c in glue info validate extract split remove replace thin verify targets; do
	check_exit 0 "$c --help exits 0" "$FATELF" "$c" --help
	check_match "$c --help shows a usage line naming $c" "[Uu]sage:.*$c" "$RUN_OUT"
done

# ---- every option parser: --help 0, a bad command line 2, a key that is not there 3
for c in "repo init" "repo add" "repo remove" "repo list" "repo verify" "repo gc" "bundle create" \
	"bundle inspect" "bundle verify" "bundle extract"; do
	# shellcheck disable=SC2086
	check_exit 0 "$c --help exits 0" "$FATELF" $c --help
	# shellcheck disable=SC2086
	check_exit 2 "$c --no-such-option exits 2" "$FATELF" $c --no-such-option
done
check_exit 2 "repo add --expires with no duration exits 2" "$FATELF" repo add --expires x d b
check_match "... saying what it takes" "repo add: --expires takes a duration" "$RUN_ERR"
check_exit 2 "repo init --password-file without --sign exits 2" "$FATELF" repo init --password-file f d
check_exit 2 "bundle create --compression lz4 exits 2" "$FATELF" bundle create -o x --compression lz4 t
for c in "repo list" "repo verify" "bundle verify"; do
	# shellcheck disable=SC2086
	check_exit 3 "$c --key of a missing file exits 3" "$FATELF" $c --key ./no-such.pub x
	check_match "... naming the key" "no-such.pub: public key" "$RUN_ERR"
done
check_exit 3 "bundle extract --key of a missing file exits 3" "$FATELF" bundle extract --key ./no-such.pub x d
for c in extract remove replace; do
	check_exit 2 "$c without -o exits 2" "$FATELF" "$c" x y
	check_match "... saying so" "$c: missing -o OUT" "$RUN_ERR"
done
check_exit 2 "info --no-such-option exits 2" "$FATELF" info --no-such-option
check_exit 2 "targets --no-such-option exits 2" "$FATELF" targets --no-such-option
FATELFCTL=$top_builddir/client/fatelfctl
for c in files owner info cancel install; do
	check_exit 0 "fatelfctl $c --help exits 0" "$FATELFCTL" "$c" --help
	check_exit 2 "fatelfctl $c --no-such-option exits 2" "$FATELFCTL" "$c" --no-such-option
done
check_exit 2 "fatelfctl install --policy bogus exits 2" "$FATELFCTL" install --policy bogus x
check_exit 2 "fatelfctl --socket without a path exits 2" "$FATELFCTL" --socket

# ---- glue, info, names that parse back
# shellcheck disable=SC2086
check "glue seven fixtures" "$FATELF" glue -o fat $INPUTS
check "the glued file validates" "$FATELF" validate fat
check_exit 0 "info prints a table" "$FATELF" info fat
info_text=$RUN_OUT
"$FATELF" info --json fat >info.json
check_eq "info --json lists seven records" 7 "$(json info.json '.records | length')"
check_eq "info --json has every documented top-level field" \
	"file,host_record,records,size,trailing_bytes,version,warnings" \
	"$(json info.json 'keys | join(",")')"
check_eq "info --json has every documented record field" \
	"align,arch,byte_order,elf_type,index,machine,machine_name,name,offset,osabi,osabi_name,osabi_version,p_align,size,target,word_size" \
	"$(json info.json '.records[0] | keys | join(",")')"
check_eq "info --json version is 1" 1 "$(json info.json .version)"
check_eq "info --json picks the first x86_64 record for this host" 0 "$(json info.json .host_record)"
check_match "an unnamed machine prints as its number" '(^|:)em9999(:|$)' "$(json info.json '.records[5].target')"
check_eq "record 4 is big endian" be "$(json info.json '.records[4].byte_order')"
check_eq "record 2 is 32-bit" 32 "$(json info.json '.records[2].word_size')"
check_eq "record 1 has osabi linux" 3 "$(json info.json '.records[1].osabi')"

i=0
for f in $INPUTS; do
	name=$(json info.json ".records[$i].name")
	target=$(json info.json ".records[$i].target")
	check_match "info prints record $i's target" "$(printf '%s' "$target" | sed 's/[.[\*^$]/\\&/g')" "$info_text"
	for n in "$name" "$target"; do
		rm -f x
		check "extract -o x fat '$n' (record $i as info names it)" "$FATELF" extract -o x fat "$n"
		check_cmp "'$n' gives record $i's bytes" "$f" x
		check_exit 0 "verify finds '$n'" "$FATELF" verify fat "$n"
	done
	i=$((i + 1))
done
check_exit 1 "x86_64 alone is ambiguous between sysv and linux" "$FATELF" extract -o x fat x86_64
check_match "the ambiguity error names the file" '^fatelf: fat: ' "$RUN_ERR"
check_exit 0 "but x86_64:linux picks one" "$FATELF" extract -o x fat x86_64:linux
check_cmp "x86_64:linux is the linux record" x64linux x
check_exit 1 "a target no record has" "$FATELF" extract -o x fat s390x
check_one_line "no-match is one line" "$RUN_ERR"
check_match "no-match names the file" '^fatelf: fat: ' "$RUN_ERR"
check_exit 1 "a target name that does not parse" "$FATELF" extract -o x fat 'x86_64:99bits:frob'
check_exit 1 "verify: no such target" "$FATELF" verify fat s390x
check_exit 3 "verify: no such file" "$FATELF" verify does-not-exist x86_64

# Every machine and OS ABI name of the historical fatelf-* tools' table
# parses: a name no record has is "no record matches", never a name that
# does not parse.
hist_bad=
for n in none m32 sparc 386 i386 68k 88k 860 mips s370 mips-rs3 pa-risc vpp500 sparc32plus \
	960 ppc ppc64 s390 v800 fr20 rh32 rce arm alpha sh sparcv9 tricore arc h8-300 h8-300h \
	h8s h8-500 ia64 mipsx coldfire m68hc12 mma pcp ncpu ndr1 starcore me16 st100 tinyj \
	x86_64 pdsp pdp10 pdp11 fx66 st9plus st7 68hc16 68hc11 68hc08 68hc05 svx st19 vax cris \
	javelin firepath zsp mmix huany prism avr fr30 d10v d30v v850 m32r mn10300 mn10200 pj \
	openrisc arc_a5 xtensa videocore tmm_gpp ns32k tpc snp1k st200 ip2k max cr f2mc16 \
	msp430 blackfin se_c33 sep arca unicore \
	x86_64:sysv x86_64:hpux x86_64:netbsd x86_64:linux x86_64:hurd x86_64:86open \
	x86_64:solaris x86_64:aix x86_64:irix x86_64:freebsd x86_64:tru64 x86_64:modesto \
	x86_64:openbsd x86_64:openvms x86_64:nsk x86_64:aros x86_64:armabi x86_64:standalone; do
	"$FATELF" verify fat "$n:be:32bits" >/dev/null 2>hist.err
	rc=$?
	if [ "$rc" -ne 1 ] || grep -q 'target name' hist.err; then
		hist_bad="$hist_bad $n($rc: $(cat hist.err))"
	fi
done
check_eq "every name of the historical tools' table parses as a target" "" "$hist_bad"

# ---- the extracted files are executables
rm -f x
"$FATELF" extract -o x fat record0
umask_mode=$(printf '%o' $((0777 & ~$(umask))))
check_eq "extract gives mode 0777 & ~umask" "$umask_mode" "$(file_mode x)"

# ---- atomic output: a failure leaves the old file as it was
echo precious >keep
check_exit 1 "extract of a missing target over an existing file fails" "$FATELF" extract -o keep fat s390x
check_eq "the existing output is untouched" precious "$(cat keep)"
check_eq "no temp files are left behind" "" "$(ls -A | grep '^\.' | grep -v '^\.run\.' || true)"

# ---- thin in place keeps the mode
cp fat thin1
chmod 750 thin1
check "thin in place to two records" "$FATELF" thin thin1 record3 record6
check_eq "thin in place keeps mode 750" 750 "$(file_mode thin1)"
check_eq "the thinned file has two records" "183 243" \
	"$("$FATELF" info --json thin1 | jq -r '[.records[].machine] | join(" ")')"
rm -f x
"$FATELF" extract -o x thin1 aarch64
check_cmp "the aarch64 record survives thinning" a64 x
cp fat thin2
chmod 640 thin2
check "thin in place to one record" "$FATELF" thin thin2 ppc64
check_cmp "one record thins to the plain ELF" ppcbe thin2
check_eq "the plain ELF keeps mode 640" 640 "$(file_mode thin2)"
check_eq "thin in place leaves no temp files" "" "$(ls -A | grep '^\.' | grep -v '^\.run\.' || true)"

# remove and replace keep the input's mode too, and may write over it
cp fat rm1
chmod 700 rm1
check "remove in place (-o the input)" "$FATELF" remove -o rm1 rm1 record6
check_eq "remove keeps mode 700" 700 "$(file_mode rm1)"
check_eq "six records remain" 6 "$("$FATELF" info --json rm1 | jq '.records | length')"

# ---- glue alignment
check "glue x86_64 and an aarch64 ELF with p_align 0x10000" "$FATELF" glue -o al x64 a64
off1=$("$FATELF" info --json al | jq '.records[1].offset')
check_eq "glue aligns the aarch64 record to its p_align 0x10000" 0 "$((off1 % 65536))"
check_eq "and the validation has no warning" 0 "$("$FATELF" validate --json al | jq '.warnings | length')"
check "glue --align 1048576" "$FATELF" glue --align 1048576 -o al2 x64 i386
check_eq "--align puts every record on a 1 MiB boundary" "0 0" \
	"$("$FATELF" info --json al2 | jq -r '[.records[].offset % 1048576] | join(" ")')"
check "glue --align 4096 below the aarch64 p_align" "$FATELF" glue --align 4096 -o al3 a64 x64
off=$("$FATELF" info --json al3 | jq '.records[0].offset')
check_eq "the aarch64 record sits on 4096, not 0x10000" 4096 "$((off % 65536))"
check_exit 0 "an under-aligned file is still valid" "$FATELF" validate --json al3
check_eq "but validate warns about it" "FATELF_W_UNDER_ALIGNED 0" \
	"$(jq -r '.warnings[] | "\(.code) \(.record)"' <<<"$RUN_OUT")"
check_exit 2 "glue --align 3 (not a power of two) is refused" "$FATELF" glue --align 3 -o al4 x64
check_exit 2 "glue --align abc is refused" "$FATELF" glue --align abc -o al4 x64

# ---- bytes after the last record
cp fat trail
printf 'trailing' >>trail
check_exit 0 "trailing bytes do not make a file invalid" "$FATELF" validate --json trail
check_eq "validate warns about trailing bytes" FATELF_W_TRAILING "$(jq -r '.warnings[].code' <<<"$RUN_OUT")"
check_eq "info --json counts the trailing bytes" 8 "$("$FATELF" info --json trail | jq .trailing_bytes)"
check_eq "a clean file has none" 0 "$(json info.json .trailing_bytes)"
check "thin --fat keeping every record" "$FATELF" thin -o trail2 --fat trail \
	record0 record1 record2 record3 record4 record5 record6
check_eq "writers drop the trailing bytes" 0 "$("$FATELF" info --json trail2 | jq .trailing_bytes)"
check_eq "and nothing else" "$(file_size fat)" "$(file_size trail2)"

# ---- targets
check_exit 0 "targets exits 0" "$FATELF" targets
check_match "targets names this host" "$(uname -m)" "$RUN_OUT"
check_exit 0 "targets --json exits 0" "$FATELF" targets --json
check_exit 0 "targets --json is JSON" jq -e . "$T_WORK/.run.out"
run "$FATELF" targets --json
check_eq "targets --json has every documented top-level field" \
	"binfmt_misc,compatible,emulated,native,uname_machine" "$(jq -r 'keys | join(",")' <<<"$RUN_OUT")"
check_eq "targets --json binfmt_misc has every documented field" \
	"enabled,flags,interpreter,name,state" "$(jq -r '.binfmt_misc | keys | join(",")' <<<"$RUN_OUT")"

# binfmt_misc as fake directories ($FATELF_BINFMT_MISC_DIR), in the format
# the kernel prints entries in
bm_entry() { # DIR NAME enabled|disabled INTERPRETER FLAGS MAGIC [MASK]
	{
		printf '%s\ninterpreter %s\nflags: %s\noffset 0\nmagic %s\n' "$3" "$4" "$5" "$6"
		[ $# -lt 7 ] || printf 'mask %s\n' "$7"
	} >"$1/$2"
}
ELF64LE_MASK=ffffffffffffff00fffffffffffffffffeffffff
mkdir bm-reg bm-off bm-none bm-gone
for d in bm-reg bm-off bm-none; do
	: >"$d/register"
	echo enabled >"$d/status"
	bm_entry "$d" qemu-aarch64 enabled /usr/libexec/qemu-binfmt/aarch64-binfmt-P POF \
		7f454c460201010000000000000000000200b700 "$ELF64LE_MASK"
done
bm_entry bm-reg fatelf enabled /usr/local/bin/fatelf-run PO fa700e1f0100
bm_entry bm-off fatelf disabled /usr/local/bin/fatelf-run PO fa700e1f0100
# qemu for this host's own machine, and a disabled one: neither emulates
bm_entry bm-reg qemu-x86_64 enabled /usr/libexec/qemu-binfmt/x86_64-binfmt-P POF \
	7f454c4602010100000000000000000002003e00 "$ELF64LE_MASK"
bm_entry bm-reg qemu-riscv64 disabled /usr/libexec/qemu-binfmt/riscv64-binfmt-P POF \
	7f454c460201010000000000000000000200f300 "$ELF64LE_MASK"
host_m=$(uname -m)

FATELF_BINFMT_MISC_DIR=$T_WORK/bm-reg check_exit 0 "targets with FatELF's handler registered" "$FATELF" targets
check_match "targets names the handler, its interpreter and flags" \
	'^binfmt_misc: +registered \(fatelf, /usr/local/bin/fatelf-run, flags PO\)$' "$RUN_OUT"
if [ "$host_m" != aarch64 ]; then
	check_match "targets lists aarch64 as emulated by the qemu-aarch64 entry" \
		'^emulated: +aarch64:64bits:le \(aarch64\) by qemu-aarch64$' "$RUN_OUT"
fi
check_nomatch "a disabled qemu entry emulates nothing" 'riscv' "$RUN_OUT"
check_eq "the host's own targets are not listed as emulated" "" \
	"$(printf '%s\n' "$RUN_OUT" | grep ' by ' | grep -F "($host_m)" || true)"
FATELF_BINFMT_MISC_DIR=$T_WORK/bm-reg check_exit 0 "targets --json with the handler registered" \
	"$FATELF" targets --json
check_eq "targets --json: the handler's state, name, interpreter, flags, enabled" \
	"registered fatelf /usr/local/bin/fatelf-run PO true" \
	"$(jq -r '.binfmt_misc | "\(.state) \(.name) \(.interpreter) \(.flags) \(.enabled)"' <<<"$RUN_OUT")"
if [ "$host_m" != aarch64 ]; then
	check_eq "targets --json: aarch64 emulated by qemu-aarch64" \
		'[{"target":"aarch64:64bits:le","arch":"aarch64","handler":"qemu-aarch64"}]' \
		"$(jq -c '.emulated' <<<"$RUN_OUT")"
fi

FATELF_BINFMT_MISC_DIR=$T_WORK/bm-off check_exit 0 "targets with FatELF's handler disabled" "$FATELF" targets
check_match "targets says the handler is disabled" \
	'^binfmt_misc: +registered \(fatelf, /usr/local/bin/fatelf-run, flags PO, disabled\)$' "$RUN_OUT"
FATELF_BINFMT_MISC_DIR=$T_WORK/bm-off run "$FATELF" targets --json
check_eq "targets --json: enabled is false" false "$(jq -r '.binfmt_misc.enabled' <<<"$RUN_OUT")"

FATELF_BINFMT_MISC_DIR=$T_WORK/bm-none check_exit 0 "targets without FatELF's handler" "$FATELF" targets
check_match "targets says the handler is not registered" '^binfmt_misc: +not registered$' "$RUN_OUT"
FATELF_BINFMT_MISC_DIR=$T_WORK/bm-none run "$FATELF" targets --json
check_eq "targets --json: not registered, no name" "not registered null" \
	"$(jq -r '.binfmt_misc | "\(.state) \(.name)"' <<<"$RUN_OUT")"

echo 0 >bm-gone/status
FATELF_BINFMT_MISC_DIR=$T_WORK/bm-gone check_exit 0 "targets where binfmt_misc is not mounted" "$FATELF" targets
check_match "targets says binfmt_misc is unavailable" \
	'^binfmt_misc: +unavailable \(binfmt_misc is not mounted\)$' "$RUN_OUT"
check_match "and that nothing is emulated" '^emulated: +-$' "$RUN_OUT"
FATELF_BINFMT_MISC_DIR=$T_WORK/bm-gone run "$FATELF" targets --json
check_eq "targets --json: unavailable, nothing emulated" "unavailable 0" \
	"$(jq -r '"\(.binfmt_misc.state) \(.emulated | length)"' <<<"$RUN_OUT")"

# ---- the malformed corpus: each file rejected with its own code
check "mkcorpus writes the corpus" "$MKCORPUS" corpus
ncorpus=$(ls corpus/*.fatelf 2>/dev/null | wc -l)
if [ "$ncorpus" -ge 25 ]; then
	pass "the corpus holds $ncorpus malformed files (at least 25)"
else
	fail "the corpus holds at least 25 malformed files" "found $ncorpus"
fi
RECORD_RULES='^FATELF_E_(REC_RESERVED|WORD_SIZE|BYTE_ORDER|OVERFLOW|OUTSIDE|TOO_SMALL|OVERLAP_TABLE|ALIGN|4GIB|OVERLAP|DUPLICATE|ELF_.*|PH_.*|SEGMENT)$'
for f in corpus/*.fatelf; do
	[ -e "$f" ] || continue
	code=$(basename "$f" .fatelf)
	code=${code%%-*}
	check_exit 1 "validate rejects $f" "$FATELF" validate "$f"
	check_one_line "$code: the error is one line" "$RUN_ERR"
	check_match "$code: the error names the file" "^fatelf: $f: " "$RUN_ERR"
	if [[ $code =~ $RECORD_RULES ]]; then
		check_match "$code: the error names the record" "^fatelf: $f: record [0-9]+ \\(" "$RUN_ERR"
	fi
	check_exit 1 "validate --json rejects $f" "$FATELF" validate --json "$f"
	printf '%s\n' "$RUN_OUT" >v.json
	check_eq "$code: validate --json error.code" "$code" "$(json v.json .error.code)"
	check_eq "$code: validate --json valid is false" false "$(json v.json .valid)"
	check_eq "$code: validate --json names the file" "$f" "$(json v.json .file)"
done
align=corpus/FATELF_E_ALIGN.fatelf
if [ -e "$align" ]; then
	check_exit 1 "extract refuses an invalid file" "$FATELF" extract -o x "$align" record0
	check_exit 1 "thin refuses an invalid file" "$FATELF" thin -o x "$align"
fi

nvalid=$(ls corpus/valid/* 2>/dev/null | wc -l)
if [ "$nvalid" -ge 5 ]; then
	pass "the corpus holds $nvalid valid edge cases"
else
	fail "the corpus holds at least 5 valid edge cases" "found $nvalid"
fi
for f in corpus/valid/*; do
	[ -e "$f" ] || continue
	check_exit 0 "validate accepts $f" "$FATELF" validate "$f"
	check_exit 0 "validate --json accepts $f" "$FATELF" validate --json "$f"
	printf '%s\n' "$RUN_OUT" >v.json
	check_eq "$f: valid is true" true "$(json v.json .valid)"
	check_eq "$f: error is null" null "$(json v.json .error)"
	check_exit 0 "info accepts $f" "$FATELF" info --json "$f"
done

t_done
