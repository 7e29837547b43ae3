#!/bin/bash
# Fat bundles through the fatelf CLI: signatures that interoperate with the
# real minisign tool in both directions (and an encrypted key), every
# hostile bundle of the corpus refused with its own error, byte-identical
# rebuilds for each compression, and a round trip of real programs
# cross-compiled for seven architectures: bundled, extracted thinned to
# each, compared byte for byte with the thin originals and run (natively
# or under qemu-<arch>-static).
. "$(dirname "$0")/lib.sh"

: "${MKHOSTILE:=$top_builddir/tests/fixtures/mkhostile}"

t_init bundle
t_require_exec "$FATELF" "$MKHOSTILE"
t_require_tool jq cmp minisign bsdtar zstd

ARCHES="x86_64 i686 aarch64 armhf riscv64 ppc64le s390x"
declare -A CC RUNNER UNAME
CC[x86_64]=gcc;                        RUNNER[x86_64]=;                     UNAME[x86_64]=x86_64
CC[i686]=i686-linux-gnu-gcc;           RUNNER[i686]=;                       UNAME[i686]=i686
CC[aarch64]=aarch64-linux-gnu-gcc;     RUNNER[aarch64]=qemu-aarch64-static;  UNAME[aarch64]=aarch64
CC[armhf]=arm-linux-gnueabihf-gcc;     RUNNER[armhf]=qemu-arm-static;       UNAME[armhf]=armv7l
CC[riscv64]=riscv64-linux-gnu-gcc;     RUNNER[riscv64]=qemu-riscv64-static;  UNAME[riscv64]=riscv64
CC[ppc64le]=powerpc64le-linux-gnu-gcc; RUNNER[ppc64le]=qemu-ppc64le-static;  UNAME[ppc64le]=ppc64le
CC[s390x]=s390x-linux-gnu-gcc;         RUNNER[s390x]=qemu-s390x-static;     UNAME[s390x]=s390x
for a in $ARCHES; do
	t_require_tool "${CC[$a]}"
	[ -n "${RUNNER[$a]}" ] && t_require_tool "${RUNNER[$a]}"
done
[ "$(uname -m)" = x86_64 ] || t_skip "the host is $(uname -m), this test expects x86_64"
t_native_i686 || { t_require_tool qemu-i386-static; RUNNER[i686]=qemu-i386-static; }

run_as() {
	local a=$1 f=$2
	shift 2
	if [ -n "${RUNNER[$a]}" ]; then
		"${RUNNER[$a]}" "$f" "$@"
	else
		"$f" "$@"
	fi
}

# ---- the staging tree: hello for seven architectures, glued
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
check "glue seven architectures" "$FATELF" glue -o hello.fat "${inputs[@]}"

mkdir -p tree/opt/hello/bin tree/opt/hello/share tree/etc/hello
cp hello.fat tree/opt/hello/bin/hello
head -c 100000 /dev/urandom >tree/opt/hello/share/data.bin
printf 'greeting=hello\n' >tree/etc/hello/hello.conf
ln -s bin/hello tree/opt/hello/hello-link
chmod 0644 tree/opt/hello/share/data.bin tree/etc/hello/hello.conf
chmod 0755 tree/opt/hello/bin/hello

# ---- create: usage errors
check_exit 2 "create without --name is a usage error" \
	"$FATELF" bundle create -o x.fatbundle --version 1 tree
check_exit 2 "create with a bad --compression is a usage error" \
	"$FATELF" bundle create -o x.fatbundle --name xx --version 1 --compression lz4 tree
run env SOURCE_DATE_EPOCH=yesterday "$FATELF" bundle create -o x.fatbundle --name xx --version 1 tree
check_eq "an invalid SOURCE_DATE_EPOCH is a usage error" 2 "$RC"
check_eq "no bundle is left after a usage error" no "$([ -e x.fatbundle ] && echo yes || echo no)"
check_exit 1 "a bad package name is refused" \
	"$FATELF" bundle create -o x.fatbundle --name Bad_Name --version 1 tree
check_eq "no bundle is left after a refused create" "" "$(ls -A | grep -F x.fatbundle)"
check_exit 3 "a missing tree is an I/O error" \
	"$FATELF" bundle create -o x.fatbundle --name xx --version 1 no-such-tree

# ---- minisign interop: our signature, their verifier
minisign -G -W -f -p k.pub -s k.key >/dev/null 2>&1 || fail "minisign -G -W" "cannot make a key"
check "create --sign with an unencrypted minisign key" \
	"$FATELF" bundle create -o signed.fatbundle --name hello --version 1.0-1 \
	--summary "Hello, seven times" --sign k.key --trusted-comment "hello bundle 1.0-1" tree
run bsdtar -tf signed.fatbundle
check_eq "the first member is fatbundle.json" fatbundle.json "$(sed -n 1p .run.out)"
check_eq "the second member is fatbundle.json.minisig" fatbundle.json.minisig "$(sed -n 2p .run.out)"
check_eq "every other member is under files/" 0 "$(sed 1,2d .run.out | grep -vc '^files/')"
mkdir sigcheck
(cd sigcheck && bsdtar -xf ../signed.fatbundle fatbundle.json fatbundle.json.minisig)
check "minisign -V verifies our signature of the manifest" \
	minisign -Vm sigcheck/fatbundle.json -x sigcheck/fatbundle.json.minisig -p k.pub
check_match "minisign shows our trusted comment" "Trusted comment: hello bundle 1.0-1" "$RUN_OUT"
check "bundle verify --key k.pub accepts it" "$FATELF" bundle verify --key k.pub signed.fatbundle
check_match "verify names the signing key" "signed by key" "$RUN_OUT"
check "bundle verify --key RW... (a bare key string) accepts it" \
	"$FATELF" bundle verify --key "$(sed -n 2p k.pub)" signed.fatbundle
minisign -G -W -f -p other.pub -s other.key >/dev/null 2>&1
run "$FATELF" bundle verify --key other.pub signed.fatbundle
check_eq "verify with only another key exits 1" 1 "$RC"
check_match "... naming the untrusted key" "not a trusted key" "$RUN_ERR"
check_one_line "... in one line" "$RUN_ERR"

# ---- minisign interop: their signature, our verifier
check "create an unsigned bundle" \
	"$FATELF" bundle create -o unsigned.fatbundle --name hello --version 1.0-1 tree
run "$FATELF" bundle verify --json --key k.pub unsigned.fatbundle
check_eq "verify --key refuses an unsigned bundle (exit 1)" 1 "$RC"
check_eq "... with FATELF_E_SIG_MISSING" FATELF_E_SIG_MISSING "$(jq -r .error.code <<<"$RUN_OUT")"
check "verify without --key accepts the unsigned bundle" \
	"$FATELF" bundle verify unsigned.fatbundle
mkdir repack
(
	cd repack || exit 1
	bsdtar -xf ../unsigned.fatbundle
	minisign -S -m fatbundle.json -s ../k.key -t "signed by minisign itself" >/dev/null 2>&1
	mapfile -t rest < <(bsdtar -tf ../unsigned.fatbundle | sed 1d)
	bsdtar --format pax --zstd --uid 0 --gid 0 -n -cf ../theirs.fatbundle \
		fatbundle.json fatbundle.json.minisig "${rest[@]}"
)
check "minisign -S made a signature" test -s repack/fatbundle.json.minisig
check "bundle verify accepts a manifest signed by minisign -S" \
	"$FATELF" bundle verify --key k.pub theirs.fatbundle
(
	cd repack || exit 1
	rm -f fatbundle.json.minisig
	minisign -S -l -m fatbundle.json -s ../k.key >/dev/null 2>&1
	mapfile -t rest < <(bsdtar -tf ../unsigned.fatbundle | sed 1d)
	bsdtar --format pax --zstd -n -cf ../legacy.fatbundle \
		fatbundle.json fatbundle.json.minisig "${rest[@]}"
)
run "$FATELF" bundle verify --json --key k.pub legacy.fatbundle
check_eq "a legacy (non-prehashed, minisign -l) signature is refused" \
	FATELF_E_SIG_ALGORITHM "$(jq -r .error.code <<<"$RUN_OUT")"

# ---- an encrypted key
printf 'sesame\nsesame\n' | minisign -G -f -p enc.pub -s enc.key >/dev/null 2>&1
printf 'sesame\n' >pw.txt
printf 'wrong\n' >badpw.txt
check "create --sign with an encrypted key and --password-file" \
	"$FATELF" bundle create -o enc.fatbundle --name hello --version 1.0-1 --sign enc.key \
	--password-file pw.txt tree
check "the bundle signed with the encrypted key verifies" \
	"$FATELF" bundle verify --key enc.pub enc.fatbundle
(cd sigcheck && rm -f fatbundle.json* && bsdtar -xf ../enc.fatbundle fatbundle.json fatbundle.json.minisig)
check "minisign -V verifies it too" \
	minisign -Vm sigcheck/fatbundle.json -x sigcheck/fatbundle.json.minisig -p enc.pub
run "$FATELF" bundle create -o badpw.fatbundle --name hello --version 1.0-1 --sign enc.key \
	--password-file badpw.txt tree
check_eq "a wrong password exits 1" 1 "$RC"
check_match "... and says so" "password" "$RUN_ERR"
check_eq "... and leaves no bundle" no "$([ -e badpw.fatbundle ] && echo yes || echo no)"
run "$FATELF" bundle create -o x.fatbundle --name xx --version 1 --password-file pw.txt tree
check_eq "--password-file without --sign is a usage error" 2 "$RC"

# ---- the hostile corpus
check "mkhostile writes the corpus" "$MKHOSTILE" hostile
n=0
while read -r f want; do
	n=$((n + 1))
	run "$FATELF" bundle verify --json --key hostile/trusted.pub "hostile/$f"
	got=$(jq -r '.error.code // "OK"' <<<"$RUN_OUT")
	if [ "$want" = OK ]; then
		check_eq "$f: the control bundle verifies (exit 0)" "0 OK" "$RC $got"
		continue
	fi
	check_eq "$f: refused with $want, exit 1" "1 $want" "$RC $got"
	run "$FATELF" bundle verify --key hostile/trusted.pub "hostile/$f"
	if [ "$RC" -eq 1 ] && [ "$(printf '%s\n' "$RUN_ERR" | grep -c .)" -eq 1 ] &&
		[[ $RUN_ERR == "fatelf: hostile/$f: "* ]]; then
		pass "$f: one error line naming the bundle"
	else
		fail "$f: one error line naming the bundle" "$(last_run)"
	fi
	run "$FATELF" bundle extract --key hostile/trusted.pub --target x86_64 "hostile/$f" "ex-$f"
	check_eq "$f: extract refuses it too, and leaves no file" "1 0" \
		"$RC $(find "ex-$f" ! -type d 2>/dev/null | wc -l)"
done <hostile/expected.txt
if [ "$n" -ge 25 ]; then
	pass "the corpus has $n bundles"
else
	fail "the corpus has at least 25 bundles" "it has $n"
fi

# ---- reproducibility: same tree, other times, owners and umask
cp -a tree tree2
find tree2 -exec touch -h -d '2001-02-03 04:05:06' {} +
chown -hR nobody:nogroup tree2 2>/dev/null || true
for c in zstd gzip xz none; do
	( umask 022; "$FATELF" bundle create -o "r1-$c.fatbundle" --name hello --version 1.0-1 \
		--compression "$c" --sign k.key tree >/dev/null )
	( umask 077; sleep 1; "$FATELF" bundle create -o "r2-$c.fatbundle" --name hello --version 1.0-1 \
		--compression "$c" --sign k.key tree2 >/dev/null )
	check_cmp "$c: two builds of the same tree are byte-identical" "r1-$c.fatbundle" "r2-$c.fatbundle"
	check "$c: the bundle verifies" "$FATELF" bundle verify --key k.pub "r1-$c.fatbundle"
done
check_eq "zstd is the default compression" zstd \
	"$("$FATELF" bundle create -o d.fatbundle --name hello --version 1.0-1 --sign k.key tree >/dev/null &&
		cmp -s d.fatbundle r1-zstd.fatbundle && echo zstd)"
check_match "a zstd bundle starts with the zstd magic" '^28b52ffd' "$(od -An -tx1 -N4 r1-zstd.fatbundle | tr -d ' \n')"
check_match "a gzip bundle starts with the gzip magic" '^1f8b' "$(od -An -tx1 -N2 r1-gzip.fatbundle | tr -d ' \n')"
run env TZ=UTC bsdtar -tvf r1-zstd.fatbundle
check_match "without SOURCE_DATE_EPOCH every mtime is 0" "^[^\n]* 0 +0 .*1970 fatbundle.json" "$(head -1 .run.out)"
check_eq "every member is owned by 0:0" "" "$(awk '$3 != 0 || $4 != 0' .run.out)"
SOURCE_DATE_EPOCH=1700000000 "$FATELF" bundle create -o e1.fatbundle --name hello --version 1.0-1 tree >/dev/null
run env TZ=UTC bsdtar -tvf e1.fatbundle
check_match "SOURCE_DATE_EPOCH sets every member's mtime" "Nov 14 +2023 fatbundle.json" "$(head -1 .run.out)"

# ---- inspect
run "$FATELF" bundle inspect --json signed.fatbundle
printf '%s\n' "$RUN_OUT" >inspect.json
check_eq "inspect --json exits 0" 0 "$RC"
check_eq "inspect shows the package" "hello 1.0-1 Hello, seven times" \
	"$(json inspect.json '[.package.name, .package.version, .package.summary] | join(" ")')"
check_eq "inspect lists seven targets" 7 "$(json inspect.json '.targets | length')"
# minisign prints key ids without leading zeros, and so does inspect.
check_eq "inspect says the bundle is signed, by k.pub's key" \
	"true $(sed -n 2p k.pub | base64 -d 2>/dev/null | od -An -tx1 -j2 -N8 | tr -d ' \n' |
		sed 's/\(..\)/\1 /g' | awk '{ for (i = NF; i > 0; i--) printf "%s", toupper($i) }' |
		sed 's/^0*//')" \
	"$(json inspect.json '"\(.signature.signed) \(.signature.key_id)"')"
check_eq "inspect counts the entries" 10 "$(json inspect.json .nentries)"
fat_total=$(( $(file_size hello.fat) + 100000 + 15 ))
check_eq "inspect gives the fat total" "$fat_total" "$(json inspect.json .total_size)"
check_eq "inspect lists the FatELF's seven records" 7 \
	"$(json inspect.json '.entries[] | select(.path == "opt/hello/bin/hello") | .records | length')"
check_eq "inspect gives a thinned size for each of the seven architectures" 7 \
	"$(json inspect.json '.thin | length')"
run "$FATELF" bundle inspect signed.fatbundle
check_match "inspect (text) shows a per-architecture table" "thinned install per architecture" "$RUN_OUT"
check_match "inspect (text) says the signature is not verified" "not verified" "$RUN_OUT"
check_match "inspect (text) lists the config file" "etc/hello/hello.conf \(config\)" "$RUN_OUT"
# One pass: inspect reads the signature's key id and checks every byte.
(
	cd repack || exit 1
	echo "not a signature" >fatbundle.json.minisig
	mapfile -t rest < <(bsdtar -tf ../unsigned.fatbundle | sed 1d)
	bsdtar --format pax --zstd -n -cf ../badsig.fatbundle \
		fatbundle.json fatbundle.json.minisig "${rest[@]}"
)
run "$FATELF" bundle inspect badsig.fatbundle
check_eq "inspect refuses a signature member that does not parse (exit 1)" 1 "$RC"
check_match "... saying so, and shows nothing" "^fatelf: badsig.fatbundle: signature: .*untrusted comment$" \
	"$RUN_ERR$RUN_OUT"
(
	cd repack || exit 1
	mapfile -t rest < <(bsdtar -tf ../unsigned.fatbundle | sed 1d)
	cp files/opt/hello/share/data.bin data.orig
	flip_byte files/opt/hello/share/data.bin 5000
	bsdtar --format pax --zstd -n -cf ../tampered.fatbundle fatbundle.json "${rest[@]}"
	mv data.orig files/opt/hello/share/data.bin
)
run "$FATELF" bundle inspect tampered.fatbundle
check_eq "inspect refuses a bundle whose data file changed (exit 1)" 1 "$RC"
check_match "... naming the file and the hash, and shows nothing" \
	"^fatelf: tampered.fatbundle: .*opt/hello/share/data.bin.: SHA-256 is [0-9a-f]{64}, the manifest says [0-9a-f]{64}$" "$RUN_ERR$RUN_OUT"
run "$FATELF" bundle inspect --json theirs.fatbundle
check_eq "inspect names the key of a signature minisign made" \
	"$(json inspect.json .signature.key_id)" "$(jq -r .signature.key_id <<<"$RUN_OUT")"

# ---- round trip: extract thinned to each architecture
for a in $ARCHES; do
	d=rt-$a
	check "extract --target ${UNAME[$a]}" "$FATELF" bundle extract --key k.pub \
		--target "${UNAME[$a]}" signed.fatbundle "$d"
	check_cmp "$a: the extracted program is the thin $a binary, byte for byte" \
		"in-$a" "$d/opt/hello/bin/hello"
	out=$(run_as "$a" "./$d/opt/hello/bin/hello" 2>&1)
	check_eq "$a: the extracted program runs" "hello from $a (hello)" "$out"
	check_cmp "$a: the data file is there" tree/opt/hello/share/data.bin "$d/opt/hello/share/data.bin"
	check_cmp "$a: the config file is there" tree/etc/hello/hello.conf "$d/etc/hello/hello.conf"
	check_eq "$a: the symlink is there" bin/hello "$(readlink "$d/opt/hello/hello-link")"
	check_eq "$a: modes are kept" "755 644" \
		"$(file_mode "$d/opt/hello/bin/hello") $(file_mode "$d/opt/hello/share/data.bin")"
	want=$(( $(file_size "in-$a") + 100000 + 15 ))
	for ia in $(json inspect.json '.thin[].arch'); do
		if "$FATELF" bundle extract --target "$ia" unsigned.fatbundle "probe-$ia" >/dev/null 2>&1 &&
			cmp -s "probe-$ia/opt/hello/bin/hello" "in-$a"; then
			check_eq "$a: inspect's thinned size for $ia is what extract writes" "$want" \
				"$(json inspect.json ".thin[] | select(.arch == \"$ia\") | .size")"
		fi
		rm -rf "probe-$ia"
	done
done
check "extract without --target keeps the FatELF whole" \
	"$FATELF" bundle extract unsigned.fatbundle whole
check_cmp "the whole extract is the glued file" hello.fat whole/opt/hello/bin/hello
check_exit 1 "extract --target mips: no record runs there" \
	"$FATELF" bundle extract --target mips64 unsigned.fatbundle nomips
check_eq "a failed extract leaves no file" 0 "$(find nomips ! -type d 2>/dev/null | wc -l)"
# An extract by root (a thin install for an image) is an install too: a
# directory that another user made where the bundle puts one would let
# that user swap root's files inside, so it is refused, naming it, its
# owner and its mode, and nothing is put in it.
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p planted/opt
	chown 65534:65534 planted/opt
	chmod 0777 planted/opt
	check_exit 3 "a root extract over a directory uid 65534 made is refused" \
		"$FATELF" bundle extract unsigned.fatbundle planted
	check_match "... naming it, its owner and its mode" \
		"entry 'opt': the directory exists, owned by uid 65534 with mode 0777" "$RUN_ERR"
	check_eq "... and nothing is put in it" "" "$(find planted/opt -mindepth 1)"
	check_eq "... nor is it changed" "777 65534" "$(stat -c '%a %u' planted/opt)"
fi
check_exit 3 "verify of a missing bundle is an I/O error" "$FATELF" bundle verify no-such.fatbundle

t_done
