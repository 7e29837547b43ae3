#!/bin/bash
# fatelf bundle create --from ARCH=SOURCE: what is not a source's tree is
# refused, naming the source and the rule, and leaves no bundle: a device
# or FIFO, a file of zero blocks (an empty tar archive to libarchive), a
# tar or .deb member with an absolute name or a '..', a member whose
# parent directory the archive lacks, and a member of a type no bundle
# holds (a hard link, a device, a FIFO). Data files only, no compiler.
. "$(dirname "$0")/lib.sh"

t_init unifysrc
t_require_exec "$FATELF"
t_require_tool jq tar xz ar dpkg-deb timeout python3

mkdir -p tree/usr/bin tree/usr/share/doc/hello
printf 'hello\n' >tree/usr/bin/hello
printf 'the documentation\n' >tree/usr/share/doc/hello/README
chmod 0755 tree tree/usr tree/usr/bin tree/usr/share tree/usr/share/doc tree/usr/share/doc/hello
chmod 0644 tree/usr/bin/hello tree/usr/share/doc/hello/README
export SOURCE_DATE_EPOCH=1700000000

# refused DESC CODE SUBJECT ERE SOURCE: create --from amd64=SOURCE
# --from arm64=tree fails with exit 1, error CODE about SUBJECT with a
# message matching ERE, the same as one line on stderr without --json,
# and no bundle or temp file is left.
refused() {
	local desc=$1 code=$2 subject=$3 ere=$4 src=$5 left
	run timeout 60 "$FATELF" bundle create --json -o bad.fatbundle --name hello --version 1 \
		--from amd64="$src" --from arm64=tree
	check_eq "$desc: exit 1" 1 "$RC"
	check_eq "... $code" "$code" "$(jq -r .error.code <<<"$RUN_OUT")"
	check_eq "... about $subject" "$subject" "$(jq -r .error.subject <<<"$RUN_OUT")"
	check_match "... the message names the rule" "$ere" "$(jq -r .error.message <<<"$RUN_OUT")"
	run timeout 60 "$FATELF" bundle create -o bad.fatbundle --name hello --version 1 \
		--from amd64="$src" --from arm64=tree
	check_eq "... without --json: exit 1 too" 1 "$RC"
	check_match "... one line on stderr naming the source" "^fatelf: $subject: .*$ere" "$RUN_ERR"
	check_one_line "... and only one" "$RUN_ERR"
	left=$(find . -maxdepth 1 \( -name bad.fatbundle -o -name ".fatelf.*" \) | head -3)
	check_eq "... no bundle is written" "" "$left"
}

# ---- a good tar, as a baseline: the same tree as the directory
tar -cf good.tar -C tree .
check "a tar of the tree and the tree itself unify" "$FATELF" bundle create -o good.fatbundle \
	--name hello --version 1 --from amd64=good.tar --from arm64=tree

# ---- sources that are not a tree
refused "/dev/zero" FATELF_E_ARCHIVE /dev/zero \
	"a character device, not a directory, a tar archive or a \.deb" /dev/zero
head -c 10240 /dev/zero >zeros.tar
refused "a file of 10240 zero bytes" FATELF_E_ARCHIVE zeros.tar "holds no members" zeros.tar
tar -cf end-only.tar -T /dev/null
refused "a tar archive of no members (its end marker only)" FATELF_E_ARCHIVE end-only.tar \
	"holds no members" end-only.tar
mkfifo fifo
refused "a FIFO, not waited on" FATELF_E_ARCHIVE fifo "a FIFO, not a directory" fifo

# ---- members that are not beneath the source's root
tar -P -cf abs.tar -C tree --transform 's,^\./usr/bin/hello$,/usr/bin/hello,' .
refused "a tar member named /usr/bin/hello" FATELF_E_PATH_ABSOLUTE abs.tar \
	"member '/usr/bin/hello' has an absolute name" abs.tar
tar -cf dotdot.tar -C tree --transform 's,^\./usr/bin/hello$,./usr/bin/../../hello,' .
refused "a tar member with '..'" FATELF_E_PATH_DOTDOT dotdot.tar \
	"usr/bin/\.\./\.\./hello' has a '\.\.' component" dotdot.tar

# ---- a .deb whose data.tar has an absolute member
mkdir -p pkg/DEBIAN
cp -a tree/usr pkg/
printf 'Package: hello\nVersion: 1\nArchitecture: amd64\nMaintainer: x <x@example.org>\nDescription: x\n' \
	>pkg/DEBIAN/control
dpkg-deb --root-owner-group -Zxz --build pkg good.deb >/dev/null
mkdir debx && (cd debx && ar x ../good.deb)
tar -P -cf - -C tree --transform 's,^\./usr/bin/hello$,/usr/bin/hello,' . | xz >debx/data.tar.xz
(cd debx && ar rc ../abs.deb debian-binary control.tar.xz data.tar.xz)
check "the .deb as dpkg-deb wrote it unifies" "$FATELF" bundle create -o gooddeb.fatbundle \
	--from amd64=good.deb --from arm64=tree
refused "a .deb whose data.tar has /usr/bin/hello" FATELF_E_PATH_ABSOLUTE abs.deb \
	"member '/usr/bin/hello' has an absolute name" abs.deb

# ---- a member whose parent directory is not in the archive
tar --no-recursion -cf noparent.tar -C tree . ./usr ./usr/bin/hello ./usr/share ./usr/share/doc \
	./usr/share/doc/hello ./usr/share/doc/hello/README
refused "a tar without ./usr/bin/" FATELF_E_PATH_PARENT noparent.tar \
	"member 'usr/bin/hello': parent directory 'usr/bin' is missing from noparent\.tar" noparent.tar
# and when every source lacks it alike, the same
run "$FATELF" bundle create --json -o bad.fatbundle --name hello --version 1 \
	--from amd64=noparent.tar --from arm64=noparent.tar
check_eq "two tars that both lack ./usr/bin/: FATELF_E_PATH_PARENT" "1 FATELF_E_PATH_PARENT" \
	"$RC $(jq -r .error.code <<<"$RUN_OUT")"
check_match "... the parent named missing from the first" "parent directory 'usr/bin' is missing from noparent\.tar" \
	"$(jq -r .error.message <<<"$RUN_OUT")"
mkdir -p fileparent/usr
printf 'x\n' >fileparent/usr/bin
tar -cf fileparent.tar -C fileparent .
tar -rf fileparent.tar -C tree ./usr/bin/hello
refused "a tar whose usr/bin is a file" FATELF_E_PATH_PARENT fileparent.tar \
	"parent directory 'usr/bin' is a file, not a directory, in fileparent\.tar" fileparent.tar

# ---- members of a type no bundle holds: the source is named too
cp -a tree hl && ln hl/usr/bin/hello hl/usr/bin/hello2
tar -cf hl.tar -C hl .
refused "a tar with a hard link member" FATELF_E_MEMBER_TYPE hl.tar \
	"entry 'usr/bin/hello2?' in hl\.tar: a hard link to '\./usr/bin/hello2?'; a bundle holds files" hl.tar
python3 - <<'EOF'
import tarfile
with tarfile.open("chr.tar", "w") as t:
    for d in (".", "./usr", "./usr/bin"):
        ti = tarfile.TarInfo(d)
        ti.type, ti.mode = tarfile.DIRTYPE, 0o755
        t.addfile(ti)
    ti = tarfile.TarInfo("./usr/bin/null")
    ti.type, ti.mode, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 0o666, 1, 3
    t.addfile(ti)
EOF
refused "a tar with a character device member" FATELF_E_MEMBER_TYPE chr.tar \
	"entry 'usr/bin/null' in chr\.tar: a character device; a bundle holds files" chr.tar
cp -a tree fifodir && mkfifo fifodir/usr/bin/p
refused "a directory holding a FIFO" FATELF_E_MEMBER_TYPE fifodir \
	"entry 'usr/bin/p' in fifodir: a FIFO; a bundle holds files" fifodir

t_done
