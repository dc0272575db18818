/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Severities and the list of findings: add, sort, filter, free. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checks/checks.h"
#include "util/alloc.h"
#include "util/string-table.h"

static const char *const severity_table[_SEVERITY_MAX] = {
	[SEVERITY_INFO] = "info",
	[SEVERITY_WARNING] = "warning",
	[SEVERITY_CRITICAL] = "critical",
};
DEFINE_STRING_TABLE_LOOKUP(severity, enum severity);

static void finding_done(struct finding *f)
{
	free(f->summary);
	free(f->remedy);
	free(f->mountpoint);
	free(f->mount_ids);
	free(f->devices);
	free(f->journal_fields); /* one block, the strings inside */
	json_object_put(f->evidence);
}

void findings_done(struct findings *f)
{
	FOREACH_ARRAY (i, f->items, f->n_items)
		finding_done(i);
	free(f->items);
	*f = (struct findings){ 0 };
}

struct finding *findings_add(struct findings *f, const struct check_info *info,
			     enum severity severity, json_object *evidence)
{
	struct finding *n;

	if (!evidence || GROW(f->items, f->allocated, f->n_items + 1) < 0) {
		json_object_put(evidence);
		return NULL;
	}
	n = &f->items[f->n_items++];
	*n = (struct finding){ .check = info, .severity = severity, .evidence = evidence };
	return n;
}

int finding_add_mount(struct finding *f, unsigned mount_id, dev_t dev)
{
	bool have_dev = false;

	FOREACH_ARRAY (d, f->devices, f->n_devices)
		have_dev = have_dev || *d == dev;
	if (!have_dev) {
		dev_t *p = realloc(f->devices, sizeof(dev_t) * (f->n_devices + 1));
		if (!p)
			return -ENOMEM;
		f->devices = p;
		f->devices[f->n_devices++] = dev;
	}
	if (mount_id) {
		unsigned *p = realloc(f->mount_ids, sizeof(unsigned) * (f->n_mount_ids + 1));
		if (!p)
			return -ENOMEM;
		f->mount_ids = p;
		f->mount_ids[f->n_mount_ids++] = mount_id;
	}
	return 0;
}

static int compare_findings(const void *x, const void *y)
{
	const struct finding *a = x, *b = y;
	int c;

	if (a->severity != b->severity)
		return a->severity > b->severity ? -1 : 1;
	c = strcmp(a->check->id, b->check->id);
	if (c)
		return c;
	if (a->n_mount_ids && b->n_mount_ids && a->mount_ids[0] != b->mount_ids[0])
		return a->mount_ids[0] < b->mount_ids[0] ? -1 : 1;
	return strcmp(a->mountpoint ?: "", b->mountpoint ?: "");
}

void findings_filter(struct findings *f, enum severity min)
{
	size_t w = 0;

	FOREACH_ARRAY (i, f->items, f->n_items) {
		if (i->severity >= min)
			f->items[w++] = *i;
		else
			finding_done(i);
	}
	f->n_items = w;
}

void findings_sort(struct findings *f)
{
	if (f->n_items > 1)
		qsort(f->items, f->n_items, sizeof(struct finding), compare_findings);
}

enum severity findings_worst(const struct findings *f, bool *any)
{
	enum severity worst = SEVERITY_INFO;

	*any = f->n_items > 0;
	FOREACH_ARRAY (i, f->items, f->n_items)
		if (i->severity > worst)
			worst = i->severity;
	return worst;
}
