/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "checks/check.h"
#include "checks/ptmx-replaced.h"
#include "util/json-util.h"
#include "util/parse.h"
#include "util/string-util.h"

static void ptmx_state_done(struct ptmx_state *s)
{
	free(s->target);
	*s = (struct ptmx_state){ 0 };
}

static int ptmx_state_from(const struct analysis *a, struct ptmx_state *ret)
{
	const struct node *n = a->ptmx, *fin = a->ptmx_final;
	struct ptmx_state s = { .valid = true, .kind = a->ptmx_kind, .type = NODE_MISSING };

	if (n) {
		s.type = n->type;
		s.mode = n->mode;
		if (n->type == NODE_SYMLINK && n->target) {
			s.target = strdup(n->target);
			if (!s.target)
				return -ENOMEM;
		}
	}
	if (fin && fin->type == NODE_CHAR) {
		s.has_rdev = true;
		s.rdev = fin->rdev;
	}
	if (a->ptmx_kind == PTMX_BIND && a->ptmx_bind_mount != NO_MOUNT) {
		s.has_instance = true;
		s.instance = a->snap->mounts->entries[a->ptmx_bind_mount].dev;
	}
	*ret = s;
	return 0;
}

static bool ptmx_state_equal(const struct ptmx_state *x, const struct ptmx_state *y)
{
	return x->kind == y->kind && x->type == y->type && streq_ptr(x->target, y->target) &&
	       x->has_rdev == y->has_rdev && (!x->has_rdev || x->rdev == y->rdev) &&
	       x->has_instance == y->has_instance &&
	       (!x->has_instance || x->instance == y->instance);
}

static json_object *ptmx_state_json(const struct ptmx_state *s)
{
	json_object *o = json_object_new_object();
	bool present = s->type != NODE_MISSING;

	json_object_object_add(o, "kind", json_object_new_string(ptmx_kind_to_string(s->kind)));
	json_object_object_add(o, "type", json_object_new_string(node_type_to_string(s->type)));
	json_object_object_add(o, "mode", present ? json_new_mode(s->mode) : NULL);
	json_object_object_add(o, "rdev", s->has_rdev ? json_new_devnum(s->rdev) : NULL);
	json_object_object_add(o, "target", json_new_string_or_null(s->target));
	json_object_object_add(o, "instance",
			       s->has_instance ? json_new_devnum(s->instance) : NULL);
	return o;
}

static char *ptmx_state_describe(const struct ptmx_state *s)
{
	char dev[24];
	char *t = NULL;
	int r;

	switch (s->kind) {
	case PTMX_CHAR:
		r = asprintf(&t, "a character node %s", format_devnum(s->rdev, dev));
		break;
	case PTMX_SYMLINK:
		r = asprintf(&t, "a symlink to %s", s->target ?: "?");
		break;
	case PTMX_BIND:
		r = asprintf(&t, "a bind mount of the ptmx of devpts %s",
			     s->has_instance ? format_devnum(s->instance, dev) : "?");
		break;
	case PTMX_MISSING:
		r = asprintf(&t, "missing");
		break;
	default:
		r = s->type == NODE_SYMLINK ? asprintf(&t, "a symlink to %s", s->target ?: "?")
					    : asprintf(&t, "a %s", node_type_to_string(s->type));
		break;
	}
	return r < 0 ? NULL : t;
}

/* How a person puts the baseline back. */
static char *ptmx_state_remedy(const struct ptmx_state *before, const struct check_info *info)
{
	char *t = NULL;
	int r;

	if (before->kind == PTMX_CHAR && before->has_rdev)
		r = asprintf(
		    &t, "mknod -m %04o /dev/ptmx.new c %u %u && mv -T /dev/ptmx.new /dev/ptmx",
		    (unsigned)(before->mode & 07777), major(before->rdev), minor(before->rdev));
	else if (before->kind == PTMX_SYMLINK && before->target)
		r = asprintf(&t, "ln -s %s /dev/ptmx.new && mv -T /dev/ptmx.new /dev/ptmx",
			     before->target);
	else
		r = asprintf(&t, "%s", info->remedy);
	return r < 0 ? NULL : t;
}

static json_object *udev_event_json(const struct ptmx_udev_event *u)
{
	json_object *o;

	if (!u->valid)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "action", json_object_new_string(u->action));
	json_object_object_add(o, "seqnum", json_object_new_uint64(u->seqnum));
	return o;
}

/* fields[0..n) in one allocation: the NULL-terminated pointer array, then the strings. */
static char **journal_fields_pack(char *const *fields, size_t n)
{
	size_t size = (n + 1) * sizeof(char *);
	char **v, *p;

	for (size_t i = 0; i < n; i++)
		size += strlen(fields[i]) + 1;
	v = malloc(size);
	if (!v)
		return NULL;
	p = (char *)(v + n + 1);
	for (size_t i = 0; i < n; i++) {
		v[i] = p;
		p = stpcpy(p, fields[i]) + 1;
	}
	v[n] = NULL;
	return v;
}

static char **udev_event_journal_fields(const struct ptmx_udev_event *u)
{
	char action[64], seqnum[64];
	char *const fields[] = { action, seqnum };

	snprintf(action, sizeof(action), "PTSGUARD_UDEV_ACTION=%s", u->action);
	snprintf(seqnum, sizeof(seqnum), "PTSGUARD_UDEV_SEQNUM=%llu", u->seqnum);
	return journal_fields_pack(fields, ELEMENTSOF(fields));
}

static int add_finding(const struct ptmx_replaced *p, const struct check_info *info,
		       struct findings *out)
{
	_cleanup_free_ char *before = NULL, *after = NULL;
	struct finding *f;
	json_object *ev;

	ev = json_object_new_object();
	json_object_object_add(ev, "path", json_object_new_string(PTMX_PATH));
	json_object_object_add(ev, "before", ptmx_state_json(&p->baseline));
	json_object_object_add(ev, "after", ptmx_state_json(&p->replaced));
	json_object_object_add(ev, "udev_event", udev_event_json(&p->replaced_udev));
	f = findings_add(out, info, info->severity, ev);
	if (!f)
		return -ENOMEM;
	before = ptmx_state_describe(&p->baseline);
	after = ptmx_state_describe(&p->replaced);
	if (!before || !after)
		return -ENOMEM;
	if (asprintf(&f->summary, "%s was replaced: it was %s, it is now %s", PTMX_PATH, before,
		     after) < 0) {
		f->summary = NULL;
		return -ENOMEM;
	}
	f->remedy = ptmx_state_remedy(&p->baseline, info);
	f->mountpoint = strdup(PTMX_PATH);
	if (!f->remedy || !f->mountpoint)
		return -ENOMEM;
	if (p->replaced_udev.valid) {
		f->journal_fields = udev_event_journal_fields(&p->replaced_udev);
		if (!f->journal_fields)
			return -ENOMEM;
	}
	return 0;
}

int ptmx_replaced_check(struct ptmx_replaced *p, const struct analysis *a,
			const struct ptmx_udev_event *udev, struct findings *out)
{
	const struct check_info *info = &check_ptmx_replaced;
	bool broken = a->route == ROUTE_MISSING || a->route == ROUTE_NOT_DEVICE;
	struct ptmx_state cur;
	int r;

	r = ptmx_state_from(a, &cur);
	if (r < 0)
		return r;
	/* Fixing a missing or broken /dev/ptmx is not a replacement: the fix becomes the
	 * baseline. */
	if (!p->baseline.valid || (p->baseline_broken && !broken)) {
		ptmx_replaced_reset(p);
		p->baseline = cur;
		p->baseline_broken = broken;
		return 0;
	}
	if (ptmx_state_equal(&cur, &p->baseline)) {
		ptmx_state_done(&cur);
		ptmx_state_done(&p->replaced);
		p->replaced_udev = (struct ptmx_udev_event){ 0 };
		return 0;
	}
	if (!p->replaced.valid || !ptmx_state_equal(&cur, &p->replaced)) {
		ptmx_state_done(&p->replaced);
		p->replaced = cur;
		p->replaced_udev = udev && udev->valid ? *udev : (struct ptmx_udev_event){ 0 };
	} else
		ptmx_state_done(&cur);

	if (!info)
		return 0;
	return add_finding(p, info, out);
}

void ptmx_replaced_reset(struct ptmx_replaced *p)
{
	ptmx_state_done(&p->baseline);
	ptmx_state_done(&p->replaced);
	*p = (struct ptmx_replaced){ 0 };
}

const struct check_info check_ptmx_replaced = {
	.id = "ptmx-replaced",
	.severity = SEVERITY_WARNING,
	.message_id = "a9b5a84bff1340ffa085b24201afb144",
	.summary = "/dev/ptmx changed kind or target",
	.explanation = "The daemon saw /dev/ptmx change between a character node, a symlink, a "
		       "bind mount or nothing, or change its target. udev replacing a pts/ptmx "
		       "symlink with a device node, or a container runtime replacing the host's "
		       "node with a symlink (runc#80), silently moves every new pty to another "
		       "devpts instance. The evidence holds the state before and after and the "
		       "udev event seen with the change.",
	.remedy = "restore the intended /dev/ptmx (for a host: mknod -m 0666 /dev/ptmx c 5 "
		  "2) and find what replaced it in the journal around the time shown",
	.transition = true,
};
