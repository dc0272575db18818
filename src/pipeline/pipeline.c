/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "pipeline/pipeline.h"
#include "util/util.h"

static int snapshot_stage(const struct audit_target *t, const struct config *c,
			  struct audit_result *res, struct parse_error *err)
{
	struct probe_options po = t->probe;
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
	if (po.namespace_pid > 0)
		return -EOPNOTSUPP;
	r = probe_base(&po, &res->snap, err);
	if (r < 0)
		return r;
	r = analysis_new(res->snap, &res->a);
	if (r < 0)
		return r;
	r = probe_details(&po, res->snap, res->a);
	if (r >= 0 && t->holders)
		r = t->holders(t->userdata, res->snap, res->a);
	if (r >= 0)
		r = analysis_update_nodes(res->a);
	return r;
}

int pipeline_run(const struct audit_target *t, const struct config *c, struct audit_result *ret,
		 struct parse_error *err)
{
	struct audit_result res = { 0 };
	int r;

	r = snapshot_stage(t, c, &res, err);
	if (r >= 0 && !t->snapshot_only) {
		r = checks_run(res.a, c ? &c->check_policy : NULL, &res.findings);
		if (r >= 0 && c)
			r = config_drop_ignored(c, &res.findings);
	}
	if (r < 0) {
		audit_result_done(&res);
		return r;
	}
	*ret = res;
	return 0;
}

void audit_result_done(struct audit_result *r)
{
	findings_clear(&r->findings);
	r->a = analysis_free(r->a);
	r->snap = snapshot_free(r->snap);
}
