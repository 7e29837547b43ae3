#!/bin/bash
# data/fatelf.magic: file(1) recognizes a glued FatELF (with its version
# and record count) and does not mistake anything else for one.
. "$(dirname "$0")/lib.sh"

t_init magic
t_require_exec "$FATELF" "$MKFIXTURE"
t_require_tool file

magic=$top_srcdir/data/fatelf.magic
"$MKFIXTURE" -o x64 --machine 62 --class 64 --data le --type exec
"$MKFIXTURE" -o a64 --machine 183 --class 64 --data le --type exec
"$MKFIXTURE" -o rv --machine 243 --class 64 --data le --type exec

check "glue three records" "$FATELF" glue -o fat3 x64 a64 rv
check "glue one record" "$FATELF" glue -o fat1 a64

check_exit 0 "file -m accepts the fragment" file -m "$magic" fat3
check_eq "file names a 3-record FatELF" \
	"fat3: FatELF multi-architecture binary, version 1, 3 records, first record x86_64" "$RUN_OUT"
run file -b -m "$magic" fat1
check_eq "file names a 1-record FatELF" \
	"FatELF multi-architecture binary, version 1, 1 record, first record aarch64" "$RUN_OUT"
run file -b --mime-type -m "$magic" fat3
check_eq "the MIME type" "application/x-fatelf" "$RUN_OUT"

run file -b -m "$magic" x64
check_nomatch "a plain ELF is not a FatELF" 'FatELF' "$RUN_OUT"
echo "FatELF is mentioned in this text" >text
run file -b -m "$magic" text
check_nomatch "a text file is not a FatELF" 'FatELF multi' "$RUN_OUT"
printf '\xfa\x70\x0e' >short
run file -b -m "$magic" short
check_nomatch "three bytes of the magic are not a FatELF" 'FatELF' "$RUN_OUT"

# The fragment compiles cleanly (file -C writes NAME.mgc in the current
# directory, which is the work directory).
cp "$magic" frag.magic
run file -C -m frag.magic
check_eq "file -C compiles the fragment without a word" "0:" "$RC:$RUN_ERR"

t_done
