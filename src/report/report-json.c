/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "analysis/boot.h"
#include "report/report.h"
#include "snapshot/snapshot-json.h"
#include "util/json-util.h"
#include "util/macro.h"
#include "util/version.h"

int report_exit_status(const struct findings *f)
{
	bool any;
	enum severity worst = findings_worst(f, &any);

	if (!any || worst == SEVERITY_INFO)
		return 0;
	return worst == SEVERITY_WARNING ? 1 : 2;
}

int report_exit_status_all(const struct report *r)
{
	int worst = report_exit_status(r->findings);

	FOREACH_ARRAY (n, r->namespaces, r->n_namespaces) {
		int st = report_exit_status(n->report.findings);

		worst = st > worst ? st : worst;
	}
	return worst;
}

static json_object *json_timestamp(uint64_t usec)
{
	time_t t = (time_t)(usec / 1000000);
	struct tm tm;
	char buf[32];

	if (!gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return NULL;
	return json_object_new_string(buf);
}

/* Which build wrote the report: a support engineer reading a state file needs to know. */
static json_object *generator_json(void)
{
	json_object *o = json_object_new_object();

	json_add_new(o, "name", json_object_new_string("ptsguard"));
	json_add_new(o, "version", json_object_new_string(version_release()));
	json_add_new(o, "git", json_new_string_or_null(version_git()));
	return o;
}

static json_object *host_json(const struct report *r)
{
	json_object *o = json_object_new_object();

	json_add_new(o, "hostname", json_object_new_string(r->snap->hostname ?: ""));
	json_add_new(o, "kernel", json_object_new_string(r->snap->kernel_release ?: ""));
	json_add_new(
	    o, "semantics",
	    json_object_new_string(r->a->multi_instance ? "multi-instance" : "single-instance"));
	json_add_new(o, "tty_gid", json_object_new_int64(r->snap->tty_gid));
	json_add_new(o, "user_namespaces",
		     json_object_new_boolean(r->snap->user_namespaces_max > 0));
	json_add_new(o, "mount_namespace", json_object_new_string(snapshot_mount_ns_kind(r->snap)));
	return o;
}

static json_object *ptmx_json(const struct analysis *a)
{
	json_object *o = json_object_new_object();
	const struct node *n = a->ptmx, *fin = a->ptmx_final;
	const struct mount_entry *serving = analysis_serving_mount(a);
	bool present = n && n->type != NODE_MISSING;

	json_add_new(o, "path", json_object_new_string(PTMX_PATH));
	json_add_new(o, "kind", json_object_new_string(ptmx_kind_to_string(a->ptmx_kind)));
	json_add_new(o, "mode", present ? json_new_mode(n->mode) : NULL);
	json_add_new(o, "rdev", fin && fin->type == NODE_CHAR ? json_new_devnum(fin->rdev) : NULL);
	json_add_new(o, "target", present ? json_new_string_or_null(n->target) : NULL);
	json_add_new(o, "serving_mount_id", serving ? json_object_new_int64(serving->id) : NULL);
	return o;
}

static json_object *options_json(const struct devpts_options *op)
{
	json_object *o = json_object_new_object();

	json_add_new(o, "gid", op->has_gid ? json_object_new_int64(op->gid) : NULL);
	json_add_new(o, "mode", json_new_mode(op->mode));
	json_add_new(o, "ptmxmode", json_new_mode(op->ptmxmode));
	json_add_new(o, "max", op->has_max ? json_object_new_int64(op->max) : NULL);
	return o;
}

static json_object *instances_json(const struct analysis *a)
{
	const struct mount_table *t = a->snap->mounts;
	json_object *arr = json_new_array_sized(a->n_instances);

	FOREACH_ARRAY (in, a->instances, a->n_instances) {
		json_object *o = json_object_new_object(),
			    *mounts = json_new_array_sized(in->n_mounts);
		json_object *holders = json_new_array_sized(0);

		json_add_new(o, "device", json_new_devnum(in->dev));
		for (size_t i = 0; i < in->n_mounts; i++) {
			size_t m = in->mounts[i];
			const struct mount_entry *e = &t->entries[m];
			json_object *mo = json_object_new_object();

			json_add_new(mo, "mount_id", json_object_new_int64(e->id));
			json_add_new(mo, "parent_id", json_object_new_int64(e->parent_id));
			json_add_new(mo, "mountpoint", json_object_new_string(e->mountpoint));
			json_add_new(mo, "covered", json_object_new_boolean(!a->reachable[m]));
			json_add_new(mo, "covered_by",
				     a->covered_by[m] != NO_MOUNT
					 ? json_object_new_int64(t->entries[a->covered_by[m]].id)
					 : NULL);
			json_object_array_add(mounts, mo);
		}
		json_add_new(o, "mounts", mounts);
		json_add_new(o, "options", options_json(&in->options));
		json_add_new(o, "serving", json_object_new_boolean(in->serving));
		FOREACH_ARRAY (h, a->snap->holders, a->snap->n_holders) {
			json_object *ho;

			if (h->dev != in->dev)
				continue;
			ho = json_object_new_object();
			json_add_new(ho, "pid", json_object_new_int64(h->pid));
			json_add_new(ho, "comm", json_object_new_string(h->comm ?: ""));
			json_add_new(ho, "index", json_object_new_int64(h->index));
			json_object_array_add(holders, ho);
		}
		json_add_new(o, "holders", holders);
		json_object_array_add(arr, o);
	}
	return arr;
}

static json_object *finding_json(const struct finding *f)
{
	json_object *o = json_object_new_object(), *ids = json_new_array_sized(f->n_mount_ids);
	json_object *devs = json_new_array_sized(f->n_devices);

	json_add_new(o, "id", json_object_new_string(f->check->id));
	json_add_new(o, "severity", json_object_new_string(severity_to_string(f->severity)));
	json_add_new(o, "message_id", json_object_new_string(f->check->message_id));
	json_add_new(o, "summary", json_object_new_string(f->summary ?: f->check->summary));
	for (size_t i = 0; i < f->n_mount_ids; i++)
		json_object_array_add(ids, json_object_new_int64(f->mount_ids[i]));
	json_add_new(o, "mount_ids", ids);
	for (size_t i = 0; i < f->n_devices; i++)
		json_object_array_add(devs, json_new_devnum(f->devices[i]));
	json_add_new(o, "devices", devs);
	json_add_new(o, "evidence", json_object_get(f->evidence));
	json_add_new(o, "remedy", json_new_string_or_null(f->remedy));
	json_add_new(o, "repairable", json_object_new_boolean(finding_repairable(f)));
	return o;
}

json_object *report_to_json(const struct report *r)
{
	json_object *o = json_object_new_object();
	json_object *findings = json_new_array_sized(r->findings->n_items);
	json_object *summary = json_object_new_object();
	int64_t counts[_SEVERITY_MAX] = { 0 };

	json_add_new(o, "schema", json_object_new_string("ptsguard.report/1"));
	json_add_new(o, "generated_at", json_timestamp(r->generated_at));
	json_add_new(o, "source", json_object_new_string(r->source));
	json_add_new(o, "generator", generator_json());
	json_add_new(o, "host", host_json(r));
	/* A report of a namespace snapshot audited offline says which namespace it was. */
	if (r->snap->ns && !r->namespaces)
		json_add_new(o, "namespace", snapshot_namespace_to_json(r->snap->ns));
	json_add_new(o, "ptmx", ptmx_json(r->a));
	json_add_new(o, "instances", instances_json(r->a));
	FOREACH_ARRAY (f, r->findings->items, r->findings->n_items) {
		json_object_array_add(findings, finding_json(f));
		counts[f->severity]++;
	}
	json_add_new(o, "findings", findings);
	json_add_new(o, "boot", boot_report_json(r->a));
	if (r->snap->last_healthy.known)
		json_add_new(o, "last_healthy",
			     devpts_seen_healthy_to_json(&r->snap->last_healthy));
	json_add_new(o, "probe", alloc_probe_to_json(&r->snap->probe));
	{
		/* Holders are looked for only when a covered instance exists; a process whose fds
		 * could not be read (not root), or one a search cut short at its time budget did
		 * not reach, may hold one unseen. */
		const struct holders_progress *p = &r->snap->holders_progress;
		json_object *scan = json_object_new_object();

		json_add_new(scan, "performed", json_object_new_boolean(r->snap->holders_scanned));
		json_add_new(scan, "processes_skipped",
			     json_object_new_int64(r->snap->holders_skipped));
		json_add_new(scan, "complete",
			     json_object_new_boolean(!r->snap->holders_scanned || !p->partial));
		json_add_new(scan, "processes_scanned",
			     json_object_new_int64(p->processes_scanned));
		json_add_new(scan, "processes_left", json_object_new_int64(p->processes_left));
		json_add_new(scan, "fds_scanned", json_object_new_int64((int64_t)p->fds_scanned));
		json_add_new(o, "holders_scan", scan);
	}
	if (r->journal) {
		json_object *j = json_object_new_object();

		json_add_new(j, "queued", json_object_new_int64((int64_t)r->journal->queued));
		json_add_new(j, "dropped", json_object_new_int64((int64_t)r->journal->dropped));
		json_add_new(o, "journal", j);
	}
	if (r->namespaces) {
		json_object *arr = json_new_array_sized(r->n_namespaces);

		FOREACH_ARRAY (n, r->namespaces, r->n_namespaces)
			json_object_array_add(arr, report_namespace_to_json(n));
		json_add_new(o, "namespaces", arr);
	}
	json_add_new(summary, "critical", json_object_new_int64(counts[SEVERITY_CRITICAL]));
	json_add_new(summary, "warning", json_object_new_int64(counts[SEVERITY_WARNING]));
	json_add_new(summary, "info", json_object_new_int64(counts[SEVERITY_INFO]));
	json_add_new(o, "summary", summary);
	return o;
}

json_object *report_namespace_to_json(const struct report_namespace *n)
{
	json_object *o = json_object_new_object(), *c = NULL;
	struct report inner = n->report;

	json_add_new(o, "mntns", json_object_new_int64((int64_t)n->mntns));
	/* Only for a chroot inside the namespace: an item of a namespace keeps its shape. */
	if (n->root)
		json_add_new(o, "root", json_object_new_string(n->root));
	json_add_new(o, "pid", json_object_new_int64(n->pid));
	json_add_new(o, "pids_total", json_object_new_int64(n->pids_total));
	if (n->container_manager) {
		c = json_object_new_object();
		json_add_new(c, "manager", json_object_new_string(n->container_manager));
		json_add_new(c, "id", json_new_string_or_null(n->container_id));
		json_add_new(c, "name", json_new_string_or_null(n->container_name));
		json_add_new(c, "pod_uid", json_new_string_or_null(n->container_pod_uid));
	}
	json_add_new(o, "container", c);
	if (n->error) {
		json_add_new(o, "report", NULL);
		json_add_new(o, "error", json_object_new_string(n->error));
		return o;
	}
	/* A namespace's own report has no namespaces of its own. */
	inner.namespaces = NULL;
	inner.n_namespaces = 0;
	json_add_new(o, "report", report_to_json(&inner));
	return o;
}
