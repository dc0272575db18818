/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "report/report.h"
#include "util/escape.h"
#include "util/macro.h"
#include "util/version.h"

static void fputs_label(const char *s, FILE *f);

/*
 * One ptsguard_finding series per check of the catalog, 0 or 1, so alert rules
 * see a series that exists and drops to 0 rather than one that disappears; but
 * never a 0 for a check the command's filters leave out (--check, --ignore,
 * --min-severity), or whose finding they left out: that series is not written.
 * Every exposition starts with ptsguard_build_info and ptsguard_audit_success.
 */
int report_write_prometheus(FILE *f, const struct report *r)
{
	struct prometheus_namespaces ns;
	int k;

	if (!r->namespaces)
		return report_write_prometheus_all(f, r, NULL);
	k = prometheus_namespaces_init(&ns);
	FOREACH_ARRAY (n, r->namespaces, r->n_namespaces)
		if (k >= 0)
			k = prometheus_namespaces_add(&ns, n);
	if (k >= 0)
		k = report_write_prometheus_all(f, r, &ns);
	prometheus_namespaces_done(&ns);
	return k;
}

/* ptsguard_build_info and ptsguard_audit_success, first in every exposition. */
static void write_header(FILE *f, bool success)
{
	fputs("# HELP ptsguard_build_info The ptsguard that wrote these series\n"
	      "# TYPE ptsguard_build_info gauge\n"
	      "ptsguard_build_info{version=\"",
	      f);
	fputs_label(version_release(), f);
	fprintf(f,
		"\"} 1\n"
		"# HELP ptsguard_audit_success 1 when the audit ran, 0 when it could not\n"
		"# TYPE ptsguard_audit_success gauge\n"
		"ptsguard_audit_success %d\n",
		success);
}

int report_write_prometheus_failed(FILE *f, const char *reason)
{
	write_header(f, false);
	fputs("# HELP ptsguard_audit_error Why the audit could not run\n"
	      "# TYPE ptsguard_audit_error gauge\n"
	      "ptsguard_audit_error{reason=\"",
	      f);
	fputs_label(reason, f);
	fputs("\"} 1\n", f);
	return ferror(f) ? -EIO : 0;
}

/* Whether the check at catalog index c gets its series with no finding present: not when the
 * filters leave it out, left out one of its findings, or would leave out its findings at its
 * catalog severity. */
static bool series_when_absent(const struct report *r, size_t c)
{
	const struct report_filter *filter = r->filter;

	if (r->hidden_checks && r->hidden_checks[c])
		return false;
	if (!filter)
		return true;
	if (filter->excluded && filter->excluded[c])
		return false;
	return check_catalog[c]->severity >= filter->min_severity;
}

int report_write_prometheus_all(FILE *f, const struct report *r, struct prometheus_namespaces *ns)
{
	size_t counts[_SEVERITY_MAX] = { 0 };
	enum severity min = r->filter ? r->filter->min_severity : SEVERITY_INFO;

	write_header(f, true);
	fputs("# HELP ptsguard_finding 1 when a finding is present\n"
	      "# TYPE ptsguard_finding gauge\n",
	      f);
	for (size_t c = 0; c < check_catalog_size; c++) {
		const struct check_info *info = check_catalog[c];
		enum severity sev = info->severity;
		int present = 0;

		/* Of several findings of one check (a visible and a hidden stack), the worst. */
		FOREACH_ARRAY (i, r->findings->items, r->findings->n_items)
			if (i->check == info && (!present || i->severity > sev)) {
				present = 1;
				sev = i->severity;
			}
		if (!present && !series_when_absent(r, c))
			continue;
		fprintf(f, "ptsguard_finding{check=\"%s\",severity=\"%s\"} %d\n", info->id,
			severity_to_string(sev), present);
	}
	if (ns && fflush(ns->finding) == 0 && ns->finding_text)
		fputs(ns->finding_text, f);
	FOREACH_ARRAY (i, r->findings->items, r->findings->n_items)
		counts[i->severity]++;
	fputs("# HELP ptsguard_findings Findings present now, by severity\n"
	      "# TYPE ptsguard_findings gauge\n",
	      f);
	/* A severity below --min-severity is not counted: no 0 for it. */
	for (int s = _SEVERITY_MAX - 1; s >= (int)min; s--)
		fprintf(f, "ptsguard_findings{severity=\"%s\"} %zu\n", severity_to_string(s),
			counts[s]);
	if (ns && fflush(ns->findings) == 0 && ns->findings_text)
		fputs(ns->findings_text, f);
	/* A counter of the daemon's detections since it started, under a name no gauge family
	 * shares; a one-shot audit has nothing to count across audits and writes none. */
	if (r->detected_total) {
		fputs("# HELP ptsguard_detections_total Findings detected since the process "
		      "started, by severity\n"
		      "# TYPE ptsguard_detections_total counter\n",
		      f);
		for (int s = _SEVERITY_MAX - 1; s >= 0; s--)
			fprintf(f, "ptsguard_detections_total{severity=\"%s\"} %llu\n",
				severity_to_string(s), (unsigned long long)r->detected_total[s]);
	}
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

int prometheus_namespaces_init(struct prometheus_namespaces *p)
{
	*p = (struct prometheus_namespaces){ 0 };
	p->finding = open_memstream(&p->finding_text, &p->finding_size);
	p->findings = open_memstream(&p->findings_text, &p->findings_size);
	if (!p->finding || !p->findings) {
		prometheus_namespaces_done(p);
		return -ENOMEM;
	}
	return 0;
}

void prometheus_namespaces_done(struct prometheus_namespaces *p)
{
	if (p->finding)
		fclose(p->finding);
	if (p->findings)
		fclose(p->findings);
	free(p->finding_text);
	free(p->findings_text);
	*p = (struct prometheus_namespaces){ 0 };
}

/*
 * A label value of the exposition format, from a name a namespace chose (a container's name, a
 * chroot's path): valid UTF-8 whatever its bytes, as the format requires (a single invalid byte
 * makes Prometheus reject the whole scrape, the host's series with it), and lossless. The value
 * is the name with its backslashes doubled and each byte that is not part of well-formed UTF-8
 * as \xNN; written with the format's own escapes of backslash, double quote and newline.
 */
static void fputs_label(const char *s, FILE *f)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t k;

		if (c == '\\')
			fputs("\\\\\\\\", f);
		else if (c == '"')
			fputs("\\\"", f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x80)
			fputc(c, f);
		else if ((k = utf8_char_len(s + i, n - i)) > 0) {
			fwrite(s + i, 1, k, f);
			i += k - 1;
		} else
			fprintf(f, "\\\\x%c%c", hex[c >> 4], hex[c & 0xf]);
	}
}

static void namespace_labels(FILE *f, const struct report_namespace *n)
{
	char label[CONTAINER_LABEL_MAX];

	report_container_label(n, label, sizeof(label));
	fprintf(f, "mntns=\"%llu\",container=\"", (unsigned long long)n->mntns);
	fputs_label(label, f);
	fputc('"', f);
	/* A chroot inside the namespace: its series apart from the namespace's. */
	if (n->root) {
		fputs(",root=\"", f);
		fputs_label(n->root, f);
		fputc('"', f);
	}
	/* Only when known: an empty label is no label to PromQL, and the series keep their
	 * names. */
	if (n->container_pod_uid) {
		fputs(",pod_uid=\"", f);
		fputs_label(n->container_pod_uid, f);
		fputc('"', f);
	}
}

/* Of another namespace only the checks that found something get a ptsguard_finding series
 * (some 25 series for each of hundreds of namespaces would be mostly zeros); its
 * ptsguard_findings counts are always there, so that a namespace healing shows as 0. */
int prometheus_namespaces_add(struct prometheus_namespaces *p, const struct report_namespace *n)
{
	const struct report *r = &n->report;
	size_t counts[_SEVERITY_MAX] = { 0 };

	FOREACH_ARRAY (i, r->findings->items, r->findings->n_items) {
		bool first = true;

		counts[i->severity]++;
		FOREACH_ARRAY (j, r->findings->items, i - r->findings->items)
			if (j->check == i->check)
				first = false;
		if (!first)
			continue;
		fprintf(p->finding, "ptsguard_finding{check=\"%s\",severity=\"%s\",", i->check->id,
			severity_to_string(i->severity));
		namespace_labels(p->finding, n);
		fputs("} 1\n", p->finding);
	}
	for (int s = _SEVERITY_MAX - 1; s >= (int)(r->filter ? r->filter->min_severity : 0); s--) {
		fprintf(p->findings, "ptsguard_findings{severity=\"%s\",", severity_to_string(s));
		namespace_labels(p->findings, n);
		fprintf(p->findings, "} %zu\n", counts[s]);
	}
	return ferror(p->finding) || ferror(p->findings) ? -ENOMEM : 0;
}
