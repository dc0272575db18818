/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard snapshot [--output FILE] [--namespace PID]`: capture what the checks read from the
 * live system (or from the mount namespace of process PID, which the snapshot then names), with
 * the raw mountinfo text, as ptsguard.snapshot/1 JSON for an audit elsewhere (audit
 * --snapshot). Exit 0 when written, 3 when not.
 * `ptsguard snapshot [--output FILE] [--no-probe]`: capture what the checks read from the live
 * system, with the raw mountinfo text and (as root) the allocation probe's result, as
 * ptsguard.snapshot/1 JSON for an audit elsewhere (audit --snapshot). Exit 0 when written, 3
 * when not.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "probe/stalling-fs.h"
#include "snapshot/redact.h"
#include "snapshot/snapshot-json.h"
#include "util/clock.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/version.h"

struct snapshot_args {
	const char *output;  /* NULL or "-": standard output */
	pid_t namespace_pid; /* --namespace: 0 for none */
	bool no_probe;
	bool redact; /* --redact: names replaced by placeholders */
};

static void snapshot_help(void)
{
	printf("Usage: ptsguard snapshot [OPTIONS]\n"
	       "\n"
	       "Capture what the checks read from the live system, as ptsguard.snapshot/1 JSON,\n"
	       "for an audit elsewhere (ptsguard audit --snapshot FILE). Exit status: 0\n"
	       "written, 3 not.\n"
	       "\n"
	       "Options:\n"
	       "  -o --output FILE      write the snapshot to FILE (absent or a regular file,\n"
	       "                        replaced atomically) instead of standard output; -\n"
	       "                        for standard output\n"
	       "     --namespace PID    capture the mount namespace of process PID instead\n"
	       "     --no-probe         do not allocate a pty as an unprivileged user (the\n"
	       "                        allocation probe)\n"
	       "     --redact           replace the host name, the names of processes and\n"
	       "                        users, and network file systems' servers with stable\n"
	       "                        placeholders, for a public bug report\n"
	       "  -h --help             show this help\n");
}

/* 0: run; 1: done (help shown); negative: a usage error, logged. */
static int snapshot_parse_args(int argc, char **argv, struct snapshot_args *ret)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "namespace", required_argument, NULL, 'N' },
		{ "no-probe", no_argument, NULL, 'P' },
		{ "redact", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, r;

	*ret = (struct snapshot_args){ 0 };
	while ((c = getopt_long(argc, argv, ":ho:", options, NULL)) >= 0) {
		r = parse_target_option("snapshot", c, &ret->namespace_pid, &ret->no_probe);
		if (r != 0) {
			if (r < 0)
				return r;
			continue;
		}
		switch (c) {
		case 'o':
			ret->output = optarg;
			break;
		case 'R':
			ret->redact = true;
			break;
		case 'h':
			snapshot_help();
			return 1;
		default:
			return bad_option("snapshot", c, argv);
		}
	}
	return no_more_arguments("snapshot", argc, argv);
}

static int snapshot_run(const struct snapshot_args *args)
{
	_cleanup_(audit_result_done) struct audit_result res = { 0 };
	_cleanup_free_ char *text = NULL;
	json_object *o;

	if (args->namespace_pid) {
		_cleanup_(namespace_target_freep) struct namespace_target *ns = NULL;
		struct audit_target t = { .probe.need_mountinfo_text = true,
					  .probe.skip_allocation = args->no_probe,
					  .snapshot_only = true };

		if (open_namespace("snapshot", args->namespace_pid, &ns) < 0)
			return EXIT_UNKNOWN;
		t.probe.ns = ns;
		if (run_namespace("snapshot", &t, NULL, &res) < 0)
			return EXIT_UNKNOWN;
	} else if (run_probe(args->no_probe, &res) < 0)
		return EXIT_UNKNOWN;
	res.snap->captured_at = now_usec(CLOCK_REALTIME);
	if (!(res.snap->captured_by = strdup(version_release())) ||
	    (version_git() && !(res.snap->captured_by_git = strdup(version_git()))) ||
	    (args->redact && snapshot_redact(res.snap, fs_type_may_stall) < 0)) {
		log_error("snapshot: out of memory");
		return EXIT_UNKNOWN;
	}
	o = snapshot_to_json(res.snap);
	text = json_to_text(o, 1);
	json_object_put(o);
	if (!text) {
		log_error("snapshot: out of memory");
		return EXIT_UNKNOWN;
	}
	return write_output("snapshot", args->output, text, false) < 0 ? EXIT_UNKNOWN : 0;
}

int cmd_snapshot(int argc, char **argv)
{
	struct snapshot_args args;
	int r = snapshot_parse_args(argc, argv, &args);

	if (r != 0)
		return r > 0 ? 0 : EXIT_UNKNOWN;
	return snapshot_run(&args);
}
