#!/bin/bash
# The banned-function check: like curl, no sprintf, vsprintf, strcpy,
# strcat, strtok, gets, or sscanf with an unbounded %s or %[ in any C
# source of the product or its tests. Each offending line is printed.
. "$(dirname "$0")/lib.sh"

t_init banned

BANNED='(^|[^A-Za-z0-9_])(sprintf|vsprintf|strcpy|strcat|strtok|gets)[[:space:]]*\('
UNBOUNDED_SCANF='(^|[^A-Za-z0-9_])sscanf[[:space:]]*\(.*%(\[|s)'

# scan FILE...: prints offending lines as FILE:LINE: TEXT. Lines that are
# comments (starting with /*, * or //) may name a banned function.
scan() {
	grep -HnE "$BANNED|$UNBOUNDED_SCANF" -- "$@" 2>/dev/null |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/\*|\*|//)'
}

# The scanner must be able to fail: it has to find these.
cat >bad.c <<'SRC'
static void f(char *d, const char *s)
{
	sprintf(d, "%d", 1);
	strcpy(d, s);
	strcat (d, s);
	sscanf(s, "%s", d);
	sscanf(s, "%[a-z]", d);
}
SRC
check_eq "the scanner finds five banned calls in a sample" 5 "$(scan bad.c | wc -l)"
cat >good.c <<'SRC'
/* sprintf() is banned; use snprintf. */
static void g(char *d, size_t n, const char *s, char *line, FILE *f)
{
	snprintf(d, n, "%s", s);
	vsnprintf(d, n, "%s", NULL);
	strtok_r(d, ",", &s);
	fgets(line, 10, f);
	sscanf(s, "%63s %d", d, &n);
}
SRC
check_eq "the scanner leaves bounded calls alone" 0 "$(scan good.c | wc -l)"

files=()
for d in lib tools daemon client tests; do
	[ -d "$top_srcdir/$d" ] || continue
	while IFS= read -r f; do
		files+=("$f")
	done < <(find "$top_srcdir/$d" -path "$top_srcdir/tests/work" -prune -o \
		-type f \( -name '*.c' -o -name '*.h' \) -print | sort)
done
if [ "${#files[@]}" -gt 0 ]; then
	pass "found ${#files[@]} C files to scan"
else
	fail "found C files to scan" "none under $top_srcdir"
fi
hits=$(scan "${files[@]}")
if [ -z "$hits" ]; then
	pass "no banned function in lib/ tools/ daemon/ client/ tests/"
else
	fail "no banned function in lib/ tools/ daemon/ client/ tests/" "$hits"
fi

t_done
