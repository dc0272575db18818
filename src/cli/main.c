/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line's entry: --help and --version, and the dispatch to one cmd-*.c per command
 * by name. Each command parses its own options (its --help is its own) and maps its result to
 * the exit status (for audit and repair the monitoring-plugin one: 0 ok, 1 warning, 2
 * critical, 3 could not run). Whatever ran, standard output is flushed and closed last, and a
 * write that failed there makes the status 3 with a message, as GNU tools do.
 */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"

#include "cli/cli.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/string-util.h"
#include "util/version.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	/* Its lines in the usage: synopsis and a one-line description. */
	const char *help;
} commands[] = {
	{ "audit", cmd_audit,
	  "  audit    [--format text|json|prometheus|plugin] [--json] [--snapshot FILE|-]\n"
	  "           [--min-severity info|warning|critical] [--check ID]... [--ignore ID]...\n"
	  "           [-q|--quiet] [--output FILE] [--color[=WHEN]] [--no-color]\n"
	  "           [--config FILE] [--namespace PID | --all-namespaces] [--no-probe]\n"
	  "                             audit this host (or a captured snapshot), and the\n"
	  "                             mount namespace of process PID, or every one\n" },
	{ "snapshot", cmd_snapshot,
	  "  snapshot [--output FILE] [--namespace PID] [--no-probe] [--redact]\n"
	  "                             capture the live state for an offline audit\n" },
	{ "checks", cmd_checks,
	  "  checks   [--format text|json] [--json]\n"
	  "                             list the check catalog\n" },
	{ "explain", cmd_explain,
	  "  explain  [--json] ID...    what checks mean and how to fix them\n" },
	{ "status", cmd_status,
	  "  status   [--config FILE]\n"
	  "                             what the running daemon last found\n" },
	{ "daemon", cmd_daemon,
	  "  daemon   [--config FILE] [--no-probe] [--user USER]\n"
	  "                             watch and report transitions (the service)\n" },
	{ "initramfs-record", cmd_initramfs,
	  "  initramfs-record --newroot DIR [--phase NAME] [--output FILE|-]\n"
	  "                             record the initramfs's devpts state (run by the hooks)\n" },
	{ "repair", cmd_repair,
	  "  repair   [--dry-run] [--check ID]... [--format text|json] [--json]\n"
	  "           [--verify-user USER] [--color[=WHEN]] [--no-color] [--config FILE]\n"
	  "           [--namespace PID[:MNTNS] [--target TARGET] [--mntns MNTNS]\n"
	  "            [--allow-own-namespace]] [--no-probe]\n"
	  "                             fix what is safe to fix, verify, report; with\n"
	  "                             --namespace, in the mount namespace of process PID\n"
	  "                             (TARGET or MNTNS as listed: refused when it differs)\n" },
};

void usage(void)
{
	fputs("Usage: ptsguard COMMAND [OPTIONS]\n"
	      "\n"
	      "Keep Linux pseudo-terminals working and safe: audit devpts and /dev/ptmx.\n"
	      "\n"
	      "Commands:\n",
	      stdout);
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		fputs(commands[i].help, stdout);
	fputs("\n"
	      "Options:\n"
	      "  -h --help                  show this help (after a command: that command's)\n"
	      "     --version               show the version\n"
	      "\n"
	      "Exit status of audit: 0 nothing at warning or above, 1 warning, 2 critical,\n"
	      "3 could not run. See ptsguard(8) and ptsguard-checks(7).\n",
	      stdout);
}

/* No command given: how to ask for more, on standard error. */
static void short_usage(void)
{
	fputs("Usage: ptsguard COMMAND [OPTIONS]\n"
	      "Commands:",
	      stderr);
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		fprintf(stderr, " %s", commands[i].name);
	fputs("\n"
	      "See 'ptsguard --help', or 'ptsguard COMMAND --help' for the options of one.\n",
	      stderr);
}

/*
 * A command that runs once and exits keeps what it frees for what it allocates next, rather than
 * giving it back to the kernel and faulting fresh pages in (each first touch of a page costs a
 * few microseconds): the analysis's working arrays and the text of the mount table, freed or
 * shrunk, hold the report built after them. Blocks of 4 MiB and more (the tables of 40,000 mounts
 * and more) are still mapped apart, where growing and zeroing them costs nothing. On 10,000
 * mounts with 500 devpts instances that is a sixth of the audit's page faults. The daemon, which
 * lives on, keeps the allocator's defaults.
 */
static void keep_freed_memory(void)
{
#if defined(M_TRIM_THRESHOLD) && defined(M_MMAP_THRESHOLD)
	(void)mallopt(M_TRIM_THRESHOLD, 256 << 20);
	(void)mallopt(M_MMAP_THRESHOLD, 4 << 20);
	heap_prefault_enable();
#endif
}

int main(int argc, char **argv)
{
	const char *cmd;

	opterr = 0;
	if (argc < 2) {
		short_usage();
		return EXIT_UNKNOWN;
	}
	cmd = argv[1];
	if (streq(cmd, "--help") || streq(cmd, "-h") || streq(cmd, "help")) {
		usage();
		return close_stdout(0);
	}
	if (streq(cmd, "--version")) {
		if (version_git())
			printf("ptsguard %s (git %s)\n", version_release(), version_git());
		else
			printf("ptsguard %s\n", version_release());
		return close_stdout(0);
	}
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		if (streq(cmd, commands[i].name)) {
			int status;

			if (commands[i].run != cmd_daemon)
				keep_freed_memory();
			status = commands[i].run(argc - 1, argv + 1);

			cli_probe_worker_done();
			return close_stdout(status);
		}
	if (cmd[0] == '-')
		log_error("unknown option '%s' (see ptsguard --help)", cmd);
	else
		log_error("unknown command '%s' (see ptsguard --help)", cmd);
	return EXIT_UNKNOWN;
}
