/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>

#include "report/report.h"
#include "util/util.h"

/*
 * One ptsguard_finding series per check of the catalog, 0 or 1, so alert rules
 * see a series that exists and drops to 0 rather than one that disappears.
 */
int report_write_prometheus(FILE *f, const struct report *r)
{
	size_t counts[_SEVERITY_MAX] = { 0 };

	fputs("# HELP ptsguard_finding 1 when a finding is present\n"
	      "# TYPE ptsguard_finding gauge\n",
	      f);
	for (size_t c = 0; c < check_catalog_size; c++) {
		const struct check_info *info = check_catalog[c];
		enum severity sev = info->severity;
		int present = 0;

		FOREACH_ARRAY (i, r->findings->items, r->findings->n_items)
			if (i->check == info) {
				present = 1;
				sev = i->severity;
			}
		fprintf(f, "ptsguard_finding{check=\"%s\",severity=\"%s\"} %d\n", info->id,
			severity_to_string(sev), present);
	}
	FOREACH_ARRAY (i, r->findings->items, r->findings->n_items)
		counts[i->severity]++;
	fputs("# HELP ptsguard_findings Findings present now, by severity\n"
	      "# TYPE ptsguard_findings gauge\n",
	      f);
	for (int s = _SEVERITY_MAX - 1; s >= 0; s--)
		fprintf(f, "ptsguard_findings{severity=\"%s\"} %zu\n", severity_to_string(s),
			counts[s]);
	/* A counter, as its name says: the daemon's detections since it started; a one-shot audit
	 * is a process of its own, and its total is what it found. */
	fputs("# HELP ptsguard_findings_total Findings detected since the process started, by "
	      "severity\n"
	      "# TYPE ptsguard_findings_total counter\n",
	      f);
	for (int s = _SEVERITY_MAX - 1; s >= 0; s--)
		fprintf(f, "ptsguard_findings_total{severity=\"%s\"} %llu\n", severity_to_string(s),
			(unsigned long long)(r->detected_total ? r->detected_total[s] : counts[s]));
	fprintf(f,
		"# HELP ptsguard_last_audit_timestamp_seconds When the last audit ran\n"
		"# TYPE ptsguard_last_audit_timestamp_seconds gauge\n"
		"ptsguard_last_audit_timestamp_seconds %.3f\n"
		"# HELP ptsguard_audit_duration_seconds How long the last audit took\n"
		"# TYPE ptsguard_audit_duration_seconds gauge\n"
		"ptsguard_audit_duration_seconds %.6f\n",
		(double)r->generated_at / 1e6, r->duration);
	return ferror(f) ? -EIO : 0;
}
