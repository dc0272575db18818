/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard checks [--format text|json]`: the check catalog, as a table or as a JSON array
 * (one object per check: id, severity, message_id, summary, repairable, daemon_only,
 * explanation, remedy). Exit 0, or 3 when the output cannot be written.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/macro.h"

struct checks_args {
	enum format format;
};

static void checks_help(void)
{
	printf("Usage: ptsguard checks [OPTIONS]\n"
	       "\n"
	       "List the check catalog: id, severity, whether repair fixes it, summary.\n"
	       "\n"
	       "Options:\n"
	       "     --format FORMAT   text (the default) or json (every field of each check)\n"
	       "     --json            the same as --format json\n"
	       "  -h --help           show this help\n"
	       "\n"
	       "ptsguard explain ID says what one check means.\n");
}

/* 0: run; 1: done (help shown); negative: a usage error, logged. */
static int checks_parse(int argc, char **argv, struct checks_args *ret)
{
	static const struct option options[] = {
		FORMAT_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, r;

	*ret = (struct checks_args){ .format = FORMAT_TEXT };
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		r = parse_format_option("checks", c, false, &ret->format);
		if (r != 0) {
			if (r < 0)
				return r;
			continue;
		}
		switch (c) {
		case 'h':
			checks_help();
			return 1;
		default:
			return bad_option("checks", c, argv);
		}
	}
	return no_more_arguments("checks", argc, argv);
}

static int write_catalog_json(void)
{
	json_object *arr = json_object_new_array();
	int r;

	for (size_t i = 0; i < check_catalog_size; i++)
		json_object_array_add(arr, check_info_to_json(check_catalog[i]));
	r = json_write(stdout, arr, 1);
	json_object_put(arr);
	return r;
}

static void write_catalog_text(void)
{
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

static int checks_run_cmd(const struct checks_args *args)
{
	if (args->format == FORMAT_JSON) {
		if (write_catalog_json() < 0)
			return EXIT_UNKNOWN;
	} else
		write_catalog_text();
	return flush_stdout() < 0 ? EXIT_UNKNOWN : 0;
}

int cmd_checks(int argc, char **argv)
{
	struct checks_args args;
	int r = checks_parse(argc, argv, &args);

	if (r != 0)
		return r > 0 ? 0 : EXIT_UNKNOWN;
	return checks_run_cmd(&args);
}
