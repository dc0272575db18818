/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared by the fuzz targets: run every check and every sink over a snapshot, so that the
 * analysis, the checks and the writers all see what the parser let through. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "report/report.h"
#include "snapshot/snapshot.h"
#include "util/json-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fuzz_audit(const struct snapshot *s)
{
	struct analysis *a = NULL;
	struct findings f = { 0 };
	struct report rep;
	json_object *o;
	char *text;
	FILE *null;

	if (analysis_new(s, &a) < 0)
		return;
	if (checks_run(a, NULL, &f) == 0) {
		rep = (struct report){ .snap = s, .a = a, .findings = &f, .source = "snapshot" };
		o = report_to_json(&rep);
		text = json_to_text(o, 1);
		free(text);
		json_object_put(o);
		null = fopen("/dev/null", "w");
		if (null) {
			report_write_text(null, &rep, true);
			report_write_prometheus(null, &rep);
			fclose(null);
		}
	}
	findings_done(&f);
	analysis_free(a);
}

/* A healthy host's nodes, so that checks past the ptmx routing run too. */
static inline void fuzz_add_nodes(struct snapshot *s)
{
	struct node *n = snapshot_add_node(s, "/dev/ptmx");

	if (n) {
		n->type = NODE_CHAR;
		n->mode = 0666;
		n->rdev = (5 << 8) | 2;
	}
	n = snapshot_add_node(s, "/dev/pts/0");
	if (n) {
		n->type = NODE_CHAR;
		n->mode = 0644;
		n->gid = 1000;
		n->rdev = 136 << 8;
	}
}
