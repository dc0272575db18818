/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/outputs.h"
#include "util/json-util.h"
#include "util/output-file.h"
#include "util/util.h"

int state_file_write(const char *path, const struct report *rep)
{
	json_object *o = report_to_json(rep);
	_cleanup_free_ char *text = json_to_text(o, 1);
	int r;

	json_object_put(o);
	r = text ? output_file_write(path, text, strlen(text), 0644, true, NULL) : -ENOMEM;
	return r;
}

char *findings_signature(const struct findings *f)
{
	char *s = NULL;
	size_t size;
	FILE *m = open_memstream(&s, &size);

	if (!m)
		return NULL;
	FOREACH_ARRAY (i, f->items, f->n_items)
		fprintf(m, "%s/%s ", i->check->id, severity_to_string(i->severity));
	if (fclose(m) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

int prometheus_file_update(struct prometheus_file *p, const char *path, const struct report *rep,
			   uint64_t now)
{
	_cleanup_free_ char *sig = findings_signature(rep->findings), *text = NULL;
	size_t size = 0;
	FILE *m;
	int r;

	if (sig && streq(sig, p->signature) && now - p->written < PROMETHEUS_REFRESH_USEC)
		return 0;
	m = open_memstream(&text, &size);
	if (!m)
		return -ENOMEM;
	r = report_write_prometheus(m, rep);
	if (fclose(m) != 0 && r >= 0)
		r = -ENOMEM;
	if (r >= 0)
		r = output_file_write(path, text, size, 0644, true, NULL);
	if (r < 0)
		return r;
	free(p->signature);
	p->signature = TAKE_PTR(sig);
	p->written = now;
	return 1;
}

void prometheus_file_forget(struct prometheus_file *p)
{
	free(p->signature);
	p->signature = NULL;
}

char *findings_status_text(const struct findings *f)
{
	size_t counts[_SEVERITY_MAX] = { 0 };
	char *s;

	if (f->n_items == 0)
		return strdup("No findings");
	FOREACH_ARRAY (i, f->items, f->n_items)
		counts[i->severity]++;
	if (asprintf(&s, "Findings: %zu critical, %zu warning, %zu info", counts[SEVERITY_CRITICAL],
		     counts[SEVERITY_WARNING], counts[SEVERITY_INFO]) < 0)
		return NULL;
	return s;
}
