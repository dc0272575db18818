/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

/* The slave node of session t on the serving instance in, mounted at mp; NULL when not listed. */
static const struct node *session_slave(const struct snapshot *s, const struct instance *in,
					const char *mp, const struct tty_session *t)
{
	unsigned idx;

	if (t->dev != in->dev)
		return NULL;
	FOREACH_ARRAY (n, s->nodes, s->n_nodes)
		if (node_is_slave(n, mp, in->dev, &idx) && idx == t->index)
			return n;
	return NULL;
}

static json_object *session_evidence(const struct tty_session *t)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "sid", json_object_new_int64(t->sid));
	json_object_object_add(o, "leader_pid",
			       t->leader ? json_object_new_int64(t->leader) : NULL);
	json_object_object_add(o, "leader_comm", json_new_string_or_null(t->leader_comm));
	json_object_object_add(o, "uid", json_object_new_int64(t->uid));
	json_object_object_add(o, "gid", json_object_new_int64(t->gid));
	return o;
}

static json_object *holder_evidence(const struct tty_session *t)
{
	json_object *o;

	if (!t->holder)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int64(t->holder));
	json_object_object_add(o, "comm", json_new_string_or_null(t->holder_comm));
	json_object_object_add(o, "uid", json_object_new_int64(t->holder_uid));
	return o;
}

static int pty_owner_not_session_user(const struct check_context *ctx,
				      const struct check_info *info, struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;
	const struct instance *in = a->serving;
	const struct mount_entry *e = analysis_serving_mount(a);

	if (!in || !e)
		return 0;
	FOREACH_ARRAY (t, s->tty_sessions, s->n_tty_sessions) {
		const struct node *n = session_slave(s, in, e->mountpoint, t);
		_cleanup_free_ char *holder = NULL, *leader = NULL;
		json_object *ev;
		struct finding *f;

		/* Root's own session (su - user from root's terminal: root's shell leads it) is
		 * root's terminal, rightly root's. */
		if (!n || n->uid != 0 || t->uid == 0 || check_slave_is_bound(s, in, t->index))
			continue;
		ev = json_object_new_object();
		json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
		json_object_object_add(ev, "path", json_object_new_string(n->path));
		json_object_object_add(ev, "index", json_object_new_int64(t->index));
		json_object_object_add(ev, "device", json_new_devnum(in->dev));
		json_object_object_add(ev, "uid", json_object_new_int64(n->uid));
		json_object_object_add(ev, "gid", json_object_new_int64(n->gid));
		json_object_object_add(ev, "mode", json_new_mode(n->mode));
		json_object_object_add(ev, "session", session_evidence(t));
		json_object_object_add(ev, "holder", holder_evidence(t));
		if (t->holder &&
		    set_printf(&holder, "; the master is held by pid %d (%s, uid %u)",
			       (int)t->holder, t->holder_comm ?: "?", (unsigned)t->holder_uid) < 0)
			return -ENOMEM;
		if ((t->leader ? set_printf(&leader, "leader pid %d %s", (int)t->leader,
					    t->leader_comm ?: "?")
			       : set_printf(&leader, "its leader not seen")) < 0)
			return -ENOMEM;
		f = findings_add(out, info, info->severity, ev);
		if (!f || finding_add_mount(f, e->id, in->dev) < 0 ||
		    set_printf(&f->summary,
			       "%s is owned by root, but its session %d (%s) runs as uid %u, who "
			       "cannot reopen it by name%s",
			       n->path, (int)t->sid, leader, (unsigned)t->uid, holder ?: "") < 0 ||
		    set_printf(&f->remedy, "chown %u %s", (unsigned)t->uid, n->path) < 0 ||
		    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

const struct check_info check_pty_owner_not_session_user = {
	.id = "pty-owner-not-session-user",
	.severity = SEVERITY_WARNING,
	.message_id = "bc6c60a368ce4c3caf1bbcfa06a37628",
	.summary = "a user's controlling terminal is owned by root",
	.explanation =
	    "A slave of the serving instance is owned by root while the session it is the "
	    "controlling terminal of runs as another user (its leader's real uid, or, with no "
	    "leader seen, its foreground process group's): a helper running as root opened the "
	    "master and handed the slave to the user without chown, as podman exec -t, toolbox, "
	    "crun, sudo-rs -i and web terminals do. The user keeps the descriptors the helper "
	    "gave, but cannot reopen the terminal by name (mode 620 lets only its owner write "
	    "it): gpg's pinentry, emacsclient -t, screen, tmux and a qemu chardev fail with "
	    "EACCES. A session led by root (su - user from root's own terminal, where root's "
	    "shell still leads the session) is root's terminal, rightly root's, and not "
	    "reported; neither is a slave bound elsewhere (a container manager's console). "
	    "Sessions are looked for only when a slave owned by root exists: the processes "
	    "of the namespace whose controlling terminal (/proc/PID/stat) is that slave, "
	    "confirmed by one of their standard descriptors being that very slave. The "
	    "evidence names the session (its id, leader, uid) and the process holding the "
	    "master, when one was found.",
	.remedy = "chown UID /dev/pts/N (the session's uid; group tty and mode 620 stay)",
	.repair = REPAIR_SESSION_OWNER,
	.run = pty_owner_not_session_user,
};
