/*
 * A program outside the tree, built with `pkg-config --cflags --libs
 * fatelf` against an installed libfatelf: it makes two small ELF images,
 * glues them, reads the result back from the file and from memory, picks
 * records by name and by host, thins and extracts, and checks each
 * answer. Prints the records' targets; exits 0 when every check held.
 * It works in the current directory.
 */
#include <fatelf/libfatelf.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "hello.c:%d: check failed: %s\n", __LINE__, #cond); \
		failures++; \
	} \
} while (0)

static void put16(unsigned char *p, unsigned v) { p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; }
static void put32(unsigned char *p, unsigned long v) { put16(p, v & 0xffff); put16(p + 2, v >> 16); }
static void put64(unsigned char *p, unsigned long long v) { put32(p, v & 0xffffffffu); put32(p + 4, v >> 32); }

/* A 64-bit little-endian ELF shared object for machine: its header and
 * one PT_LOAD that covers the whole file. */
static int write_elf(const char *path, unsigned machine)
{
	unsigned char e[64 + 56] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };
	FILE *f;
	size_t n;

	put16(e + 16, 3);               /* e_type ET_DYN */
	put16(e + 18, machine);
	put32(e + 20, 1);               /* e_version */
	put64(e + 32, 64);              /* e_phoff */
	put16(e + 52, 64);              /* e_ehsize */
	put16(e + 54, 56);              /* e_phentsize */
	put16(e + 56, 1);               /* e_phnum */
	put32(e + 64, 1);               /* p_type PT_LOAD */
	put64(e + 64 + 32, sizeof(e));  /* p_filesz */
	put64(e + 64 + 40, sizeof(e));  /* p_memsz */
	put64(e + 64 + 48, 4096);       /* p_align */
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	n = fwrite(e, 1, sizeof(e), f);
	if (fclose(f) != 0 || n != sizeof(e))
		return -EIO;
	return 0;
}

static void *read_whole(const char *path, size_t *ret_len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*ret_len = (size_t)st.st_size;
	return buf;
}

/* Every public code has the name the library gives it. */
static void check_codes(void)
{
#define CODE(c) { c, #c }
	static const struct { int code; const char *name; } codes[] = {
		CODE(FATELF_E_SHORT), CODE(FATELF_E_MAGIC), CODE(FATELF_E_VERSION),
		CODE(FATELF_E_HDR_RESERVED), CODE(FATELF_E_NO_RECORDS),
		CODE(FATELF_E_TABLE_TRUNCATED), CODE(FATELF_E_REC_RESERVED),
		CODE(FATELF_E_WORD_SIZE), CODE(FATELF_E_BYTE_ORDER), CODE(FATELF_E_OVERFLOW),
		CODE(FATELF_E_OUTSIDE), CODE(FATELF_E_TOO_SMALL), CODE(FATELF_E_OVERLAP_TABLE),
		CODE(FATELF_E_ALIGN), CODE(FATELF_E_4GIB), CODE(FATELF_E_OVERLAP),
		CODE(FATELF_E_DUPLICATE), CODE(FATELF_E_ELF_MAGIC), CODE(FATELF_E_ELF_CLASS),
		CODE(FATELF_E_ELF_DATA), CODE(FATELF_E_ELF_VERSION), CODE(FATELF_E_ELF_MACHINE),
		CODE(FATELF_E_ELF_OSABI), CODE(FATELF_E_ELF_ABIVERSION), CODE(FATELF_E_ELF_EHSIZE),
		CODE(FATELF_E_PH_ENTSIZE), CODE(FATELF_E_PH_TABLE), CODE(FATELF_E_SEGMENT),
		CODE(FATELF_E_TARGET_SYNTAX), CODE(FATELF_E_NO_MATCH), CODE(FATELF_E_AMBIGUOUS),
		CODE(FATELF_E_NOT_ELF), CODE(FATELF_E_TOO_MANY), CODE(FATELF_E_NO_HOST_RECORD),
		CODE(FATELF_E_STREAM_TRUNCATED), CODE(FATELF_E_STREAM_STATE),
		CODE(FATELF_E_EMPTY_KEEP), CODE(FATELF_E_INVALID),
	};
#undef CODE
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const char *name = fatelf_error_name(-codes[i].code);

		if (strcmp(name, codes[i].name) != 0) {
			fprintf(stderr, "hello.c: code %d is %s in the library, %s in the header\n",
				codes[i].code, name, codes[i].name);
			failures++;
		}
	}
	CHECK(strcmp(fatelf_error_name(-ENOENT), "ENOENT") == 0);
	CHECK(strlen(fatelf_strerror(-FATELF_E_ALIGN)) > 0);
}

int main(void)
{
	const char *inputs[] = { "x86_64.elf", "aarch64.elf" };
	const char *keep[] = { "aarch64" };
	char name[FATELF_TARGET_NAME_MAX];
	fatelf_diag *d = fatelf_diag_new();
	fatelf_file *f = NULL, *m = NULL;
	fatelf_target t;
	uint64_t off, size;
	size_t len = 0;
	void *mem;
	int r;

	if (!d)
		return 1;
	printf("libfatelf %s\n", fatelf_version());
	check_codes();
	CHECK(write_elf(inputs[0], 62) == 0);
	CHECK(write_elf(inputs[1], 183) == 0);

	r = fatelf_glue_files("fat", inputs, 2, 0, d);
	if (r < 0) {
		fprintf(stderr, "glue: %s: %s\n", fatelf_diag_subject(d), fatelf_diag_message(d));
		return 1;
	}
	r = fatelf_file_open("fat", &f, d);
	if (r < 0) {
		fprintf(stderr, "fat: %s\n", fatelf_diag_message(d));
		return 1;
	}
	CHECK(fatelf_file_count(f) == 2);
	for (unsigned i = 0; i < fatelf_file_count(f); i++) {
		CHECK(fatelf_file_target(f, i, &t) == 0);
		fatelf_target_format(&t, name);
		printf("record %u: %s (%s)\n", i, name, fatelf_target_arch(&t));
		CHECK(fatelf_file_range(f, i, &off, &size) == 0);
		CHECK(off % 4096 == 0 && size == 120);
		CHECK(fatelf_file_elf_type(f, i) == 3);
	}
	CHECK(fatelf_file_target(f, 0, &t) == 0);
	CHECK(t.machine == 62 && t.word_size == FATELF_CLASS64 && t.byte_order == FATELF_DATA2LSB);
	CHECK(strcmp(fatelf_machine_name(t.machine), "x86_64") == 0);
	CHECK(strcmp(fatelf_target_debian_arch(&t), "amd64") == 0);
	CHECK(fatelf_file_target(f, 2, &t) == -EINVAL);
	CHECK(fatelf_file_short_name(f, 1, name) == 0 && strcmp(name, "aarch64") == 0);

	CHECK(fatelf_file_find(f, "arm64", d) == 1);
	CHECK(fatelf_file_find(f, "x86_64:64bits", d) == 0);
	CHECK(fatelf_file_find(f, "riscv64", d) == -FATELF_E_NO_MATCH);
	CHECK(fatelf_diag_code(d) == -FATELF_E_NO_MATCH && fatelf_diag_message(d)[0]);
	CHECK(fatelf_file_select_host(f, "aarch64", d) == 1);
	CHECK(fatelf_file_select_host(f, "x86_64", d) == 0);
	CHECK(fatelf_file_select_host(f, "s390x", d) == -FATELF_E_NO_HOST_RECORD);

	/* The same file from memory. */
	mem = read_whole("fat", &len);
	CHECK(mem != NULL);
	if (mem) {
		CHECK(fatelf_is_fatelf(mem, len) && !fatelf_is_elf(mem, len));
		CHECK(fatelf_file_open_mem(mem, len, &m, d) == 0);
		CHECK(fatelf_file_count(m) == 2);
		m = fatelf_file_free(m);
		((unsigned char *)mem)[4] = 9;  /* version 9 */
		CHECK(fatelf_file_open_mem(mem, len, &m, d) == -FATELF_E_VERSION);
		CHECK(m == NULL);
		free(mem);
	}

	/* Edits. */
	CHECK(fatelf_thin_targets("thin", "fat", keep, 1, FATELF_FORM_AUTO, d) == 0);
	mem = read_whole("thin", &len);
	CHECK(mem && len == 120 && fatelf_is_elf(mem, len));
	free(mem);
	CHECK(fatelf_thin_host("thin-x86", "fat", "x86_64", FATELF_FORM_FAT, d) == 0);
	CHECK(fatelf_extract("one", "fat", "x86_64", d) == 0);
	CHECK(fatelf_remove("removed", "fat", "aarch64", d) == 0);
	CHECK(fatelf_replace("replaced", "fat", "aarch64.elf", d) == 0);
	CHECK(fatelf_split("fat", "part", NULL, NULL, d) == 2);

	/* Errors: a plain ELF is not FatELF, and a bad target name. */
	fatelf_diag_clear(d);
	CHECK(fatelf_file_open("one", &m, d) == -FATELF_E_MAGIC);
	CHECK(strcmp(fatelf_diag_subject(d), "one") == 0);
	CHECK(strstr(fatelf_diag_message(d), "plain ELF") != NULL);
	CHECK(fatelf_extract("x", "fat", "no:such:thing", d) == -FATELF_E_TARGET_SYNTAX);

	f = fatelf_file_free(f);
	d = fatelf_diag_free(d);
	if (failures) {
		fprintf(stderr, "hello.c: %d checks failed\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
