#!/bin/bash
# fatelf repo: a repository of fat packages made from real programs
# (hello cross-compiled for x86_64 and aarch64, and i686 and riscv64 when
# their compilers are installed, glued into one FatELF) and bundles signed
# with minisign keys. Checks what a vendor and a mirror see: the signed
# index and its pointer (checked with minisign itself), one object per
# FatELF record and per data file (checked with zstd and sha256sum), no
# object for a canonical frame, an add that changes nothing, an upgrade
# that stores only what changed, a signed repository kept signed, every
# tampered file refused with its error name and path, bundles that fail
# their own checks refused with nothing published, remove and gc, a reader
# that never sees a pointer to a missing or different index while writers
# publish, and file:// and http:// addresses.
. "$(dirname "$0")/lib.sh"

t_init repo
t_require_exec "$FATELF"
t_require_tool jq python3 minisign zstd bsdtar sha256sum cmp gcc aarch64-linux-gnu-gcc

declare -A CC=([x86_64]=gcc [aarch64]=aarch64-linux-gnu-gcc [i686]=i686-linux-gnu-gcc
	[riscv64]=riscv64-linux-gnu-gcc)
ARCHES=
for a in x86_64 aarch64 i686 riscv64; do
	if command -v "${CC[$a]}" >/dev/null 2>&1; then
		ARCHES="$ARCHES $a"
	else
		echo "# ${CC[$a]} is not installed: $a is left out"
	fi
done
NARCH=$(wc -w <<<"$ARCHES")
echo "# architectures:$ARCHES"

# ---- helpers

sha_of() { sha256sum -- "$1" | cut -c1-64; }
# obj SHA: the path of the object named SHA
obj() { printf 'repo/objects/%s/%s.zst' "${1:0:2}" "$1"; }
# objects: every object file of the repository, sorted
objects() { find repo/objects -type f -name '*.zst' | sort; }
# temps: every temp file left in the repository
temps() { find repo -name '.fatelf.*' | sort; }
# ptr_sha: the SHA-256 the pointer names
ptr_sha() { cut -d' ' -f3 repo/index; }
# serial: the index's serial, as list --json gives it
serial() { "$FATELF" repo list --json repo 2>/dev/null | jq -r .serial 2>/dev/null; }
# ver_field VERSION FIELD: one field of a version of hello in the index
ver_field() {
	"$FATELF" repo list --json repo 2>/dev/null |
		jq -r ".packages[] | select(.name == \"hello\") | .versions[] | select(.version == \"$1\") | .$2"
}
# count_of TEXT: its non-empty lines
count_of() { printf '%s\n' "$1" | grep -c .; }
# times_in STRING TEXT: how often STRING occurs in TEXT
times_in() { printf '%s' "$2" | grep -oF -- "$1" | wc -l; }

# ---- real programs, glued
hello=$top_srcdir/tests/integration/hello.c
inputs=()
for a in $ARCHES; do
	if "${CC[$a]}" -static -O2 -o "in-$a" "$hello" 2>"cc-$a.err"; then
		pass "compile hello for $a"
	else
		fail "compile hello for $a" "$(cat "cc-$a.err")"
	fi
	inputs+=("in-$a")
done
check "glue $NARCH architectures" "$FATELF" glue -o hello.fat "${inputs[@]}"

# The tree: the program, a large random data file, a small one, a config
# file and a symlink. Version 2.0 changes the small data file only.
mkdir -p tree/opt/hello/bin tree/opt/hello/share tree/etc
cp hello.fat tree/opt/hello/bin/hello
head -c 1000000 /dev/urandom >tree/opt/hello/share/big.bin
printf 'hello, version 1\n' >tree/opt/hello/share/notes.txt
printf 'greeting=hello\n' >tree/etc/x.conf
ln -s bin/hello tree/opt/hello/hello-link
chmod 0755 tree/opt/hello/bin/hello
cp -a tree tree2
printf 'hello, version 2\n' >tree2/opt/hello/share/notes.txt

minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G -W (vendor)" "cannot make a key"
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G -W (repository)" "cannot make a key"
minisign -G -W -f -p other.pub -s other.key >/dev/null 2>&1 || fail "minisign -G -W (other)" "cannot make a key"
check "bundle create hello 1.0, signed" \
	"$FATELF" bundle create -o v1.fatbundle --name hello --version 1.0 --sign vendor.key tree
check "bundle create hello 2.0, signed" \
	"$FATELF" bundle create -o v2.fatbundle --name hello --version 2.0 --sign vendor.key tree2
"$FATELF" bundle inspect --json v1.fatbundle >v1.json
check_eq "hello 1.0 has the FatELF file with $NARCH records" "fatelf $NARCH" \
	"$(json v1.json '.entries[] | select(.path == "opt/hello/bin/hello") | "\(.kind) \(.records | length)"')"

# ---- init and the first add
run "$FATELF" repo init --sign repo.key repo
check_eq "repo init --sign: exit 0" 0 "$RC"
check_match "... says the repository is made, serial 1, signed" "serial 1, signed" "$RUN_OUT"
check_match "... the pointer is 'fatelf-repo 1 SHA SIZE'" '^fatelf-repo 1 [0-9a-f]{64} [0-9]+$' "$(cat repo/index)"
check_eq "... the empty index has serial 1" 1 "$(serial)"
run "$FATELF" repo init --sign repo.key repo
check_eq "init of a repository again exits 1" 1 "$RC"
check_match "... saying it is one already" "already a repository" "$RUN_ERR"

objs0=$(objects)
run "$FATELF" repo add --sign repo.key repo v1.fatbundle
check_eq "repo add --sign hello 1.0: exit 0" 0 "$RC"
check_match "... says it added hello 1.0" "added hello 1.0" "$RUN_OUT"

run "$FATELF" repo list repo
check_eq "repo list: exit 0" 0 "$RC"
check_match "... shows serial 2, signed" "^serial 2, signed" "$RUN_OUT"
check_match "... shows hello 1.0 with $NARCH targets" "hello +1\.0 .* $NARCH targets" "$RUN_OUT"

"$FATELF" repo list --json repo >list.json
check_eq "repo list --json parses (python3) and has serial 2" 2 \
	"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["serial"])' list.json 2>&1)"
check_eq "... lists hello with version 1.0, signed, $NARCH targets" "hello 1.0 true $NARCH" \
	"$(json list.json '.packages[] | "\(.name) \(.versions[0].version) \(.versions[0].signed) \(.versions[0].targets | length)"')"
check_eq "... and the size of its files" "$(json v1.json .total_size)" "$(json list.json .packages[0].versions[0].size)"

read -r _ _ p_sha p_size <repo/index
ix=repo/indexes/$p_sha.json
check_eq "the pointer names an index by its SHA-256 and size" "$p_sha $p_size" \
	"$(sha_of "$ix") $(file_size "$ix")"
check_cmp "list --json prints the index's bytes (its canonical text)" list.json "$ix"
check "minisign -V verifies the index with the repository's key" minisign -Vm "$ix" -p repo.pub
check_match "... and its trusted comment gives the serial" "Trusted comment: fatelf-repo index serial 2" "$RUN_OUT"
check_exit 1 "minisign -V with the vendor's key refuses it" minisign -Vm "$ix" -p vendor.pub

run "$FATELF" repo verify --key repo.pub --vendor-key vendor.pub repo
check_eq "repo verify --key --vendor-key: exit 0" 0 "$RC"
check_match "... the index's signature is good" "signature good" "$RUN_OUT"
check_match "... and the FatELF file is rebuilt" " 1 FatELF files rebuilt" "$RUN_OUT"
run "$FATELF" repo verify --json --key repo.pub --vendor-key vendor.pub repo
check_eq "repo verify --json: ok, 1 version, 1 rebuilt" "true 1 1" \
	"$(jq -r '"\(.ok) \(.versions) \(.rebuilt)"' <<<"$RUN_OUT" 2>&1)"
run "$FATELF" repo verify --json --key other.pub repo
check_eq "verify --key with another key: exit 1, FATELF_E_SIG_KEY" "1 FATELF_E_SIG_KEY" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT" 2>&1)"
run "$FATELF" repo verify --json --vendor-key other.pub repo
check_eq "verify --vendor-key with another key: exit 1, FATELF_E_SIG_KEY" "1 FATELF_E_SIG_KEY" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT" 2>&1)"

# ---- objects
# The manifest and its signature, byte for byte the bundle's
mkdir members
(cd members && bsdtar -xf ../v1.fatbundle fatbundle.json fatbundle.json.minisig)
msha1=$(json list.json .packages[0].versions[0].manifest)
check_eq "the index names the manifest by its SHA-256" "$(sha_of members/fatbundle.json)" "$msha1"
check_cmp "the stored manifest is the bundle's" members/fatbundle.json "repo/manifests/$msha1/fatbundle.json"
check_cmp "the stored signature is the bundle's" members/fatbundle.json.minisig \
	"repo/manifests/$msha1/fatbundle.json.minisig"

objs1=$(objects)
# one per record, one per data file (three, all different), the pack list
check_eq "hello 1.0 made $((NARCH + 4)) objects: $NARCH records, 3 data files, the pack list" \
	$((NARCH + 4)) "$(count_of "$objs1")"
check_eq "no object appeared before the add" "" "$objs0"
json v1.json '.entries[] | select(.kind == "fatelf") | .records[] | "\(.arch) \(.offset) \(.size)"' >records.txt
rec_shas=
while read -r arch off size; do
	dd if=hello.fat of="rec-$arch" bs=64K iflag=skip_bytes,count_bytes skip="$off" count="$size" status=none
	s=$(sha_of "rec-$arch")
	rec_shas="$rec_shas $s"
	m=$(jq -r --argjson o "$off" '.entries[] | select(.path == "opt/hello/bin/hello") | .elf.records[] |
		select(.offset == $o) | .sha256' members/fatbundle.json)
	check_eq "record $arch: the manifest's sha256 is the record's bytes'" "$s" "$m"
	if [ -f "$(obj "$s")" ]; then
		pass "record $arch is its own object, named by its SHA-256"
	else
		fail "record $arch is its own object, named by its SHA-256" "no $(obj "$s")"
	fi
	check_eq "... which zstd -dc decompresses to the record's bytes" "$s" \
		"$(zstd -dc "$(obj "$s")" 2>/dev/null | sha256sum | cut -c1-64)"
done <records.txt
check_eq "the records are $NARCH different objects" "$NARCH" "$(tr ' ' '\n' <<<"$rec_shas" | grep . | sort -u | wc -l)"
big_sha=$(sha_of tree/opt/hello/share/big.bin)
notes1_sha=$(sha_of tree/opt/hello/share/notes.txt)
zstd -dc "$(obj "$big_sha")" >big.out 2>/dev/null
check_cmp "the large data file's object decompresses to its bytes" tree/opt/hello/share/big.bin big.out
check_eq "the small data file and the config file are objects too" "yes yes" \
	"$([ -f "$(obj "$notes1_sha")" ] && echo yes) $([ -f "$(obj "$(sha_of tree/etc/x.conf)")" ] && echo yes)"
check_match "an object is a zstd frame" '^28b52ffd' "$(od -An -tx1 -N4 "$(obj "$big_sha")" | tr -d ' \n')"
# The canonical frame: the file's bytes outside its records
json v1.json '[.entries[] | select(.kind == "fatelf") | .records[] | {offset, size}]' >ranges.json
frame_sha=$(python3 -c '
import hashlib, json, sys
data = open(sys.argv[1], "rb").read()
at, frame = 0, b""
for r in sorted(json.load(open(sys.argv[2])), key=lambda r: r["offset"]):
    frame += data[at:r["offset"]]
    at = r["offset"] + r["size"]
frame += data[at:]
print(hashlib.sha256(frame).hexdigest())' hello.fat ranges.json)
check_match "the frame of the glued file can be computed" '^[0-9a-f]{64}$' "$frame_sha"
check_eq "no object holds the canonical frame" no "$([ -e "$(obj "$frame_sha")" ] && echo yes || echo no)"
check_eq "no object holds the whole FatELF file" no "$([ -e "$(obj "$(sha_of hello.fat)")" ] && echo yes || echo no)"
pack1=$(json list.json .packages[0].versions[0].pack)
zstd -dc "$(obj "$pack1")" >pack1.txt 2>/dev/null
check_eq "the pack list is an object of pack_size bytes" "$(json list.json .packages[0].versions[0].pack_size)" \
	"$(file_size pack1.txt)"
check_eq "... starts 'fatelf-pack 1' and lists the $((NARCH + 3)) other objects, no frame" \
	"fatelf-pack 1 $((NARCH + 3)) 0" \
	"$(head -1 pack1.txt) $(grep -c '^object ' pack1.txt) $(grep -c '^frame ' pack1.txt)"

# A FatELF file whose frame is not the canonical one (a byte in the padding
# before its first record): its frame is an object, listed in the pack
# list, and verify rebuilds the file from it. An unsigned repository.
mkdir -p odd/bin
cp hello.fat odd/bin/hello
first=$(json v1.json '[.entries[] | select(.kind == "fatelf") | .records[].offset] | min')
printf 'X' | dd of=odd/bin/hello bs=1 seek=$((first - 1)) conv=notrunc status=none
"$FATELF" bundle create -o odd.fatbundle --name odd --version 1 odd >/dev/null
"$FATELF" repo init repo-odd >/dev/null
run "$FATELF" repo add repo-odd odd.fatbundle
check_eq "an unsigned repository takes a bundle without --sign: exit 0" 0 "$RC"
odd_frame=$(python3 -c '
import hashlib, json, sys
data = open(sys.argv[1], "rb").read()
at, frame = 0, b""
for r in sorted(json.load(open(sys.argv[2])), key=lambda r: r["offset"]):
    frame += data[at:r["offset"]]
    at = r["offset"] + r["size"]
frame += data[at:]
print(hashlib.sha256(frame).hexdigest())' odd/bin/hello ranges.json)
odd_pack=$("$FATELF" repo list --json repo-odd | jq -r .packages[0].versions[0].pack)
check_eq "... the pack list has a frame line for the file (entry 1), naming its frame" "frame 1 $odd_frame" \
	"$(zstd -dc "repo-odd/objects/${odd_pack:0:2}/$odd_pack.zst" 2>/dev/null | grep '^frame ')"
check_eq "... the frame is an object" "$odd_frame" \
	"$(zstd -dc "repo-odd/objects/${odd_frame:0:2}/$odd_frame.zst" 2>/dev/null | sha256sum | cut -c1-64)"
check_eq "... $((NARCH + 2)) objects: the records, the frame, the pack list" $((NARCH + 2)) \
	"$(find repo-odd/objects -type f -name '*.zst' | wc -l)"
run "$FATELF" repo verify repo-odd
check_match "... verify rebuilds the file from its frame" "ok: .* 1 FatELF files rebuilt" "$RUN_OUT"
flip_byte "repo-odd/objects/${odd_frame:0:2}/$odd_frame.zst" 20
run "$FATELF" repo verify --json repo-odd
check_eq "... a byte flipped in the frame's object: FATELF_E_REPO_OBJECT naming it" \
	"1 FATELF_E_REPO_OBJECT objects/${odd_frame:0:2}/$odd_frame.zst" \
	"$RC $(jq -r '"\(.error.code) \(.error.subject)"' <<<"$RUN_OUT" 2>&1)"

# ---- the same bundle again changes nothing
cp repo/index index.1
find repo ! -name .lock | sort >tree.1
run "$FATELF" repo add --sign repo.key repo v1.fatbundle
check_eq "adding hello 1.0 again: exit 0" 0 "$RC"
check_match "... says unchanged" "unchanged" "$RUN_OUT"
check_cmp "... the pointer's bytes are the same" index.1 repo/index
check_eq "... the serial is still 2" 2 "$(serial)"
check_eq "... and no file is added or removed" "" "$(find repo ! -name .lock | sort | diff - tree.1)"

# ---- version 2.0 stores only what changed
run "$FATELF" repo add --sign repo.key repo v2.fatbundle
check_eq "repo add hello 2.0: exit 0" 0 "$RC"
check_match "... 2 new objects, the others already there" "\(2 new objects, $((NARCH + 2)) already there\)" "$RUN_OUT"
check_eq "... the serial is 3" 3 "$(serial)"
objs2=$(objects)
new2=$(comm -13 <(printf '%s\n' "$objs1") <(printf '%s\n' "$objs2") | grep .)
pack2=$(ver_field 2.0 pack)
notes2_sha=$(sha_of tree2/opt/hello/share/notes.txt)
check_eq "... the new objects: the changed file's and the new pack list" \
	"$(printf '%s\n' "$(obj "$notes2_sha")" "$(obj "$pack2")" | sort)" "$new2"
check_eq "... and none of 1.0's is gone" "" "$(comm -23 <(printf '%s\n' "$objs1") <(printf '%s\n' "$objs2"))"
check_eq "... list shows both versions, oldest first" "1.0 2.0" \
	"$("$FATELF" repo list --json repo | jq -r '[.packages[0].versions[].version] | join(" ")')"
check "verify --key --vendor-key with both versions" \
	"$FATELF" repo verify --key repo.pub --vendor-key vendor.pub repo
check_match "... rebuilds both FatELF files" " 2 FatELF files rebuilt" "$RUN_OUT"

# Version 3.0: 2.0 plus a new file, for the refusals below
cp -a tree2 tree3
head -c 300000 /dev/urandom >tree3/opt/hello/share/new.bin
check "bundle create hello 3.0, signed" \
	"$FATELF" bundle create -o v3.fatbundle --name hello --version 3.0 --sign vendor.key tree3
check "bundle create hello 3.0, unsigned" \
	"$FATELF" bundle create -o v3u.fatbundle --name hello --version 3.0 tree3

# ---- a signed repository stays signed
cp repo/index index.2
objs_before=$(objects)
run "$FATELF" repo add repo v3.fatbundle
check_eq "repo add without --sign to a signed repository: exit 1" 1 "$RC"
check_match "... the message says --sign" "give --sign" "$RUN_ERR"
check_cmp "... the pointer is unchanged" index.2 repo/index
check_eq "... and no object is added" "$objs_before" "$(objects)"
run "$FATELF" repo remove repo hello 1.0
check_eq "repo remove without --sign: exit 1, and says --sign" "1 yes" \
	"$RC $(grep -q -- '--sign' <<<"$RUN_ERR" && echo yes)"
check_cmp "... the pointer is unchanged" index.2 repo/index
run "$FATELF" repo add --sign repo.key --key other.pub repo v3.fatbundle
check_eq "repo add --key with another vendor's key refuses the bundle (exit 1)" 1 "$RC"
run "$FATELF" repo add --sign repo.key --key vendor.pub repo v3u.fatbundle
check_eq "repo add --key refuses an unsigned bundle (exit 1)" 1 "$RC"
check_cmp "... the pointer is unchanged" index.2 repo/index
check_eq "... and no object is added" "$objs_before" "$(objects)"

# ---- tampering
big_obj=$(obj "$big_sha")
big_rel=${big_obj#repo/}
cp "$big_obj" big.zst.orig
flip_byte "$big_obj" 5000
run "$FATELF" repo verify --json --key repo.pub repo
check_eq "a byte flipped in an object: verify exits 1, FATELF_E_REPO_OBJECT" "1 FATELF_E_REPO_OBJECT" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT" 2>&1)"
check_eq "... the error's subject is the object's path" "$big_rel" "$(jq -r .error.subject <<<"$RUN_OUT" 2>&1)"
run "$FATELF" repo verify --key repo.pub repo
check_eq "... without --json: exit 1 too" 1 "$RC"
check_one_line "... one line on stderr" "$RUN_ERR"
check_match "... naming the object" "^fatelf: .*$big_rel" "$RUN_ERR"
check_eq "... once (the path is not repeated)" 1 "$(times_in "$big_rel" "$RUN_ERR")"
check_match "... and the package and version that need it" "hello 1\.0" "$RUN_ERR"
rm -f "$big_obj"
run "$FATELF" repo verify --json repo
check_eq "an object deleted: verify exits 1, FATELF_E_REPO_MISSING" "1 FATELF_E_REPO_MISSING" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT" 2>&1)"
check_eq "... the error's subject is the object's path" "$big_rel" "$(jq -r .error.subject <<<"$RUN_OUT" 2>&1)"
run "$FATELF" repo verify repo
check_match "... the message names it as missing" "$big_rel.*not in the repository" "$RUN_ERR"
check_eq "... once (the path is not repeated)" 1 "$(times_in "$big_rel" "$RUN_ERR")"
cp big.zst.orig "$big_obj"
check "the object restored: verify passes" "$FATELF" repo verify --key repo.pub repo

ix2=repo/indexes/$(ptr_sha).json
ix2_rel=${ix2#repo/}
cp "$ix2" index.json.orig
flip_byte "$ix2" 40
run "$FATELF" repo verify --json --key repo.pub repo
check_eq "a byte flipped in the index: verify exits 1, FATELF_E_REPO_INDEX" "1 FATELF_E_REPO_INDEX" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT" 2>&1)"
run "$FATELF" repo verify --key repo.pub repo
check_match "... naming the index file" "^fatelf: .*$ix2_rel.*not the pointer's" "$RUN_ERR"
check_eq "... once (the path is not repeated)" 1 "$(times_in "$ix2_rel" "$RUN_ERR")"
run "$FATELF" repo list repo
check_eq "... list refuses it too (exit 1)" 1 "$RC"
cp index.json.orig "$ix2"
# A mirror that forges an index, names it in the pointer and copies the
# real signature beside it: the signature does not match it.
jq '.packages[0].versions[0].summary = "forged"' index.json.orig >forged.json
fsha=$(sha_of forged.json)
cp forged.json "repo/indexes/$fsha.json"
cp "$ix2.minisig" "repo/indexes/$fsha.json.minisig"
printf 'fatelf-repo 1 %s %s\n' "$fsha" "$(file_size forged.json)" >repo/index
run "$FATELF" repo verify --json --key repo.pub repo
check_eq "a forged index with the old signature: verify --key exits 1, FATELF_E_SIG_INVALID" \
	"1 FATELF_E_SIG_INVALID" "$RC $(jq -r .error.code <<<"$RUN_OUT" 2>&1)"
run "$FATELF" repo list --key repo.pub repo
check_eq "... list --key refuses it too (exit 1)" 1 "$RC"
check_match "... saying the signature does not match" "signature.*does not match" "$RUN_ERR"
rm -f "repo/indexes/$fsha.json.minisig"
run "$FATELF" repo verify --json --key repo.pub repo
check_eq "a forged index without a signature: verify --key exits 1, FATELF_E_SIG_MISSING" \
	"1 FATELF_E_SIG_MISSING" "$RC $(jq -r .error.code <<<"$RUN_OUT" 2>&1)"
rm -f "repo/indexes/$fsha.json"
echo garbage >repo/index
run "$FATELF" repo verify --json repo
check_eq "a garbage pointer: verify exits 1, FATELF_E_REPO_FORMAT" "1 FATELF_E_REPO_FORMAT" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT" 2>&1)"
run "$FATELF" repo list repo
check_eq "... list exits 1 too" 1 "$RC"
check_match "... naming the pointer file and its form" "'index' is not 'fatelf-repo 1 SHA256 SIZE'" "$RUN_ERR"
cp index.2 repo/index
check "the pointer restored: verify --key --vendor-key passes" \
	"$FATELF" repo verify --key repo.pub --vendor-key vendor.pub repo

# ---- bundles that fail their own checks are refused
objs_before=$(objects)
mkdir rp3
(
	cd rp3 || exit 1
	bsdtar -xf ../v3.fatbundle
	mapfile -t rest < <(bsdtar -tf ../v3.fatbundle | sed 1,2d)
	pack() { bsdtar --format pax --zstd -n -cf "../$1" fatbundle.json fatbundle.json.minisig "${rest[@]}"; }
	flip_byte files/opt/hello/share/new.bin 5000 && pack bad-new.fatbundle
	flip_byte files/opt/hello/share/new.bin 5000
	read -r _ off _ <../records.txt
	flip_byte files/opt/hello/bin/hello $((off + 1000)) && pack bad-record.fatbundle
	flip_byte files/opt/hello/bin/hello $((off + 1000))
	flip_byte files/opt/hello/share/big.bin 5000 && pack bad-shared.fatbundle
)
head -c $(($(file_size v3.fatbundle) / 2)) v3.fatbundle >trunc.fatbundle
# refused NAME DESC ERE: repo add refuses NAME.fatbundle (exit 1) with one
# line naming it and matching ERE; nothing is published or named.
refused() {
	run "$FATELF" bundle verify "$1.fatbundle"
	check_eq "$2: bundle verify refuses it (exit 1)" 1 "$RC"
	run "$FATELF" repo add --sign repo.key repo "$1.fatbundle"
	check_eq "$2: repo add refuses it (exit 1)" 1 "$RC"
	check_match "... naming the bundle and the problem" "^fatelf: $1\.fatbundle: .*$3" "$RUN_ERR"
	check_cmp "... the pointer is unchanged" index.2 repo/index
	check_eq "... and no object is named" "$objs_before" "$(objects)"
}
refused trunc "a bundle cut in half" "opt/hello/share/.*(runcated|damaged)"
refused bad-new "a byte flipped in a new file" "entry 'opt/hello/share/new.bin': SHA-256"
refused bad-record "a byte flipped in a FatELF record" "entry 'opt/hello/bin/hello': record [0-9]+ .*SHA-256"
refused bad-shared "a byte flipped in a file whose object the repository has" \
	"entry 'opt/hello/share/big.bin': SHA-256"
if [ "$(ver_field 3.0 version)" = 3.0 ]; then
	# taken anyway: take it out again so what follows sees 1.0 and 2.0
	"$FATELF" repo remove --sign repo.key repo hello 3.0 >/dev/null 2>&1
	"$FATELF" repo gc repo >/dev/null 2>&1
	cp repo/index index.2
fi

# A writer killed while it compresses an object leaves temp files, never
# a named object or a new index.
mkdir -p bulk/opt/bulk
head -c 8000000 /dev/urandom >bulk/opt/bulk/big.bin
"$FATELF" bundle create -o bulk.fatbundle --name bulk --version 1.0 --sign vendor.key bulk >/dev/null
"$FATELF" repo add --sign repo.key repo bulk.fatbundle >/dev/null 2>&1 &
writer=$!
seen=no
for _ in $(seq 1 500); do
	if [ -n "$(find repo/objects -name '.fatelf.*' 2>/dev/null | head -1)" ]; then
		seen=yes
		break
	fi
	sleep 0.01
done
kill -KILL "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
check_eq "a writer killed while it writes an object left its temp file" yes "$seen"
check_cmp "... the pointer is unchanged" index.2 repo/index
check_eq "... and no object is named" "$objs_before" "$(objects)"
check "... verify passes" "$FATELF" repo verify --key repo.pub repo
# and one killed while it publishes leaves the pointer's temp file beside it
printf 'fatelf-repo 1 %s 1\n' "$(printf '%064d' 0)" >repo/.fatelf.repo.00c0ffee00c0ffee
run "$FATELF" repo gc repo
check_eq "repo gc: exit 0" 0 "$RC"
check_eq "... removes the temp files under objects/" "" "$(find repo/objects -name '.fatelf.*')"
check_eq "... and every other temp file, the pointer's too" "" "$(temps)"
rm -f repo/.fatelf.repo.00c0ffee00c0ffee
check_eq "... keeps every object the index needs" "$objs_before" "$(objects)"
check_cmp "... and the pointer" index.2 repo/index
check "... verify --key --vendor-key passes" "$FATELF" repo verify --key repo.pub --vendor-key vendor.pub repo

# ---- remove a version, then gc
msha2=$(ver_field 2.0 manifest)
s0=$(serial)
run "$FATELF" repo remove --sign repo.key repo hello 1.0
check_eq "repo remove --sign hello 1.0: exit 0" 0 "$RC"
check_match "... says it removed 1 version" "removed 1 version of hello" "$RUN_OUT"
check_eq "... the serial is one more" $((s0 + 1)) "$(serial)"
check_eq "... list shows only 2.0" "2.0" \
	"$("$FATELF" repo list --json repo | jq -r '[.packages[] | select(.name == "hello") | .versions[].version] | join(" ")')"
check_eq "... the objects stay until gc" "$objs_before" "$(objects)"
run "$FATELF" repo remove --sign repo.key repo hello 1.0
check_eq "removing it again: exit 1" 1 "$RC"
check_match "... no such version" "no package hello version 1.0" "$RUN_ERR"
run "$FATELF" repo gc repo
check_eq "repo gc: exit 0" 0 "$RC"
objs3=$(objects)
check_eq "the objects only 1.0 used are gone: its old data file and its pack list" \
	"$(printf '%s\n' "$(obj "$notes1_sha")" "$(obj "$pack1")" | sort)" \
	"$(comm -23 <(printf '%s\n' "$objs_before") <(printf '%s\n' "$objs3"))"
missing=
zstd -dc "$(obj "$pack2")" 2>/dev/null | awk '$1 == "object" { print $2 }' >pack2.objs
for s in $(cat pack2.objs) "$pack2"; do
	[ -f "$(obj "$s")" ] || missing="$missing $s"
done
check_eq "every object 2.0 needs remains ($(wc -l <pack2.objs) and its pack list)" "" "$missing"
check_eq "1.0's manifest is gone, 2.0's remains" "no yes" \
	"$([ -e "repo/manifests/$msha1" ] && echo yes || echo no) $([ -f "repo/manifests/$msha2/fatbundle.json" ] && echo yes || echo no)"
check_eq "only the current index and its signature remain" \
	"$(printf '%s\n' "$(ptr_sha).json" "$(ptr_sha).json.minisig")" "$(ls repo/indexes)"
check "verify --key --vendor-key passes" "$FATELF" repo verify --key repo.pub --vendor-key vendor.pub repo

# ---- readers never see a half-published repository
for i in 1 2 3 4 5 6 7 8; do
	mkdir -p "pkg$i/opt/pkg$i"
	printf 'package %s\n' "$i" >"pkg$i/opt/pkg$i/name.txt"
	head -c 100000 /dev/urandom >"pkg$i/opt/pkg$i/data.bin"
	"$FATELF" bundle create -o "pkg$i.fatbundle" --name "pkg$i" --version 1.0 --sign vendor.key "pkg$i" >/dev/null
done
# reader: copies the pointer, then the index it names, as a mirror or a
# machine does, until told to stop; every problem goes to reader.bad.
reader() {
	local n=0 magic ver sha size
	: >reader.bad
	: >reader.seen
	while [ ! -e reader.stop ]; do
		if ! cp repo/index rd.ptr 2>/dev/null; then
			echo "no pointer" >>reader.bad
		elif ! read -r magic ver sha size <rd.ptr || [ "$magic $ver" != "fatelf-repo 1" ]; then
			echo "a broken pointer: $(cat rd.ptr)" >>reader.bad
		elif ! cp "repo/indexes/$sha.json" rd.json 2>/dev/null; then
			echo "the pointer names a missing index $sha" >>reader.bad
		elif [ "$(sha_of rd.json) $(file_size rd.json)" != "$sha $size" ]; then
			echo "the index $sha is not the pointer's" >>reader.bad
		elif [ ! -f "repo/indexes/$sha.json.minisig" ]; then
			echo "the index $sha has no signature yet" >>reader.bad
		fi
		echo "$sha" >>reader.seen
		n=$((n + 1))
		[ "$n" -eq 1 ] && : >reader.started
	done
	echo "$n" >reader.count
}
s0=$(serial)
reader &
rpid=$!
for _ in $(seq 1 500); do
	[ -e reader.started ] && break
	sleep 0.01
done
ok=0
for i in 1 2 3 4 5; do
	"$FATELF" repo add --sign repo.key repo "pkg$i.fatbundle" >/dev/null 2>"add$i.err" && ok=$((ok + 1))
done
check_eq "5 adds while a reader reads: all exit 0" 5 "$ok"
# and three at once: the lock serializes them
pids=()
for i in 6 7 8; do
	"$FATELF" repo add --sign repo.key repo "pkg$i.fatbundle" >/dev/null 2>"add$i.err" &
	pids+=($!)
done
ok=0
for p in "${pids[@]}"; do
	wait "$p" && ok=$((ok + 1))
done
check_eq "3 adds at once: all exit 0" 3 "$ok"
touch reader.stop
wait "$rpid"
check_eq "the reader never saw a pointer to a missing or different index" "" "$(sort -u reader.bad | head -5)"
check_match "... in many reads ($(cat reader.count 2>/dev/null) of them)" '^([2-9][0-9]|[1-9][0-9]{2,})$' \
	"$(cat reader.count 2>/dev/null)"
check_match "... while the index changed under it ($(sort -u reader.seen | wc -l) pointers seen)" '^([2-9]|[1-9][0-9]+)$' \
	"$(sort -u reader.seen | wc -l)"
check_eq "the serial rose by 8, one per add" $((s0 + 8)) "$(serial)"
check_eq "every package is in the index" "hello pkg1 pkg2 pkg3 pkg4 pkg5 pkg6 pkg7 pkg8" \
	"$("$FATELF" repo list --json repo | jq -r '[.packages[].name] | join(" ")')"
check "verify --key --vendor-key passes" "$FATELF" repo verify --key repo.pub --vendor-key vendor.pub repo

# ---- addresses
run "$FATELF" repo list "file://$T_WORK/repo"
check_eq "repo list file://DIR: exit 0" 0 "$RC"
check_match "... shows hello 2.0" "hello +2\.0 " "$RUN_OUT"
run "$FATELF" repo verify --key repo.pub "file://$T_WORK/repo"
check_eq "repo verify --key file://DIR: exit 0" 0 "$RC"
check_match "... ok, 9 packages" "ok: serial [0-9]+, signature good, 9 packages" "$RUN_OUT"
# http://: through the download helper, from a server on 127.0.0.1
hport=$(free_port)
python3 -m http.server "$hport" --bind 127.0.0.1 --directory "$T_WORK" >http.log 2>&1 &
HTTP_PID=$!
for ((i = 0; i < 50; i++)); do
	python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
		"http://127.0.0.1:$hport/repo/index" 2>/dev/null && break
	sleep 0.1
done
run "$FATELF" repo list "http://127.0.0.1:$hport/repo"
check_eq "repo list http://...: exit 0" 0 "$RC"
check_match "... shows hello 2.0" "hello +2\.0 " "$RUN_OUT"
run "$FATELF" repo verify --key repo.pub --vendor-key vendor.pub "http://127.0.0.1:$hport/repo"
check_eq "repo verify --key --vendor-key http://...: exit 0" 0 "$RC"
check_match "... ok, 9 packages, every object fetched and checked" "ok: serial [0-9]+, signature good, 9 packages" "$RUN_OUT"
check_eq "... leaving no temporary copy" "" "$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'fatelf-repo.*' -newer repo/index 2>/dev/null)"
run "$FATELF" repo verify --key other.pub "http://127.0.0.1:$hport/repo"
check_eq "repo verify http:// with another key: refused" 1 "$RC"
run "$FATELF" repo list "http://127.0.0.1:$hport/no-such-repo"
check_eq "repo list of a missing http:// repository: fails" 1 "$((RC != 0))"
check_match "... naming the 404" "404" "$RUN_ERR"
kill "$HTTP_PID" 2>/dev/null
wait "$HTTP_PID" 2>/dev/null
run "$FATELF" repo list "file://$T_WORK/no-such-repo"
check_eq "repo list of a missing directory: exit 3" 3 "$RC"
check_eq "... naming it once" 1 "$(times_in "$T_WORK/no-such-repo" "$RUN_ERR")"

t_done
