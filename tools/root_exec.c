/*
 * The fatelf front end of the --root commands: they run in fatelf-root,
 * which alone links the install engine, SQLite and libarchive, so that
 * the format commands start as fast as before. install, list, files and
 * owner are --root commands only; remove and verify are file commands
 * unless given --root.
 */
#include <string.h>

#include "cmd.h"

#define ROOT_PROGRAM "fatelf-root"

bool cmd_root_wanted(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--root") == 0 || strncmp(argv[i], "--root=", 7) == 0)
			return true;
	}
	return false;
}

int cmd_root_exec(int argc, char **argv)
{
	return cmd_exec_helper(ROOT_PROGRAM, argc, argv);
}
