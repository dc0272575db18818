/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Severities and the list of findings: add, sort, filter, free. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/checks.h"
#include "util/alloc.h"
#include "util/json-util.h"
#include "util/string-table.h"
#include "util/string-util.h"

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
	free(f->evidence_text);
}

/* The object becomes its text. Out of memory it stays an object, which every reader takes too. */
static void finding_seal(struct finding *f)
{
	char *text;

	if (!f->evidence)
		return;
	text = json_to_compact(f->evidence);
	if (!text)
		return;
	json_object_put(f->evidence);
	f->evidence = NULL;
	f->evidence_text = text;
}

void findings_seal(struct findings *f)
{
	FOREACH_ARRAY (i, f->items, f->n_items)
		finding_seal(i);
}

int finding_evidence_add(struct finding *f, const char *key, json_object *v)
{
	if (!f->evidence && f->evidence_text) {
		/* Sealed: opened again (the probe's check confirms others' findings), and sealed
		 * again with the rest. */
		f->evidence = json_tokener_parse(f->evidence_text);
		if (!f->evidence) {
			json_object_put(v);
			return -ENOMEM;
		}
		free(f->evidence_text);
		f->evidence_text = NULL;
	}
	if (!f->evidence || json_object_object_add(f->evidence, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

bool finding_evidence_get(const struct finding *f, const char *key, json_object **ret)
{
	_cleanup_(json_object_putp) json_object *parsed = NULL;
	json_object *ev = f->evidence, *v = NULL;

	*ret = NULL;
	if (!ev) {
		/* A key the text does not hold anywhere is not in it: most readers ask each
		 * finding for a key few have ("origin"). */
		if (!f->evidence_text || !strstr(f->evidence_text, key))
			return false;
		ev = parsed = json_tokener_parse(f->evidence_text);
	}
	if (!ev || !json_object_object_get_ex(ev, key, &v))
		return false;
	*ret = json_object_get(v);
	return true;
}

char *finding_evidence_text(const struct finding *f)
{
	if (f->evidence_text)
		return strdup(f->evidence_text);
	return f->evidence ? json_to_compact(f->evidence) : strdup("{}");
}

void finding_emit_evidence(const struct finding *f, struct json_emit *e, const char *key)
{
	if (f->evidence_text)
		emit_json_text(e, key, f->evidence_text);
	else
		emit_value(e, key, json_object_get(f->evidence));
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

	/* The last finding is done with (its check has moved on to this one, or ended): its
	 * evidence is sealed, and the object's memory is there for this one's (500 findings touch
	 * some 60 pages fewer). */
	if (f->n_items > 0)
		finding_seal(&f->items[f->n_items - 1]);
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

void findings_keep(struct findings *f, bool (*keep)(const struct finding *i, void *userdata),
		   void *userdata)
{
	size_t w = 0;

	FOREACH_ARRAY (i, f->items, f->n_items) {
		if (keep(i, userdata))
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

char *finding_key(const struct finding *f)
{
	char *k;

	if (asprintf(&k, "%s\t%s\t%u", f->check->id, f->mountpoint ?: "",
		     f->n_mount_ids ? f->mount_ids[0] : 0) < 0)
		return NULL;
	return k;
}

bool finding_same_occurrence(const struct finding *x, const struct finding *y)
{
	_cleanup_(json_object_putp) json_object *ax = NULL, *ay = NULL;

	if (x->severity != y->severity)
		return false;
	if (!x->check->transition)
		return true;
	if (!finding_evidence_get(x, "after", &ax) || !finding_evidence_get(y, "after", &ay))
		return false;
	return json_object_equal(ax, ay);
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
