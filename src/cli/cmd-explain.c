/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard explain [--json] ID...`: checks of the catalog for a person: severity, summary, the
 * explanation and the remedy wrapped at 76 columns, and the journal MESSAGE_ID; or, with --json,
 * the rows as ptsguard checks --json writes them. Every id is looked up before anything is
 * printed: an unknown one is named, with the nearest known id, and the command exits 3.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/string-util.h"

struct explain_args {
	bool json;
	char **ids; /* argv's, NULL-terminated */
	int n_ids;
};

static void explain_help(void)
{
	printf("Usage: ptsguard explain [--json] ID...\n"
	       "\n"
	       "What each check ID means, why it matters and how to fix it by hand, with its\n"
	       "journal MESSAGE_ID. The ids are those of ptsguard checks; an unknown one is\n"
	       "named with the nearest known id, and the command exits 3.\n"
	       "\n"
	       "Options:\n"
	       "     --json   the checks as JSON (as ptsguard checks --json writes them)\n"
	       "  -h --help   show this help\n");
}

/* 0: run; 1: done (help shown); negative: a usage error, logged. Arguments other than the two
 * options are ids, whatever they look like. */
static int explain_parse(int argc, char **argv, struct explain_args *ret)
{
	*ret = (struct explain_args){ 0 };
	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--help") || streq(argv[i], "-h")) {
			explain_help();
			return 1;
		}
		if (streq(argv[i], "--json")) {
			ret->json = true;
			continue;
		}
		if (streq(argv[i], "--")) {
			argv[i] = NULL;
			continue;
		}
		argv[ret->n_ids++] = argv[i];
	}
	if (ret->n_ids == 0) {
		log_error("explain: expected a check id (see ptsguard checks, or ptsguard explain "
			  "--help)");
		return -EINVAL;
	}
	argv[ret->n_ids] = NULL;
	ret->ids = argv;
	return 0;
}

/* The edit distance of a and b (insertions, deletions, substitutions), capped at 99. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], prev;

	if (la >= ELEMENTSOF(row) || lb >= ELEMENTSOF(row))
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j], best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	return row[lb];
}

/* The known id nearest to id, or NULL when none is near (more than a third of it differs). */
static const char *nearest_id(const char *id)
{
	const char *best = NULL;
	size_t best_d = strlen(id) / 3 + 1;

	for (size_t i = 0; i < check_catalog_size; i++) {
		size_t d = distance(id, check_catalog[i]->id);

		if (d < best_d || (d == best_d && !best && d <= 2)) {
			best = check_catalog[i]->id;
			best_d = d;
		}
	}
	return best;
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

static void explain_text(const struct check_info *ci)
{
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
}

static int explain_run(const struct explain_args *args)
{
	json_object *arr = NULL;
	bool unknown = false;
	int r = 0;

	for (int i = 0; i < args->n_ids; i++)
		if (!check_find(args->ids[i])) {
			const char *near = nearest_id(args->ids[i]);

			if (near)
				log_error("explain: unknown check '%s'; did you mean '%s'?",
					  args->ids[i], near);
			else
				log_error(
				    "explain: unknown check '%s' (ptsguard checks lists them)",
				    args->ids[i]);
			unknown = true;
		}
	if (unknown)
		return EXIT_UNKNOWN;
	if (args->json)
		arr = json_object_new_array();
	for (int i = 0; i < args->n_ids; i++) {
		const struct check_info *ci = check_find(args->ids[i]);

		if (arr)
			json_object_array_add(arr, check_info_to_json(ci));
		else {
			if (i > 0)
				fputs("\n", stdout);
			explain_text(ci);
		}
	}
	if (arr) {
		r = json_write(stdout, arr, 1);
		json_object_put(arr);
	}
	if (r >= 0)
		r = flush_stdout();
	return r < 0 ? EXIT_UNKNOWN : 0;
}

int cmd_explain(int argc, char **argv)
{
	struct explain_args args;
	int r = explain_parse(argc, argv, &args);

	if (r != 0)
		return r > 0 ? 0 : EXIT_UNKNOWN;
	return explain_run(&args);
}
