/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

/* The last uid of system users (login.defs' SYS_UID_MAX on Debian, Fedora and SUSE). */
#define SYSTEM_UID_MAX 999
#define NOBODY_UID     65534

static bool login_user(const struct tty_member *m)
{
	return m->uid_known && m->uid > SYSTEM_UID_MAX && m->uid != NOBODY_UID;
}

/* How many members the evidence lists, and how many the summary and the remedy name: a group of
 * hundreds (a site that put everyone there) stays readable; the evidence counts them all. */
#define MEMBERS_LISTED 64
#define MEMBERS_NAMED  8

static int tty_group_members(const struct check_context *ctx, const struct check_info *info,
			     struct findings *out)
{
	const struct snapshot *s = ctx->snap;
	_cleanup_free_ char *names = NULL, *cmds = NULL;
	size_t n = s->n_tty_members, login = 0;
	json_object *members, *ev;
	struct finding *f;

	if (!s->tty_members_known || n == 0)
		return 0;
	members = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		const struct tty_member *m = &s->tty_members[i];

		login += login_user(m);
		if (i < MEMBERS_LISTED) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "name", json_object_new_string(m->name));
			json_object_object_add(o, "uid",
					       m->uid_known ? json_object_new_int64(m->uid) : NULL);
			json_object_object_add(o, "login_user",
					       json_object_new_boolean(login_user(m)));
			json_object_array_add(members, o);
		}
		if (i < MEMBERS_NAMED &&
		    (set_printf(&names, "%s%s%s", names ?: "", names ? ", " : "", m->name) < 0 ||
		     set_printf(&cmds, "%s%sgpasswd -d %s tty", cmds ?: "", cmds ? " && " : "",
				m->name) < 0)) {
			json_object_put(members);
			return -ENOMEM;
		}
	}
	ev = json_object_new_object();
	json_object_object_add(ev, "tty_gid", json_object_new_int64(s->tty_gid));
	json_object_object_add(ev, "members", members);
	json_object_object_add(ev, "members_total", json_object_new_int64((int64_t)n));
	json_object_object_add(ev, "login_users", json_object_new_int64((int64_t)login));
	f = findings_add(out, info, login ? SEVERITY_WARNING : SEVERITY_INFO, ev);
	if (!f ||
	    set_printf(&f->summary,
		       "the tty group (gid %u) has %zu member(s): %s%s; %s can write to every "
		       "terminal of mode 620",
		       (unsigned)s->tty_gid, n, names, n > MEMBERS_NAMED ? ", ..." : "",
		       login ? "login users among them" : "each") < 0 ||
	    set_printf(&f->remedy,
		       "%s%s (write, wall and mesg need no membership: write and wall are setgid "
		       "tty; screen and mosh do not need it either; in a namespace, run it there)",
		       cmds, n > MEMBERS_NAMED ? " && ... for each of the others" : "") < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_tty_group_members = {
	.id = "tty-group-members",
	.severity = SEVERITY_INFO,
	.severity_note = "warning when a member is a login user (uid above 999)",
	.message_id = "8d8b3fced03a46f7a552a7be56f5b884",
	.summary = "users are members of the tty group",
	.explanation = "The tty group's member list names users. Slaves are group tty with mode "
		       "620, so that write and wall, setgid tty, can reach a terminal whose owner "
		       "allowed it (mesg y); a member of tty can write to every such terminal "
		       "directly, its owner's mesg setting notwithstanding, and inject what it "
		       "likes into others' sessions. Old advice for mosh, screen and write put "
		       "users there; nothing needs it today. A login user among the members (a uid "
		       "above the system range) is a warning; system accounts are noted.",
	.remedy = "gpasswd -d USER tty for each member that is not a system account",
	.run = tty_group_members,
};
