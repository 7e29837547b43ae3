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
declare -A ALLOWED=(
	[lib/basic]=""
	[lib/fatelf]="lib/basic"
	[lib/run]="lib/fatelf lib/basic"
	[lib/bundle]="lib/fatelf lib/basic"
	[lib/varlink]="lib/basic"
	[lib/install]="lib/bundle lib/run lib/fatelf lib/basic"
	[daemon]="lib/install lib/varlink lib/bundle lib/run lib/fatelf lib/basic"
	[client]="lib/varlink lib/basic"
	[tools]="lib/bundle lib/run lib/fatelf lib/basic"
)
FOLDERS=(lib/basic lib/fatelf lib/run lib/bundle lib/varlink lib/install daemon client tools)

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
check_match "lib/ has the six layer folders" "^6$" \
	"$(for d in basic fatelf run bundle varlink install; do [ -d "$top_srcdir/lib/$d" ] && echo; done | wc -l)"
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
# built object that another folder's object defines.
symbol_edges() {
	local d o
	declare -A def=()
	local sym t
	for d in "${FOLDERS[@]}"; do
		for o in "$top_builddir/$d"/*.o; do
			[ -e "$o" ] || continue
			while read -r t sym; do
				def[$sym]=$d
			done < <(nm --defined-only "$o" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $2, $3 }')
		done
	done
	for d in "${FOLDERS[@]}"; do
		for o in "$top_builddir/$d"/*.o; do
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

# Inside daemon/ and lib/install/, calls between files go one way: the loop
# (server.c) calls up only through the callbacks main.c gives it; the
# engine's object opens recovery, which runs a plan's file operations, and
# no helper calls back into a transaction. file_edges DIR PREFIX: "FROM TO"
# for every undefined symbol of an object DIR/PREFIX*.o that another of
# them defines; file_cycles: the files of each loop tsort finds in such
# edges.
file_edges() {
	local o f t sym
	declare -A def=()
	for o in "$top_builddir/$1/$2"*.o; do
		[ -e "$o" ] || continue
		f=${o##*/"$2"}
		f=${f%.o}
		while read -r t sym; do
			def[$sym]=$f
		done < <(nm --defined-only "$o" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $2, $3 }')
	done
	for o in "$top_builddir/$1/$2"*.o; do
		[ -e "$o" ] || continue
		f=${o##*/"$2"}
		f=${f%.o}
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
nfobj=$(find "$top_builddir/daemon" -name 'fatelfd-*.o' | wc -l)
if [ "$nfobj" -lt 10 ]; then
	fail "fatelfd's objects are there" "only $nfobj fatelfd-*.o files under $top_builddir/daemon"
else
	fedges=$(file_edges daemon fatelfd-)
	check_match "fatelfd's files call each other" "^[0-9]{2,}$" "$(printf '%s\n' "$fedges" | wc -l)"
	check_eq "no call cycle between fatelfd's files" "" "$(printf '%s\n' "$fedges" | file_cycles)"
	check_eq "the loop calls nothing above it" "" \
		"$(printf '%s\n' "$fedges" | awk '$1 == "server" && $2 != "log"')"
fi
niobj=$(find "$top_builddir/lib/install" -name 'libinstall_a-*.o' | wc -l)
if [ "$niobj" -lt 10 ]; then
	fail "the install layer's objects are there" "only $niobj libinstall_a-*.o files under $top_builddir/lib/install"
else
	iedges=$(file_edges lib/install libinstall_a-)
	check_match "the install layer's files call each other" "^[0-9]{2,}$" "$(printf '%s\n' "$iedges" | wc -l)"
	check_eq "no call cycle between the install layer's files" "" "$(printf '%s\n' "$iedges" | file_cycles)"
	check_eq "the transaction calls neither the engine's object nor its recovery" "" \
		"$(printf '%s\n' "$iedges" | awk '$1 == "engine_tx" && ($2 == "engine" || $2 == "engine_recover")')"
fi

t_done
