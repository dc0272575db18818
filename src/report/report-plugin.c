/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The monitoring-plugin line: what Nagios, Icinga, NRPE and node-problem-detector show of a
 * check is the first line of its output, so everything is said in one:
 *
 *   PTSGUARD CRITICAL - devpts-options-lost; WARNING - devpts-overmount | critical=1 warning=1
 * info=0
 *
 * The status word is the exit status's; the checks found follow, worst first, each named once
 * (at its worst severity over the host and every namespace); after '|' the performance data,
 * the findings shown by severity.
 */
#include <errno.h>
#include <stdlib.h>

#include "report/report.h"
#include "util/macro.h"

static const char *const status_word[] = { "OK", "WARNING", "CRITICAL", "UNKNOWN" };

int plugin_summary_init(struct plugin_summary *p)
{
	*p = (struct plugin_summary){ 0 };
	p->worst = malloc(sizeof(int) * (check_catalog_size ?: 1));
	if (!p->worst)
		return -ENOMEM;
	for (size_t k = 0; k < check_catalog_size; k++)
		p->worst[k] = -1;
	return 0;
}

void plugin_summary_done(struct plugin_summary *p)
{
	free(p->worst);
	*p = (struct plugin_summary){ 0 };
}

void plugin_summary_add(struct plugin_summary *p, const struct report *r)
{
	FOREACH_ARRAY (i, r->findings->items, r->findings->n_items) {
		size_t k = check_catalog_index(i->check);

		p->counts[i->severity]++;
		if (k < check_catalog_size && (int)i->severity > p->worst[k])
			p->worst[k] = (int)i->severity;
	}
	for (int s = 0; s < _SEVERITY_MAX; s++)
		p->hidden += r->hidden[s];
}

/* "; WARNING - a, b" for the checks whose worst is s; the first group without its word when it
 * is the status's own. Returns whether anything was written. */
static bool write_group(FILE *f, const struct plugin_summary *p, enum severity s, bool first,
			bool named_by_status)
{
	static const char *const word[] = {
		[SEVERITY_INFO] = "INFO",
		[SEVERITY_WARNING] = "WARNING",
		[SEVERITY_CRITICAL] = "CRITICAL",
	};
	bool any = false;

	for (size_t k = 0; k < check_catalog_size; k++) {
		if (p->worst[k] != (int)s)
			continue;
		if (!any) {
			if (!first)
				fputs("; ", f);
			if (!named_by_status)
				fprintf(f, "%s - ", word[s]);
		} else
			fputs(", ", f);
		fputs(check_catalog[k]->id, f);
		any = true;
	}
	return any;
}

int report_write_plugin(FILE *f, const struct plugin_summary *p, int status)
{
	bool first = true;

	if (status < 0 || status > 3)
		status = 3;
	fprintf(f, "PTSGUARD %s - ", status_word[status]);
	if (p->failed > 0) {
		fprintf(f, "%zu namespace%s not judged", p->failed, p->failed == 1 ? "" : "s");
		first = false;
	} else if (p->counts[SEVERITY_CRITICAL] + p->counts[SEVERITY_WARNING] == 0) {
		fputs(p->counts[SEVERITY_INFO] > 0 ? "no warning or critical finding"
						   : "no findings",
		      f);
		first = false;
	}
	for (int s = _SEVERITY_MAX - 1; s >= 0; s--)
		if (write_group(f, p, s, first, first && s == status))
			first = false;
	if (p->hidden > 0)
		fprintf(f, "; %zu finding%s not shown (filtered)", p->hidden,
			p->hidden == 1 ? "" : "s");
	fprintf(f, " | critical=%zu warning=%zu info=%zu\n", p->counts[SEVERITY_CRITICAL],
		p->counts[SEVERITY_WARNING], p->counts[SEVERITY_INFO]);
	return ferror(f) ? -EIO : 0;
}

int report_write_plugin_failed(FILE *f, const char *why)
{
	fputs("PTSGUARD UNKNOWN - ", f);
	for (const char *c = why; *c; c++)
		fputc(*c == '|' ? '/' : (unsigned char)*c < ' ' || *c == 0x7f ? ' ' : *c, f);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}
