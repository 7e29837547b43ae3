#!/bin/bash
# The license is stated everywhere a user looks (LICENSE, debian/copyright,
# the README, every program's --version, every man page), and the one
# list of Debian packages (deps/packages) is the only one: both README
# commands install from it, and it holds debian/control's Build-Depends.
. "$(dirname "$0")/lib.sh"

t_init license
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL" "$FATELF_RUN"
src=$top_srcdir

# LICENSE: the MIT text, held by the fatelf authors
check "LICENSE exists" test -f "$src/LICENSE"
check_eq "LICENSE starts with the MIT License's title" "MIT License" "$(head -1 "$src/LICENSE")"
check "LICENSE names the fatelf authors" grep -qx 'Copyright (c) 2026 the fatelf authors' "$src/LICENSE"
check "LICENSE has the MIT grant" grep -q 'Permission is hereby granted, free of charge' "$src/LICENSE"
check "LICENSE has the MIT warranty disclaimer" grep -q 'THE SOFTWARE IS PROVIDED "AS IS"' "$src/LICENSE"

# debian/copyright: machine-readable (DEP-5), every file under Expat (MIT)
cr=$src/debian/copyright
check "debian/copyright is DEP-5" grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$cr"
run awk '/^Files: \*$/ { f = 1; next } f && /^License:/ { print $2; exit } /^$/ { f = 0 }' "$cr"
check_eq "debian/copyright: Files: * is under Expat (Debian's name for MIT)" "Expat" "$RUN_OUT"
check "debian/copyright: the copyright holder" grep -qx 'Copyright: 2026 the fatelf authors' "$cr"
check "debian/copyright: a stand-alone Expat paragraph with the grant" \
	sh -c "grep -qx 'License: Expat' '$cr' && grep -q '^ Permission is hereby granted, free of charge' '$cr'"
check "debian/copyright names the SPDX identifier" grep -q 'SPDX identifier' "$cr"
check_nomatch "debian/copyright no longer says the license is unstated" unstated "$(cat "$cr")"

# the README
check "the README has a License section" grep -qx '## License' "$src/README.md"
run sed -n '/^## License$/,/^## /p' "$src/README.md"
check_match "the README's License section names MIT and the authors" 'MIT.*the fatelf authors|the fatelf authors.*MIT' "$(echo "$RUN_OUT" | tr '\n' ' ')"

# every program's --version
for p in "$FATELF" "$FATELFCTL" "$FATELFD" "$FATELF_RUN"; do
	run "$p" --version
	check_eq "$(basename "$p") --version exits 0" 0 "$RC"
	check_match "$(basename "$p") --version names the MIT license" 'License: MIT \(SPDX-License-Identifier: MIT\)' "$RUN_OUT"
	check_match "$(basename "$p") --version names the authors" 'Copyright \(c\) 2026 the fatelf authors' "$RUN_OUT"
done
ln -s "$FATELF" fatelf-info
run ./fatelf-info --version
check_match "fatelf-info --version (a historical name) names the MIT license" 'License: MIT' "$RUN_OUT"

# every man page
for m in "$src"/doc/*.[1-8]; do
	run sed -n '/^\.SH COPYRIGHT$/,/^\.SH /p' "$m"
	check_match "$(basename "$m") has a COPYRIGHT section naming MIT" 'MIT license' "$RUN_OUT"
done

# one list of packages
pk=$src/deps/packages
run awk '!/^[[:space:]]*(#|$)/ && $2 !~ /^(build|demo|tests)$/ { print }' "$pk"
check_eq "every line of deps/packages is a package and build, demo or tests" "" "$RUN_OUT"
run awk '!/^[[:space:]]*(#|$)/ { print $1 }' "$pk"
check_eq "no package is listed twice" "" "$(echo "$RUN_OUT" | sort | uniq -d)"
listed=$RUN_OUT
bd=$(sed -n '/^Build-Depends:/,/^[^ ]/p' "$src/debian/control" | sed 's/^Build-Depends://' |
	grep -v '^[A-Z]' | tr ',' '\n' | sed 's/(.*)//; s/[[:space:]]//g' | grep -v '^$' | grep -v '^debhelper-compat$' | grep -v '^dh-sequence-')
check "debian/control has Build-Depends to compare" test -n "$bd"
for b in $bd; do
	check "Build-Depends $b is in deps/packages" sh -c "printf '%s\n' \"\$1\" | grep -qx '$b'" _ "$listed"
done
check "debhelper (for debhelper-compat and the dh-sequence-* add-ons it provides) is in deps/packages" sh -c "printf '%s\n' \"\$1\" | grep -qx debhelper" _ "$listed"
for s in demo/run.sh tests/run-all.sh; do
	check "$s installs from deps/apt-install.sh" grep -q 'deps/apt-install.sh' "$src/$s"
	check_nomatch "$s has no package list of its own" 'apt-get install' "$(cat "$src/$s")"
done
run grep -rl --include='*.sh' 'apt-get install -y --no-install-recommends [a-z]' "$src/demo" "$src/tests" "$src/.ci" "$src/deps"
check_eq "no script but the fresh-root one installs named packages" "$src/tests/fresh-root.sh" "$RUN_OUT"

t_done
