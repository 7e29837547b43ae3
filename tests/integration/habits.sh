#!/bin/bash
# The code returned and the diag agree (shared/STYLE.md). Running out of
# memory is said in one place, lib/basic/diag.c: fatelf_diag_oom fills a
# diag with -ENOMEM and its one wording, fatelf_diag_text gives that
# wording without one. And a failure's text is read one way,
# fatelf_diag_text(d, r), which shows d's message only while d holds r:
# a hand-made "d.msg[0] ? d.msg : fatelf_strerror(r)" shows a message a
# diag kept from an earlier failure, tolerated or not, as the cause of r.
#
# Two scans of the product's sources (lib/ daemon/ fetch/ tools/ client/),
# each failing with the lines it finds:
#  - no string literal says "out of memory" outside lib/basic/diag.c;
#  - no code chooses between a diag's msg and another text by hand.
. "$(dirname "$0")/lib.sh"

t_init habits

# oom_literals FILE...: the lines whose string literals say "out of
# memory", as FILE:LINE: TEXT. Comment lines may say anything.
oom_literals() {
	perl -ne '
		next if m{^\s*(/\*|\*|//)};
		while (/"((?:\\.|[^"\\])*)"/g) {
			if ($1 =~ /out of memory/i) { print "$ARGV:$.: $_"; last }
		}
	} continue { close ARGV if eof' "$@" | sed "s|^$top_srcdir/||"
}

# msg_choices FILE...: the lines that test a diag's msg for emptiness to
# pick it or something else (d.msg[0] ? ..., d->msg[0] ? ...). String
# literals are blanked first; comment lines may say anything.
msg_choices() {
	local f
	for f in "$@"; do
		sed -E "s/\"(\\\\.|[^\\\\\"])*\"/\"\"/g" "$f" |
			grep -nE '(\.|->)msg\[0\][[:space:]]*\?' | grep -vE '^[0-9]+:[[:space:]]*(/\*|\*|//)' |
			sed "s|^|${f#"$top_srcdir"/}:|"
	done
}

# The scanners must be able to fail: they have to find these, and leave
# the rest alone.
cat >bad.c <<'SRC'
static int f(fatelf_diag *d, struct job *j, int r)
{
	if (!p)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	log_error("fatelfd: %s: %s", path, d->msg[0] ? d->msg : fatelf_strerror(r));
	fprintf(stderr, "%s\n", d.msg[0] ? d.msg : strerror(-r));
	reply(c, j->diag.msg[0]? j->diag.msg : "failed");
	return ctl_error(EXIT_SYSTEM, "fatelfctl: Out of memory\n");
}
SRC
cat >good.c <<'SRC'
/* NULL when out of memory; "d.msg[0] ? d.msg : ..." is what is refused. */
static int g(fatelf_diag *d, int r)
{
	if (!p)
		return fatelf_diag_oom(d);
	log_error("fatelfd: %s", fatelf_diag_text(d, r));
	printf("\"out\" of \"memory\" %s\n", msg[0] ? msg : "none");
	puts("d->msg[0] ? d->msg : x");
	return 0;
}
SRC
check_eq "the scanner finds two hand-typed out-of-memory texts in a sample" \
	"bad.c:4: bad.c:8:" "$(oom_literals bad.c | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ $//')"
check_eq "the scanner finds three hand-made choices of a message in a sample" 3 "$(msg_choices bad.c | wc -l)"
check_eq "the scanners leave comments, literals and fatelf_diag_text alone" "" \
	"$(oom_literals good.c; msg_choices good.c)"

files=()
for d in lib daemon fetch tools client; do
	while IFS= read -r f; do
		files+=("$f")
	done < <(find "$top_srcdir/$d" -type f \( -name '*.c' -o -name '*.h' \) -print | sort)
done
if [ "${#files[@]}" -gt 20 ]; then
	pass "found ${#files[@]} C files to scan"
else
	fail "found C files to scan" "${#files[@]} under $top_srcdir"
fi
others=()
for f in "${files[@]}"; do
	[ "$f" = "$top_srcdir/lib/basic/diag.c" ] || others+=("$f")
done
check_eq "no code but lib/basic/diag.c spells out of memory (fatelf_diag_oom, fatelf_diag_text)" "" \
	"$(oom_literals "${others[@]}")"
check_eq "no code picks a diag's message by hand (fatelf_diag_text)" "" "$(msg_choices "${files[@]}")"

t_done
