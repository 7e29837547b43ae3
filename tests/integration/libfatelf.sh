#!/bin/bash
# The installed library, as a program outside the tree sees it: installed
# into a DESTDIR, libfatelf.so.0 carries its SONAME, exports exactly the
# names of lib/fatelf/libfatelf.sym (which are the functions the public
# header declares) under FATELF_0 and nothing of lib/basic's internals,
# its header and fatelf.pc are installed, and tests/pkgconfig/hello.c
# builds with pkg-config alone against that DESTDIR and runs.
. "$(dirname "$0")/lib.sh"

t_init libfatelf
# The program is built with the build's compiler and flags, as a program
# linking a sanitized library must be sanitized too.
CC=${BUILD_CC:-${CC:-cc}}
read -r -a BFLAGS <<<"${BUILD_CFLAGS:-}"
t_require_tool make pkg-config readelf nm "${CC%% *}"

DEST=$T_WORK/dest
run make -C "$top_builddir" install DESTDIR="$DEST"
check_eq "make install DESTDIR=... succeeds" 0 "$RC"
[ "$RC" -eq 0 ] || { echo "$RUN_ERR" | tail -20 | sed 's/^/# /'; t_done; }

PC=$(find "$DEST" -name fatelf.pc -path '*/pkgconfig/*' | head -1)
SO=$(find "$DEST" -name libfatelf.so.0 | head -1)
HDR=$(find "$DEST" -path '*/include/fatelf/libfatelf.h' | head -1)
check "fatelf.pc is installed in a pkgconfig directory" test -n "$PC" -a -f "$PC"
check "libfatelf.so.0 is installed" test -n "$SO" -a -e "$SO"
check "the header is installed as include/fatelf/libfatelf.h" test -n "$HDR" -a -f "$HDR"
check "the error codes are installed beside it as errors.h" test -f "$(dirname "$HDR")/errors.h"
check_eq "the installed headers include only each other and system headers" "errors.h" \
	"$(sed -n 's/^#include "\(.*\)"$/\1/p' "$(dirname "$HDR")"/*.h | sort -u | tr '\n' ' ' | sed 's/ $//')"
check "libfatelf.so links to the same library (for -lfatelf)" test "${SO%.0}" -ef "$SO"
[ -n "$SO" ] && [ -n "$PC" ] && [ -n "$HDR" ] || t_done

check_eq "the SONAME is libfatelf.so.0" "libfatelf.so.0" \
	"$(readelf -d "$SO" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"

# The exports, the version script and the header name the same functions.
script=$(sed -n '/^global:/,/^local:/p' "$top_srcdir/lib/fatelf/libfatelf.sym" |
	sed -n 's/^[[:space:]]*\([a-z_0-9]*\);$/\1/p' | sort)
exported=$(nm -D --defined-only "$SO" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort)
declared=$(sed -n 's/^FATELF_PUBLIC [^(]*[ *]\([a-z_0-9]*\)(.*/\1/p' "$HDR" | sort)
check_match "the version script lists the public API" "^[0-9]{2,}$" "$(grep -c . <<<"$script")"
check_eq "the library exports exactly the version script's names" "$script" "$exported"
check_eq "the header declares exactly the version script's names" "$script" "$declared"
check_eq "every export has the version FATELF_0" "" \
	"$(nm -D --defined-only "$SO" | awk '$2 != "A" && $3 !~ /@@FATELF_0$/ { print $3 }')"

# Nothing of lib/basic but the four functions the header declares.
basic=$(for o in "$top_builddir"/lib/basic/*.o; do nm --defined-only "$o"; done |
	awk '$2 ~ /^[TDBR]$/ { print $3 }' | sort -u)
check_match "lib/basic's objects define symbols to look for" "^[0-9]{2,}$" "$(grep -c . <<<"$basic")"
check_eq "no internal symbol of lib/basic is exported" "fatelf_diag_clear fatelf_error_name fatelf_strerror fatelf_version" \
	"$(comm -12 <(echo "$basic") <(echo "$exported") | tr '\n' ' ' | sed 's/ $//')"
check_eq "the format layer's internals are not exported" "" \
	"$(grep -xE 'fatelf_(validate|header_decode|diag_set|plan_make|glue|thin|host_detect|stream_new)' <<<"$exported")"

# A program outside the tree, with pkg-config alone.
export PKG_CONFIG_PATH=${PC%/*} PKG_CONFIG_LIBDIR= PKG_CONFIG_SYSROOT_DIR=$DEST
check_eq "pkg-config gives the package's version" \
	"$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")" "$(pkg-config --modversion fatelf)"
flags=$(pkg-config --cflags --libs fatelf)
check_match "pkg-config gives -lfatelf and the installed include directory" \
	"-I$DEST/.*include .*-lfatelf" "$flags"
# shellcheck disable=SC2086 # flags are words
check "the header compiles alone, C99, pedantic, warnings as errors" \
	$CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c - $flags <<<'#include <fatelf/libfatelf.h>'
mkdir -p run
# shellcheck disable=SC2086
check "tests/pkgconfig/hello.c builds against the installed library" \
	$CC "${BFLAGS[@]}" -Wall -Wextra -Werror -o run/hello "$top_srcdir/tests/pkgconfig/hello.c" $flags
check_match "... and needs libfatelf.so.0" "\[libfatelf\.so\.0\]" "$(readelf -d run/hello | grep NEEDED)"
(cd run && LD_LIBRARY_PATH=${SO%/*} ./hello) >hello.out 2>hello.err
check_eq "... and runs: every check of the program holds" "0" "$?"
check_match "... printing both records' targets" \
	"record 0: x86_64:64bits:le:sysv:osabiver0.*record 1: aarch64:64bits:le" "$(tr '\n' ' ' <hello.out) $(cat hello.err)"

t_done
