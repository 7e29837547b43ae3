#!/bin/bash
# The layer graph. Every folder of lib/ is a layer, and each program sits on
# the layers it uses. Two views are checked against one allowed graph:
#   - the sources: every #include "x.h" of a .c or .h file is an edge from
#     its folder to the folder that holds x.h;
#   - the objects: every undefined symbol of a built .o is an edge from its
#     folder to the folder whose object defines it.
# An edge the graph does not list fails, with the file and the header or
# symbol that makes it.
. "$(dirname "$0")/lib.sh"

t_init layers

# FOLDER: the folders it may use (itself is always allowed).
# include/fatelf is the installed API of the format layer (libfatelf.so):
# it uses only lib/basic's errors.h (installed beside it), and lib/fatelf
# and everything above it may use it.
declare -A ALLOWED=(
	[include/fatelf]="lib/basic"
	[lib/basic]=""
	[lib/fatelf]="include/fatelf lib/basic"
	[lib/run]="include/fatelf lib/fatelf lib/basic"
	[lib/json]="include/fatelf lib/fatelf lib/basic"
	[lib/bundle]="lib/json include/fatelf lib/fatelf lib/basic"
	[lib/unify]="lib/bundle lib/json include/fatelf lib/fatelf lib/basic"
	[lib/repo]="lib/bundle lib/json include/fatelf lib/fatelf lib/basic"
	[lib/varlink]="lib/basic"
	[lib/install]="lib/repo lib/bundle lib/json lib/run include/fatelf lib/fatelf lib/basic"
	[daemon]="lib/install lib/varlink lib/repo lib/bundle lib/json lib/run include/fatelf lib/fatelf lib/basic"
	[fetch]="lib/repo lib/bundle lib/json include/fatelf lib/fatelf lib/basic"
	[client]="lib/varlink lib/basic"
	[tools]="lib/install lib/unify lib/repo lib/bundle lib/json lib/run include/fatelf lib/fatelf lib/basic"
)
FOLDERS=(include/fatelf lib/basic lib/fatelf lib/run lib/json lib/bundle lib/unify lib/repo lib/varlink lib/install
	daemon fetch client tools)

allowed() { # FROM TO
	[ "$1" = "$2" ] && return 0
	case " ${ALLOWED[$1]:-} " in *" $2 "*) return 0 ;; esac
	return 1
}

# Which folder holds each header; a header name is unique in the tree.
declare -A HOME_OF=()
dups=""
for d in "${FOLDERS[@]}"; do
	for h in "$top_srcdir/$d"/*.h; do
		[ -e "$h" ] || continue
		b=${h##*/}
		[ -n "${HOME_OF[$b]:-}" ] && dups+="$b (${HOME_OF[$b]} and $d) "
		HOME_OF[$b]=$d
	done
done
check_eq "every header name is unique across the layers" "" "$dups"
check_match "lib/ has the nine layer folders" "^9$" \
	"$(for d in basic fatelf run json bundle unify repo varlink install; do [ -d "$top_srcdir/lib/$d" ] && echo; done | wc -l)"
check_eq "no source sits in lib/ outside a layer folder" "" \
	"$(find "$top_srcdir/lib" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) -printf '%f ')"

# include_edges: "FROM TO FILE HEADER" for every quoted include of the tree.
include_edges() {
	local d f h
	for d in "${FOLDERS[@]}"; do
		for f in "$top_srcdir/$d"/*.[ch]; do
			[ -e "$f" ] || continue
			sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
				while IFS= read -r h; do
					echo "$d ${HOME_OF[${h##*/}]:-?} ${f#"$top_srcdir"/} $h"
				done
		done
	done
}

# bad_edges: the lines of stdin ("FROM TO WHERE WHAT") that break the graph.
bad_edges() {
	local from to where what
	while read -r from to where what; do
		if [ "$to" = "?" ]; then
			echo "$where: $what is in no layer folder"
		elif ! allowed "$from" "$to"; then
			echo "$where: $from may not use $to ($what)"
		fi
	done
}

# The checker must be able to fail: an edge upwards and an unknown header.
check_eq "the checker refuses an upward edge and a stray header" \
	"lib/fatelf/x.c: lib/fatelf may not use lib/install (engine.h)
client/y.c: nowhere.h is in no layer folder" \
	"$(printf '%s\n' "lib/fatelf lib/install lib/fatelf/x.c engine.h" "client lib/varlink client/y.c varlink.h" \
		"client ? client/y.c nowhere.h" | bad_edges)"

edges=$(include_edges)
check_match "the sources have include edges to check" "^[0-9]{3,}$" "$(printf '%s\n' "$edges" | wc -l)"
check_eq "every #include follows the layer graph" "" "$(printf '%s\n' "$edges" | bad_edges)"

# symbol_edges: "FROM TO OBJECT SYMBOL" for every undefined symbol of a
# built object that another folder's object defines (libtool's objects of
# libfatelf.so, in .libs/, too).
symbol_edges() {
	local d o
	declare -A def=()
	local sym t
	for d in "${FOLDERS[@]}"; do
		for o in "$top_builddir/$d"/*.o "$top_builddir/$d"/.libs/*.o; do
			[ -e "$o" ] || continue
			while read -r t sym; do
				def[$sym]=$d
			done < <(nm --defined-only "$o" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $2, $3 }')
		done
	done
	for d in "${FOLDERS[@]}"; do
		for o in "$top_builddir/$d"/*.o "$top_builddir/$d"/.libs/*.o; do
			[ -e "$o" ] || continue
			nm --undefined-only "$o" 2>/dev/null | awk '{ print $NF }' | while read -r sym; do
				[ -n "${def[$sym]:-}" ] && [ "${def[$sym]}" != "$d" ] && echo "$d ${def[$sym]} ${o#"$top_builddir"/} $sym"
			done
		done
	done
}

nobj=$(find "$top_builddir/lib" -name '*.o' | wc -l)
if [ "$nobj" -lt 20 ]; then
	fail "the built layers' objects are there" "only $nobj .o files under $top_builddir/lib"
else
	sedges=$(symbol_edges)
	check_match "the objects have cross-folder symbol edges" "^[0-9]{3,}$" "$(printf '%s\n' "$sedges" | wc -l)"
	check_eq "every symbol an object uses comes from an allowed layer" "" "$(printf '%s\n' "$sedges" | bad_edges)"
	check_eq "the client links nothing from the format, bundle or install layers" "" \
		"$(printf '%s\n' "$sedges" | awk '$1 == "client" && $2 != "lib/varlink" && $2 != "lib/basic"')"
fi

# The nevers: edges the graph must not gain, each with its reason. Each is
# checked against the graph itself, so that widening ALLOWED to permit one
# fails here too.
NEVERS=(
	"lib/bundle lib/repo the bundle format knows no repository"
	"lib/bundle lib/unify the bundle format knows nothing of unify"
	"lib/unify lib/repo unify knows no repository"
	"lib/repo lib/install the repository knows no engine"
	"lib/repo lib/unify the repository knows nothing of unify"
	"fetch lib/install the network programs link nothing of the engine or the store"
	"fetch daemon the network programs link nothing of the daemon"
	"daemon fetch the daemon runs the download helper, it does not link it"
	"daemon lib/unify the daemon does not unify"
	"client lib/bundle the client knows only Varlink"
)
broken=""
for n in "${NEVERS[@]}"; do
	read -r from to why <<<"$n"
	allowed "$from" "$to" && broken+="$from -> $to is allowed but $why; "
done
check_eq "the graph allows none of the nevers" "" "$broken"

# doc/design.md opens with the map: a table row per folder whose "may use"
# column must be that folder's ALLOWED set, and the nevers as a list, so
# that the documentation and this graph cannot disagree.
# map_rows FILE: "FOLDER USED..." for each row of the table under "## The
# map" (the backquoted names of its third column), "! LINE" for a row
# that is not four cells.
map_rows() {
	awk -F'|' '
		/^## / { inmap = ($0 == "## The map"); next }
		inmap && /^\| `/ {
			if (NF != 6) { print "! " $0; next }
			f = $2; gsub(/[ `]/, "", f)
			u = $4; out = ""
			while (match(u, /`[^`]*`/)) {
				out = out " " substr(u, RSTART + 1, RLENGTH - 2)
				u = substr(u, RSTART + RLENGTH)
			}
			print f out
		}' "$1"
}
# map_mismatches: a line naming the folder for each row of stdin that
# differs from the graph, each folder of the graph without a row, and
# each row twice or of no folder.
map_mismatches() {
	local f uses got want
	declare -A seen=()
	while read -r f uses; do
		if [ "$f" = "!" ]; then
			echo "doc/design.md's map has a row that is not four cells: $uses"
			continue
		fi
		if [ -z "${ALLOWED[$f]+set}" ]; then
			echo "$f: a row of doc/design.md's map, but no folder of the graph"
			continue
		fi
		[ -n "${seen[$f]:-}" ] && echo "$f: two rows in doc/design.md's map"
		seen[$f]=1
		# shellcheck disable=SC2086 # word splitting is the point
		got=$(printf '%s\n' $uses | LC_ALL=C sort | tr '\n' ' ')
		# shellcheck disable=SC2086
		want=$(printf '%s\n' ${ALLOWED[$f]} | LC_ALL=C sort | tr '\n' ' ')
		[ "$got" = "$want" ] ||
			echo "$f: doc/design.md says it may use '${got% }', the graph '${want% }'"
	done
	for f in "${FOLDERS[@]}"; do
		[ -n "${seen[$f]:-}" ] || echo "$f: no row in doc/design.md's map"
	done
}
# map_nevers FILE: "FROM TO" of each "- `FROM` -> `TO`: why" line of the map.
map_nevers() {
	awk '/^## / { inmap = ($0 == "## The map"); next }
		inmap && /^- `[^`]*` -> `[^`]*`:/ { split($0, a, "`"); print a[2], a[4] }' "$1"
}

design=$top_srcdir/doc/design.md
check "doc/design.md is there" test -f "$design"
check_match "doc/design.md's map has a row for each folder" "^${#FOLDERS[@]}$" "$(map_rows "$design" | wc -l)"
# The check must be able to fail: a map in the same form, made from the
# graph, passes; with a row short of one folder and a row gone, it names both.
fake_map() {
	local f x u
	printf '## The map\n\n| folder | holds | may use | links |\n|---|---|---|---|\n'
	for f in "${FOLDERS[@]}"; do
		u=""
		for x in ${ALLOWED[$f]}; do u+="\`$x\`, "; done
		echo "| \`$f\` | what it holds | ${u%, } | |"
	done
	printf '\n## Layers\n'
}
check_eq "the map check passes a map made from the graph" "" "$(map_rows <(fake_map) | map_mismatches)"
check_eq "the map check names a folder whose row differs, and one without a row" \
	"lib/run: doc/design.md says it may use 'include/fatelf lib/fatelf', the graph 'include/fatelf lib/basic lib/fatelf'
tools: no row in doc/design.md's map" \
	"$(map_rows <(fake_map | sed -e '/^| `lib\/run`/s/, `lib\/basic`//' -e '/^| `tools`/d') | map_mismatches)"
check_eq "doc/design.md's map says what each folder may use, as the graph does" "" \
	"$(map_rows "$design" | map_mismatches)"
nevers_here=$(for n in "${NEVERS[@]}"; do read -r from to _ <<<"$n"; echo "$from $to"; done | LC_ALL=C sort)
check_match "doc/design.md's map lists nevers" "^${#NEVERS[@]}$" "$(map_nevers "$design" | wc -l)"
check_eq "doc/design.md's map lists the nevers this test holds, and no other" "" \
	"$(LC_ALL=C comm -3 <(echo "$nevers_here") <(map_nevers "$design" | LC_ALL=C sort) |
		awk -F'\t' '{ if ($1 == "") { split($2, e, " "); print e[1] " -> " e[2] ": in doc/design.md, not in NEVERS" }
			else { split($1, e, " "); print e[1] " -> " e[2] ": in NEVERS, not in doc/design.md" } }')"

# curl: only fetch/ includes it, only fetch/'s objects call it, and only
# the two network programs load it; they in turn load no SQLite.
check_eq "only fetch/ includes curl" "" \
	"$(grep -l '^[[:space:]]*#[[:space:]]*include[[:space:]]*<curl/' -r "$top_srcdir/lib" "$top_srcdir/daemon" \
		"$top_srcdir/tools" "$top_srcdir/client" "$top_srcdir/include" 2>/dev/null | sed "s|^$top_srcdir/||")"
curlobjs=""
for d in "${FOLDERS[@]}"; do
	[ "$d" = fetch ] && continue
	for o in "$top_builddir/$d"/*.o "$top_builddir/$d"/.libs/*.o; do
		[ -e "$o" ] || continue
		nm --undefined-only "$o" 2>/dev/null | grep -q ' curl_' && curlobjs+="${o#"$top_builddir"/} "
	done
done
check_eq "no object outside fetch/ calls curl" "" "$curlobjs"
needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
for p in daemon/fatelfd tools/fatelf tools/fatelf-bundle tools/fatelf-root client/fatelfctl tools/fatelf-run; do
	if [ -x "$top_builddir/$p" ]; then
		check_nomatch "$p does not load libcurl" "libcurl" "$(needed "$top_builddir/$p")"
	else
		fail "$p is built" "no $top_builddir/$p"
	fi
done
for p in fetch/fatelf-fetch fetch/fatelf-oci; do
	if [ -x "$top_builddir/$p" ]; then
		check_match "$p loads libcurl" "libcurl" "$(needed "$top_builddir/$p")"
		check_nomatch "$p loads no SQLite" "libsqlite" "$(needed "$top_builddir/$p")"
	else
		fail "$p is built" "no $top_builddir/$p"
	fi
done

# Inside a layer, calls between files go one way too. file_edges OBJ...:
# "FROM TO" for every undefined symbol of one object that another of the
# given objects defines (each file named by its object's stem, without
# automake's per-target prefix); file_cycles: the files of each loop that
# tsort finds in such edges.
file_edges() {
	local o f t sym
	declare -A def=()
	stem() { f=${1##*/}; f=${f%.o}; f=${f#*-}; }
	for o in "$@"; do
		[ -e "$o" ] || continue
		stem "$o"
		while read -r t sym; do
			def[$sym]=$f
		done < <(nm --defined-only "$o" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $2, $3 }')
	done
	for o in "$@"; do
		[ -e "$o" ] || continue
		stem "$o"
		nm --undefined-only "$o" 2>/dev/null | awk '{ print $NF }' | while read -r sym; do
			[ -n "${def[$sym]:-}" ] && [ "${def[$sym]}" != "$f" ] && echo "$f ${def[$sym]}"
		done
	done | sort -u
}
file_cycles() {
	tsort 2>&1 >/dev/null | sed -n 's/^tsort: \([^ ]*\)$/\1/p' | sort -u | tr '\n' ' '
}

check_eq "the cycle check finds a loop of three files" "a b c " \
	"$(printf '%s\n' "a b" "b c" "c a" "c d" | file_cycles)"

# The daemon: the loop (server.c) calls up only through the callbacks
# main.c gives it.
dobjs=("$top_builddir"/daemon/fatelfd-main.o "$top_builddir"/daemon/libfatelfd_a-*.o)
nfobj=0
for o in "${dobjs[@]}"; do [ -e "$o" ] && nfobj=$((nfobj + 1)); done
if [ "$nfobj" -lt 10 ]; then
	fail "fatelfd's objects are there" "only $nfobj of main.o and libfatelfd_a-*.o under $top_builddir/daemon"
else
	fedges=$(file_edges "${dobjs[@]}")
	check_match "fatelfd's files call each other" "^[0-9]{2,}$" "$(printf '%s\n' "$fedges" | wc -l)"
	check_eq "no call cycle between fatelfd's files" "" "$(printf '%s\n' "$fedges" | file_cycles)"
	check_eq "the loop calls nothing above it" "" \
		"$(printf '%s\n' "$fedges" | awk '$1 == "server" && $2 != "log"')"
fi

# The library layers (their static archives' objects).
for d in lib/basic lib/fatelf lib/run lib/json lib/bundle lib/unify lib/repo lib/varlink lib/install; do
	objs=("$top_builddir/$d"/lib*_a-*.o)
	if [ ! -e "${objs[0]}" ]; then
		fail "$d's objects are there" "no lib*_a-*.o under $top_builddir/$d"
		continue
	fi
	check_eq "no call cycle between the files of $d" "" "$(file_edges "${objs[@]}" | file_cycles)"
done
iedges=$(file_edges "$top_builddir"/lib/install/lib*_a-*.o)
check_eq "the transaction calls neither the engine's object nor its recovery" "" \
	"$(printf '%s\n' "$iedges" | awk '$1 == "engine_tx" && ($2 == "engine" || $2 == "engine_recover")')"
check_match "host.c uses target.c, not the reverse" "^host target$" \
	"$(file_edges "$top_builddir"/lib/fatelf/lib*_a-host.o "$top_builddir"/lib/fatelf/lib*_a-target.o)"

t_done
