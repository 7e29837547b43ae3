/*
 * Unit tests for lib/fatelf/edit.c and lib/fatelf/write.c: glue, extract, remove,
 * replace, thin and split on real files, checked byte for byte.
 */
#include <check.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfgen.h"
#include "fatelf.h"
#include "testutil.h"

struct img {
	uint8_t *buf;
	size_t len;
};

static struct img make_img(uint16_t machine, uint8_t cls, uint8_t order, uint64_t p_align,
			   size_t size, uint32_t seed)
{
	elfgen_opts o;
	struct img im;

	elfgen_defaults(&o, machine, cls, order);
	o.p_align = p_align;
	o.size = size;
	o.seed = seed;
	im.buf = elfgen_make(&o, &im.len);
	ck_assert_ptr_nonnull(im.buf);
	return im;
}

/* Writes x86_64, aarch64 (64 KiB p_align) and s390x images and glues them. */
static void glue_three(struct img im[3])
{
	fatelf_diag d;
	const char *in[] = { "x86", "arm64", "s390x" };

	im[0] = make_img(62, FATELF_CLASS64, FATELF_DATA2LSB, 0x1000, 10000, 1);
	im[1] = make_img(183, FATELF_CLASS64, FATELF_DATA2LSB, 0x10000, 20000, 2);
	im[2] = make_img(22, FATELF_CLASS64, FATELF_DATA2MSB, 0x1000, 7000, 3);
	for (int i = 0; i < 3; i++)
		tu_write_file(in[i], im[i].buf, im[i].len);
	ck_assert_msg(fatelf_glue("fat", in, 3, NULL, &d) == 0, "%s: %s", d.subject, d.msg);
}

static void free3(struct img im[3])
{
	for (int i = 0; i < 3; i++)
		free(im[i].buf);
}

static int open_hdr(const char *path, fatelf_header *hdr)
{
	fatelf_diag d;
	int fd = fatelf_open_validated(path, hdr, NULL, NULL, &d);
	ck_assert_msg(fd >= 0, "%s: %s", path, d.msg);
	return fd;
}

START_TEST(test_glue_layout_and_roundtrip)
{
	struct img im[3];
	fatelf_header hdr;
	fatelf_diag d;

	tu_tmpdir();
	glue_three(im);
	close(open_hdr("fat", &hdr));
	ck_assert_uint_eq(hdr.nrecords, 3);
	ck_assert_uint_eq(hdr.records[0].target.machine, 62);
	ck_assert_uint_eq(hdr.records[0].offset, 0x1000);
	/* The aarch64 image asks for 64 KiB pages: it gets them. */
	ck_assert_uint_eq(hdr.records[1].target.machine, 183);
	ck_assert_uint_eq(hdr.records[1].offset % 0x10000, 0);
	ck_assert_uint_eq(hdr.records[2].target.byte_order, FATELF_DATA2MSB);
	ck_assert_uint_eq(hdr.records[2].offset % 0x1000, 0);

	/* Extract gives back every input byte for byte. */
	const char *names[] = { "record0", "aarch64", "s390:64bits:be" };
	for (int i = 0; i < 3; i++) {
		ck_assert_msg(fatelf_extract("out", "fat", names[i], &d) == 0, "%s", d.msg);
		ck_assert(tu_file_equals("out", im[i].buf, im[i].len));
	}
	free3(im);
}
END_TEST

START_TEST(test_glue_align_override_and_fat_inputs)
{
	struct img im[3];
	fatelf_header hdr;
	fatelf_diag d;
	fatelf_glue_opts o = { .align = 0x20000 };
	const char *in[] = { "x86", "arm64" };

	tu_tmpdir();
	glue_three(im);
	ck_assert_int_eq(fatelf_glue("fat2", in, 2, &o, &d), 0);
	close(open_hdr("fat2", &hdr));
	ck_assert_uint_eq(hdr.records[0].offset, 0x20000);
	ck_assert_uint_eq(hdr.records[1].offset % 0x20000, 0);

	o.align = 5000;
	ck_assert_int_eq(fatelf_glue("bad", in, 2, &o, &d), -FATELF_E_INVALID);
	ck_assert_int_eq(access("bad", F_OK), -1);

	/* A FatELF input contributes all its records; duplicates are refused. */
	const char *in2[] = { "fat", "x86" };
	ck_assert_int_eq(fatelf_glue("dup", in2, 2, NULL, &d), -FATELF_E_DUPLICATE);
	ck_assert_str_eq(d.subject, "x86");
	ck_assert_int_eq(access("dup", F_OK), -1);
	ck_assert_int_eq(fatelf_remove("two", "fat", "x86_64", &d), 0);
	const char *in3[] = { "two", "x86" };
	ck_assert_int_eq(fatelf_glue("three", in3, 2, NULL, &d), 0);
	close(open_hdr("three", &hdr));
	ck_assert_uint_eq(hdr.nrecords, 3);
	ck_assert_uint_eq(hdr.records[2].target.machine, 62);
	free3(im);
}
END_TEST

START_TEST(test_glue_rejects_non_elf)
{
	fatelf_diag d;
	const char *in[] = { "text" };
	const char *missing[] = { "nope" };

	tu_tmpdir();
	tu_write_file("text", "hello world\n", 12);
	ck_assert_int_eq(fatelf_glue("out", in, 1, NULL, &d), -FATELF_E_NOT_ELF);
	ck_assert_str_eq(d.subject, "text");
	ck_assert_int_eq(fatelf_glue("out", missing, 1, NULL, &d), -ENOENT);
	ck_assert_str_eq(d.subject, "nope");
	ck_assert_int_eq(access("out", F_OK), -1);
}
END_TEST

START_TEST(test_remove_and_replace)
{
	struct img im[3];
	fatelf_header hdr;
	fatelf_diag d;

	tu_tmpdir();
	glue_three(im);
	ck_assert_int_eq(fatelf_remove("r", "fat", "aarch64", &d), 0);
	int fd = open_hdr("r", &hdr);
	close(fd);
	ck_assert_uint_eq(hdr.nrecords, 2);
	ck_assert_uint_eq(hdr.records[0].target.machine, 62);
	ck_assert_uint_eq(hdr.records[1].target.machine, 22);
	ck_assert_int_eq(fatelf_extract("x", "r", "s390x", &d), 0);
	ck_assert(tu_file_equals("x", im[2].buf, im[2].len));
	ck_assert_int_eq(fatelf_remove("r2", "fat", "riscv64", &d), -FATELF_E_NO_MATCH);

	/* Removing down to nothing is refused. */
	ck_assert_int_eq(fatelf_remove("r1", "r", "x86_64", &d), 0);
	ck_assert_int_eq(fatelf_remove("r0", "r1", "s390x", &d), -FATELF_E_EMPTY_KEEP);

	/* Replace the aarch64 record with a different aarch64 build. */
	struct img n = make_img(183, FATELF_CLASS64, FATELF_DATA2LSB, 0x10000, 33333, 99);
	tu_write_file("arm64-new", n.buf, n.len);
	ck_assert_int_eq(fatelf_replace("rep", "fat", "arm64-new", &d), 0);
	ck_assert_int_eq(fatelf_extract("x", "rep", "arm64", &d), 0);
	ck_assert(tu_file_equals("x", n.buf, n.len));
	ck_assert_int_eq(fatelf_extract("x", "rep", "amd64", &d), 0);
	ck_assert(tu_file_equals("x", im[0].buf, im[0].len));

	/* A replacement with no matching record is refused. */
	struct img rv = make_img(243, FATELF_CLASS64, FATELF_DATA2LSB, 0x1000, 5000, 5);
	tu_write_file("rv", rv.buf, rv.len);
	ck_assert_int_eq(fatelf_replace("rep2", "fat", "rv", &d), -FATELF_E_NO_MATCH);
	ck_assert_int_eq(access("rep2", F_OK), -1);
	free(n.buf);
	free(rv.buf);
	free3(im);
}
END_TEST

START_TEST(test_thin_in_place_keeps_mode_and_old_inode)
{
	struct img im[3];
	fatelf_header hdr;
	fatelf_keepset keep;
	fatelf_diag d;
	struct stat st;
	size_t before_len, old_len;

	tu_tmpdir();
	glue_three(im);
	ck_assert_int_eq(chmod("fat", 0750), 0);
	uint8_t *before = tu_read_file("fat", &before_len);
	int old = open("fat", O_RDONLY);
	ck_assert_int_ge(old, 0);

	close(open_hdr("fat", &hdr));
	fatelf_keep_clear(&keep);
	fatelf_keep_add(&keep, 0);
	fatelf_keep_add(&keep, 2);
	ck_assert_int_eq(fatelf_thin("fat", "fat", &keep, FATELF_FORM_AUTO, &d), 0);
	ck_assert_int_eq(stat("fat", &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
	close(open_hdr("fat", &hdr));
	ck_assert_uint_eq(hdr.nrecords, 2);
	ck_assert_uint_eq(hdr.records[1].target.machine, 22);

	/* The input was replaced, not modified: the old inode is untouched. */
	uint8_t *old_bytes = malloc(before_len);
	old_len = (size_t)pread(old, old_bytes, before_len, 0);
	ck_assert_uint_eq(old_len, before_len);
	ck_assert(memcmp(old_bytes, before, before_len) == 0);
	close(old);

	/* One record kept: a plain ELF, byte for byte. */
	fatelf_keep_clear(&keep);
	fatelf_keep_add(&keep, 0);
	ck_assert_int_eq(fatelf_thin("thin", "fat", &keep, FATELF_FORM_AUTO, &d), 0);
	ck_assert(tu_file_equals("thin", im[0].buf, im[0].len));

	/* No temp files are left behind. */
	DIR *dir = opendir(".");
	struct dirent *de;
	while ((de = readdir(dir)))
		ck_assert_msg(strstr(de->d_name, ".fatelf.") == NULL, "leftover %s", de->d_name);
	closedir(dir);
	free(before);
	free(old_bytes);
	free3(im);
}
END_TEST

static void count_file(void *ctx, int index, const char *path)
{
	(*(int *)ctx)++;
}

START_TEST(test_split_names_and_bytes)
{
	struct img im[3];
	fatelf_diag d;
	int count = 0;

	tu_tmpdir();
	glue_three(im);
	ck_assert_int_eq(fatelf_split("fat", "part", count_file, &count, &d), 3);
	ck_assert_int_eq(count, 3);
	ck_assert(tu_file_equals("part-x86_64", im[0].buf, im[0].len));
	ck_assert(tu_file_equals("part-aarch64", im[1].buf, im[1].len));
	ck_assert(tu_file_equals("part-s390", im[2].buf, im[2].len));
	free3(im);
}
END_TEST

START_TEST(test_invalid_input_is_refused)
{
	struct img im[3];
	fatelf_diag d;
	size_t len;
	fatelf_keepset keep;

	tu_tmpdir();
	glue_three(im);
	uint8_t *fat = tu_read_file("fat", &len);
	fat[FATELF_HEADER_SIZE + FATELF_RECORD_SIZE + 6] = 1; /* record 1 reserved byte */
	tu_write_file("bad", fat, len);
	ck_assert_int_eq(fatelf_extract("out", "bad", "x86_64", &d), -FATELF_E_REC_RESERVED);
	ck_assert_str_eq(d.subject, "bad");
	ck_assert_int_eq(d.record, 1);
	fatelf_keep_clear(&keep);
	fatelf_keep_add(&keep, 0);
	ck_assert_int_eq(fatelf_thin("out", "bad", &keep, FATELF_FORM_AUTO, &d), -FATELF_E_REC_RESERVED);
	ck_assert_int_eq(access("out", F_OK), -1);
	free(fat);
	free3(im);
}
END_TEST

START_TEST(test_atomic_abort_leaves_nothing)
{
	fatelf_atomic a;
	fatelf_diag d;

	tu_tmpdir();
	tu_write_file("target", "old", 3);
	ck_assert_int_eq(fatelf_atomic_open(&a, "target", 0644, &d), 0);
	ck_assert_int_eq(write(a.fd, "new!", 4), 4);
	fatelf_atomic_abort(&a);
	ck_assert(tu_file_equals("target", "old", 3));
	ck_assert_int_eq(fatelf_atomic_open(&a, "target", 0644, &d), 0);
	ck_assert_int_eq(write(a.fd, "new!", 4), 4);
	a.durable = true;
	ck_assert_int_eq(fatelf_atomic_commit(&a, &d), 0);
	ck_assert(tu_file_equals("target", "new!", 4));
	ck_assert_int_eq(fatelf_atomic_open(&a, "no/such/dir/x", 0644, &d), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("edit");
	TCase *tc = tcase_create("edit");

	tcase_add_test(tc, test_glue_layout_and_roundtrip);
	tcase_add_test(tc, test_glue_align_override_and_fat_inputs);
	tcase_add_test(tc, test_glue_rejects_non_elf);
	tcase_add_test(tc, test_remove_and_replace);
	tcase_add_test(tc, test_thin_in_place_keeps_mode_and_old_inode);
	tcase_add_test(tc, test_split_names_and_bytes);
	tcase_add_test(tc, test_invalid_input_is_refused);
	tcase_add_test(tc, test_atomic_abort_leaves_nothing);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
