#!/bin/bash
# Function length: no function of the product's C sources (lib/, daemon/,
# fetch/, tools/, client/; not tests/) is longer than 120 lines unless a
# reason is written beside it. Each offender is printed as
#   FILE:LINE NAME: N lines
# where LINE is its opening brace and N counts the lines from the opening
# brace to the closing one.
#
# The tree's style puts a function's opening "{" and closing "}" alone at
# column 0, so a small awk finds every function; a second check fails when
# a function's "{" sits at the end of its signature instead, where the
# measurer would not see it.
#
# The reason mark: the comment right above the function (no blank line
# between it and the signature) holds a line with "Long: " and the reason,
# for example
#   /* Long: one flat switch over the eighty opcodes; each case is a line. */
#   static int op_dispatch(...)
# Keep such exceptions rare; a function that does several steps names them
# as functions instead.
. "$(dirname "$0")/lib.sh"

t_init funclen

LIMIT=120

# measure FILE...: prints "FILE:LINE NAME LENGTH MARK" for every function,
# MARK being 1 when its comment says "Long: ".
measure() {
	awk '
	FNR == 1 { infn = 0; sig = ""; haslong = 0; siglong = 0 }
	infn {
		if ($0 ~ /^}/) {
			print FILENAME ":" start " " name " " (FNR - start + 1) " " mark
			infn = 0; sig = ""; haslong = 0
		}
		next
	}
	/^{[ \t]*$/ {
		if (sig ~ /\(/) {
			s = sig
			sub(/\(.*/, "", s)
			n = split(s, w, /[^A-Za-z0-9_]+/)
			name = w[n]
			if (name == "" && n > 1)
				name = w[n - 1]
			infn = 1; start = FNR; mark = siglong
		}
		sig = ""
		next
	}
	/^[ \t]*$/ { haslong = 0; sig = ""; next }
	/^(\/\*| \*|\/\/)/ && sig == "" {
		if ($0 ~ /Long: [^ ]/)
			haslong = 1
		next
	}
	{
		if (sig == "")
			siglong = haslong
		haslong = 0
		sig = sig " " $0
		if ($0 ~ /[;}][ \t]*$/ || $0 ~ /^#/)
			sig = ""
	}' "$@"
}

# too_long FILE...: the offenders, as "FILE:LINE NAME: N lines".
too_long() {
	measure "$@" | awk -v limit="$LIMIT" '$3 > limit && $4 == 0 { print $1 " " $2 ": " $3 " lines" }'
}

# The measurer must be able to fail: a synthetic 130-line function is
# found, with its name, line and length; the same function with a reason
# beside it passes, and so do short functions and a struct around them.
synth() { # NAME BODYLINES
	printf 'static int\n%s(int a,\n\tint b)\n{\n' "$1"
	for ((i = 0; i < $2; i++)); do printf '\ta += b;\n'; done
	printf '\treturn a;\n}\n'
}
{
	printf '/* A short one. */\nstatic int small(void)\n{\n\treturn 0;\n}\n\n'
	printf 'struct s\n{\n\tint x;\n};\n\n'
	printf '/* Does many things. */\n'
	synth big 127
	printf '\nint proto(void);\n\n'
	printf '/*\n * Long: a synthetic table.\n */\n'
	synth excused 127
	printf '\n/* Long: this mark belongs to nothing. */\n\n'
	synth unexcused 200
} >synth.c
check_eq "the measurer counts big's 130 lines (brace to brace)" "synth.c:16 big 130 0" \
	"$(measure synth.c | grep ' big ')"
check_eq "the measurer names exactly the unexcused long functions" \
	"synth.c:16 big: 130 lines
synth.c:291 unexcused: 203 lines" "$(too_long synth.c)"
printf 'static int f(void) {\n\treturn 0;\n}\n' >brace.c
check_eq "a brace at the end of a signature is found" "brace.c:1" \
	"$(grep -nE '^[A-Za-z_].*\)[ \t]*\{[ \t]*$' brace.c | cut -d: -f1 | sed 's/^/brace.c:/')"

files=()
for d in lib daemon fetch tools client; do
	[ -d "$top_srcdir/$d" ] || continue
	while IFS= read -r f; do
		files+=("$f")
	done < <(find "$top_srcdir/$d" -type f \( -name '*.c' -o -name '*.h' \) | sort)
done
check_match "the product has C sources to measure" "^[1-9][0-9]*$" "${#files[@]}"
check_match "the measurer finds the functions of the tree" "^[1-9][0-9]{2,}$" \
	"$(measure "${files[@]}" | wc -l)"

check_eq "every function's opening brace is alone at column 0" "" \
	"$(grep -nE '^[A-Za-z_].*\)[ \t]*\{[ \t]*$' "${files[@]}" | sed "s|^$top_srcdir/||")"
check_eq "no function is over $LIMIT lines without a 'Long:' reason" "" \
	"$(too_long "${files[@]}" | sed "s|^$top_srcdir/||")"

t_done
