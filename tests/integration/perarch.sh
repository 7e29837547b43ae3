#!/bin/bash
# Per-arch entries (bundle format 2): .debs built here for every
# architecture whose cross compiler is installed (amd64 and arm64 at
# least), each with a program that links a shared library at
# usr/lib/TRIPLET/libx.so.1 through its libx.so symlink, a conffile, the
# same docs, a generated header under usr/include/TRIPLET/ and a data file
# that differs under --per-arch, are unified into one bundle. Then, for
# every architecture A: `fatelf bundle extract --target A` and a private
# fatelfd install with --targets A into an empty root each give exactly
# A's own tree (every path, its type, mode, symlink target and bytes; the
# ELF files byte for byte A's; nothing else), and the program runs with
# the library it came with (natively or under qemu-user). Installed with
# policy keep (every per-arch entry with a path of its own) and then
# thinned, the per-arch entries are entries like any other: thin leaves
# their bytes alone (a helper program two other architectures ship stays
# the FatELF of their records), thins the glued program to this host, and
# verify, files and owner know every per-arch path.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init perarch
t_require_exec "$FATELF"
t_require_tool jq dpkg-deb gcc aarch64-linux-gnu-gcc sha256sum find
[ "$(uname -m)" = x86_64 ] || t_skip "the host is $(uname -m), this test expects x86_64"

ALL="amd64 arm64 armhf i386 riscv64 ppc64el s390x"
declare -A CC QEMU TRIPLET SYSROOT
CC=([amd64]=gcc [arm64]=aarch64-linux-gnu-gcc [armhf]=arm-linux-gnueabihf-gcc [i386]=i686-linux-gnu-gcc
    [riscv64]=riscv64-linux-gnu-gcc [ppc64el]=powerpc64le-linux-gnu-gcc [s390x]=s390x-linux-gnu-gcc)
QEMU=([amd64]= [arm64]=qemu-aarch64-static [armhf]=qemu-arm-static [i386]=qemu-i386-static
      [riscv64]=qemu-riscv64-static [ppc64el]=qemu-ppc64le-static [s390x]=qemu-s390x-static)
TRIPLET=([amd64]=x86_64-linux-gnu [arm64]=aarch64-linux-gnu [armhf]=arm-linux-gnueabihf [i386]=i386-linux-gnu
	 [riscv64]=riscv64-linux-gnu [ppc64el]=powerpc64le-linux-gnu [s390x]=s390x-linux-gnu)
# where the cross compiler's libc lives, for qemu-user's -L
SYSROOT=([amd64]=/ [arm64]=/usr/aarch64-linux-gnu [armhf]=/usr/arm-linux-gnueabihf [i386]=/usr/i686-linux-gnu
	 [riscv64]=/usr/riscv64-linux-gnu [ppc64el]=/usr/powerpc64le-linux-gnu [s390x]=/usr/s390x-linux-gnu)
ARCHES=
for a in $ALL; do
	if command -v "${CC[$a]}" >/dev/null 2>&1; then
		ARCHES="$ARCHES $a"
	else
		echo "# ${CC[$a]} is not installed: $a is left out"
	fi
done
t_native_i686 && QEMU[i386]=

# tree_list DIR: one line a path below DIR: path, type, mode, symlink
# target, SHA-256 of a file's bytes.
tree_list() {
	(cd "$1" && find . -mindepth 1 -printf '%P\t%y\t%m\t%l\n' | sort | while IFS=$'\t' read -r p y m l; do
		if [ "$y" = f ]; then
			printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$y" "$m" "$l" "$(sha256sum <"$p" | cut -d' ' -f1)"
		else
			printf '%s\t%s\t%s\t%s\t-\n' "$p" "$y" "$m" "$l"
		fi
	done)
}

# check_tree DESC ORIG GOT [SKIP_ERE]: GOT holds exactly ORIG's tree
# (paths matching SKIP_ERE in GOT aside).
check_tree() {
	local want got
	want=$(tree_list "$2")
	got=$(tree_list "$3")
	[ -n "${4:-}" ] && got=$(grep -Ev -- "$4" <<<"$got")
	if [ "$want" = "$got" ]; then
		pass "$1"
	else
		fail "$1" "$(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -20)"
	fi
}

# run_prog A ROOT: runs ROOT's usr/bin/xprog with ROOT's libx.
run_prog() {
	local a=$1 root=$2 lib=$2/usr/lib/${TRIPLET[$1]}
	if [ -z "${QEMU[$a]}" ]; then
		LD_LIBRARY_PATH=$lib "$root/usr/bin/xprog"
	else
		command -v "${QEMU[$a]}" >/dev/null 2>&1 || return 77
		"${QEMU[$a]}" -L "${SYSROOT[$a]}" -E "LD_LIBRARY_PATH=$lib" "$root/usr/bin/xprog"
	fi
}

# A helper program that two architectures ship, neither of them this
# host's: under --per-arch, one FatELF entry of their two records.
HELPER=$(awk '$3 { print $2, $3 }' <<<"$ARCHES")

# ---- a .deb for each architecture
for a in $ARCHES; do
	d=pkg-$a t=${TRIPLET[$a]}
	rm -rf "$d"
	mkdir -p "$d/DEBIAN" "$d/usr/bin" "$d/usr/lib/$t" "$d/usr/include/$t/x" "$d/usr/share/doc/x" \
		"$d/usr/share/x" "$d/etc/x" "build-$a"
	printf 'const char *x_arch(void) { return "%s"; }\n' "$a" >"build-$a/libx.c"
	printf '#include <stdio.h>\nconst char *x_arch(void);\nint main(void) { printf("xprog on %%s\\n", x_arch()); return 0; }\n' \
		>"build-$a/xprog.c"
	if "${CC[$a]}" -shared -fPIC -O2 -Wl,-soname,libx.so.1 -o "$d/usr/lib/$t/libx.so.1" "build-$a/libx.c" 2>"build-$a/cc.err" &&
		ln -s libx.so.1 "$d/usr/lib/$t/libx.so" &&
		"${CC[$a]}" -O2 -o "$d/usr/bin/xprog" "build-$a/xprog.c" -L"$d/usr/lib/$t" -lx 2>>"build-$a/cc.err"; then
		pass "build the library and the program for $a"
	else
		fail "build the library and the program for $a" "$(cat "build-$a/cc.err")"
	fi
	if [[ " $HELPER " == *" $a "* ]]; then
		mkdir -p "$d/usr/libexec/x"
		printf 'int main(void) { return 0; }\n' >"build-$a/xhelper.c"
		"${CC[$a]}" -O2 -o "$d/usr/libexec/x/xhelper" "build-$a/xhelper.c" 2>>"build-$a/cc.err" ||
			fail "build the helper for $a" "$(cat "build-$a/cc.err")"
	fi
	printf '#define X_ARCH "%s"\n#define X_TRIPLET "%s"\n' "$a" "$t" >"$d/usr/include/$t/x/config.h"
	printf 'x: a library and a program\n' >"$d/usr/share/doc/x/README"
	printf 'built for %s\n' "$a" >"$d/usr/share/x/arch.txt"
	printf 'verbose = no\n' >"$d/etc/x/x.conf"
	chmod 0640 "$d/etc/x/x.conf"
	printf 'Package: libx\nVersion: 1.0-1\nArchitecture: %s\nMaintainer: X Maker <x@example.org>\nDescription: x\n x\n' \
		"$a" >"$d/DEBIAN/control"
	printf '/etc/x/x.conf\n' >"$d/DEBIAN/conffiles"
	dpkg-deb --root-owner-group -Zxz --build "$d" "x-$a.deb" >/dev/null
	# What A's tree is: the .deb's data, as built (DEBIAN aside).
	rm -rf "orig-$a"
	cp -a "$d" "orig-$a"
	rm -rf "orig-$a/DEBIAN"
done

FROM=()
for a in $ARCHES; do
	FROM+=(--from "$a=x-$a.deb")
done
run "$FATELF" bundle create --json -o x.fatbundle --per-arch 'usr/share/x/*' --per-arch 'usr/libexec/x/*' "${FROM[@]}"
check_eq "unify the .debs with --per-arch usr/share/x/* usr/libexec/x/*: exit 0" 0 "$RC"
"$FATELF" bundle inspect --json x.fatbundle >x.json
check_eq "... the bundle is format 2" 2 "$(json x.json .format)"
n=$(wc -w <<<"$ARCHES")
check_eq "... usr/share/x/arch.txt has an entry per architecture" "$n" \
	"$(json x.json '[.entries[] | select(.path == "usr/share/x/arch.txt")] | length')"
check_eq "... usr/bin/xprog is glued, a record each" "$n" \
	"$(json x.json '.entries[] | select(.path == "usr/bin/xprog") | .records | length')"
check_eq "... the docs are stored once, for every target" "1 null" \
	"$(json x.json '[.entries[] | select(.path == "usr/share/doc/x/README")] | "\(length) \(.[0].targets)"')"
check_eq "... usr/lib/aarch64-linux-gnu/libx.so.1 is arm64's alone" "aarch64" \
	"$(json x.json '.entries[] | select(.path == "usr/lib/aarch64-linux-gnu/libx.so.1") | .for | join(",")')"
if [ -n "$HELPER" ]; then
	check_eq "... usr/libexec/x/xhelper ($HELPER's) is one FatELF entry of their 2 records, for them alone" "1 2 2" \
		"$(json x.json '[.entries[] | select(.path == "usr/libexec/x/xhelper")] | "\(length) \(.[0].records | length) \(.[0].for | length)"')"
fi
check "... and verifies" "$FATELF" bundle verify x.fatbundle
# The same sources give the same bytes.
"$FATELF" bundle create -o x2.fatbundle --per-arch 'usr/share/x/*' --per-arch 'usr/libexec/x/*' "${FROM[@]}" >/dev/null 2>&1
check_cmp "... reproducibly" x.fatbundle x2.fatbundle

# ---- the reader takes the members of a shared path in manifest order,
# each once: x.fatbundle as a plain tar, its arch.txt members rewritten
if command -v python3 >/dev/null 2>&1 && command -v zstd >/dev/null 2>&1; then
	zstd -qdc x.fatbundle >x.tar
	python3 - <<'PY'
import tarfile
src = tarfile.open("x.tar")
members = [(m, src.extractfile(m).read() if m.isfile() else None) for m in src.getmembers()]
arch = [i for i, (m, _) in enumerate(members) if m.name == "files/usr/share/x/arch.txt"]
def write(name, ms):
    with tarfile.open(name, "w", format=tarfile.PAX_FORMAT) as out:
        for m, data in ms:
            out.addfile(m, __import__("io").BytesIO(data) if data is not None else None)
write("ok.tar", members)
write("missing.tar", [x for i, x in enumerate(members) if i != arch[-1]])
write("extra.tar", members[:arch[-1] + 1] + [members[arch[-1]]] + members[arch[-1] + 1:])
swapped = list(members)
swapped[arch[0]], swapped[arch[-1]] = swapped[arch[-1]], swapped[arch[0]]
write("swapped.tar", swapped)
PY
	check "a plain tar of the bundle verifies" "$FATELF" bundle verify ok.tar
	run "$FATELF" bundle verify --json missing.tar
	check_eq "... without the last arch.txt member: FATELF_E_MEMBER_MISSING" FATELF_E_MEMBER_MISSING \
		"$(jq -r .error.code <<<"$RUN_OUT")"
	run "$FATELF" bundle verify --json extra.tar
	check_eq "... with one arch.txt member more than its entries: FATELF_E_MEMBER_DUPLICATE" FATELF_E_MEMBER_DUPLICATE \
		"$(jq -r .error.code <<<"$RUN_OUT")"
	run "$FATELF" bundle verify --json swapped.tar
	check_match "... with two arch.txt members swapped: refused" "^FATELF_E_(MEMBER_SIZE|HASH)$" \
		"$(jq -r .error.code <<<"$RUN_OUT")"
else
	echo "# python3 or zstd is not installed: the member order is not checked"
fi

# ---- extract --target A gives A's tree
for a in $ARCHES; do
	rm -rf "ex-$a"
	run "$FATELF" bundle extract --target "$a" x.fatbundle "ex-$a"
	check_eq "extract --target $a: exit 0" 0 "$RC"
	check_tree "... exactly $a's tree (paths, types, modes, links, bytes)" "orig-$a" "ex-$a"
	out=$(run_prog "$a" "ex-$a" 2>&1)
	rc=$?
	if [ "$rc" = 77 ]; then
		echo "# ${QEMU[$a]} is not installed: $a's program is not run"
	else
		check_eq "... its program runs with its own library" "xprog on $a" "$out"
	fi
done

# ---- a private fatelfd installs A's tree with --targets A
daemon_init
for a in $ARCHES; do
	daemon_prepare "inst-$a" RequireSignature=no
	if daemon_start "inst-$a"; then
		run ctl install --targets "$a" x.fatbundle
		check_eq "fatelfd install --targets $a: exit 0" 0 "$RC"
		# etc/ld.so.cache is fatelfd's ldconfig run over the new
		# library directory, not a file of the bundle.
		check_tree "... exactly $a's tree in the empty root" "orig-$a" "$ROOT" '^etc/ld\.so\.cache	'
		check_eq "... ldconfig's cache is the only file beside it" "etc/ld.so.cache" \
			"$(cd "$ROOT" && find . -mindepth 1 -type f -printf '%P\n' | grep -v -e '^usr/' -e '^etc/x/' )"
		run ctl verify libx
		check_eq "... and it verifies" 0 "$RC"
		run ctl files libx
		check_eq "... files lists exactly its files and symlinks (and its directories, with a /)" \
			"$(cd "orig-$a" && find . -mindepth 1 \( -type f -printf '/%P\n' \) -o \( -type l -printf '/%P -> %l\n' \) | sort)" \
			"$(grep -v '/$' <<<"$RUN_OUT" | sort)"
		run ctl owner "/usr/lib/${TRIPLET[$a]}/libx.so.1"
		check_match "... its library is owned by libx" "libx" "$RUN_OUT"
		daemon_stop
	else
		fail "a private fatelfd starts for $a"
	fi
done

# ---- without a target: every per-arch entry with a path of its own, and
# this host's (amd64's) variant of a path several share
rm -rf ex-all
run "$FATELF" bundle extract x.fatbundle ex-all
check_eq "extract without --target: exit 0" 0 "$RC"
got=
for a in $ARCHES; do
	[ -e "ex-all/usr/lib/${TRIPLET[$a]}/libx.so.1" ] && got="$got $a"
done
check_eq "... every architecture's library directory" "$ARCHES" "$got"
check_cmp "... and amd64's arch.txt" orig-amd64/usr/share/x/arch.txt ex-all/usr/share/x/arch.txt
daemon_prepare inst-keep RequireSignature=no
if daemon_start inst-keep; then
	run ctl install --policy keep x.fatbundle
	check_eq "fatelfd install --policy keep: exit 0" 0 "$RC"
	got=
	for a in $ARCHES; do
		[ -e "$ROOT/usr/lib/${TRIPLET[$a]}/libx.so.1" ] && got="$got $a"
	done
	check_eq "... every architecture's library directory" "$ARCHES" "$got"
	check_cmp "... and this host's arch.txt" orig-amd64/usr/share/x/arch.txt "$ROOT/usr/share/x/arch.txt"
	check_cmp "... its program is the FatELF as shipped, as extract without --target gives it" ex-all/usr/bin/xprog "$ROOT/usr/bin/xprog"
	run ctl verify libx
	check_eq "... and it verifies" 0 "$RC"
	# What extract without --target gives, as files lists it
	files_all=$(cd ex-all && find . -mindepth 1 \( -type f -printf '/%P\n' \) -o \( -type l -printf '/%P -> %l\n' \) | sort)
	run ctl files libx
	check_eq "... files lists every per-arch entry it installed, as extract gives them" "$files_all" \
		"$(grep -v '/$' <<<"$RUN_OUT" | sort)"

	# ---- thin the keep install: per-arch entries are entries like any other
	before=$(tree_list "$ROOT")
	run ctl --json thin libx
	check_eq "thin libx after install --policy keep: exit 0" 0 "$RC"
	check_eq "... one file thinned (the glued program)" 1 \
		"$(jq -s 'map(.result // empty, (.results // [])[]) | map(.files) | add' <<<"$RUN_OUT")"
	check_cmp "... the glued program is now this host's build, byte for byte" orig-amd64/usr/bin/xprog "$ROOT/usr/bin/xprog"
	out=$(run_prog amd64 "$ROOT" 2>&1)
	check_eq "... and runs with amd64's library" "xprog on amd64" "$out"
	check_eq "... every other path (every per-arch entry) is as it was: type, mode, link, bytes" \
		"$(grep -v '^usr/bin/xprog	' <<<"$before")" "$(tree_list "$ROOT" | grep -v '^usr/bin/xprog	')"
	if [ -n "$HELPER" ]; then
		check_cmp "... the helper for $HELPER, whose records this host runs none of, is the FatELF as shipped" \
			ex-all/usr/libexec/x/xhelper "$ROOT/usr/libexec/x/xhelper"
	fi
	run ctl verify libx
	check_eq "... verify after thin: exit 0" 0 "$RC"
	check_eq "... and says nothing is wrong" "" "$RUN_ERR"
	run ctl files libx
	check_eq "... files still lists every per-arch entry" "$files_all" "$(grep -v '/$' <<<"$RUN_OUT" | sort)"
	owners=
	want=
	for a in $ARCHES; do
		for f in "/usr/lib/${TRIPLET[$a]}/libx.so.1" "/usr/lib/${TRIPLET[$a]}/libx.so" \
			"/usr/include/${TRIPLET[$a]}/x/config.h"; do
			owners="$owners$(ctl owner "$f" 2>&1)
"
			want="${want}libx: $f
"
		done
	done
	for f in /usr/share/x/arch.txt ${HELPER:+/usr/libexec/x/xhelper}; do
		owners="$owners$(ctl owner "$f" 2>&1)
"
		want="${want}libx: $f
"
	done
	check_eq "... owner of every per-arch path names libx" "$want" "$owners"
	run ctl --json thin libx
	check_eq "... a second thin thins nothing" "0 0" \
		"$RC $(jq -s 'map(.result // empty, (.results // [])[]) | map(.files) | add // 0' <<<"$RUN_OUT")"
	daemon_stop
else
	fail "a private fatelfd starts for policy keep"
fi

t_done
