/*
 * runprobe: the program tests/integration/run.sh glues into fat files and
 * runs through fatelf-run, directly and as a binfmt_misc interpreter. Each
 * mode shows one thing a user of the program would see, so the test can
 * tell that a fat executable behaves like the thin one run directly:
 *
 *   runprobe [ARGS...]     "arch ARCH", "argv0 ARGV0", then "arg N VALUE"
 *   runprobe exit N        exits with status N
 *   runprobe signal N      raises signal N (the caller sees it kill us)
 *   runprobe pause         prints "pid PID", then waits for a signal
 *   runprobe env NAME      prints NAME's value ("unset" when it has none)
 *   runprobe stdin         copies stdin to stdout, says "stderr ok" on stderr
 *   runprobe exe           prints where /proc/self/exe points
 *   runprobe origin        calls the shared library (built with -DPROBE_LIB)
 *
 * Built with -DPROBE_SHLIB, the same file is that shared library instead:
 * one function printing a greeting, found at run time through a $ORIGIN
 * rpath, which proves ld.so resolved $ORIGIN to the fat file's directory.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef PROBE_SHLIB

void probe_greet(void)
{
	puts("greeting from libprobe");
}

#else

#if defined(__x86_64__)
#define PROBE_ARCH "x86_64"
#elif defined(__i386__)
#define PROBE_ARCH "i686"
#elif defined(__aarch64__)
#define PROBE_ARCH "aarch64"
#elif defined(__riscv) && __riscv_xlen == 64
#define PROBE_ARCH "riscv64"
#else
#define PROBE_ARCH "unknown"
#endif

#ifdef PROBE_LIB
void probe_greet(void);
#endif

static int probe_stdin(void)
{
	char buf[4096];
	size_t n;

	while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
		if (fwrite(buf, 1, n, stdout) != n)
			return 1;
	fputs("stderr ok\n", stderr);
	return ferror(stdin) || fflush(stdout) != 0;
}

static int probe_exe(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n < 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	buf[n] = '\0';
	printf("exe %s\n", buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : "";

	if (strcmp(mode, "exit") == 0)
		return atoi(arg);
	if (strcmp(mode, "signal") == 0) {
		/* Restore the default action in case the caller ignored it. */
		signal(atoi(arg), SIG_DFL);
		raise(atoi(arg));
		return 100;     /* the signal did not kill us */
	}
	if (strcmp(mode, "pause") == 0) {
		printf("pid %ld\n", (long)getpid());
		fflush(stdout);
		for (;;)
			pause();
	}
	if (strcmp(mode, "env") == 0) {
		const char *v = getenv(arg);

		printf("%s\n", v ? v : "unset");
		return 0;
	}
	if (strcmp(mode, "stdin") == 0)
		return probe_stdin();
	if (strcmp(mode, "exe") == 0)
		return probe_exe();
#ifdef PROBE_LIB
	if (strcmp(mode, "origin") == 0) {
		probe_greet();
		return 0;
	}
#endif

	printf("arch %s\n", PROBE_ARCH);
	printf("argv0 %s\n", argc > 0 && argv[0] ? argv[0] : "(none)");
	for (int i = 1; i < argc; i++)
		printf("arg %d %s\n", i, argv[i]);
	return 0;
}

#endif
