#!/bin/bash
# Runs the libFuzzer targets: tests/fuzz/run.sh [SECONDS]
#
# The targets are automake programs (Makefile.am, "fuzzing"), built in a
# tree configured with CC=clang --enable-fuzzing, where the libraries too
# carry the fuzzer's coverage and ASan/UBSan. `make fuzz` in such a tree
# builds them and calls this script with FUZZ_BUILDDIR and FUZZ_TARGETS
# (Makefile.am's list) set. Called without them, the script makes that
# tree itself (build-fuzz/ in the source tree, after ./autogen.sh) and
# runs make fuzz there.
#
# Each target runs for SECONDS (default 60). fuzz_validate and fuzz_stream
# are seeded with the malformed corpus and its valid edge cases from
# mkcorpus; fuzz_bundle with the hostile bundles from mkhostile and valid
# bundles in each compression; fuzz_manifest with the manifests of those
# bundles; fuzz_varlink with NUL-separated Varlink calls and replies;
# fuzz_dispatch with the "parameters" objects of fatelfd's methods;
# fuzz_binfmt with entry texts in the kernel's /proc/sys/fs/binfmt_misc
# format; fuzz_elfdyn with real ELF files built here by gcc and the cross
# compilers that are installed ($ORIGIN RUNPATH and RPATH, static, 32-bit,
# big endian), and fuzz_elfcatch with the same files; fuzz_repo with the
# files of a repository made here by the built fatelf (fatelf repo init
# and add, bundles of fatelf bundle create): its indexes, its pack lists,
# its pointer and each object compressed, as its reader takes them (a
# first byte that picks the reader; an object after its size and hash);
# fuzz_oci with references, challenges and token replies as registries
# write them; fuzz_ini with the shipped fatelfd.conf and INI texts of the
# target's own table.
# It prints
# "ok N - TARGET ..." or "not ok N - TARGET ..."
# per target and exits non-zero if any target crashed, leaked, tripped a
# sanitizer or is missing. Work files go to the build tree's fuzz/
# directory; crash inputs are kept in its artifacts/ directory.
set -u

seconds=${1:-60}
top=$(cd "$(dirname "$0")/../.." && pwd)

if [ -z "${FUZZ_BUILDDIR:-}" ]; then
	tree=$top/build-fuzz
	CLANG=${CLANG:-clang}
	command -v "$CLANG" >/dev/null ||
		{ echo "run.sh: $CLANG is not installed (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
	[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) || exit 3
	rm -rf "$tree"
	mkdir -p "$tree" || exit 3
	(cd "$tree" && "$top/configure" CC="$CLANG" CFLAGS="-g -O1" --enable-fuzzing >"$tree/configure.log" 2>&1) ||
		{ echo "not ok 1 - configure --enable-fuzzing (log: $tree/configure.log)"; exit 1; }
	exec make -C "$tree" -j"${JOBS:-2}" fuzz FUZZ_SECONDS="$seconds"
fi

bin=$FUZZ_BUILDDIR
# The targets are the ones Makefile.am names (FUZZ_TARGETS, passed by make fuzz).
TARGETS=
for t in ${FUZZ_TARGETS:?make fuzz passes FUZZ_TARGETS}; do
	TARGETS+=" ${t##*/}"
done
work=$bin/fuzz
rm -rf "$work"
mkdir -p "$work/artifacts" "$work/seeds" || exit 3
# The seed generators are not fuzzers: their leaks at exit are no finding.
export ASAN_OPTIONS=detect_leaks=0

"$bin/tests/fixtures/mkcorpus" --no-sparse "$work/corpus-src" >/dev/null || { echo "not ok 1 - mkcorpus"; exit 1; }
# Seeds of at most 1 MiB: a corpus file made to cross 4 GiB is sparse and
# would be read whole into memory.
nseeds=0
while IFS= read -r f; do
	cp "$f" "$work/seeds/$(echo "${f#"$work/corpus-src/"}" | tr / _)"
	nseeds=$((nseeds + 1))
done < <(find "$work/corpus-src" -type f -size -1025k)
echo "# $nseeds seed files"

# Seeds for the bundle targets: the hostile corpus (signed by the key
# fuzz_bundle trusts), its valid control recompressed (tar, gzip), and
# every manifest in them for fuzz_manifest.
mkdir -p "$work/seeds-bundle" "$work/seeds-manifest"
"$bin/tests/fixtures/mkhostile" "$work/hostile" >/dev/null || { echo "not ok 1 - mkhostile"; exit 1; }
find "$work/hostile" -name '*.fatbundle' -size -1025k -exec cp {} "$work/seeds-bundle/" \;
valid=$(ls "$work"/hostile/00-*.fatbundle 2>/dev/null | head -1)
if [ -n "$valid" ] && command -v zstd >/dev/null; then
	zstd -qdc "$valid" >"$work/seeds-bundle/valid-tar.fatbundle"
	gzip -9nc "$work/seeds-bundle/valid-tar.fatbundle" >"$work/seeds-bundle/valid-gzip.fatbundle"
fi
if command -v bsdtar >/dev/null; then
	for f in "$work"/seeds-bundle/*.fatbundle; do
		bsdtar -xOf "$f" fatbundle.json >"$work/seeds-manifest/$(basename "$f" .fatbundle).json" 2>/dev/null
	done
	find "$work/seeds-manifest" -empty -delete
fi
# Format-2 manifests (per-arch entries, depends), valid ones and refused ones.
cp "$top"/tests/fuzz/seeds/manifest-*.json "$work/seeds-manifest/"
echo "# $(ls "$work/seeds-bundle" | wc -l) bundle seeds, $(ls "$work/seeds-manifest" | wc -l) manifest seeds"

# Seeds for fuzz_varlink: byte streams of NUL-terminated messages (the
# first byte picks the chunk sizes the framer is fed in).
mkdir -p "$work/seeds-varlink"
printf '\001{"method":"io.fatelf.Manager.Install","parameters":{"name":"a","force":true,"level":-5,"size":18446744073709551615,"targets":["x86_64","aarch64"],"extra":{"k":[1,2]}},"more":true}\000{"method":"org.varlink.service.GetInfo","oneway":true}\000' >"$work/seeds-varlink/calls"
printf '\007{"parameters":{"name":"b"},"continues":true}\000{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"name"}}\000{"parameters":{}}\000' >"$work/seeds-varlink/replies"
printf '\077{"method":"a.b.C","parameters":{"name":"x","colour":1}}\000{"method":"a.b.C","parameters":{"level":6}}\000{"method":"a.b.C"' >"$work/seeds-varlink/refused"

# Seeds for fuzz_dispatch: "parameters" objects of fatelfd's methods,
# accepted and refused ones (one file each).
mkdir -p "$work/seeds-dispatch"
i=0
while IFS= read -r line; do
	i=$((i + 1))
	printf '%s' "$line" >"$work/seeds-dispatch/params-$i"
done <<'EOF'
{}
{"fd":0,"policy":"native","targets":["x86_64","aarch64"],"allow_unsigned":true,"force":false,"allow_downgrade":true,"dry_run":true}
{"url":"http://127.0.0.1/a.fatbundle","path":null,"targets":[]}
{"fd":4}
{"fd":-1,"url":1}
{"package":"hello","dry_run":true}
{"package":null}
{"package":"a\u0000b"}
{"packages":["hello","world"],"targets":["x86_64"],"dry_run":false}
{"packages":["x",null]}
{"id":1}
{"id":0}
{"id":9223372036854775807}
{"id":9223372036854775808}
{"path":"/opt/hello/bin/hello"}
{"package":"hello","limit":0}
{"limit":-1}
{"limit":18446744073709551615}
{"interface":"io.fatelf.Manager"}
{"colour":"blue","package":"x"}
{"targets":"x86_64"}
{"dry_run":1,"force":"yes"}
EOF

# Seeds for fuzz_binfmt: entries as the kernel prints them (one file each).
mkdir -p "$work/seeds-binfmt"
printf 'enabled\ninterpreter /usr/bin/fatelf-run\nflags: PO\noffset 0\nmagic fa700e1f0100\n' \
	>"$work/seeds-binfmt/fatelf"
printf 'enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POCF\noffset 0\nmagic 7f454c460201010000000000000000000200b700\nmask ffffffffffffff00fffffffffffffffffeffffff\n' \
	>"$work/seeds-binfmt/qemu-aarch64"
printf 'disabled\ninterpreter /usr/bin/qemu-s390x-static\nflags: F\noffset 0\nmagic 7f454c4602020100000000000000000000020016\nmask ffffffffffffff00fffffffffffffffffffeffff\n' \
	>"$work/seeds-binfmt/qemu-s390x-disabled"
printf 'enabled\ninterpreter /usr/bin/wine\nflags: \nextension .exe\n' >"$work/seeds-binfmt/extension"
printf 'enabled\ninterpreter /usr/bin/x\nflags: PO\noffset 2\nmagic 4d5a\nmask ff\n' >"$work/seeds-binfmt/short-mask"

# Seeds for fuzz_elfdyn: real executables and libraries, from every
# compiler at hand ("$ORIGIN" is passed without a shell to expand it).
mkdir -p "$work/seeds-elfdyn"
printf '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n' >"$work/hello.c"
printf 'int lib_answer(void) { return 42; }\n' >"$work/lib.c"
elf_seed() { # NAME CC ARGS...
	local name=$1 cc=$2
	shift 2
	command -v "$cc" >/dev/null || { echo "# no $cc: seed $name skipped"; return 0; }
	"$cc" -o "$work/seeds-elfdyn/$name" "$@" >/dev/null 2>&1 || echo "# $cc could not build seed $name"
}
elf_seed x86_64-origin gcc "$work/hello.c" '-Wl,-rpath,$ORIGIN/../lib'
elf_seed x86_64-origin-rpath gcc "$work/hello.c" -Wl,--disable-new-dtags '-Wl,-rpath,$ORIGIN/../../x:/usr/lib'
elf_seed x86_64-curly gcc "$work/hello.c" '-Wl,-rpath,${ORIGIN}/lib:$ORIGINX'
elf_seed x86_64-plain gcc "$work/hello.c"
elf_seed x86_64-static gcc -static "$work/hello.c"
elf_seed x86_64-lib gcc -shared -fPIC '-Wl,-soname,$ORIGIN/../lib/libx.so' '-Wl,-rpath,$ORIGIN' "$work/lib.c"
elf_seed aarch64-origin aarch64-linux-gnu-gcc "$work/hello.c" '-Wl,-rpath,$ORIGIN/../lib'
elf_seed i686-origin-rpath i686-linux-gnu-gcc "$work/hello.c" -Wl,--disable-new-dtags '-Wl,-rpath,$ORIGIN/../lib:$ORIGIN'
elf_seed s390x-origin s390x-linux-gnu-gcc "$work/hello.c" '-Wl,-rpath,$ORIGIN/../../lib'
echo "# $(ls "$work/seeds-binfmt" | wc -l) binfmt seeds, $(ls "$work/seeds-elfdyn" | wc -l) ELF seeds"

# Seeds for fuzz_deb: packages dpkg-deb builds, one per compression it
# writes, and control files ('C' first).
mkdir -p "$work/seeds-deb" "$work/debpkg/DEBIAN" "$work/debpkg/etc" "$work/debpkg/usr/bin"
printf 'Package: seed\nVersion: 1:1.0-1\nArchitecture: arm64\nMaintainer: M <m@example.org>\nDepends: libc6 (>= 2.34), libfoo:any (<< 2~), a | b,\n seed-data (= 1:1.0-1), zz (>> 1)\nDescription: a seed\n more\n' \
	>"$work/debpkg/DEBIAN/control"
printf '/etc/seed.conf\nremove-on-upgrade /etc/old.conf\n' >"$work/debpkg/DEBIAN/conffiles"
printf '#!/bin/sh\n' >"$work/debpkg/DEBIAN/postinst"
chmod 755 "$work/debpkg/DEBIAN/postinst"
printf 'k=v\n' >"$work/debpkg/etc/seed.conf"
cp "$work/hello.c" "$work/debpkg/usr/bin/seed"
if command -v dpkg-deb >/dev/null; then
	for z in none gzip xz zstd; do
		dpkg-deb -Z"$z" --root-owner-group --build "$work/debpkg" "$work/seeds-deb/seed-$z.deb" >/dev/null 2>&1 ||
			echo "# dpkg-deb could not build a $z seed"
	done
fi
{ printf C; cat "$work/debpkg/DEBIAN/control"; } >"$work/seeds-deb/control"
{ printf C; cat "$work/debpkg/DEBIAN/conffiles"; } >"$work/seeds-deb/conffiles"
echo "# $(ls "$work/seeds-deb" | wc -l) deb seeds"

# Seeds for fuzz_repo: a repository of two versions of a package made by
# the built tools (the second with depends), one with a FatELF file whose
# gap is not zero (its pack list names a frame), one expiring. Each seed
# starts with the byte that picks the reader: 0 an index, 1 a pack list,
# 2 the pointer, 3 an object (then its size, 8 bytes little-endian, and
# its SHA-256).
mkdir -p "$work/seeds-repo"
repo_seeds() {
	local r=$work/repo f=$bin/tools/fatelf name size le i k
	[ -x "$f" ] || { echo "# no $f: repo seeds from a repository skipped"; return 0; }
	mkdir -p "$r/t1/opt/demo/bin" "$r/t1/opt/demo/share" || return 1
	"$bin/tests/fixtures/mkfixture" -o "$r/x.elf" --machine x86_64 --size 6000 --seed 1 >/dev/null &&
		"$bin/tests/fixtures/mkfixture" -o "$r/a.elf" --machine aarch64 --size 7000 --seed 2 >/dev/null &&
		"$f" glue -o "$r/t1/opt/demo/bin/prog" "$r/x.elf" "$r/a.elf" >/dev/null || return 1
	printf 'some data\n' >"$r/t1/opt/demo/share/data"
	: >"$r/t1/opt/demo/share/empty"
	cp -r "$r/t1" "$r/t2"
	printf 'other data\n' >"$r/t2/opt/demo/share/data"
	# a byte in the gap between the header table and the first record
	printf '\132' | dd of="$r/t2/opt/demo/bin/prog" bs=1 seek=100 conv=notrunc 2>/dev/null
	"$f" bundle create -o "$r/1.fatbundle" --name demo --version 1.0-1 --summary 'A "demo"' "$r/t1" >/dev/null &&
		"$f" bundle create -o "$r/2.fatbundle" --name demo --version 2.0-1 \
			--depends 'libdemo (>= 1:2.0~rc1)' --depends demodata "$r/t2" >/dev/null &&
		"$f" repo init "$r/repo" >/dev/null &&
		{ printf '\002'; cat "$r/repo/index"; } >"$work/seeds-repo/pointer-1" &&
		"$f" repo add "$r/repo" "$r/1.fatbundle" >/dev/null &&
		"$f" repo add --expires 30d "$r/repo" "$r/2.fatbundle" >/dev/null || return 1
	{ printf '\002'; cat "$r/repo/index"; } >"$work/seeds-repo/pointer-3"
	i=0
	for name in "$r"/repo/indexes/*.json; do
		i=$((i + 1))
		{ printf '\000'; cat "$name"; } >"$work/seeds-repo/index-$i"
	done
	command -v zstd >/dev/null || { echo "# no zstd: pack list and object seeds skipped"; return 0; }
	for name in "$r"/repo/objects/*/*.zst; do
		i=$((i + 1))
		size=$(zstd -qdc "$name" | wc -c)
		le=
		for k in 0 1 2 3 4 5 6 7; do
			le+=$(printf '\\x%02x' $(((size >> (8 * k)) & 255)))
		done
		{ printf '\003'; printf "$le"; printf "$(basename "$name" .zst | sed 's/../\\x&/g')"; cat "$name"; } \
			>"$work/seeds-repo/object-$i"
		if [ "$(zstd -qdc "$name" | head -c 14 | tr -d '\000')" = "fatelf-pack 1" ]; then
			{ printf '\001'; zstd -qdc "$name"; } >"$work/seeds-repo/pack-$i"
		fi
	done
}
repo_seeds || echo "# the repository for fuzz_repo's seeds could not be made"
# Small ones that need no tools.
printf '\000{"format": 1, "serial": 1, "created": 0, "packages": []}' >"$work/seeds-repo/index-empty"
# the repository's identity: one good, one a digit short, one upper-case
printf '\000{"format": 1, "repository": "0123456789abcdef0123456789abcdef", "serial": 1, "created": 0, "packages": []}' \
	>"$work/seeds-repo/index-id"
printf '\000{"format": 1, "repository": "0123456789abcdef0123456789abcde", "serial": 1, "created": 0, "packages": []}' \
	>"$work/seeds-repo/index-id-short"
printf '\000{"format": 1, "repository": "0123456789ABCDEF0123456789abcdef", "serial": 1, "created": 0, "packages": []}' \
	>"$work/seeds-repo/index-id-upper"
printf '\001fatelf-pack 1\nobject %s 3 12\nframe 0 %s\n' "$(printf 'ab%.0s' $(seq 32))" "$(printf 'ab%.0s' $(seq 32))" \
	>"$work/seeds-repo/pack-small"
printf '\002fatelf-repo 1 %s 51\n' "$(printf '0f%.0s' $(seq 32))" >"$work/seeds-repo/pointer-small"
echo "# $(ls "$work/seeds-repo" | wc -l) repo seeds"

# Seeds for fuzz_oci: the first byte picks the parser (0 a reference, 1 a
# WWW-Authenticate challenge, 2 a token reply), as registries write them.
mkdir -p "$work/seeds-oci"
printf '\000oci://127.0.0.1:5000/fatelf/hello:1.0' >"$work/seeds-oci/ref-1"
printf '\000oci://[::1]:443/a/b__c/d-e.f' >"$work/seeds-oci/ref-2"
printf '\000oci://h:1/a:1.0@sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff' \
	>"$work/seeds-oci/ref-3"
printf '\005{"name":"fleet/hello","tags":["1.0","2.0","latest"]}' >"$work/seeds-oci/tags-1"
printf '\005{"name":"fleet/hello","tags":null}' >"$work/seeds-oci/tags-2"
printf '\006{"repositories":["fleet/hello","fleet/tools","other/x"]}' >"$work/seeds-oci/catalog-1"
printf '\001Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/hello:pull"' \
	>"$work/seeds-oci/challenge-1"
printf '\001Basic realm="Registry Realm"' >"$work/seeds-oci/challenge-2"
printf '\002{"token":"eyJhbGciOiJFUzI1NiJ9.e30.sig","expires_in":300,"issued_at":"2026-12-06T00:00:00Z"}\n' \
	>"$work/seeds-oci/token-1"
printf '\002{"access_token":"abc"}' >"$work/seeds-oci/token-2"
D=sha256:$(printf 'ab%.0s' $(seq 32))
H=$(printf 'cd%.0s' $(seq 32))
printf '\003{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":100,"platform":{"architecture":"arm","os":"linux","variant":"v7"},"annotations":{"io.fatelf.target":"arm:32bits:le:sysv:osabiver0"}},{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":9,"annotations":{"io.fatelf.form":"fat"}}],"annotations":{"io.fatelf.package":"p"}}' \
	"$D" "$D" >"$work/seeds-oci/index-1"
printf '\004{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.fatelf.bundle.v1","config":{"mediaType":"application/vnd.fatelf.manifest.v1+json","digest":"%s","size":10,"annotations":{"io.fatelf.signature":"untrusted comment: x\\nRW\\n"}},"layers":[{"mediaType":"application/vnd.fatelf.pack.v1+zstd","digest":"%s","size":7,"annotations":{"io.fatelf.object":"%s","io.fatelf.size":"70"}},{"mediaType":"application/vnd.fatelf.object.v1+zstd","digest":"%s","size":3,"annotations":{"io.fatelf.object":"%s","io.fatelf.size":"30"}}],"annotations":{"io.fatelf.target":"x86_64:64bits:le:sysv:osabiver0"}}' \
	"$D" "$D" "$H" "$D" "$H" >"$work/seeds-oci/manifest-1"
echo "# $(ls "$work/seeds-oci" | wc -l) oci seeds"

# Seeds for fuzz_ini: the shipped fatelfd.conf (refused: its sections are
# not the target's), and texts of the target's table ([Main], [Other]).
mkdir -p "$work/seeds-ini"
cp "$top/data/fatelfd.conf.in" "$work/seeds-ini/fatelfd.conf"
printf '# a comment\n\n[Main]\nFlag = yes\nPath=/etc/x\nCount=7\nEntries=100\nSize=4K\nItem=a\nItem=b\n\n[Other]\nName=n\n' \
	>"$work/seeds-ini/good"
printf '[Other]\r\nName=n\r\n; c\r\n[Main]\r\nFlag=off\r\nSize=1 TiB\r\n' >"$work/seeds-ini/crlf"
printf '[Main]\n\nFlag=maybe\n' >"$work/seeds-ini/bad-bool"
printf '[Main]\nBogus=1\n[Nope]\n' >"$work/seeds-ini/unknown"
printf '[Main]\nItem=fail\nCount\n=x\n[Main] x\n' >"$work/seeds-ini/refused"
echo "# $(ls "$work/seeds-ini" | wc -l) ini seeds"

# run_one N TARGET: fuzzes TARGET for $seconds s; its TAP line goes to
# $work/TARGET.result. The targets run JOBS at a time (each is one
# process on one core), and their lines are printed in order at the end.
run_one() {
	local n=$1 t=$2 seeds log rc runs
	case $t in
	fuzz_bundle) seeds=seeds-bundle ;;
	fuzz_manifest) seeds=seeds-manifest ;;
	fuzz_varlink) seeds=seeds-varlink ;;
	fuzz_dispatch) seeds=seeds-dispatch ;;
	fuzz_binfmt) seeds=seeds-binfmt ;;
	fuzz_elfdyn | fuzz_elfcatch) seeds=seeds-elfdyn ;;
	fuzz_deb) seeds=seeds-deb ;;
	fuzz_repo) seeds=seeds-repo ;;
	fuzz_oci) seeds=seeds-oci ;;
	fuzz_ini) seeds=seeds-ini ;;
	*) seeds=seeds ;;
	esac
	cp "$bin/tests/fuzz/$t" "$work/$t"
	mkdir -p "$work/corpus-$t"
	log=$work/$t.log
	(cd "$work" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"./$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 -artifact_prefix="artifacts/$t-" \
		"corpus-$t" "$seeds") >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [ "$rc" -eq 0 ] && ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log"; then
		echo "ok $n - $t: ${runs:-?} runs in $seconds s, no crash" >"$work/$t.result"
	else
		{
			echo "not ok $n - $t: exit $rc after ${runs:-?} runs (log: $log)"
			grep -E -A 30 'ERROR:|runtime error:|assertion failed|==ERROR' "$log" | head -60 | sed 's/^/#   /'
		} >"$work/$t.result"
	fi
}

jobs_max=${JOBS:-2}
n=0
for t in $TARGETS; do
	n=$((n + 1))
	if [ ! -x "$bin/tests/fuzz/$t" ]; then
		echo "not ok $n - $t: $bin/tests/fuzz/$t was not built" >"$work/$t.result"
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n
	done
	echo "# running $t for $seconds s"
	run_one "$n" "$t" &
done
wait
failed=0
for t in $TARGETS; do
	if [ -f "$work/$t.result" ]; then
		cat "$work/$t.result"
	else
		echo "not ok - $t: no result"
	fi
	grep -q '^ok ' "$work/$t.result" 2>/dev/null || failed=$((failed + 1))
done

echo "# fuzz: $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
