#!/bin/bash
# Errors are data: no code of the product reads the text of an error
# message to learn a fact (a path, a version, a size, an owner). A call
# that searches, compares or scans a msg or message (strstr, strncmp,
# sscanf, ...) with the message among its arguments fails, with its line;
# the facts travel in fatelf_diag's fields and in typed reply parameters.
. "$(dirname "$0")/lib.sh"

t_init msgtext

READERS='strstr|strcasestr|strncmp|strncasecmp|strcmp|strcasecmp|sscanf|memmem|strchr|strrchr|strspn|strcspn|fatelf_text_names'
PATTERN="(^|[^A-Za-z0-9_])($READERS)[[:space:]]*\\(([^;]*[^A-Za-z0-9_])?(msg|message)([^A-Za-z0-9_]|\$)"


# scan FILE...: prints the offending lines as FILE:LINE: TEXT. String and
# character literals are blanked first, so a JSON key "message" is not a
# message; comment lines may say anything.
scan() {
	local f
	for f in "$@"; do
		sed -E "s/'(\\\\.|[^\\\\'])'/''/g; s/\"(\\\\.|[^\\\\\"])*\"/\"\"/g" "$f" |
			grep -nE "$PATTERN" | grep -vE '^[0-9]+:[[:space:]]*(/\*|\*|//)' |
			sed "s|^|${f#"$top_srcdir"/}:|"
	done
}

# The scanner must be able to fail: it has to find these, and leave the
# rest alone.
cat >bad.c <<'SRC'
static void f(const fatelf_diag *d, const char *message, char *buf)
{
	if (strstr(d->msg, "the file offers: "))
		return;
	sscanf(message, ": %llu bytes needed", &n);
	if (strncmp(msg, package, n) == 0)
		return;
	x = fatelf_text_names(d->msg, path);
}
SRC
cat >good.c <<'SRC'
/* strstr(d->msg, ...) is what this test refuses. */
static void g(const fatelf_diag *d, json_object *p, char *buf, size_t n)
{
	snprintf(buf, n, "%s: %s", d->subject, d->msg);
	if (strcmp(ctl_json_str(p, "owner", ""), "base") == 0)
		return;
	if (strcmp(key, "message") == 0 || c == '"')
		return;
	json_set_str(p, "message", d->msg);
}
SRC
check_eq "the scanner finds four readers of a message in a sample" 4 "$(scan bad.c | wc -l)"
check_eq "the scanner leaves writers and JSON keys alone" "" "$(scan good.c)"

files=()
for d in lib daemon client tools; do
	while IFS= read -r f; do
		files+=("$f")
	done < <(find "$top_srcdir/$d" -type f \( -name '*.c' -o -name '*.h' \) -print | sort)
done
if [ "${#files[@]}" -gt 20 ]; then
	pass "found ${#files[@]} C files to scan"
else
	fail "found C files to scan" "${#files[@]} under $top_srcdir"
fi
# No exceptions: whether a message names its subject already is a flag
# of fatelf_diag (FATELF_DIAG_NAMED), set by whoever wrote the message.
check_eq "no code in lib/ daemon/ client/ tools/ reads a message's text" "" "$(scan "${files[@]}")"

t_done
