/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard explain ID`: one check of the catalog for a person: severity, summary, the
 * explanation and the remedy wrapped at 76 columns, and its journal MESSAGE_ID. An unknown id
 * lists the known ones on standard error and exits 3.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/log.h"
#include "util/string-util.h"

struct explain_args {
	const char *id;
};

/* 0: run; 1: done (help shown); negative: a usage error, logged. No getopt here: the one
 * argument is the id, whatever it looks like. */
static int explain_parse(int argc, char **argv, struct explain_args *ret)
{
	*ret = (struct explain_args){ 0 };
	if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		printf("Usage: ptsguard explain ID\n"
		       "\n"
		       "What check ID means, why it matters and how to fix it by hand, with its\n"
		       "journal MESSAGE_ID. The ids are those of ptsguard checks; an unknown one\n"
		       "lists them on standard error and exits 3.\n"
		       "\n"
		       "Options:\n"
		       "  -h --help   show this help\n");
		return 1;
	}
	if (argc != 2) {
		log_error("explain: expected exactly one check id (see ptsguard checks)");
		return -EINVAL;
	}
	ret->id = argv[1];
	return 0;
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

static int explain_run(const struct explain_args *args)
{
	const struct check_info *ci = check_find(args->id);

	if (!ci) {
		fprintf(stderr, "ptsguard: explain: unknown check '%s'. Known checks:\n", args->id);
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
	if (ci->predicts.steps) {
		char pred[160];

		printf("\nAllocation probe: its findings predict a failure at %s.\n",
		       probe_prediction_describe(&ci->predicts, pred, sizeof(pred)));
	}
	printf("\nMESSAGE_ID=%s\n", ci->message_id);
	return flush_stdout() < 0 ? EXIT_UNKNOWN : 0;
}

int cmd_explain(int argc, char **argv)
{
	struct explain_args args;
	int r = explain_parse(argc, argv, &args);

	if (r != 0)
		return r > 0 ? 0 : EXIT_UNKNOWN;
	return explain_run(&args);
}
