/*
 * The --help texts of fatelf's --root commands: the fatelf front end
 * prints them for "fatelf help install" without linking the engine, and
 * fatelf-root for "fatelf install --help".
 */
#include "cmd.h"

#define ROOT_COMMON \
	"  --root DIR      the root directory to work on (required); the store is\n" \
	"                  DIR/var/lib/fatelf, as 'fatelfd --root DIR --state-dir\n" \
	"                  DIR/var/lib/fatelf' keeps it\n" \
	"  -j, --json      print the result as JSON\n" \
	"  -h, --help      show this help\n"

const char cmd_root_install_usage[] =
	"Usage: fatelf install --root DIR [OPTIONS] BUNDLE...\n"
	"\n"
	"Install (or upgrade) fat bundles into DIR, without fatelfd: the same\n"
	"engine, store and transactions. Several bundles are one transaction: all\n"
	"are installed, or none. Each fat file is installed as the policy says for\n"
	"this machine (native: the record it runs). Nothing in DIR changes when an\n"
	"install fails. A fatelfd running on DIR holds its lock: exit status 4.\n"
	"\n"
	"Options:\n"
	ROOT_COMMON
	"  --policy P      native (default), compatible, keep or targets\n"
	"  --targets T,... the records to keep (implies --policy targets)\n"
	"  --keep-fat GLOB install files whose path matches GLOB as shipped (repeatable)\n"
	"  --keys DIR      the trusted keys (*.pub); default DIR/etc/fatelf/keys.d\n"
	"  --allow-unsigned  install a bundle that no trusted key signed\n"
	"                  (a signature that a trusted key does not verify is refused)\n"
	"  --force         take over paths another package owns\n"
	"  --allow-downgrade  install a version older than the installed one\n"
	"  -n, --dry-run   check everything and say what would happen; write nothing\n";

const char cmd_root_remove_usage[] =
	"Usage: fatelf remove --root DIR [--purge] [--dry-run] [--json] PACKAGE...\n"
	"\n"
	"Remove installed packages from DIR, all in one transaction, keeping\n"
	"config files the admin changed (an install of the package takes them\n"
	"back). Without --root, 'fatelf remove' removes records from a FatELF\n"
	"file (see 'fatelf help remove' without --root).\n"
	"\n"
	"Options:\n"
	ROOT_COMMON
	"  --purge         also remove the config files the admin changed and the\n"
	"                  PATH.fatelf-new files beside them; of a package no longer\n"
	"                  installed, the config files it left behind\n"
	"  -n, --dry-run   say what would be removed; write nothing\n";

const char cmd_root_list_usage[] =
	"Usage: fatelf list --root DIR [--json]\n"
	"\n"
	"List the packages installed in DIR: name, version, files, size on disk,\n"
	"bytes saved by thinning, policy and summary.\n"
	"\n"
	"Options:\n"
	ROOT_COMMON;

const char cmd_root_files_usage[] =
	"Usage: fatelf files --root DIR [--json] PACKAGE\n"
	"\n"
	"List the files, symlinks (PATH -> TARGET) and directories (PATH/) that\n"
	"PACKAGE installed in DIR, by path inside DIR.\n"
	"\n"
	"Options:\n"
	ROOT_COMMON;

const char cmd_root_owner_usage[] =
	"Usage: fatelf owner --root DIR [--json] PATH|GLOB|WORD\n"
	"\n"
	"Tell which package owns a path inside DIR (\"/usr/bin/hello\", or\n"
	"DIR/usr/bin/hello), every path a glob matches, or every path that\n"
	"contains a word, as 'PACKAGE: PATH'. Nothing owned: exit status 1.\n"
	"\n"
	"Options:\n"
	ROOT_COMMON;

const char cmd_root_verify_usage[] =
	"Usage: fatelf verify --root DIR [--json] [PACKAGE]\n"
	"\n"
	"Check the files of PACKAGE (default: every package) in DIR against the\n"
	"store: existence, type, mode, content, and each kept FatELF record\n"
	"against the vendor's hash. A problem found: exit status 1. Without\n"
	"--root, 'fatelf verify' tells whether a file has a record for a target.\n"
	"\n"
	"Options:\n"
	ROOT_COMMON;
