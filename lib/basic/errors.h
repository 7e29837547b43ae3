/*
 * The format's error codes, returned negated (values below 1024 are errno
 * values): one code per validation rule, so that a caller can tell exactly
 * which rule a file broke. The one list: lib/basic/diag.h continues it
 * with the other layers' codes, and libfatelf.so installs it as
 * <fatelf/errors.h> beside <fatelf/libfatelf.h>. These values are part of
 * libfatelf's ABI: a new format code is appended here; the codes diag.h
 * adds after them are internal (replies carry their names, not values).
 */
#ifndef FATELF_ERRORS_H
#define FATELF_ERRORS_H

enum fatelf_error {
	FATELF_E_BASE = 1024,
	/* header */
	FATELF_E_SHORT = FATELF_E_BASE, /* file shorter than the 8-byte header */
	FATELF_E_MAGIC,                 /* not FA 70 0E 1F */
	FATELF_E_VERSION,               /* version is not 1 */
	FATELF_E_HDR_RESERVED,          /* header reserved byte is not 0 */
	FATELF_E_NO_RECORDS,            /* record count is 0 */
	FATELF_E_TABLE_TRUNCATED,       /* record table does not fit in the file */
	/* each record on its own */
	FATELF_E_REC_RESERVED,          /* record reserved bytes are not 0 */
	FATELF_E_WORD_SIZE,             /* word_size not 1 or 2 */
	FATELF_E_BYTE_ORDER,            /* byte_order not 1 or 2 */
	FATELF_E_OVERFLOW,              /* offset + size overflows 64 bits */
	FATELF_E_OUTSIDE,               /* record extends past the end of file */
	FATELF_E_TOO_SMALL,             /* record smaller than an ELF header */
	FATELF_E_OVERLAP_TABLE,         /* record overlaps the header table */
	FATELF_E_ALIGN,                 /* offset not a multiple of 4096 */
	FATELF_E_4GIB,                  /* 32-bit record ends above 4 GiB */
	/* records against each other */
	FATELF_E_OVERLAP,               /* two records overlap */
	FATELF_E_DUPLICATE,             /* two records share a target */
	/* the ELF image inside a record */
	FATELF_E_ELF_MAGIC,             /* no ELF magic at the record's offset */
	FATELF_E_ELF_CLASS,             /* EI_CLASS differs from word_size */
	FATELF_E_ELF_DATA,              /* EI_DATA differs from byte_order */
	FATELF_E_ELF_VERSION,           /* EI_VERSION / e_version not 1 */
	FATELF_E_ELF_MACHINE,           /* e_machine differs from machine */
	FATELF_E_ELF_OSABI,             /* EI_OSABI differs from osabi */
	FATELF_E_ELF_ABIVERSION,        /* EI_ABIVERSION differs from osabi_version */
	FATELF_E_ELF_EHSIZE,            /* e_ehsize is not the class's header size */
	FATELF_E_PH_ENTSIZE,            /* e_phentsize is not the class's phdr size */
	FATELF_E_PH_TABLE,              /* program header table outside the record */
	FATELF_E_SEGMENT,               /* a PT_LOAD file range outside the record */
	/* not validation */
	FATELF_E_TARGET_SYNTAX,         /* a target name that does not parse */
	FATELF_E_NO_MATCH,              /* no record matches a target */
	FATELF_E_AMBIGUOUS,             /* several records match a target */
	FATELF_E_NOT_ELF,               /* an input that should be an ELF is not */
	FATELF_E_TOO_MANY,              /* more than 255 records */
	FATELF_E_NO_HOST_RECORD,        /* no record this host can run */
	FATELF_E_STREAM_TRUNCATED,      /* the stream ended before the last record */
	FATELF_E_STREAM_STATE,          /* push after finish, or after an error */
	FATELF_E_EMPTY_KEEP,            /* a keep set that selects nothing */
	FATELF_E_INVALID,               /* an invalid argument (bad option value) */
};

#endif
