/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard audit`: probe this host (or load a snapshot), analyse, run the checks, write the
 * report as text, JSON or Prometheus text, and exit with the monitoring-plugin status of what
 * is left after --min-severity (0 ok, 1 warning, 2 critical, 3 could not run).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/cli.h"
#include "report/report.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/util.h"

struct audit_args {
	enum format format;
	const char *snapshot_path; /* NULL: the live system */
	enum severity min_severity;
	bool no_color;
	const char *config_path;
};

/* 0: run; 1: done (help shown); negative: a usage error, logged. */
static int audit_parse(int argc, char **argv, struct audit_args *ret)
{
	static const struct option options[] = {
		FORMAT_OPTIONS,
		{ "snapshot", required_argument, NULL, 's' },
		{ "min-severity", required_argument, NULL, 'm' },
		{ "no-color", no_argument, NULL, 'C' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, r;

	*ret = (struct audit_args){ .format = FORMAT_TEXT, .min_severity = SEVERITY_INFO };
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		r = parse_format_option("audit", c, true, &ret->format);
		if (r != 0) {
			if (r < 0)
				return r;
			continue;
		}
		switch (c) {
		case 's':
			ret->snapshot_path = optarg;
			break;
		case 'm':
			r = severity_from_string(optarg);
			if (r < 0) {
				log_error("audit: unknown severity '%s' (expected info, warning or "
					  "critical)",
					  optarg);
				return -EINVAL;
			}
			ret->min_severity = r;
			break;
		case 'C':
			ret->no_color = true;
			break;
		case 'c':
			ret->config_path = optarg;
			break;
		case 'h':
			usage();
			return 1;
		default:
			return bad_option("audit", c, argv);
		}
	}
	return no_more_arguments("audit", argc, argv);
}

static int write_report(const struct report *rep, enum format format, bool no_color)
{
	int r;

	switch (format) {
	case FORMAT_JSON: {
		json_object *o = report_to_json(rep);
		_cleanup_free_ char *text = json_to_text(o, 1);

		json_object_put(o);
		if (!text)
			return -ENOMEM;
		r = fputs(text, stdout) < 0 ? -EIO : 0;
		break;
	}
	case FORMAT_PROMETHEUS:
		r = report_write_prometheus(stdout, rep);
		break;
	default:
		r = report_write_text(stdout, rep, want_color(no_color));
		break;
	}
	if (r >= 0 && fflush(stdout) != 0)
		r = -errno;
	return r;
}

static int audit_run(const struct audit_args *args)
{
	_cleanup_(config_freep) struct config *config = NULL;
	struct audit_result res;
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	int r, status;

	/* The host's configuration for the host; a snapshot from elsewhere only with --config. */
	if (args->config_path || !args->snapshot_path)
		r = load_config("audit", args->config_path, &config);
	else
		r = config_new_default(&config);
	if (r < 0)
		return EXIT_UNKNOWN;
	r = run_audit(config, args->snapshot_path, &res);
	if (r < 0)
		return EXIT_UNKNOWN;

	/* --min-severity drops findings below it from the output and the exit status alike. */
	findings_filter(&res.findings, args->min_severity);

	r = write_report(
	    &(struct report){
		.snap = res.snap,
		.a = res.a,
		.findings = &res.findings,
		.source = args->snapshot_path ? "snapshot" : "live",
		.generated_at = now_usec(CLOCK_REALTIME),
		.duration = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1e6,
	    },
	    args->format, args->no_color);
	status = report_exit_status(&res.findings);
	audit_result_done(&res);
	if (r < 0) {
		log_error_errno(r, "cannot write the report");
		return EXIT_UNKNOWN;
	}
	return status;
}

int cmd_audit(int argc, char **argv)
{
	struct audit_args args;
	int r = audit_parse(argc, argv, &args);

	if (r != 0)
		return r > 0 ? 0 : EXIT_UNKNOWN;
	return audit_run(&args);
}
