/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line: parses arguments, runs probe -> checks -> sinks, maps the
 * result to the monitoring-plugin exit status (0 ok, 1 warning, 2 critical,
 * 3 could not run). Everything a person sees is decided here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "checks/checks.h"
#include "daemon/daemon.h"
#include "probe/probe.h"
#include "report/report.h"
#include "snapshot/snapshot.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/util.h"

static void help(void)
{
	printf(
	    "Usage: ptsguard COMMAND [OPTIONS]\n"
	    "\n"
	    "Keep Linux pseudo-terminals working and safe: audit devpts and /dev/ptmx.\n"
	    "\n"
	    "Commands:\n"
	    "  audit    [--format text|json|prometheus] [--json] [--snapshot FILE|-]\n"
	    "           [--min-severity info|warning|critical] [--no-color] [--config FILE]\n"
	    "                             audit this host (or a captured snapshot)\n"
	    "  snapshot [--output FILE]   capture the live state for an offline audit\n"
	    "  checks   [--format text|json]\n"
	    "                             list the check catalog\n"
	    "  explain  ID                what a check means and how to fix it\n"
	    "  daemon   [--config FILE]   watch and report transitions (the service)\n"
	    "  initramfs-record --newroot DIR [--phase NAME] [--output FILE|-]\n"
	    "                             record the initramfs's devpts state (run by the hooks)\n"
	    "  repair   [--dry-run] [--check ID]... [--format text|json]\n"
	    "           [--verify-user USER] [--config FILE]\n"
	    "                             fix what is safe to fix, verify, report\n"
	    "\n"
	    "Options:\n"
	    "  -h --help                  show this help\n"
	    "     --version               show the version\n"
	    "\n"
	    "Exit status of audit: 0 nothing at warning or above, 1 warning, 2 critical,\n"
	    "3 could not run. See ptsguard(8) and ptsguard-checks(7).\n");
}

static int cmd_audit(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "snapshot", required_argument, NULL, 's' },
		{ "min-severity", required_argument, NULL, 'm' },
		{ "no-color", no_argument, NULL, 'C' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	_cleanup_(audit_result_done) struct audit_result res = { 0 };
	_cleanup_(config_freep) struct config *config = NULL;
	struct audit_target target = { 0 };
	const char *config_path = NULL;
	enum format format = FORMAT_TEXT;
	const char *snapshot_path = NULL;
	enum severity min_severity = SEVERITY_INFO;
	bool no_color = false;
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	struct report rep;
	int c, r;

	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'f':
			if (parse_format("audit", optarg, true, &format) < 0)
				return EXIT_UNKNOWN;
			break;
		case 'j':
			format = FORMAT_JSON;
			break;
		case 's':
			snapshot_path = optarg;
			break;
		case 'm':
			r = severity_from_string(optarg);
			if (r < 0) {
				log_error("audit: unknown severity '%s' (expected info, warning or "
					  "critical)",
					  optarg);
				return EXIT_UNKNOWN;
			}
			min_severity = r;
			break;
		case 'C':
			no_color = true;
			break;
		case 'c':
			config_path = optarg;
			break;
		case 'h':
			help();
			return 0;
		default:
			bad_option("audit", c, argv);
			return EXIT_UNKNOWN;
		}
	}
	if (optind < argc) {
		log_error("audit: unexpected argument '%s'", argv[optind]);
		return EXIT_UNKNOWN;
	}

	/* The host's configuration for the host; a snapshot from elsewhere only with --config. */
	if (config_path || !snapshot_path)
		r = load_config("audit", config_path, &config);
	else
		r = config_new_default(&config);
	if (r < 0)
		return EXIT_UNKNOWN;
	if (snapshot_path && load_snapshot_file(snapshot_path, &target.snapshot) < 0)
		return EXIT_UNKNOWN;
	if (run_audit(&target, config, &res) < 0)
		return EXIT_UNKNOWN;

	/* --min-severity drops findings below it from the output and the exit status alike. */
	findings_filter(&res.findings, min_severity);

	rep = (struct report){
		.snap = res.snap,
		.a = res.a,
		.findings = &res.findings,
		.source = snapshot_path ? "snapshot" : "live",
		.generated_at = now_usec(CLOCK_REALTIME),
		.duration = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1e6,
	};
	switch (format) {
	case FORMAT_JSON: {
		json_object *o = report_to_json(&rep);
		_cleanup_free_ char *text = json_to_text(o, 1);

		json_object_put(o);
		if (!text) {
			r = -ENOMEM;
			break;
		}
		r = fputs(text, stdout) < 0 ? -EIO : 0;
		break;
	}
	case FORMAT_PROMETHEUS:
		r = report_write_prometheus(stdout, &rep);
		break;
	default:
		r = report_write_text(stdout, &rep, want_color(no_color));
		break;
	}
	if (r >= 0 && fflush(stdout) != 0)
		r = -errno;
	c = report_exit_status(&res.findings);
	if (r < 0) {
		log_error_errno(r, "cannot write the report");
		return EXIT_UNKNOWN;
	}
	return c;
}

static int cmd_snapshot(int argc, char **argv)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	_cleanup_(audit_result_done) struct audit_result res = { 0 };
	_cleanup_free_ char *text = NULL;
	const char *output = NULL;
	json_object *o;
	int c;

	while ((c = getopt_long(argc, argv, ":ho:", options, NULL)) >= 0) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'h':
			help();
			return 0;
		default:
			bad_option("snapshot", c, argv);
			return EXIT_UNKNOWN;
		}
	}
	if (optind < argc) {
		log_error("snapshot: unexpected argument '%s'", argv[optind]);
		return EXIT_UNKNOWN;
	}
	if (run_audit(
		&(struct audit_target){ .probe.need_mountinfo_text = true, .snapshot_only = true },
		NULL, &res) < 0)
		return EXIT_UNKNOWN;
	o = snapshot_to_json(res.snap);
	text = json_to_text(o, 1);
	json_object_put(o);
	if (!text) {
		log_error("snapshot: out of memory");
		return EXIT_UNKNOWN;
	}
	return write_output("snapshot", output, text, false) < 0 ? EXIT_UNKNOWN : 0;
}

static int cmd_checks(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	enum format format = FORMAT_TEXT;
	int c;

	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'f':
			if (parse_format("checks", optarg, false, &format) < 0)
				return EXIT_UNKNOWN;
			break;
		case 'j':
			format = FORMAT_JSON;
			break;
		case 'h':
			help();
			return 0;
		default:
			bad_option("checks", c, argv);
			return EXIT_UNKNOWN;
		}
	}
	if (optind < argc) {
		log_error("checks: unexpected argument '%s'", argv[optind]);
		return EXIT_UNKNOWN;
	}
	if (format == FORMAT_JSON) {
		json_object *arr = json_object_new_array();
		_cleanup_free_ char *text = NULL;

		for (size_t i = 0; i < check_catalog_size; i++) {
			const struct check_info *ci = check_catalog[i];
			json_object *o = json_object_new_object();

			json_object_object_add(o, "id", json_object_new_string(ci->id));
			json_object_object_add(
			    o, "severity",
			    json_object_new_string(severity_to_string(ci->severity)));
			json_object_object_add(o, "message_id",
					       json_object_new_string(ci->message_id));
			json_object_object_add(o, "summary", json_object_new_string(ci->summary));
			json_object_object_add(o, "repairable",
					       json_object_new_boolean(check_repairable(ci)));
			json_object_object_add(o, "daemon_only",
					       json_object_new_boolean(ci->transition));
			json_object_object_add(o, "explanation",
					       json_object_new_string(ci->explanation));
			json_object_object_add(o, "remedy", json_object_new_string(ci->remedy));
			json_object_array_add(arr, o);
		}
		text = json_to_text(arr, 1);
		json_object_put(arr);
		if (!text)
			return EXIT_UNKNOWN;
		fputs(text, stdout);
	} else {
		printf("%-24s %-9s %-10s %s\n", "ID", "SEVERITY", "REPAIR", "SUMMARY");
		for (size_t i = 0; i < check_catalog_size; i++) {
			const struct check_info *ci = check_catalog[i];
			printf("%-24s %-9s %-10s %s\n", ci->id, severity_to_string(ci->severity),
			       check_repairable(ci) ? "yes"
			       : ci->transition	    ? "(daemon)"
						    : "no",
			       ci->summary);
		}
	}
	return fflush(stdout) == 0 ? 0 : EXIT_UNKNOWN;
}

/* Print text wrapped at 76 columns with an indent. */
static void print_wrapped(const char *text, const char *indent)
{
	size_t col = 0, il = strlen(indent);

	for (const char *p = text; *p;) {
		size_t w = strcspn(p, " ");

		if (col > 0 && col + 1 + w > 76) {
			putchar('\n');
			col = 0;
		}
		if (col == 0) {
			fputs(indent, stdout);
			col = il;
		} else {
			putchar(' ');
			col++;
		}
		fwrite(p, 1, w, stdout);
		col += w;
		p += w;
		while (*p == ' ')
			p++;
	}
	if (col > 0)
		putchar('\n');
}

static int cmd_explain(int argc, char **argv)
{
	const struct check_info *ci;

	if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		help();
		return 0;
	}
	if (argc != 2) {
		log_error("explain: expected exactly one check id (see ptsguard checks)");
		return EXIT_UNKNOWN;
	}
	ci = check_find(argv[1]);
	if (!ci) {
		fprintf(stderr, "ptsguard: explain: unknown check '%s'. Known checks:\n", argv[1]);
		for (size_t i = 0; i < check_catalog_size; i++)
			fprintf(stderr, "  %s\n", check_catalog[i]->id);
		return EXIT_UNKNOWN;
	}
	printf("%s (%s%s%s)\n", ci->id, severity_to_string(ci->severity),
	       check_repairable(ci) ? ", repairable" : "",
	       ci->transition ? ", raised by the daemon" : "");
	print_wrapped(ci->summary, "  ");
	putchar('\n');
	print_wrapped(ci->explanation, "");
	printf("\nRemedy:\n");
	print_wrapped(ci->remedy, "  ");
	printf("\nMESSAGE_ID=%s\n", ci->message_id);
	return fflush(stdout) == 0 ? 0 : EXIT_UNKNOWN;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} commands[] = {
		{ "audit", cmd_audit },
		{ "snapshot", cmd_snapshot },
		{ "checks", cmd_checks },
		{ "explain", cmd_explain },
		{ "repair", cmd_repair },
		{ "daemon", cmd_daemon },
		{ "initramfs-record", cmd_initramfs },
	};
	const char *cmd;

	opterr = 0;
	if (argc < 2) {
		help();
		return EXIT_UNKNOWN;
	}
	cmd = argv[1];
	if (streq(cmd, "--help") || streq(cmd, "-h") || streq(cmd, "help")) {
		help();
		return 0;
	}
	if (streq(cmd, "--version")) {
		printf("ptsguard %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		if (streq(cmd, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	if (cmd[0] == '-')
		log_error("unknown option '%s' (see ptsguard --help)", cmd);
	else
		log_error("unknown command '%s' (see ptsguard --help)", cmd);
	return EXIT_UNKNOWN;
}
