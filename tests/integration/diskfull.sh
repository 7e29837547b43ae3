#!/bin/bash
# A full disk: every writer fails with exit 3 and one error line, leaves
# no temp file behind, and never damages a file that was already there.
# Uses a 256 KiB tmpfs (root only; skipped where mount is not allowed).
. "$(dirname "$0")/lib.sh"

t_init diskfull
t_require_exec "$FATELF" "$MKFIXTURE"

mnt=$T_WORK/mnt
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=256k tmpfs "$mnt" 2>/dev/null; then
	t_skip "cannot mount a tmpfs here (not root?)"
fi
trap 'umount "$mnt" 2>/dev/null' EXIT

# Lists what the tmpfs holds besides the files named (sorted).
leftovers() {
	(cd "$mnt" && find . -mindepth 1 ! -name filler | sort | tr '\n' ' ')
}

"$MKFIXTURE" -o x64 --machine 62 --class 64 --data le --size 200k --seed 1
"$MKFIXTURE" -o a64 --machine 183 --class 64 --data le --size 200k --seed 2
"$MKFIXTURE" -o sx64 --machine 62 --class 64 --data le --size 20k --seed 3
"$MKFIXTURE" -o sa64 --machine 183 --class 64 --data le --size 20k --seed 4

# glue: the output does not fit.
check_exit 3 "glue into a full disk exits 3" "$FATELF" glue -o "$mnt/fat" x64 a64
check_one_line "glue: one error line" "$RUN_ERR"
check_match "glue: the error names the output and the cause" \
	"^fatelf: $mnt/fat: .*No space left on device" "$RUN_ERR"
check_eq "glue: nothing is left on the disk" "" "$(leftovers)"

# thin in place: the old file must survive a failed rewrite.
check "a small fat file fits" "$FATELF" glue -o "$mnt/small" sx64 sa64
cp "$mnt/small" small.orig
dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null
check_exit 3 "thin in place on a full disk exits 3" "$FATELF" thin "$mnt/small" x86_64
check_match "thin: the error names the file and the cause" "^fatelf: $mnt/small: .*No space left" "$RUN_ERR"
check_cmp "thin: the file is as it was" small.orig "$mnt/small"
check_eq "thin: no temp file is left" "./small " "$(leftovers)"
check_exit 3 "extract on a full disk exits 3" "$FATELF" extract -o "$mnt/x" small.orig aarch64
check_eq "extract: no temp file is left" "./small " "$(leftovers)"

# bundle extract: nothing of the bundle is left behind.
rm -f "$mnt/filler" "$mnt/small"
mkdir -p tree/opt/app
cp x64 tree/opt/app/one
cp a64 tree/opt/app/two
check "bundle create" "$FATELF" bundle create -o b.fatbundle --name diskfull --version 1 tree
check_exit 3 "bundle extract into a full disk exits 3" "$FATELF" bundle extract b.fatbundle "$mnt/root"
check_one_line "bundle extract: one error line" "$RUN_ERR"
check_eq "bundle extract: no file of the bundle is left" "" \
	"$(cd "$mnt" && find . -mindepth 1 ! -type d | tr '\n' ' ')"

umount "$mnt"
trap - EXIT
t_done
