/*
 * What fatelfctl prints, shared by every verb: the one-line errors (the
 * daemon's error names turned into words, with their exit status),
 * aligned tables, sizes and times for people, JSON for programs, the
 * progress bar on a terminal, and a transaction's result in words. Keeping
 * them here is what makes every verb look and fail the same way.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "diag.h"
#include "fatelfctl.h"
#include "macro.h"

#define ANSI_BOLD "\033[1m"
#define ANSI_RED "\033[1;31m"
#define ANSI_RESET "\033[0m"

bool ctl_color(FILE *f)
{
	const char *no = getenv("NO_COLOR");

	if (no && no[0])
		return false;
	return isatty(fileno(f));
}

/* ------------------------------------------------------------ errors */

static void error_line(const char *raw)
{
	bool color = ctl_color(stderr);
	/* Names in a reply or on the command line are anybody's. */
	_cleanup_free_ char *shown = fatelf_text_display(raw);
	const char *msg = shown ? shown : fatelf_diag_text(NULL, -ENOMEM);

	ctl_progress_clear();
	if (ctl_arg.verb)
		fprintf(stderr, "fatelfctl: %s: %s%s%s\n", ctl_arg.verb, color ? ANSI_RED : "", msg,
			color ? ANSI_RESET : "");
	else
		fprintf(stderr, "fatelfctl: %s%s%s\n", color ? ANSI_RED : "", msg, color ? ANSI_RESET : "");
}

/* With --json, an error of fatelfctl's own as an object on stdout, in the
 * shape of a daemon's error reply; params (taken) gains the message. */
static void error_json(const char *name, json_object *params, const char *msg)
{
	json_object *o;

	if (!ctl_arg.json) {
		json_object_put(params);
		return;
	}
	if (!params)
		params = json_object_new_object();
	o = json_object_new_object();
	if (o && params) {
		json_object_object_add(params, "message", json_object_new_string(msg));
		json_object_object_add(o, "error", json_object_new_string(name));
		json_object_object_add(o, "parameters", params);
		params = NULL;
		ctl_json_line(o);
	}
	json_object_put(params);
	json_object_put(o);
}

static const char *local_error_name(int status)
{
	switch (status) {
	case EXIT_USAGE:
		return CTL_ERROR_USAGE;
	case EXIT_SYSTEM:
		return CTL_ERROR_SYSTEM;
	case EXIT_DENIED:
		return CTL_ERROR_DENIED;
	}
	return CTL_ERROR_FAILED;
}

static int error_va(int status, const char *name, json_object *params, const char *fmt,
		    va_list ap) __attribute__((format(printf, 4, 0)));
static int error_va(int status, const char *name, json_object *params, const char *fmt,
		    va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	error_json(name ? name : local_error_name(status), params, msg);
	error_line(msg);
	return status;
}

int ctl_error(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	status = error_va(status, NULL, NULL, fmt, ap);
	va_end(ap);
	return status;
}

void ctl_note(const char *fmt, ...)
{
	char msg[1024];
	_cleanup_free_ char *shown = NULL;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	shown = fatelf_text_display(msg);
	fprintf(stderr, "fatelfctl: %s\n", shown ? shown : msg);
}

int ctl_oom(void)
{
	return ctl_error(EXIT_SYSTEM, "%s", fatelf_diag_text(NULL, -ENOMEM));
}

int ctl_error_data(int status, const char *name, json_object *params, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	status = error_va(status, name, params, fmt, ap);
	va_end(ap);
	return status;
}

int ctl_usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_json(CTL_ERROR_USAGE, NULL, msg);
	if (ctl_arg.verb)
		fprintf(stderr, "fatelfctl: %s: %s (see 'fatelfctl %s --help')\n", ctl_arg.verb, msg,
			ctl_arg.verb);
	else
		fprintf(stderr, "fatelfctl: %s (see 'fatelfctl --help')\n", msg);
	return EXIT_USAGE;
}

int ctl_option_error(int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	bool letter = optopt > 0 && optopt < 0x80;

	if (c == ':') {
		if (letter)
			return ctl_usage_error("option '-%c' needs an argument", optopt);
		return ctl_usage_error("option '%s' needs an argument", arg);
	}
	if (letter)
		return ctl_usage_error("unknown option '-%c'", optopt);
	return ctl_usage_error("unknown option '%s'", arg);
}

int ctl_help(const char *usage)
{
	fputs(usage, stdout);
	fputs("\nGlobal options: --socket PATH (default $FATELF_SOCKET, else\n"
	      CTL_DEFAULT_SOCKET "), --json, and -y, --yes or --assume-yes\n"
	      "(accepted, never needed: nothing asks for a confirmation).\n"
	      "Exit status: 0 success; 1 refused or failed (verify: problems found);\n"
	      "2 usage error; 3 cannot reach the daemon, protocol or system error;\n"
	      "4 permission denied; 5 a repository's index, manifest or object was\n"
	      "refused; 130 interrupted (Ctrl-C) while waiting.\n", stdout);
	return EXIT_OK;
}

int ctl_error_reply(const char *error, json_object *params)
{
	char msg[2048];
	int status = ctl_error_words(error, params, ctl_arg.verb, ctl_arg.socket, msg, sizeof(msg));

	if (ctl_arg.json) {
		json_object *o = json_object_new_object();

		if (o) {
			json_object_object_add(o, "error", json_object_new_string(error));
			json_object_object_add(o, "parameters", params ? json_object_get(params) : NULL);
			ctl_json_line(o);
			json_object_put(o);
		}
	}
	error_line(msg);
	return status;
}

/* ------------------------------------------------------------ JSON */

void ctl_json_print(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
}

void ctl_json_line(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	/* A consumer of JSON lines reads them as they come. */
	fflush(stdout);
}

void ctl_put_shown(FILE *f, const char *s)
{
	_cleanup_free_ char *shown = fatelf_text_display(s);

	fputs(shown ? shown : "?", f);
}

/* ------------------------------------------------------------ tables */

int ctl_table_init(struct ctl_table *t, size_t ncols, const char *const *header, const bool *right)
{
	*t = (struct ctl_table){ .ncols = ncols };
	t->right = calloc(ncols, sizeof(*t->right));
	if (!t->right)
		return -ENOMEM;
	if (right)
		memcpy(t->right, right, ncols * sizeof(*right));
	t->nrows = (size_t)-1;   /* the header is row 0 */
	return ctl_table_add(t, header);
}

int ctl_table_add(struct ctl_table *t, const char *const *row)
{
	size_t rows = t->nrows + 1;   /* rows held, header included */
	char **cells;

	if ((t->ncols && rows + 1 > SIZE_MAX / t->ncols) ||
	    GROW_ARRAY(t->cells, t->cap, (rows + 1) * t->ncols) < 0)
		return -ENOMEM;
	cells = t->cells;
	for (size_t c = 0; c < t->ncols; c++) {
		char *s = fatelf_text_display(row[c] ? row[c] : "-");

		if (!s) {
			for (size_t k = 0; k < c; k++)
				free(cells[rows * t->ncols + k]);
			return -ENOMEM;
		}
		/* One line per row: a newline or a tab is escaped with the other
		 * control characters, so the columns hold. */
		cells[rows * t->ncols + c] = s;
	}
	t->nrows++;
	return 0;
}

void ctl_table_print(const struct ctl_table *t, FILE *f)
{
	_cleanup_free_ size_t *w = calloc(t->ncols, sizeof(*w));
	bool color = ctl_color(f);

	if (!w)
		return;
	for (size_t r = 0; r <= t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++)
			w[c] = MAX(w[c], strlen(t->cells[r * t->ncols + c]));
	for (size_t r = 0; r <= t->nrows; r++) {
		if (r == 0 && color)
			fputs(ANSI_BOLD, f);
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			bool last = c + 1 == t->ncols;

			if (t->right[c])
				fprintf(f, "%*s", (int)w[c], s);
			else if (last)
				fputs(s, f);
			else
				fprintf(f, "%-*s", (int)w[c], s);
			if (!last)
				fputs("  ", f);
		}
		if (r == 0 && color)
			fputs(ANSI_RESET, f);
		fputc('\n', f);
	}
}

void ctl_table_done(struct ctl_table *t)
{
	if (t->cells)
		for (size_t i = 0; i < (t->nrows + 1) * t->ncols; i++)
			free(t->cells[i]);
	free(t->cells);
	free(t->right);
	*t = (struct ctl_table){ 0 };
}

/* ------------------------------------------------------------ progress */

static size_t progress_drawn;   /* columns of the bar on screen, 0 when none */

bool ctl_progress_enabled(void)
{
	return !ctl_arg.json && isatty(STDERR_FILENO);
}

static size_t terminal_width(void)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (cols && atoi(cols) > 0)
		return (size_t)atoi(cols);
	return 80;
}

void ctl_progress_draw(json_object *p)
{
	const char *phase = ctl_json_str(p, "phase", "working");
	const char *path = ctl_json_str(p, "path", NULL);
	const char *package = ctl_json_str(p, "package", NULL);
	char named[4400];
	int64_t bd = ctl_json_int(p, "bytes_done"), bt = ctl_json_int(p, "bytes_total");
	int64_t ed = ctl_json_int(p, "entries_done"), et = ctl_json_int(p, "entries_total");
	size_t width = terminal_width(), len;
	char line[1024], bar[24];
	int pct = -1, n;

	if (!ctl_progress_enabled())
		return;
	/* One column short of the width: writing the last column wraps on some terminals. */
	width = MIN(width > 1 ? width - 1 : 1, sizeof(line) - 1);
	if (strcmp(phase, "waiting") == 0) {
		n = snprintf(line, sizeof(line), "waiting for another transaction to finish");
	} else {
		if (bt > 0)
			pct = (int)(MIN(bd, bt) * 100 / bt);
		else if (et > 0)
			pct = (int)(MIN(ed, et) * 100 / et);
		if (pct >= 0) {
			int fill = pct / 5;

			memset(bar, '#', (size_t)fill);
			memset(bar + fill, '.', (size_t)(20 - fill));
			bar[20] = '\0';
		}
		if (bt > 0)
			n = snprintf(line, sizeof(line), "%-10s %3d%% [%s] %.1f/%.1f MiB", phase, pct, bar,
				     (double)bd / 1048576.0, (double)bt / 1048576.0);
		else if (et > 0)
			n = snprintf(line, sizeof(line), "%-10s %3d%% [%s] %lld/%lld entries", phase, pct, bar,
				     (long long)ed, (long long)et);
		else
			n = snprintf(line, sizeof(line), "%s", phase);
	}
	len = n < 0 ? 0 : MIN((size_t)n, sizeof(line) - 1);
	/* Several packages in one transaction: which one the file is of. */
	if (package && strcmp(phase, "waiting") != 0) {
		snprintf(named, sizeof(named), "%s%s%s", package, path ? ": " : "", path ? path : "");
		path = named;
	}
	_cleanup_free_ char *shown = path ? fatelf_text_display(path) : NULL;
	if (path)
		path = shown ? shown : "?";
	if (path && len + 2 < width) {
		size_t room = width - len - 1, plen = strlen(path);

		line[len++] = ' ';
		/* Keep the end of the path: the file name says the most. */
		if (plen > room && room > 3) {
			memcpy(line + len, "...", 3);
			memcpy(line + len + 3, path + plen - (room - 3), room - 3);
			len += room;
		} else if (plen <= room) {
			memcpy(line + len, path, plen);
			len += plen;
		}
	}
	len = MIN(len, width);
	line[len] = '\0';
	fprintf(stderr, "\r%s", line);
	/* Blank what is left of a longer previous line. */
	for (size_t i = len; i < progress_drawn; i++)
		fputc(' ', stderr);
	if (progress_drawn > len)
		fprintf(stderr, "\r%s", line);
	fflush(stderr);
	progress_drawn = len;
}

void ctl_progress_clear(void)
{
	if (!progress_drawn)
		return;
	fputc('\r', stderr);
	for (size_t i = 0; i < progress_drawn; i++)
		fputc(' ', stderr);
	fputc('\r', stderr);
	fflush(stderr);
	progress_drawn = 0;
}

/* ------------------------------------------------------------ results */

/* An install's change in words: the past, or what a dry run would do. */
static const char *change_words(const char *change, bool dry)
{
	static const struct { const char *change, *done, *would; } words[] = {
		{ "install", "installed", "would install" },
		{ "upgrade", "upgraded", "would upgrade" },
		{ "reinstall", "reinstalled", "would reinstall" },
		{ "downgrade", "downgraded", "would downgrade" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (strcmp(change, words[i].change) == 0)
			return dry ? words[i].would : words[i].done;
	return NULL;
}

/* The words of an install warning's reason; unknown reasons keep their name. */
static void warning_print(json_object *w, bool dry)
{
	const char *path = ctl_json_str(w, "path", "?");
	const char *reason = ctl_json_str(w, "reason", "?");

	if (strcmp(reason, "fat-shared-library") == 0)
		printf("warning: %s %s fat: no dynamic linker loads a FatELF shared library "
		       "(policy native or compatible thins it)\n", path, dry ? "would stay" : "stays");
	else if (strcmp(reason, "no-binfmt-handler") == 0)
		printf("warning: %s %s fat and cannot run here: the FatELF binfmt_misc handler "
		       "(fatelf-run) is not registered\n", path, dry ? "would stay" : "stays");
	else
		printf("warning: %s: %s\n", path, reason);
}

void ctl_result_print(json_object *r)
{
	const char *kind = ctl_json_str(r, "kind", "?");
	const char *change = ctl_json_str(r, "change", NULL);
	const char *pkg = ctl_json_str(r, "package", NULL);
	const char *oldv = ctl_json_str(r, "old_version", NULL);
	const char *newv = ctl_json_str(r, "new_version", NULL);
	bool dry = ctl_json_bool(r, "dry_run");
	int64_t files = ctl_json_int(r, "files");
	json_object *kept = ctl_json_array(r, "config_kept");
	json_object *taken = ctl_json_array(r, "taken");
	json_object *emptied = ctl_json_array(r, "emptied");
	json_object *warnings = ctl_json_array(r, "warnings");
	const char *files_word = files == 1 ? "file" : "files";
	const char *cw = change ? change_words(change, dry) : NULL;
	char what[512], written[32], saved[32];

	fatelf_format_size((uint64_t)ctl_json_int(r, "bytes_written"), written);
	fatelf_format_size((uint64_t)ctl_json_int(r, "bytes_saved"), saved);
	if (cw && (strcmp(change, "upgrade") == 0 || strcmp(change, "downgrade") == 0))
		snprintf(what, sizeof(what), "%s %s %s -> %s", cw, pkg ? pkg : "?", oldv ? oldv : "?",
			 newv ? newv : "?");
	else if (cw)
		snprintf(what, sizeof(what), "%s %s %s", cw, pkg ? pkg : "?", newv ? newv : "?");
	else if (strcmp(kind, "install") == 0)
		snprintf(what, sizeof(what), "%s %s %s", dry ? "would install" : "installed", pkg ? pkg : "?",
			 newv ? newv : "?");
	else if (strcmp(kind, "upgrade") == 0)
		snprintf(what, sizeof(what), "%s %s %s -> %s", dry ? "would upgrade" : "upgraded",
			 pkg ? pkg : "?", oldv ? oldv : "?", newv ? newv : "?");
	else if (strcmp(kind, "remove") == 0 && ctl_json_bool(r, "config_files_only"))
		snprintf(what, sizeof(what), "%s the config files %s %s left behind",
			 dry ? "would purge" : "purged", pkg ? pkg : "?", oldv ? oldv : "?");
	else if (strcmp(kind, "remove") == 0)
		snprintf(what, sizeof(what), "%s %s %s",
			 ctl_json_bool(r, "purge") ? (dry ? "would purge" : "purged") :
			 dry ? "would remove" : "removed", pkg ? pkg : "?", oldv ? oldv : "");
	else if (strcmp(kind, "thin") == 0)
		snprintf(what, sizeof(what), "%s %s", dry ? "would thin" : "thinned", pkg ? pkg : "all packages");
	else
		snprintf(what, sizeof(what), "%s %s", kind, pkg ? pkg : "");
	/* A remove of a package with no version left would end in a space. */
	for (size_t l = strlen(what); l > 0 && what[l - 1] == ' '; l--)
		what[l - 1] = '\0';

	if (strcmp(kind, "remove") == 0)
		printf("%s: %lld %s\n", what, (long long)files, files_word);
	else if (strcmp(kind, "thin") == 0)
		printf("%s: %lld %s, %s %s\n", what, (long long)files, files_word, saved,
		       dry ? "would be saved" : "saved");
	else
		printf("%s: %lld %s, %s %s, %s %s by thinning\n", what, (long long)files, files_word,
		       written, dry ? "to write" : "written", saved, dry ? "would be saved" : "saved");

	if (strcmp(ctl_json_str(r, "signature", ""), "unverified") == 0)
		printf("signature not verified: signed by key %s, which is not trusted; %s as unsigned\n",
		       ctl_json_str(r, "signer", "?"), dry ? "would install" : "installed");
	for (size_t i = 0; kept && i < json_object_array_length(kept); i++) {
		json_object *e = json_object_array_get_idx(kept, i);
		const char *path = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "?";

		if (strcmp(kind, "remove") == 0)
			printf("%s your changed %s\n", dry ? "would keep" : "kept", path);
		else
			printf("%s your changed %s; the new version %s %s.fatelf-new\n",
			       dry ? "would keep" : "kept", path, dry ? "would be" : "is", path);
	}
	/* As dpkg says what --force-overwrite replaced, and from whom. */
	for (size_t i = 0; taken && i < json_object_array_length(taken); i++) {
		json_object *t = json_object_array_get_idx(taken, i);
		const char *from = ctl_json_str(t, "from", NULL);
		const char *kept_by = ctl_json_str(t, "kept_by", NULL);

		if (from)
			printf("%s %s from package %s (--force)\n", dry ? "would take over" : "took over",
			       ctl_json_str(t, "path", "?"), from);
		else if (kept_by)
			printf("%s %s, a config file package %s %s left behind (--force; it keeps it no more)\n",
			       dry ? "would replace" : "replaced", ctl_json_str(t, "path", "?"), kept_by,
			       ctl_json_str(t, "kept_version", "?"));
		else
			printf("%s %s, which no package owned (--force)\n",
			       dry ? "would replace" : "replaced", ctl_json_str(t, "path", "?"));
	}
	for (size_t i = 0; emptied && i < json_object_array_length(emptied); i++) {
		json_object *e = json_object_array_get_idx(emptied, i);
		const char *name = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "?";

		printf("package %s %s installed with no files left ('fatelfctl remove %s' removes it)\n",
		       name, dry ? "would stay" : "stays", name);
	}
	for (size_t i = 0; warnings && i < json_object_array_length(warnings); i++)
		warning_print(json_object_array_get_idx(warnings, i), dry);
}

int ctl_split_list(const char *s, json_object **ret)
{
	json_object *a = json_object_new_array();
	const char *p = s;

	if (!a)
		return -ENOMEM;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (len == 0) {
			json_object_put(a);
			return -EINVAL;
		}
		json_object_array_add(a, json_object_new_string_len(p, (int)len));
		if (!comma)
			break;
		p = comma + 1;
	}
	*ret = a;
	return 0;
}

int ctl_tx_reply(json_object *params, bool continues, void *userdata)
{
	struct ctl_tx_state *st = userdata;
	json_object *progress = ctl_json_obj(params, "progress");
	json_object *result = ctl_json_obj(params, "result");
	json_object *results = ctl_json_array(params, "results");

	if (ctl_arg.json) {
		ctl_json_line(params);
		return st->no_wait ? CTL_STOP : CTL_CONTINUE;
	}
	if (progress && !result && !results) {
		const char *phase = ctl_json_str(progress, "phase", "?");

		if (st->no_wait) {
			long long id = (long long)ctl_json_int(params, "id");

			if (strcmp(phase, "waiting") == 0)
				printf("queued: %s, transaction %lld\n", st->what, id);
			else
				printf("running: %s, transaction %lld (%s)\n", st->what, id, phase);
			return CTL_STOP;
		}
		ctl_progress_draw(progress);
		return CTL_CONTINUE;
	}
	ctl_progress_clear();
	if (result)
		ctl_result_print(result);
	if (results) {
		size_t n = json_object_array_length(results);
		uint64_t saved = 0, files = 0;
		bool dry = false;
		char buf[32];

		for (size_t i = 0; i < n; i++) {
			json_object *r = json_object_array_get_idx(results, i);

			ctl_result_print(r);
			saved += (uint64_t)ctl_json_int(r, "bytes_saved");
			files += (uint64_t)ctl_json_int(r, "files");
			dry |= ctl_json_bool(r, "dry_run");
		}
		if (n == 0)
			printf("nothing to thin\n");
		else if (n > 1)
			printf("%s: %llu %s, %s %s in total\n", dry ? "would thin" : "thinned",
			       (unsigned long long)files, files == 1 ? "file" : "files", fatelf_format_size(saved, buf),
			       dry ? "would be saved" : "saved");
	}
	return CTL_CONTINUE;
}

int ctl_parse_plain(int argc, char **argv, const char *usage)
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		if (c == 'h') {
			ctl_help(usage);
			return 0;
		}
		(void)ctl_option_error(c, argv);
		return CTL_E_USAGE;
	}
	return 1;
}

int ctl_exit_code(int r)
{
	if (r >= 0)
		return EXIT_OK;
	if (r == CTL_E_USAGE)
		return EXIT_USAGE;
	if (r == -EACCES || r == -EPERM)
		return EXIT_DENIED;
	return EXIT_SYSTEM;
}
