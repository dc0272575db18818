/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `ptsguard daemon [--config FILE] [--no-probe] [--user USER]`: the command line of the service. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "util/log.h"

static void daemon_help(void)
{
	printf("Usage: ptsguard daemon [--config FILE] [--no-probe] [--user USER]\n"
	       "\n"
	       "Watch devpts and /dev/ptmx: audit at start, then on every mount table change,\n"
	       "udev event for ptmx and change of /dev/ptmx or /dev/pts; journal each\n"
	       "transition of a finding and keep the report in the state file.\n"
	       "\n"
	       "Options:\n"
	       "  -c --config FILE   read only this configuration file (default: the vendor\n"
	       "                     file, /etc/ptsguard/ptsguard.conf and the drop-ins)\n"
	       "     --no-probe      do not allocate a pty as an unprivileged user in each\n"
	       "                     audit (the allocation probe)\n"
	       "  -u --user USER     started as root without systemd: become USER, keeping only\n"
	       "                     the capabilities ptsguard.service gives, with no new\n"
	       "                     privileges\n"
	       "  -h --help          show this help\n"
	       "\n"
	       "SIGHUP reloads the configuration; SIGTERM stops. See ptsguard.conf(5).\n");
}

/* 0: run; 1: done (help shown); negative: a usage error, logged. The service's usage errors
 * exit 1, not 3: systemd reads the status, not a monitoring system. */
static int daemon_parse(int argc, char **argv, struct daemon_options *ret)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "no-probe", no_argument, NULL, 'P' },
		{ "user", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	*ret = (struct daemon_options){ 0 };
	while ((c = getopt_long(argc, argv, ":hc:u:", options, NULL)) >= 0) {
		switch (c) {
		case 'c':
			ret->config_path = optarg;
			break;
		case 'P':
			ret->no_probe = true;
			break;
		case 'u':
			ret->user = optarg;
			break;
		case 'h':
			daemon_help();
			return 1;
		case ':':
			log_error("daemon: option '%s' needs a value", argv[optind - 1]);
			return -EINVAL;
		default:
			log_error("daemon: unknown option '%s' (see ptsguard daemon --help)",
				  argv[optind - 1]);
			return -EINVAL;
		}
	}
	return no_more_arguments("daemon", argc, argv);
}

static int daemon_run_cmd(const struct daemon_options *opts)
{
	_cleanup_(daemon_freep) struct daemon *d = NULL;
	sigset_t mask;

	/* Signals are handled in the event loop (signalfd): block them before anything else. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		log_error_errno(-errno, "daemon: cannot block signals");
		return EXIT_FAILURE;
	}
	if (daemon_new(opts, &d) < 0)
		return EXIT_FAILURE;
	return daemon_run(d) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int cmd_daemon(int argc, char **argv)
{
	struct daemon_options opts;
	int r = daemon_parse(argc, argv, &opts);

	if (r != 0)
		return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	return daemon_run_cmd(&opts);
}
