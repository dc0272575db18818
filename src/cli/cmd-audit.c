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
	pid_t namespace_pid; /* --namespace: 0 for none */
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
		{ "namespace", required_argument, NULL, 'N' },
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
		case 'N':
			if (parse_namespace_pid("audit", optarg, &ret->namespace_pid) < 0)
				return -EINVAL;
			break;
		case 'h':
			usage();
			return 1;
		default:
			return bad_option("audit", c, argv);
		}
	}
	if (ret->namespace_pid && ret->snapshot_path) {
		log_error("audit: --namespace and --snapshot exclude each other (a namespace's "
			  "snapshot records which namespace it is)");
		return -EINVAL;
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

/* The namespace of --namespace, judged beside the host (whose serving instance host_a says):
 * *ret filled for the report's "namespaces". */
static int audit_namespace(const struct audit_args *args, const struct config *config,
			   const struct analysis *host_a, struct audit_result *res,
			   struct report_namespace *ret)
{
	_cleanup_(namespace_target_freep) struct namespace_target *ns = NULL;
	_cleanup_(host_serving_done) struct host_serving host = { 0 };
	struct audit_target t = { 0 };
	int r;

	if (open_namespace("audit", args->namespace_pid, &ns) < 0)
		return -EINVAL;
	r = host_serving_from_analysis(host_a, &host);
	if (r < 0)
		return log_error_errno(r, "audit: out of memory"), r;
	t.probe.ns = ns;
	t.probe.host = &host;
	if (run_namespace("audit", &t, config, res) < 0)
		return -EINVAL;
	*ret = (struct report_namespace){ .mntns = ns->mntns, .pid = ns->pid };
	(void)namespace_count_processes(ns, &ret->pids_total);
	findings_filter(&res->findings, args->min_severity);
	return 0;
}

static int audit_run(const struct audit_args *args)
{
	_cleanup_(config_freep) struct config *config = NULL;
	_cleanup_(audit_result_done) struct audit_result nres = { 0 };
	struct report_namespace nrep = { 0 };
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
	if (args->namespace_pid && audit_namespace(args, config, res.a, &nres, &nrep) < 0) {
		audit_result_done(&res);
		return EXIT_UNKNOWN;
	}
	nrep.report = (struct report){
		.snap = nres.snap,
		.a = nres.a,
		.findings = &nres.findings,
		.source = "live",
		.generated_at = now_usec(CLOCK_REALTIME),
	};

	struct report rep = {
		.snap = res.snap,
		.a = res.a,
		.findings = &res.findings,
		.source = args->snapshot_path ? "snapshot" : "live",
		.generated_at = now_usec(CLOCK_REALTIME),
		.duration = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1e6,
		.namespaces = args->namespace_pid ? &nrep : NULL,
		.n_namespaces = args->namespace_pid ? 1 : 0,
	};
	nrep.report.duration = rep.duration;
	r = write_report(&rep, args->format, args->no_color);
	status = report_exit_status_all(&rep);
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
