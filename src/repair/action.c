/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "repair/action.h"
#include "util/json-util.h"
#include "util/string-util.h"

static const char *const result_names[_ACTION_RESULT_MAX] = {
	[ACTION_PLANNED] = "planned",		[ACTION_DONE] = "done",
	[ACTION_REFUSED] = "refused",		[ACTION_FAILED] = "failed",
	[ACTION_INCONCLUSIVE] = "inconclusive",
};

const char *action_result_to_string(enum action_result r)
{
	return r < _ACTION_RESULT_MAX ? result_names[r] : NULL;
}

void repair_plan_done(struct repair_plan *p)
{
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		free(a->command);
		free(a->detail);
		free(a->path);
	}
	free(p->actions);
	*p = (struct repair_plan){ 0 };
}

int action_outcome(struct repair_action *a, enum action_result r, const char *fmt, ...)
{
	a->result = r;
	free(a->detail);
	FORMAT_VA(a->detail, fmt);
	return 0;
}

/* What a remount action fixes, with the tty group and the policy of this repair. */
static struct devpts_fix action_fix(const struct repair_action *a, const struct repair_options *o)
{
	struct devpts_fix fix = a->fix;

	fix.tty_gid = o->tty_gid;
	fix.policy = o->policy;
	return fix;
}

struct devpts_options action_remount_target(const struct repair_action *a,
					    const struct devpts_options *now,
					    const struct repair_options *o)
{
	struct devpts_fix fix = action_fix(a, o);

	return devpts_options_target(now, &fix);
}

int action_remount_command(struct repair_action *a, const struct devpts_options *now,
			   const struct repair_options *o)
{
	struct devpts_fix fix = action_fix(a, o);

	free(a->command);
	a->command = devpts_remount_command(now, &fix, a->path);
	return a->command ? 0 : -ENOMEM;
}

void repair_confirm(struct repair_plan *p, const struct findings *after)
{
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		if ((a->result != ACTION_DONE && a->result != ACTION_INCONCLUSIVE) ||
		    a->kind == ACTION_SLAVE || a->kind == ACTION_SLAVE_OWNER)
			continue;
		FOREACH_ARRAY (f, after->items, after->n_items)
			if (f->check == a->finding->check &&
			    streq_ptr(f->mountpoint, a->finding->mountpoint)) {
				action_outcome(a, ACTION_FAILED,
					       "re-probe: %s is still present: %s", f->check->id,
					       f->summary ?: "");
				break;
			}
	}
}

json_object *repair_plan_to_json(const struct repair_plan *p)
{
	json_object *arr = json_object_new_array();

	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "check", json_object_new_string(a->finding->check->id));
		json_object_object_add(o, "command", json_new_string_or_null(a->command));
		json_object_object_add(o, "result",
				       json_object_new_string(action_result_to_string(a->result)));
		json_object_object_add(o, "detail", json_new_string_or_null(a->detail));
		json_object_array_add(arr, o);
	}
	return arr;
}
