#!/bin/bash
# Package dependencies (manifest format 2, fatbundle(5) section 2.9) as
# fatelf bundle create writes them: --depends entries in the manifest's
# bytes, refusals of a bad entry naming it and the rule, a bundle without
# dependencies still format 1, and a .deb's Depends (built by dpkg-deb)
# mapped where the dependency is a fat package (--fat-packages), the
# others reported one line each and left out, or kept (--keep-depends).
. "$(dirname "$0")/lib.sh"

t_init deps
t_require_exec "$FATELF"
t_require_tool jq dpkg-deb bsdtar

manifest() { bsdtar -xOf "$1" fatbundle.json; }

mkdir -p tree/usr/share/pa && echo data >tree/usr/share/pa/f

# --depends: sorted by name in the manifest, format 2.
check "bundle create --depends" "$FATELF" bundle create -o pa.fatbundle --name pa --version 1.0 \
	--depends 'pc' --depends 'pb (>= 2)' tree
check_eq "... format 2" 2 "$(manifest pa.fatbundle | jq .format)"
check_eq "... depends sorted by name, as given" '["pb (>= 2)","pc"]' \
	"$(manifest pa.fatbundle | jq -c .package.depends)"
check "... the bundle verifies" "$FATELF" bundle verify pa.fatbundle
run "$FATELF" bundle inspect pa.fatbundle
check_match "... inspect shows them" '^depends: +pb \(>= 2\), pc$' "$(grep '^depends:' .run.out)"
run "$FATELF" bundle inspect --json pa.fatbundle
check_eq "... and so does inspect --json" '["pb (>= 2)","pc"]' "$(jq -c .package.depends .run.out)"

# Without dependencies the bundle stays format 1, without the field.
check "bundle create without --depends" "$FATELF" bundle create -o plain.fatbundle --name pa --version 1.0 tree
check_eq "... format 1" 1 "$(manifest plain.fatbundle | jq .format)"
check_eq "... no depends field" false "$(manifest plain.fatbundle | jq '.package | has("depends")')"

# Refusals name the entry and the rule, and leave no output.
# (exit 1: a package name or version rule, 2: the form of the entry)
for case in '2 pb (=> 2)' '1 pb(>= 2)' '1 pb (>= a1)' '1 Pb' '2 pa'; do
	bad=${case#? }
	check_exit "${case%% *}" "--depends '$bad' is refused" "$FATELF" bundle create -o bad.fatbundle --name pa \
		--version 1.0 --depends "$bad" tree
	check_match "... naming it" "dependency '$(printf '%s' "$bad" | sed 's/[][().*+?^$|\\]/\\&/g')'" "$RUN_ERR"
done
check_match "... a wrong operator by the operators" 'not one of <<, <=, =, >=, >>' \
	"$("$FATELF" bundle create -o bad.fatbundle --name pa --version 1.0 --depends 'pb (=> 2)' tree 2>&1)"
check_match "... the package itself" 'names the package itself' \
	"$("$FATELF" bundle create -o bad.fatbundle --name pa --version 1.0 --depends 'pa' tree 2>&1)"
check_match "... a name twice" "package 'pb' is named twice" \
	"$("$FATELF" bundle create -o bad.fatbundle --name pa --version 1.0 --depends pb --depends 'pb (= 1)' tree 2>&1)"
check_eq "... no output left" no "$([ -e bad.fatbundle ] && echo yes || echo no)"

# A .deb's Depends: mapped for fat packages, the rest reported.
mkdir -p deb/DEBIAN deb/usr/share/app
echo app >deb/usr/share/app/f
cat >deb/DEBIAN/control <<'CTL'
Package: app
Version: 1.0-1
Architecture: amd64
Maintainer: M <m@example.org>
Depends: libc6 (>= 2.34), fatlib:any (>= 2), alt-a | alt-b,
 fattool, old (> 1)
Description: an app
CTL
dpkg-deb --root-owner-group --build deb app_amd64.deb >/dev/null || fail "dpkg-deb builds the .deb"
check "bundle create --from .deb --fat-packages" "$FATELF" bundle create -o app.fatbundle \
	--from amd64=app_amd64.deb --fat-packages fatlib,fattool --fat-packages old
check_eq "... the fat packages' relations kept, qualifier dropped, '>' read as '>='" \
	'["fatlib (>= 2)","fattool","old (>= 1)"]' "$(manifest app.fatbundle | jq -c .package.depends)"
check_eq "... one warning line each for the others" 2 "$(printf '%s\n' "$RUN_ERR" | grep -c 'left out')"
check_match "... naming libc6" "app_amd64.deb: Depends 'libc6 \(>= 2.34\)' left out: 'libc6' is not a fat package" "$RUN_ERR"
check_match "... and the alternatives" "Depends 'alt-a \| alt-b' left out: not one package" "$RUN_ERR"

check "--keep-depends keeps every one-package relation" "$FATELF" bundle create -o keep.fatbundle \
	--from amd64=app_amd64.deb --keep-depends --depends 'libc6 (>= 2.36)'
check_eq "... a --depends of the same name wins" \
	'["fatlib (>= 2)","fattool","libc6 (>= 2.36)","old (>= 1)"]' "$(manifest keep.fatbundle | jq -c .package.depends)"
check_eq "... alternatives still left out, and said so" 1 "$(printf '%s\n' "$RUN_ERR" | grep -c 'left out')"

# --repo: the packages a repository offers are the fat ones
mkdir -p rt/opt/fatlib && echo lib >rt/opt/fatlib/VERSION
"$FATELF" bundle create -o fatlib-2.fatbundle --name fatlib --version 2 rt >/dev/null ||
	fail "bundle create fatlib" ""
check "a repository offering fatlib" "$FATELF" repo init www
check "... repo add fatlib 2" "$FATELF" repo add www fatlib-2.fatbundle
check "bundle create --from .deb --repo www" "$FATELF" bundle create -o app-repo.fatbundle \
	--from amd64=app_amd64.deb --repo www
check_eq "... the relation on fatlib, which the repository offers, kept" '["fatlib (>= 2)"]' \
	"$(manifest app-repo.fatbundle | jq -c .package.depends)"
check_match "... fattool, which it does not offer, left out and said so" \
	"Depends 'fattool' left out: 'fattool' is not a fat package" "$RUN_ERR"
check_match "... as a file:// URL too" '\["fatlib \(>= 2\)","old \(>= 1\)"\]' \
	"$("$FATELF" bundle create -o app-url.fatbundle --from amd64=app_amd64.deb --repo "file://$T_WORK/www" \
		--fat-packages old 2>/dev/null >/dev/null && manifest app-url.fatbundle | jq -c .package.depends)"
run "$FATELF" bundle create -o none.fatbundle --from amd64=app_amd64.deb --repo nosuch
check_eq "a --repo that is not there: exit 3 (as a source that is not there), no bundle" "3 nosuch" \
	"$RC $(test -e none.fatbundle && echo left || echo nosuch)"
check_match "... naming it" "nosuch" "$RUN_ERR"

check_exit 2 "--fat-packages without --from is a usage error" "$FATELF" bundle create -o x.fatbundle \
	--name pa --version 1.0 --fat-packages pb tree

t_done
