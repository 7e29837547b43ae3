#!/bin/bash
# fatelf bundle create --from: one bundle of several architectures' builds
# of a real program (cross-compiled for every architecture whose compiler
# is installed, amd64 and arm64 at least), from directory trees, a
# .tar.zst and .debs built by dpkg-deb. Checks what a user sees: the glued
# file's records in --from order, the shared file stored once, each
# extracted and thinned program running (natively or under qemu), the
# .debs' fields and conffiles, every refusal's error name and the path and
# source it names, no output left by a refusal, and an install of the
# unified bundle by a private fatelfd.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init unify
t_require_exec "$FATELF"
t_require_tool jq cmp dpkg-deb zstd tar gcc aarch64-linux-gnu-gcc qemu-aarch64-static
[ "$(uname -m)" = x86_64 ] || t_skip "the host is $(uname -m), this test expects x86_64"

# ARCH (as --from names it), compiler, runner, the word hello prints, triplet,
# and the record's architecture as bundle inspect names it
ALL="amd64 arm64 i386 armhf riscv64 ppc64el s390x"
declare -A CC RUNNER WORD TRIPLET REC
REC=([amd64]=x86_64 [arm64]=aarch64 [i386]=i386 [armhf]=arm [riscv64]=riscv64 [ppc64el]=ppc64le [s390x]=s390x)
CC[amd64]=gcc;                        RUNNER[amd64]=;                     WORD[amd64]=x86_64;  TRIPLET[amd64]=x86_64-linux-gnu
CC[arm64]=aarch64-linux-gnu-gcc;      RUNNER[arm64]=qemu-aarch64-static;  WORD[arm64]=aarch64; TRIPLET[arm64]=aarch64-linux-gnu
CC[i386]=i686-linux-gnu-gcc;          RUNNER[i386]=qemu-i386-static;      WORD[i386]=i686;     TRIPLET[i386]=i386-linux-gnu
CC[armhf]=arm-linux-gnueabihf-gcc;    RUNNER[armhf]=qemu-arm-static;      WORD[armhf]=armhf;   TRIPLET[armhf]=arm-linux-gnueabihf
CC[riscv64]=riscv64-linux-gnu-gcc;    RUNNER[riscv64]=qemu-riscv64-static; WORD[riscv64]=riscv64; TRIPLET[riscv64]=riscv64-linux-gnu
CC[ppc64el]=powerpc64le-linux-gnu-gcc; RUNNER[ppc64el]=qemu-ppc64le-static; WORD[ppc64el]=ppc64le; TRIPLET[ppc64el]=powerpc64le-linux-gnu
CC[s390x]=s390x-linux-gnu-gcc;        RUNNER[s390x]=qemu-s390x-static;    WORD[s390x]=s390x;   TRIPLET[s390x]=s390x-linux-gnu
ARCHES=
for a in $ALL; do
	if command -v "${CC[$a]}" >/dev/null 2>&1; then
		ARCHES="$ARCHES $a"
	else
		echo "# ${CC[$a]} is not installed: $a is left out"
	fi
done
t_native_i686 && RUNNER[i386]=

run_as() {
	local a=$1 f=$2
	shift 2
	if [ -n "${RUNNER[$a]}" ]; then
		command -v "${RUNNER[$a]}" >/dev/null 2>&1 || return 77
		"${RUNNER[$a]}" "$f" "$@"
	else
		"$f" "$@"
	fi
}

# no_output DESC FILE: a refusal left neither the bundle nor a temp file.
no_output() {
	local left
	left=$(find . -maxdepth 1 \( -name "$2" -o -name ".fatelf.*" \) | head -3)
	check_eq "$1" "" "$left"
}

# Each rule's own exit status of bundle create (fatelf(1), EXIT STATUS)
declare -A RULE_EXIT=([FATELF_E_UNIFY_TYPE]=10 [FATELF_E_UNIFY_MISSING]=11 [FATELF_E_UNIFY_MODE]=12
	[FATELF_E_UNIFY_SYMLINK]=13 [FATELF_E_UNIFY_DIFFERS]=14 [FATELF_E_UNIFY_TARGET]=15
	[FATELF_E_UNIFY_ARCH]=16 [FATELF_E_UNIFY_FIELD]=17 [FATELF_E_UNIFY_SCRIPTS]=18)
declare -A REFUSED_SEEN

# refused DESC CODE ERE OUT ARGS...: create --json fails with the rule's
# own exit status, error CODE and a message matching ERE; without --json
# the same status and the message as one line on stderr; neither leaves
# OUT or a temp file.
refused() {
	local desc=$1 code=$2 ere=$3 out=$4 want
	shift 4
	want=${RULE_EXIT[$code]}
	REFUSED_SEEN[$code]=1
	run "$FATELF" bundle create --json -o "$out" "$@"
	check_eq "$desc: exit $want" "$want" "$RC"
	check_eq "... $code" "$code" "$(jq -r .error.code <<<"$RUN_OUT")"
	check_match "... naming the path and the sources" "$ere" "$(jq -r '"\(.error.subject): \(.error.message)"' <<<"$RUN_OUT")"
	no_output "... and no $out is left" "$out"
	run "$FATELF" bundle create -o "$out" "$@"
	check_eq "... without --json: exit $want too" "$want" "$RC"
	check_match "... and one line on stderr naming the path and the sources" "^fatelf: .*$ere" "$RUN_ERR"
	check_eq "... on stdout nothing" "" "$RUN_OUT"
	no_output "... and no $out is left" "$out"
}

# ---- per-arch trees: hello, a shared README and config, a symlink, and
# a file under each architecture's own multiarch directory
hello=$top_srcdir/tests/integration/hello.c
FROM=()
for a in $ARCHES; do
	t=tree-$a
	mkdir -p "$t/usr/bin" "$t/usr/share/doc/hello" "$t/etc/hello" "$t/usr/lib/${TRIPLET[$a]}"
	if "${CC[$a]}" -static -O2 -o "$t/usr/bin/hello" "$hello" 2>"cc-$a.err"; then
		pass "compile hello for $a"
	else
		fail "compile hello for $a" "$(cat "cc-$a.err")"
	fi
	printf 'hello, the documentation\n' >"$t/usr/share/doc/hello/README"
	printf 'greeting=hello\n' >"$t/etc/hello/hello.conf"
	printf '%s\n' "$a" >"$t/usr/lib/${TRIPLET[$a]}/arch.txt"
	ln -s hello "$t/usr/bin/hi"
	FROM+=(--from "$a=$t")
done
n=$(wc -w <<<"$ARCHES")
echo "# architectures: $ARCHES"

# ---- directories
export SOURCE_DATE_EPOCH=1700000000
run "$FATELF" bundle create --json -o dirs.fatbundle --name hello --version 1.0-1 "${FROM[@]}"
check_eq "unify $n directory trees: exit 0" 0 "$RC"
check_eq "... the report: 1 glued, 3 shared, $n per-arch (multiarch directories)" "1 3 $n" \
	"$(jq -r '"\(.entries.glued) \(.entries.shared) \(.entries.per_arch)"' <<<"$RUN_OUT")"
check_eq "... the report's size is the bundle's" "$(file_size dirs.fatbundle)" "$(jq -r .size <<<"$RUN_OUT")"
src_bytes=$(find $(printf 'tree-%s ' $ARCHES) -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
check_eq "... the sources' size is their files' bytes" "$src_bytes" "$(jq -r .sources_size <<<"$RUN_OUT")"
check "the bundle verifies" "$FATELF" bundle verify dirs.fatbundle
"$FATELF" bundle inspect --json dirs.fatbundle >dirs.json
want=$(for a in $ARCHES; do printf '%s ' "${REC[$a]}"; done)
check_eq "usr/bin/hello is one FatELF file, its records in --from order" "fatelf $want" \
	"$(json dirs.json '.entries[] | select(.path == "usr/bin/hello") | "\(.kind) \([.records[].arch] | join(" ")) "')"
check_eq "the README is one data entry" "data" "$(json dirs.json '.entries[] | select(.path == "usr/share/doc/hello/README") | .kind')"
zstd -dc dirs.fatbundle | tar -tf - >members.txt
check_eq "... stored once in the archive" 1 "$(grep -c '^files/usr/share/doc/hello/README$' members.txt)"
check_eq "the symlink is kept" "hello" "$(json dirs.json '.entries[] | select(.path == "usr/bin/hi") | .link_target')"
check_eq "each multiarch file is in" "$n" "$(grep -c '^files/usr/lib/.*/arch.txt$' members.txt)"
check_eq "etc/ is config" "true" "$(json dirs.json '.entries[] | select(.path == "etc/hello/hello.conf") | .config')"

for a in $ARCHES; do
	rm -rf "x-$a"
	if ! "$FATELF" bundle extract --target "${WORD[$a]}" dirs.fatbundle "x-$a" >/dev/null 2>extract.err; then
		fail "extract thinned to $a" "$(cat extract.err)"
		continue
	fi
	check_cmp "extracted for $a: hello is the $a build, byte for byte" "tree-$a/usr/bin/hello" "x-$a/usr/bin/hello"
	out=$(run_as "$a" "x-$a/usr/bin/hello" 2>&1)
	rc=$?
	if [ "$rc" = 77 ]; then
		echo "# ${RUNNER[$a]} is not installed: $a is not run"
	else
		check_eq "... and runs" "hello from ${WORD[$a]} (hello)" "$out"
	fi
done

check "the same sources again" "$FATELF" bundle create -o dirs2.fatbundle --name hello --version 1.0-1 "${FROM[@]}"
check_cmp "... give the same bytes" dirs.fatbundle dirs2.fatbundle
rm -rf whole && "$FATELF" bundle extract dirs.fatbundle whole >/dev/null
want=$(for a in $ARCHES; do printf '%s ' "${REC[$a]}"; done)
check_eq "fatelf info on the extracted FatELF lists the records in --from order" "$want" \
	"$("$FATELF" info --json whole/usr/bin/hello | jq -r '[.records[].arch] | join(" ")') "

# the other --from order gives the other record order
REV=()
for a in $ARCHES; do REV=(--from "$a=tree-$a" "${REV[@]}"); done
check "unify in the reverse order" "$FATELF" bundle create -o rev.fatbundle --name hello --version 1.0-1 "${REV[@]}"
want=$(for a in $ARCHES; do printf '%s\n' "${REC[$a]}"; done | tac | tr '\n' ' ')
check_eq "... the records follow it" "$want" \
	"$("$FATELF" bundle inspect --json rev.fatbundle | jq -r '.entries[] | select(.path == "usr/bin/hello") | "\([.records[].arch] | join(" ")) "')"

# ---- --per-arch: an ELF file some sources have is glued from those
third=$(awk '{ print $3 }' <<<"$ARCHES")
if [ -n "$third" ]; then
	for a in amd64 arm64; do
		rm -rf "p-$a" && cp -a "tree-$a" "p-$a" && cp "tree-$a/usr/bin/hello" "p-$a/usr/bin/extra"
	done
	refused "an ELF file in 2 of 3 sources, without --per-arch" FATELF_E_UNIFY_MISSING "usr/bin/extra.*in amd64, arm64, missing in $third" \
		bad.fatbundle --name hello --version 1 --from amd64=p-amd64 --from arm64=p-arm64 --from "$third=tree-$third"
	run "$FATELF" bundle create --json -o per.fatbundle --name hello --version 1 --per-arch 'usr/bin/extra' \
		--from amd64=p-amd64 --from arm64=p-arm64 --from "$third=tree-$third"
	check_eq "... with --per-arch: exit 0, 2 glued files" "0 2" "$RC $(jq -r .entries.glued <<<"$RUN_OUT")"
	check_eq "... usr/bin/extra has the records of the sources that have it" "x86_64 aarch64" \
		"$("$FATELF" bundle inspect --json per.fatbundle | jq -r '.entries[] | select(.path == "usr/bin/extra") | [.records[].arch] | join(" ")')"
fi

# ---- a .tar.zst source: read as a stream, the same bundle
tar -C tree-arm64 --sort=name -cf - . | zstd -q >arm64.tar.zst
check "unify amd64 (directory) and arm64 (.tar.zst)" "$FATELF" bundle create -o two-tar.fatbundle \
	--name hello --version 1.0-1 --from amd64=tree-amd64 --from arm64=arm64.tar.zst
check "... the same from two directories" "$FATELF" bundle create -o two-dir.fatbundle \
	--name hello --version 1.0-1 --from amd64=tree-amd64 --from arm64=tree-arm64
zstd -dc two-dir.fatbundle | tar -xOf - fatbundle.json >two-dir.json
zstd -dc two-tar.fatbundle | tar -xOf - fatbundle.json >two-tar.json
check_cmp "... its manifest (every path, mode and hash) byte for byte" two-dir.json two-tar.json
check_eq "... and its members, in another order (the tar's)" "$(zstd -dc two-dir.fatbundle | tar -tf - | sort)" \
	"$(zstd -dc two-tar.fatbundle | tar -tf - | sort)"
check_eq "no spool or temp file is left beside the output" "" "$(find . -maxdepth 1 -name '.*' ! -name . ! -name .run.out ! -name .run.err)"

# ---- nothing is copied: a directory source's files are read where they
# are, a tar's as it streams, with no temp file (the output's own aside)
if command -v strace >/dev/null 2>&1; then
	# tmpfiles TRACE: the temp files the traced opens made
	tmpfiles() { grep -c -e O_TMPFILE -e '\.fatelf\.spool' "$1"; }
	# (a sanitizer build: LeakSanitizer stops the process with ptrace,
	# which strace holds, so leaks are not checked under it)
	no_leak_check=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	ASAN_OPTIONS=$no_leak_check strace -f -qq -e trace=open,openat,openat2,creat -o dirs.strace "$FATELF" bundle create -o st-dir.fatbundle \
		--name hello --version 1.0-1 --from amd64=tree-amd64 --from arm64=tree-arm64 >/dev/null 2>&1
	rc=$?
	check_eq "from two directories: exit 0, no temp file made" "0 0" "$rc $(tmpfiles dirs.strace)"
	check_eq "... and it opened tree-amd64's usr/bin/hello" 1 "$(grep -c '"hello", O_RDONLY' dirs.strace | awk '{ print ($1 > 0) }')"
	ASAN_OPTIONS=$no_leak_check strace -f -qq -e trace=open,openat,openat2,creat -o tar.strace "$FATELF" bundle create -o st-tar.fatbundle \
		--name hello --version 1.0-1 --from amd64=tree-amd64 --from arm64=arm64.tar.zst >/dev/null 2>&1
	rc=$?
	check_eq "from a directory and a .tar.zst: exit 0, no temp file" "0 0" "$rc $(tmpfiles tar.strace)"
	check_eq "... nothing created but the output's own temp name" ".fatelf.st-tar.fatbundle." \
		"$(grep -E 'O_CREAT|O_TMPFILE' tar.strace | grep -o '"[^"]*"' | tr -d '"' | sed 's/[0-9a-f]*$//' | sort -u | tr '\n' ' ' | sed 's/ $//')"
	check_eq "... the .tar.zst opened 4 times: to stat it, to index it, to hash the glued file, to write" 4 \
		"$(grep -c '"arm64.tar.zst"' tar.strace)"
	zstd -dc st-dir.fatbundle | tar -xOf - fatbundle.json >st-dir.json
	check_cmp "... the bundle from directories is the same as before" two-dir.json st-dir.json
else
	echo "# strace is not installed: the temp file check is left out"
fi

# ---- .tar.zst sources whose members come in other orders: glued files
# (several), a per-arch file of each, the rest shared; the same bundle
# as from directories, each source re-read from its start only when it
# has to go back
for a in amd64 arm64; do
	rm -rf "o-$a" && cp -a "tree-$a" "o-$a"
	for i in 1 2 3; do cp "tree-$a/usr/bin/hello" "o-$a/usr/bin/h$i"; done
	printf '%s only\n' "$a" >"o-$a/usr/share/doc/hello/ARCH"
done
tar -C o-amd64 --sort=name -cf - . | zstd -q >o-amd64.tar.zst
(cd o-arm64 && find . | sort -r | tar --no-recursion -cf - -T -) | zstd -q >o-arm64.tar.zst
(cd o-amd64 && find . | sort -r | tar --no-recursion -cf - -T -) | zstd -q >o-amd64-rev.tar.zst
"$FATELF" bundle create -o o-dirs.fatbundle --name hello --version 1.0-1 --per-arch usr/share/doc/hello/ARCH \
	--from amd64=o-amd64 --from arm64=o-arm64 >/dev/null
run "$FATELF" bundle create --json -o o-tars.fatbundle --name hello --version 1.0-1 --per-arch usr/share/doc/hello/ARCH \
	--from amd64=o-amd64.tar.zst --from arm64=o-arm64.tar.zst
check_eq "sorted and reversed .tar.zst sources: exit 0, 4 glued, 4 per-arch" "0 4 4" \
	"$RC $(jq -r '"\(.entries.glued) \(.entries.per_arch)"' <<<"$RUN_OUT")"
# (3 for the glued files it has to go back to; 1 for its ARCH, which it
# passes before the first source's ARCH, whose entry comes first, is out)
check_eq "... the reversed one read again from its start 4 times" 4 "$(jq -r .rereads <<<"$RUN_OUT")"
zstd -dc o-dirs.fatbundle | tar -xOf - fatbundle.json >o-dirs.json
zstd -dc o-tars.fatbundle | tar -xOf - fatbundle.json >o-tars.json
check_cmp "... the same manifest as from the directories" o-dirs.json o-tars.json
run "$FATELF" bundle create -o o-tars2.fatbundle --name hello --version 1.0-1 --per-arch usr/share/doc/hello/ARCH \
	--from amd64=o-amd64.tar.zst --from arm64=o-arm64.tar.zst
check_match "... without --json a note names the source and says why" \
	"o-arm64.tar.zst: read 4 more times from its start, as its members come in another order than o-amd64.tar.zst's" "$RUN_ERR"
check_cmp "... and the same sources give the same bytes" o-tars.fatbundle o-tars2.fatbundle
run "$FATELF" bundle create --json -o o-revs.fatbundle --name hello --version 1.0-1 --per-arch usr/share/doc/hello/ARCH \
	--from amd64=o-amd64-rev.tar.zst --from arm64=o-arm64.tar.zst
check_eq "two sources in the same (reversed) order: exit 0, no source read again" "0 0" "$RC $(jq -r .rereads <<<"$RUN_OUT")"
check "... and it verifies" "$FATELF" bundle verify o-revs.fatbundle
for b in o-tars o-revs; do
	for a in amd64 arm64; do
		rm -rf "ox-$a"
		"$FATELF" bundle extract --target "${WORD[$a]}" "$b.fatbundle" "ox-$a" >/dev/null 2>&1
		check "$b.fatbundle extracted for $a is o-$a: every path, byte and mode" diff -r "o-$a" "ox-$a"
		check_eq "... the same modes and types" "$(cd "o-$a" && find . -printf '%p %M %l\n' | sort)" \
			"$(cd "ox-$a" && find . -printf '%p %M %l\n' | sort)"
	done
done

# ---- kill -9 while it writes: the output is the old file or the whole
# new one, never part of one (the bundle goes to a hidden temp name
# beside it, renamed over it at the end)
for a in amd64 arm64; do
	rm -rf "k-$a" && cp -a "o-$a" "k-$a"
	head -c 40000000 /dev/urandom >"k-$a/usr/share/doc/hello/big.dat"
done
cp "k-amd64/usr/share/doc/hello/big.dat" "k-arm64/usr/share/doc/hello/big.dat"
tar -C k-arm64 --sort=name -cf - . | zstd -q -1 >k-arm64.tar.zst
cp o-tars.fatbundle k-out.fatbundle
cp k-out.fatbundle k-old.fatbundle
kills=0 olds=0 news=0
for delay in 0.05 0.2 0.4 0.8 1.5; do
	"$FATELF" bundle create -o k-out.fatbundle --name hello --version 1.0-1 --per-arch usr/share/doc/hello/ARCH \
		--from amd64=k-amd64 --from arm64=k-arm64.tar.zst >/dev/null 2>&1 &
	pid=$!
	sleep "$delay"
	kill -9 "$pid" 2>/dev/null && kills=$((kills + 1))
	wait "$pid" 2>/dev/null
	if cmp -s k-out.fatbundle k-old.fatbundle; then
		olds=$((olds + 1))
	elif "$FATELF" bundle verify k-out.fatbundle >/dev/null 2>&1; then
		news=$((news + 1))
		cp k-out.fatbundle k-old.fatbundle
	else
		fail "kill -9 after $delay s left k-out.fatbundle neither the old bundle nor a whole new one"
	fi
	find . -maxdepth 1 -name '.fatelf.k-out.fatbundle.*' -delete
done
echo "# kill -9 of create --from: $kills killed; the output was the old bundle $olds times, a whole new one $news times"
check_eq "kill -9 at 5 points while it writes: the output is always the old bundle or a whole new one" 5 $((olds + news))
check "... and at least one kill landed while it ran" test "$kills" -ge 1

# ---- .debs
mkdeb() { # ARCH VERSION [SCRIPT]
	local a=$1 d=deb-$1-$2${3:+-$3}
	rm -rf "$d"
	cp -a "tree-$a" "$d"
	mkdir "$d/DEBIAN"
	printf 'Package: hello\nVersion: %s\nArchitecture: %s\nMaintainer: Hello Maker <hello@example.org>\nDescription: says hello\n in every architecture\nHomepage: https://example.org/hello\n' \
		"$2" "$a" >"$d/DEBIAN/control"
	printf '/etc/hello/hello.conf\n' >"$d/DEBIAN/conffiles"
	printf 'not in conffiles\n' >"$d/etc/hello/other.conf"
	case ${3:-} in
	'') ;;
	triggers) printf 'interest-noawait /usr/share/hello\n' >"$d/DEBIAN/triggers" ;;
	*) printf '#!/bin/sh\nexit 0\n' >"$d/DEBIAN/$3"
	   chmod 0755 "$d/DEBIAN/$3" ;;
	esac
	dpkg-deb --root-owner-group -Zxz --build "$d" "$d.deb" >/dev/null
}
mkdeb amd64 1.0-1
mkdeb arm64 1.0-1
mkdeb arm64 1.0-2
mkdeb arm64 1.0-1 postinst
mkdeb arm64 1.0-1 triggers
run "$FATELF" bundle create --json -o debs.fatbundle --from amd64=deb-amd64-1.0-1.deb --from arm64=deb-arm64-1.0-1.deb
check_eq "unify two .debs: exit 0" 0 "$RC"
"$FATELF" bundle inspect --json debs.fatbundle >debs.json
check_eq "... name, version, summary, vendor and homepage come from the control files" \
	"hello|1.0-1|says hello|Hello Maker <hello@example.org>|https://example.org/hello" \
	"$(json debs.json '.package | "\(.name)|\(.version)|\(.summary)|\(.vendor)|\(.homepage)"')"
check_eq "... a conffile is config, another file under etc/ is not" "true false" \
	"$(json debs.json '[.entries[] | select(.path | startswith("etc/hello/")) | (.config // false | tostring)] | join(" ")')"
check_eq "... hello is glued" "x86_64 aarch64" \
	"$(json debs.json '.entries[] | select(.path == "usr/bin/hello") | [.records[].arch] | join(" ")')"
check "... and verifies" "$FATELF" bundle verify debs.fatbundle
check "--version overrides the .debs'" "$FATELF" bundle create -o v.fatbundle --version 2.0 \
	--from amd64=deb-amd64-1.0-1.deb --from arm64=deb-arm64-1.0-2.deb
check_eq "... and is the bundle's" "2.0" "$("$FATELF" bundle inspect --json v.fatbundle | jq -r .package.version)"
run "$FATELF" bundle create --json -o s.fatbundle --ignore-scripts \
	--from amd64=deb-amd64-1.0-1.deb --from arm64=deb-arm64-1.0-1-postinst.deb
check_eq "a .deb with a postinst and --ignore-scripts: exit 0" 0 "$RC"
check_match "... saying nothing will run postinst" "deb-arm64-1.0-1-postinst.deb: .*postinst.*nothing will run" "$RUN_ERR"
check_eq "... and in the report" "postinst" "$(jq -r '.ignored_scripts[0].scripts' <<<"$RUN_OUT")"

# ---- a sparse file (holes at both ends and in the middle) in directory
# sources: its holes are read as zeros, one data entry, the same bytes
for a in amd64 arm64; do
	rm -rf "sp-$a" && cp -a "tree-$a" "sp-$a"
	f=sp-$a/usr/share/doc/hello/sparse.bin
	truncate -s 3M "$f"
	printf 'middle' | dd of="$f" bs=1 seek=$((1 << 20)) conv=notrunc status=none
	printf 'later' | dd of="$f" bs=1 seek=$((2 << 20)) conv=notrunc status=none
done
check "unify sources with a sparse file" "$FATELF" bundle create -o sparse.fatbundle --name hello --version 1 \
	--from amd64=sp-amd64 --from arm64=sp-arm64
check_eq "... one data entry of 3 MiB" "data $((3 << 20))" \
	"$("$FATELF" bundle inspect --json sparse.fatbundle | jq -r '.entries[] | select(.path == "usr/share/doc/hello/sparse.bin") | "\(.kind) \(.size)"')"
rm -rf x-sparse && "$FATELF" bundle extract sparse.fatbundle x-sparse >/dev/null
check_cmp "... extracted byte for byte" sp-amd64/usr/share/doc/hello/sparse.bin x-sparse/usr/share/doc/hello/sparse.bin

# ---- refusals
cp -a tree-arm64 t-data && printf 'another README\n' >t-data/usr/share/doc/hello/README
refused "a data file that differs" FATELF_E_UNIFY_DIFFERS "usr/share/doc/hello/README.*amd64.*arm64" bad.fatbundle \
	--name hello --version 1 --from amd64=tree-amd64 --from arm64=t-data
check "... under --per-arch: an entry each, format 2" "$FATELF" bundle create -o pa.fatbundle --name hello --version 1 \
	--per-arch 'usr/share/doc/*' --from amd64=tree-amd64 --from arm64=t-data
"$FATELF" bundle inspect --json pa.fatbundle >pa.json
check_eq "... the manifest is format 2" 2 "$(jq -r .format pa.json)"
check_eq "... README has a per-arch entry for each source, by first target" "x86_64 aarch64" \
	"$(json pa.json '[.entries[] | select(.path == "usr/share/doc/hello/README") | .for[]] | join(" ")')"
check_eq "... a triplet directory is per-arch too" "aarch64" \
	"$(json pa.json '.entries[] | select(.path == "usr/lib/aarch64-linux-gnu") | .for | join(" ")')"
for t in x86_64:tree-amd64 aarch64:t-data; do
	rm -rf "pa-${t%%:*}"
	"$FATELF" bundle extract --target "${t%%:*}" pa.fatbundle "pa-${t%%:*}" >/dev/null
	check_eq "... extract --target ${t%%:*} gives that source's README" "$(cat "${t#*:}/usr/share/doc/hello/README")" \
		"$(cat "pa-${t%%:*}/usr/share/doc/hello/README")"
done
cp -a tree-arm64 t-miss && rm t-miss/etc/hello/hello.conf
refused "a file missing in one source" FATELF_E_UNIFY_MISSING "etc/hello/hello.conf.*in amd64, missing in arm64" bad.fatbundle \
	--name hello --version 1 --from amd64=tree-amd64 --from arm64=t-miss
cp -a tree-arm64 t-mode && chmod 0600 t-mode/etc/hello/hello.conf
refused "a mode that differs" FATELF_E_UNIFY_MODE "etc/hello/hello.conf.*0644 in amd64, 0600 in arm64" bad.fatbundle \
	--name hello --version 1 --from amd64=tree-amd64 --from arm64=t-mode
cp -a tree-arm64 t-link && ln -sfn ../bin/hello t-link/usr/bin/hi
refused "a symlink target that differs" FATELF_E_UNIFY_SYMLINK "usr/bin/hi.*amd64.*arm64" bad.fatbundle \
	--name hello --version 1 --from amd64=tree-amd64 --from arm64=t-link
cp -a tree-amd64 t-amd64b && gcc -static -O0 -o t-amd64b/usr/bin/hello "$hello"
rm -rf "t-amd64b/usr/lib/${TRIPLET[amd64]}"
refused "two sources of one target" FATELF_E_UNIFY_TARGET "usr/bin/hello.*amd64 and x86_64 both give an ELF file for x86_64" \
	bad.fatbundle --name hello --version 1 --from amd64=tree-amd64 --from x86_64=t-amd64b
refused "an ARCH that is not the ELF's" FATELF_E_UNIFY_ARCH "usr/bin/hello.*aarch64.*tree-arm64.*--from riscv64" bad.fatbundle \
	--name hello --version 1 --per-arch 'usr/lib/*' --from amd64=tree-amd64 --from riscv64=tree-arm64
refused "a .deb with a postinst" FATELF_E_UNIFY_SCRIPTS "deb-arm64-1.0-1-postinst.deb.*postinst.*--ignore-scripts" bad.fatbundle \
	--from amd64=deb-amd64-1.0-1.deb --from arm64=deb-arm64-1.0-1-postinst.deb
refused "a .deb with triggers" FATELF_E_UNIFY_SCRIPTS "deb-arm64-1.0-1-triggers.deb.*\(triggers\)" bad.fatbundle \
	--from amd64=deb-amd64-1.0-1.deb --from arm64=deb-arm64-1.0-1-triggers.deb
refused ".debs whose Version disagrees" FATELF_E_UNIFY_FIELD "Version: '1.0-1' in deb-amd64-1.0-1.deb \(amd64\), '1.0-2' in deb-arm64-1.0-2.deb" \
	bad.fatbundle --from amd64=deb-amd64-1.0-1.deb --from arm64=deb-arm64-1.0-2.deb
cp -a tree-arm64 t-type && rm t-type/usr/share/doc/hello/README && mkdir t-type/usr/share/doc/hello/README
refused "a file in one source, a directory in the other" FATELF_E_UNIFY_TYPE \
	"usr/share/doc/hello/README.*a file in amd64, a directory in arm64" bad.fatbundle \
	--name hello --version 1 --from amd64=tree-amd64 --from arm64=t-type
cp -a tree-arm64 t-type2 && ln -sfn ../../../../etc/hello/hello.conf t-type2/usr/share/doc/hello/README
refused "a file in one source, a symlink in the other" FATELF_E_UNIFY_TYPE \
	"usr/share/doc/hello/README.*a file in amd64, a symlink in arm64" bad.fatbundle \
	--name hello --version 1 --from amd64=tree-amd64 --from arm64=t-type2
check_eq "every rule was refused once at least, each with its own exit status" \
	"$(printf '%s\n' "${!RULE_EXIT[@]}" | sort)" "$(printf '%s\n' "${!REFUSED_SEEN[@]}" | sort)"
check_eq "... nine statuses, all different" 9 "$(printf '%s\n' "${RULE_EXIT[@]}" | sort -u | wc -l)"
run "$FATELF" bundle create -o bad.fatbundle --name hello --version 1 --from amd64=tree-amd64 tree-arm64
check_eq "a TREE and --from together is a usage error (exit 2)" 2 "$RC"
run "$FATELF" bundle create -o bad.fatbundle --name hello --version 1 --from tree-amd64
check_eq "--from without ARCH= is a usage error (exit 2)" 2 "$RC"
no_output "... and no bundle is left" bad.fatbundle

# ---- the unified bundle installs with fatelfd, thinned to this host
daemon_init
daemon_prepare inst RequireSignature=no
if daemon_start inst; then
	run ctl install debs.fatbundle
	check_eq "fatelfd installs the unified bundle (exit 0)" 0 "$RC"
	check_cmp "... its hello is the amd64 build, byte for byte" tree-amd64/usr/bin/hello "$ROOT/usr/bin/hello"
	check_eq "... and runs" "hello from x86_64 (hello)" "$("$ROOT/usr/bin/hello" 2>&1)"
	check_cmp "... the shared README is there" tree-amd64/usr/share/doc/hello/README "$ROOT/usr/share/doc/hello/README"
	daemon_stop
else
	fail "a private fatelfd starts"
fi

t_done
