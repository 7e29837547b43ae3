/*
 * The texts of the engine's errors: a failed transaction's history row,
 * and a diagnostic that names its path or package.
 */
#include <stdio.h>
#include <string.h>

#include "engine_private.h"
#include "text.h"

void eng_diag_text(int code, const fatelf_diag *why, char *buf, size_t size)
{
	const char *msg = fatelf_diag_text(why, code);

	if (why && why->subject[0] && !(why->has & FATELF_DIAG_NAMED))
		snprintf(buf, size, "%s: %s", why->subject, msg);
	else
		snprintf(buf, size, "%s", msg);
}

int eng_diag_name(fatelf_diag *d, int code, const char *subject)
{
	char msg[sizeof(d->msg)];

	if (!d || !subject)
		return code;
	/* The message names its subject when its writer said so. */
	if (!d->msg[0] || !(d->has & FATELF_DIAG_NAMED) || strcmp(d->subject, subject) != 0) {
		/* a long message loses its tail, never its subject */
		if (snprintf(msg, sizeof(msg), "%s: %s", subject,
			     fatelf_diag_text(d, code)) < 0)
			return code;
		memcpy(d->msg, msg, sizeof(msg));
	}
	fatelf_diag_names(d, subject);
	d->code = code;
	return code;
}
