/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "probe/namespace.h"
#include "util/macro.h"

void host_serving_done(struct host_serving *h)
{
	free(h->mountpoint);
	*h = (struct host_serving){ 0 };
}

int host_serving_from_analysis(const struct analysis *a, struct host_serving *ret)
{
	const struct mount_entry *e;
	uint64_t mntns = 0;

	*ret = (struct host_serving){ 0 };
	(void)namespace_self_mntns(&mntns);
	ret->mntns = mntns;
	if (!(e = analysis_serving_mount(a)))
		return 0;
	ret->known = true;
	ret->dev = a->serving->dev;
	ret->mount_id = e->id;
	ret->mountpoint = strdup(e->mountpoint);
	return ret->mountpoint ? 0 : -ENOMEM;
}

/* The host's serving instance: its first probe pass and analysis, nothing more. */
static int probe_host_serving(const struct config *c, struct host_serving *ret,
			      struct parse_error *err)
{
	_cleanup_(snapshot_freep) struct snapshot *s = NULL;
	_cleanup_(analysis_freep) struct analysis *a = NULL;
	struct probe_options po = { 0 };
	int r;

	if (c && c->has_tty_gid) {
		po.has_tty_gid = true;
		po.tty_gid = c->tty_gid;
	}
	r = probe_base(&po, &s, err);
	if (r >= 0)
		r = analysis_new(s, &a);
	if (r >= 0)
		r = host_serving_from_analysis(a, ret);
	return r;
}

static int snapshot_stage(const struct audit_target *t, const struct config *c,
			  struct audit_result *res, struct parse_error *err)
{
	_cleanup_(host_serving_done) struct host_serving host = { 0 };
	struct probe_options po = t->probe;
	_cleanup_(alloc_pending_done) struct alloc_pending alloc = { .o.cgroup_fds = { -1, -1 } };
	int r;

	*err = (struct parse_error){ 0 };
	if (t->snapshot) {
		mount_table_free(po.mounts);
		res->snap = t->snapshot;
		/* A snapshot records the tty group of the host it came from; a configuration given
		 * for its audit says otherwise on purpose. */
		if (c && c->has_tty_gid)
			res->snap->tty_gid = c->tty_gid;
		return analysis_new(res->snap, &res->a);
	}

	if (c && c->has_tty_gid) {
		po.has_tty_gid = true;
		po.tty_gid = c->tty_gid;
	}
	if (t->holders)
		po.skip_holders = true;
	/* An audit of the host reads the daemon's record of its instance healthy (the daemon gives
	 * its own memory instead). */
	if (c && !po.last_healthy)
		po.state_file = c->state_file;
	if (c && !c->probe_enabled)
		po.skip_allocation = true;
	if (c && c->has_probe_user && !po.has_alloc_user) {
		po.has_alloc_user = true;
		po.alloc_uid = c->probe_uid;
		po.alloc_gid = c->probe_gid;
	}
	/* The allocation probe first, on the worker (for another namespace, under its root):
	 * it allocates on the other CPU while we read the mount table. It sees the namespace as
	 * it is while we read it, as a probe after the passes saw it as it was just after: either
	 * is the system of this audit. Its answer is taken before the second pass, so that the
	 * pty it made and closed is gone by then: the slaves listed and the holders scanned never
	 * include the probe's own. Without a worker (a lone audit) the probe runs there, in a
	 * guarded child: for one probe, cheaper than starting a worker. */
	probe_allocation_start(&po, t->probe_worker, &alloc);
	if (po.ns && !po.ns->own && !po.host) {
		r = probe_host_serving(c, &host, err);
		if (r < 0) {
			mount_table_free(po.mounts);
			return r;
		}
		po.host = &host;
	}
	r = probe_base(&po, &res->snap, err);
	if (r < 0)
		return r;
	r = analysis_new(res->snap, &res->a);
	if (r >= 0)
		r = probe_allocation_into(&alloc, res->snap);
	/* Our own user namespace's maps, checked against the probe's slave; judged again with
	 * them when they were not the initial namespace's numbers (a nested namespace). */
	if (r >= 0 && !po.ns && (r = snapshot_calibrate_idmaps(res->snap)) > 0) {
		res->a = analysis_free(res->a);
		r = analysis_new(res->snap, &res->a);
	}
	if (r < 0)
		return r;
	r = probe_details(&po, res->snap, res->a);
	if (r >= 0 && t->holders)
		r = t->holders(t->userdata, res->snap, res->a);
	if (r >= 0)
		r = analysis_update_nodes(res->a);
	return r;
}

int pipeline_apply_ignore(const struct config *c, struct findings *f)
{
	return c ? config_drop_ignored(c, f) : 0;
}

/* The checks, the caller's transition checks, Ignore=, the order: the one end of every audit. */
static int findings_stage(const struct audit_target *t, const struct config *c,
			  struct audit_result *res)
{
	int r;

	/* In the order of findings_sort(). */
	r = checks_run(res->a, c ? &c->check_policy : NULL, &res->findings);
	if (r >= 0 && t->transitions) {
		r = t->transitions(t->userdata, res->a, &res->findings);
		/* Theirs put in their place in that order. */
		if (r >= 0)
			findings_sort(&res->findings);
	}
	if (r >= 0)
		r = pipeline_apply_ignore(c, &res->findings);
	return r;
}

int pipeline_run(const struct audit_target *t, const struct config *c, struct audit_result *ret,
		 struct parse_error *err)
{
	struct audit_result res = { 0 };
	int r;

	r = snapshot_stage(t, c, &res, err);
	if (r >= 0 && !t->snapshot_only)
		r = findings_stage(t, c, &res);
	if (r < 0) {
		audit_result_done(&res);
		return r;
	}
	*ret = res;
	return 0;
}

void audit_result_done(struct audit_result *r)
{
	findings_done(&r->findings);
	r->a = analysis_free(r->a);
	r->snap = snapshot_free(r->snap);
}
