/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "analysis/boot.h"
#include "report/report.h"
#include "snapshot/snapshot-json.h"
#include "util/escape.h"
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

/*
 * The report's schema, described once through an emitter (util/json-util.h): built as a json-c
 * tree (report_to_json()), or written as its text with no tree (report_write_json(),
 * report_to_text()), the same bytes either way.
 */

/* A path a namespace named, under key; its text is written valid UTF-8 (util/json-util.h), and
 * when it is not, its exact bytes follow as hex digits under hex_key (docs/report.md). */
static void emit_path(struct json_emit *e, const char *key, const char *hex_key, const char *v)
{
	_cleanup_free_ char *hex = NULL;

	emit_string(e, key, v);
	if (!v || utf8_valid(v, strlen(v)))
		return;
	hex = hex_bytes(v, strlen(v));
	if (!hex)
		e->sink.error = e->sink.error ?: -ENOMEM;
	else
		emit_string(e, hex_key, hex);
}

static void emit_timestamp(struct json_emit *e, const char *key, uint64_t usec)
{
	time_t t = (time_t)(usec / 1000000);
	struct tm tm;
	char buf[32];

	if (!gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		emit_null(e, key);
	else
		emit_string(e, key, buf);
}

/* Which build wrote the report: a support engineer reading a state file needs to know. */
static void emit_generator(struct json_emit *e)
{
	emit_object(e, "generator");
	emit_string(e, "name", "ptsguard");
	emit_string(e, "version", version_release());
	emit_string(e, "git", version_git());
	emit_end(e);
}

static void emit_host(struct json_emit *e, const struct report *r)
{
	emit_object(e, "host");
	emit_string(e, "hostname", r->snap->hostname ?: "");
	emit_string(e, "kernel", r->snap->kernel_release ?: "");
	emit_string(e, "semantics", r->a->multi_instance ? "multi-instance" : "single-instance");
	emit_int(e, "tty_gid", r->snap->tty_gid);
	emit_bool(e, "user_namespaces", r->snap->user_namespaces_max > 0);
	emit_string(e, "mount_namespace", snapshot_mount_ns_kind(r->snap));
	emit_end(e);
}

static void emit_ptmx(struct json_emit *e, const struct analysis *a)
{
	const struct node *n = a->ptmx, *fin = a->ptmx_final;
	const struct mount_entry *serving = analysis_serving_mount(a);
	bool present = n && n->type != NODE_MISSING;

	emit_object(e, "ptmx");
	emit_string(e, "path", PTMX_PATH);
	emit_string(e, "kind", ptmx_kind_to_string(a->ptmx_kind));
	if (present)
		emit_mode(e, "mode", n->mode);
	else
		emit_null(e, "mode");
	if (fin && fin->type == NODE_CHAR)
		emit_devnum(e, "rdev", fin->rdev);
	else
		emit_null(e, "rdev");
	emit_string(e, "target", present ? n->target : NULL);
	if (serving)
		emit_int(e, "serving_mount_id", serving->id);
	else
		emit_null(e, "serving_mount_id");
	emit_end(e);
}

static void emit_options(struct json_emit *e, const struct devpts_options *op)
{
	emit_object(e, "options");
	if (op->has_gid)
		emit_int(e, "gid", op->gid);
	else
		emit_null(e, "gid");
	emit_mode(e, "mode", op->mode);
	emit_mode(e, "ptmxmode", op->ptmxmode);
	if (op->has_max)
		emit_int(e, "max", op->max);
	else
		emit_null(e, "max");
	emit_end(e);
}

static void emit_instances(struct json_emit *e, const struct analysis *a)
{
	const struct mount_table *t = a->snap->mounts;

	emit_array(e, "instances", a->n_instances);
	FOREACH_ARRAY (in, a->instances, a->n_instances) {
		emit_object(e, NULL);
		emit_devnum(e, "device", in->dev);
		emit_array(e, "mounts", in->n_mounts);
		for (size_t i = 0; i < in->n_mounts; i++) {
			size_t m = in->mounts[i];
			const struct mount_entry *me = &t->entries[m];

			emit_object(e, NULL);
			emit_int(e, "mount_id", me->id);
			emit_int(e, "parent_id", me->parent_id);
			emit_path(e, "mountpoint", "mountpoint_hex", me->mountpoint);
			emit_bool(e, "covered", !a->reachable[m]);
			if (a->covered_by[m] != NO_MOUNT)
				emit_int(e, "covered_by", t->entries[a->covered_by[m]].id);
			else
				emit_null(e, "covered_by");
			emit_end(e);
		}
		emit_end(e);
		emit_options(e, &in->options);
		emit_bool(e, "serving", in->serving);
		emit_array(e, "holders", 0);
		FOREACH_ARRAY (h, a->snap->holders, a->snap->n_holders) {
			if (h->dev != in->dev)
				continue;
			emit_object(e, NULL);
			emit_int(e, "pid", h->pid);
			emit_string(e, "comm", h->comm ?: "");
			emit_int(e, "index", h->index);
			emit_end(e);
		}
		emit_end(e);
		emit_end(e);
	}
	emit_end(e);
}

static void emit_finding(struct json_emit *e, const struct finding *f)
{
	emit_object(e, NULL);
	emit_string(e, "id", f->check->id);
	emit_string(e, "severity", severity_to_string(f->severity));
	emit_string(e, "message_id", f->check->message_id);
	emit_string(e, "summary", f->summary ?: f->check->summary);
	emit_array(e, "mount_ids", f->n_mount_ids);
	for (size_t i = 0; i < f->n_mount_ids; i++)
		emit_int(e, NULL, f->mount_ids[i]);
	emit_end(e);
	emit_array(e, "devices", f->n_devices);
	for (size_t i = 0; i < f->n_devices; i++)
		emit_devnum(e, NULL, f->devices[i]);
	emit_end(e);
	finding_emit_evidence(f, e, "evidence");
	emit_string(e, "remedy", f->remedy);
	emit_bool(e, "repairable", finding_repairable(f));
	emit_end(e);
}

/* Holders are looked for only when a covered instance exists; a process whose fds could not be
 * read (not root), or one a search cut short at its time budget did not reach, may hold one
 * unseen. */
static void emit_holders_scan(struct json_emit *e, const struct snapshot *s)
{
	const struct holders_progress *p = &s->holders_progress;

	emit_object(e, "holders_scan");
	emit_bool(e, "performed", s->holders_scanned);
	emit_int(e, "processes_skipped", s->holders_skipped);
	emit_bool(e, "complete", !s->holders_scanned || !p->partial);
	emit_int(e, "processes_scanned", p->processes_scanned);
	emit_int(e, "processes_left", p->processes_left);
	emit_int(e, "fds_scanned", (int64_t)p->fds_scanned);
	emit_end(e);
}

static void emit_namespace(struct json_emit *e, const struct report_namespace *n);

static void emit_report(struct json_emit *e, const char *key, const struct report *r)
{
	int64_t counts[_SEVERITY_MAX] = { 0 };

	emit_object(e, key);
	emit_string(e, "schema", "ptsguard.report/1");
	emit_timestamp(e, "generated_at", r->generated_at);
	emit_string(e, "source", r->source);
	emit_generator(e);
	emit_host(e, r);
	/* A report of a namespace snapshot audited offline says which namespace it was. */
	if (r->snap->ns && !r->namespaces)
		emit_value(e, "namespace", snapshot_namespace_to_json(r->snap->ns));
	emit_ptmx(e, r->a);
	emit_instances(e, r->a);
	emit_array(e, "findings", r->findings->n_items);
	FOREACH_ARRAY (f, r->findings->items, r->findings->n_items) {
		emit_finding(e, f);
		counts[f->severity]++;
	}
	emit_end(e);
	emit_value(e, "boot", boot_report_json(r->a));
	if (r->snap->last_healthy.known)
		emit_value(e, "last_healthy", devpts_seen_healthy_to_json(&r->snap->last_healthy));
	emit_value(e, "probe", alloc_probe_to_json(&r->snap->probe));
	emit_holders_scan(e, r->snap);
	if (r->journal) {
		emit_object(e, "journal");
		emit_int(e, "queued", (int64_t)r->journal->queued);
		emit_int(e, "dropped", (int64_t)r->journal->dropped);
		emit_end(e);
	}
	if (r->daemon_pid > 0)
		emit_int(e, "daemon_pid", r->daemon_pid);
	if (r->last_transition) {
		emit_object(e, "last_transition");
		emit_timestamp(e, "at", r->last_transition->at);
		emit_string(e, "check", r->last_transition->check);
		emit_string(e, "state", r->last_transition->state);
		emit_string(e, "severity", r->last_transition->severity);
		emit_end(e);
	}
	if (r->namespaces) {
		emit_array(e, "namespaces", r->n_namespaces);
		FOREACH_ARRAY (n, r->namespaces, r->n_namespaces)
			emit_namespace(e, n);
		emit_end(e);
	}
	emit_object(e, "summary");
	emit_int(e, "critical", counts[SEVERITY_CRITICAL]);
	emit_int(e, "warning", counts[SEVERITY_WARNING]);
	emit_int(e, "info", counts[SEVERITY_INFO]);
	emit_end(e);
	emit_end(e);
}

static void emit_namespace(struct json_emit *e, const struct report_namespace *n)
{
	struct report inner = n->report;

	emit_object(e, NULL);
	emit_int(e, "mntns", (int64_t)n->mntns);
	/* Only for a chroot inside the namespace: an item of a namespace keeps its shape. */
	if (n->root)
		emit_path(e, "root", "root_hex", n->root);
	emit_int(e, "pid", n->pid);
	if (n->target)
		emit_string(e, "target", n->target);
	emit_int(e, "pids_total", n->pids_total);
	if (n->container_manager) {
		emit_object(e, "container");
		emit_string(e, "manager", n->container_manager);
		emit_string(e, "id", n->container_id);
		emit_string(e, "name", n->container_name);
		emit_string(e, "pod_uid", n->container_pod_uid);
		emit_end(e);
	} else
		emit_null(e, "container");
	if (n->error) {
		emit_null(e, "report");
		emit_string(e, "error", n->error);
	} else {
		/* A namespace's own report has no namespaces of its own. */
		inner.namespaces = NULL;
		inner.n_namespaces = 0;
		emit_report(e, "report", &inner);
	}
	emit_end(e);
}

json_object *report_to_json(const struct report *r)
{
	struct json_emit e;

	emit_start_tree(&e);
	emit_report(&e, NULL, r);
	return emit_take_tree(&e);
}

int report_namespace_write_json(FILE *f, const struct report_namespace *n, int level)
{
	struct json_emit e;

	emit_start_text(&e, f, 1, level);
	emit_namespace(&e, n);
	return emit_finish_file(&e, false);
}

int report_write_json(FILE *f, const struct report *r)
{
	struct json_emit e;

	emit_start_text(&e, f, 1, 0);
	emit_report(&e, NULL, r);
	return emit_finish_file(&e, true);
}

char *report_to_text(const struct report *r)
{
	struct json_emit e;

	emit_start_text(&e, NULL, 1, 0);
	emit_report(&e, NULL, r);
	return emit_take_text(&e, true);
}
