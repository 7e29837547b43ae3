/*
 * hello: the real program the integration tests and the demo cross-compile
 * for every architecture, glue into one FatELF, extract and run. It says
 * which architecture it was built for, so a test can tell that the record
 * it ran is the one it meant to run, and it exits with argv[1] when given,
 * so a test can tell that the exit status made it through.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#define HELLO_ARCH "x86_64"
#elif defined(__i386__)
#define HELLO_ARCH "i686"
#elif defined(__aarch64__)
#define HELLO_ARCH "aarch64"
#elif defined(__arm__)
#define HELLO_ARCH "armhf"
#elif defined(__riscv) && __riscv_xlen == 64
#define HELLO_ARCH "riscv64"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HELLO_ARCH "ppc64le"
#elif defined(__s390x__)
#define HELLO_ARCH "s390x"
#else
#define HELLO_ARCH "unknown"
#endif

#ifndef HELLO_GREETING
#define HELLO_GREETING "hello"
#endif

int main(int argc, char **argv)
{
	const char *name = argc > 0 && argv[0] ? argv[0] : "";
	const char *slash = strrchr(name, '/');

	if (slash)
		name = slash + 1;
	printf("%s from %s (%s)\n", HELLO_GREETING, HELLO_ARCH, name);
	return argc > 1 ? atoi(argv[1]) : 0;
}
