/*
 * Unit tests for fatelfd's metrics text (daemon/promtext.c,
 * daemon/metrics.c): the HELP and TYPE lines, label quoting, names the
 * format refuses, the whole text of a machine's metrics, and MetricsFile=
 * in fatelfd.conf.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "metrics.h"
#include "promtext.h"
#include "testutil.h"

/* What fn wrote to a memory stream, malloc'd; *ret_r is fn's return. */
#define CAPTURE(ret_r, call)                                    \
	({                                                      \
		char *_buf = NULL;                              \
		size_t _len = 0;                                \
		FILE *f = open_memstream(&_buf, &_len);         \
		ck_assert_ptr_nonnull(f);                       \
		*(ret_r) = (call);                              \
		ck_assert_int_eq(fclose(f), 0);                 \
		_buf;                                           \
	})

START_TEST(test_family_lines)
{
	int r;
	char *out = CAPTURE(&r, prom_family(f, "fatelf_packages", "gauge", "Packages installed."));

	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(out, "# HELP fatelf_packages Packages installed.\n# TYPE fatelf_packages gauge\n");
	free(out);

	/* HELP escapes backslash and newline, and leaves quotes alone */
	out = CAPTURE(&r, prom_family(f, "x", "counter", "a \\ b\nc \"d\""));
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(out, "# HELP x a \\\\ b\\nc \"d\"\n# TYPE x counter\n");
	free(out);

	out = CAPTURE(&r, prom_family(f, "x", "histogram", "no"));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_str_eq(out, "");
	free(out);
}
END_TEST

START_TEST(test_sample_labels)
{
	const prom_label l[] = {
		{ "kind", "install" },
		{ "package", "we\"ird\\name\nx" },
		{ "result", "" },
	};
	int r;
	char *out = CAPTURE(&r, prom_sample(f, "fatelf_last_transaction_info", l, 3, 1));

	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(out, "fatelf_last_transaction_info{kind=\"install\","
			      "package=\"we\\\"ird\\\\name\\nx\",result=\"\"} 1\n");
	free(out);

	out = CAPTURE(&r, prom_sample(f, "fatelf_bytes_saved", NULL, 0, -42));
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(out, "fatelf_bytes_saved -42\n");
	free(out);

	/* UTF-8 passes; a byte that is not UTF-8 becomes U+FFFD */
	{
		const prom_label u[] = { { "package", "caf\xc3\xa9\xff" } };

		out = CAPTURE(&r, prom_sample(f, "m", u, 1, 9223372036854775807LL));
		ck_assert_int_eq(r, 0);
		ck_assert_str_eq(out, "m{package=\"caf\xc3\xa9\xef\xbf\xbd\"} 9223372036854775807\n");
		free(out);
	}
}
END_TEST

START_TEST(test_names)
{
	static const char *const good_metric[] = { "a", "_x", "fatelf_bytes_on_disk", "ns:sub_1" };
	static const char *const bad_metric[] = { "", "1a", "a-b", "a b", "a.b", "\xc3\xa9" };
	static const char *const good_label[] = { "kind", "_k", "k9" };
	static const char *const bad_label[] = { "", "__name__", "9k", "a:b", "k-1" };
	const prom_label dup[] = { { "a", "1" }, { "a", "2" } };
	const prom_label nullv[] = { { "a", NULL } };
	int r;
	char *out;

	for (size_t i = 0; i < sizeof(good_metric) / sizeof(*good_metric); i++)
		ck_assert_msg(prom_metric_name_valid(good_metric[i]), "%s", good_metric[i]);
	for (size_t i = 0; i < sizeof(bad_metric) / sizeof(*bad_metric); i++) {
		ck_assert_msg(!prom_metric_name_valid(bad_metric[i]), "%s", bad_metric[i]);
		out = CAPTURE(&r, prom_sample(f, bad_metric[i], NULL, 0, 1));
		ck_assert_int_eq(r, -EINVAL);
		ck_assert_str_eq(out, "");
		free(out);
	}
	for (size_t i = 0; i < sizeof(good_label) / sizeof(*good_label); i++)
		ck_assert_msg(prom_label_name_valid(good_label[i]), "%s", good_label[i]);
	for (size_t i = 0; i < sizeof(bad_label) / sizeof(*bad_label); i++) {
		const prom_label l[] = { { bad_label[i], "v" } };

		ck_assert_msg(!prom_label_name_valid(bad_label[i]), "%s", bad_label[i]);
		out = CAPTURE(&r, prom_sample(f, "m", l, 1, 1));
		ck_assert_int_eq(r, -EINVAL);
		ck_assert_str_eq(out, "");
		free(out);
	}
	out = CAPTURE(&r, prom_sample(f, "m", dup, 2, 1));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_str_eq(out, "");
	free(out);
	out = CAPTURE(&r, prom_sample(f, "m", nullv, 1, 1));
	ck_assert_int_eq(r, -EINVAL);
	free(out);
}
END_TEST

/* Every line of the text: HELP, TYPE and one sample per family, in order. */
START_TEST(test_format_whole)
{
	metrics m = {
		.packages = 3, .files = 120, .fat_files = 4, .fat_files_fat = 1,
		.bytes_on_disk = 5000000, .bytes_saved = 2500000, .upgrades_pending = 2, .held = 1,
		.has_tx = true, .tx_finished_at = 1700000000,
		.has_verify = true, .verify_finished_at = 1700000100, .verify_checked = 120,
		.verify_problems = 2,
	};
	int r;
	char *out;

	snprintf(m.tx_kind, sizeof(m.tx_kind), "upgrade");
	snprintf(m.tx_result, sizeof(m.tx_result), "failed");
	snprintf(m.tx_package, sizeof(m.tx_package), "hello");
	out = CAPTURE(&r, metrics_format(&m, f));
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(out,
		"# HELP fatelf_packages Packages installed.\n"
		"# TYPE fatelf_packages gauge\n"
		"fatelf_packages 3\n"
		"# HELP fatelf_files Files the installed packages own.\n"
		"# TYPE fatelf_files gauge\n"
		"fatelf_files 120\n"
		"# HELP fatelf_fat_files Installed files that were shipped as FatELF files.\n"
		"# TYPE fatelf_fat_files gauge\n"
		"fatelf_fat_files 4\n"
		"# HELP fatelf_fat_files_installed_fat FatELF files installed fat, with every record as shipped.\n"
		"# TYPE fatelf_fat_files_installed_fat gauge\n"
		"fatelf_fat_files_installed_fat 1\n"
		"# HELP fatelf_bytes_on_disk Bytes of the installed files.\n"
		"# TYPE fatelf_bytes_on_disk gauge\n"
		"fatelf_bytes_on_disk 5000000\n"
		"# HELP fatelf_bytes_saved Bytes that thinning saved, against the fat files as shipped.\n"
		"# TYPE fatelf_bytes_saved gauge\n"
		"fatelf_bytes_saved 2500000\n"
		"# HELP fatelf_upgrades_pending Installed packages of which a configured repository offers "
		"a newer version, as of its last update.\n"
		"# TYPE fatelf_upgrades_pending gauge\n"
		"fatelf_upgrades_pending 2\n"
		"# HELP fatelf_packages_held Packages held at their installed version.\n"
		"# TYPE fatelf_packages_held gauge\n"
		"fatelf_packages_held 1\n"
		"# HELP fatelf_last_transaction_info The last transaction that ended: its kind, its package "
		"(empty for several) and its result (committed, rolled-back, failed, cancelled).\n"
		"# TYPE fatelf_last_transaction_info gauge\n"
		"fatelf_last_transaction_info{kind=\"upgrade\",package=\"hello\",result=\"failed\"} 1\n"
		"# HELP fatelf_last_transaction_timestamp_seconds When the last transaction ended, in "
		"seconds since the epoch.\n"
		"# TYPE fatelf_last_transaction_timestamp_seconds gauge\n"
		"fatelf_last_transaction_timestamp_seconds 1700000000\n"
		"# HELP fatelf_last_transaction_success 1 when the last transaction that ended committed, else 0.\n"
		"# TYPE fatelf_last_transaction_success gauge\n"
		"fatelf_last_transaction_success 0\n"
		"# HELP fatelf_last_verify_info The last verify: the package it checked, empty for every package.\n"
		"# TYPE fatelf_last_verify_info gauge\n"
		"fatelf_last_verify_info{package=\"\"} 1\n"
		"# HELP fatelf_last_verify_timestamp_seconds When the last verify ended, in seconds since the epoch.\n"
		"# TYPE fatelf_last_verify_timestamp_seconds gauge\n"
		"fatelf_last_verify_timestamp_seconds 1700000100\n"
		"# HELP fatelf_last_verify_files_checked Files the last verify checked.\n"
		"# TYPE fatelf_last_verify_files_checked gauge\n"
		"fatelf_last_verify_files_checked 120\n"
		"# HELP fatelf_last_verify_problems Problems the last verify found.\n"
		"# TYPE fatelf_last_verify_problems gauge\n"
		"fatelf_last_verify_problems 2\n");
	free(out);

	/* no transaction and no verify yet: those families are left out */
	m.has_tx = m.has_verify = false;
	m.tx_result[0] = '\0';
	out = CAPTURE(&r, metrics_format(&m, f));
	ck_assert_int_eq(r, 0);
	ck_assert_ptr_null(strstr(out, "fatelf_last_"));
	ck_assert_ptr_nonnull(strstr(out, "\nfatelf_packages_held 1\n"));
	free(out);

	/* a committed one is a success */
	m.has_tx = true;
	snprintf(m.tx_result, sizeof(m.tx_result), "committed");
	out = CAPTURE(&r, metrics_format(&m, f));
	ck_assert_ptr_nonnull(strstr(out, "\nfatelf_last_transaction_success 1\n"));
	free(out);
}
END_TEST

static int load_conf(const char *text, engine_config *c, fatelf_diag *d)
{
	tu_write_file("fatelfd.conf", text, strlen(text));
	engine_config_init(c);
	fatelf_diag_clear(d);
	return engine_config_load(c, "fatelfd.conf", d);
}

START_TEST(test_metrics_file_key)
{
	static const char *const bad[] = { "relative/fatelf.prom", "/var/lib/fatelf.txt", "/dir/.prom", "/x/" };
	engine_config c, copy;
	fatelf_diag d;

	tu_tmpdir();
	ck_assert_int_eq(load_conf("[Daemon]\n", &c, &d), 0);
	ck_assert_ptr_null(c.metrics_file);
	engine_config_done(&c);

	ck_assert_int_eq(load_conf("[Daemon]\nMetricsFile=/var/lib/node/fatelf.prom\n", &c, &d), 0);
	ck_assert_str_eq(c.metrics_file, "/var/lib/node/fatelf.prom");
	ck_assert_int_eq(engine_config_copy(&copy, &c), 0);
	ck_assert_str_eq(copy.metrics_file, "/var/lib/node/fatelf.prom");
	ck_assert_ptr_ne(copy.metrics_file, c.metrics_file);
	engine_config_done(&copy);
	engine_config_done(&c);

	/* empty: none again */
	ck_assert_int_eq(load_conf("[Daemon]\nMetricsFile=/a/b.prom\nMetricsFile=\n", &c, &d), 0);
	ck_assert_ptr_null(c.metrics_file);
	engine_config_done(&c);

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char text[256], want[512];

		snprintf(text, sizeof(text), "[Daemon]\nMetricsFile=%s\n", bad[i]);
		ck_assert_int_eq(load_conf(text, &c, &d), -EINVAL);
		snprintf(want, sizeof(want),
			 "fatelfd.conf:2: MetricsFile: '%s' is not an absolute path of a file ending in .prom "
			 "(node_exporter's textfile collector reads *.prom only)", bad[i]);
		ck_assert_str_eq(d.msg, want);
		engine_config_done(&c);
	}
	ck_assert_int_eq(load_conf("[Policy]\nMetricsFile=/a/b.prom\n", &c, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "fatelfd.conf:2: MetricsFile: unknown key in [Policy] (it belongs in [Daemon])");
	engine_config_done(&c);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("promtext");

	tcase_add_test(tc, test_family_lines);
	tcase_add_test(tc, test_sample_labels);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	tc = tcase_create("metrics");
	tcase_add_test(tc, test_format_whole);
	tcase_add_test(tc, test_metrics_file_key);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(metrics_suite());
}
