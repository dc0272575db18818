/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/sysmacros.h>

#include "checks/check.h"
#include "util/parse.h"
#include "util/path.h"
#include "util/string-util.h"

#define CONSOLE_PATH "/dev/console"

/* A node of /dev (probe/slave-copies.h) that is a pty slave's character device but no devpts
 * entry: every open of it fails with EIO. */
static bool is_slave_copy(const struct analysis *a, const struct node *n)
{
	unsigned maj = major(n->rdev);
	_cleanup_free_ char *dir = NULL;

	if (n->type != NODE_CHAR || maj < 136 || maj > 143 || analysis_find_instance(a, n->dev))
		return false;
	dir = path_dirname(n->path);
	return dir && streq(dir, "/dev");
}

static int pty_slave_copy(const struct check_context *ctx, const struct check_info *info,
			  struct findings *out)
{
	const struct analysis *a = ctx->a;
	const char *serving = check_serving_mountpoint(a);

	for (size_t i = 0; i < ctx->snap->n_nodes; i++) {
		const struct node *n = &ctx->snap->nodes[i];
		bool console;
		unsigned index;
		char rdev[24];
		struct finding *f;
		json_object *ev;

		if (!is_slave_copy(a, n))
			continue;
		console = streq(n->path, CONSOLE_PATH);
		/* Slaves of major 136 count from 0; the seven majors after hold 1,048,576 more. */
		index = (major(n->rdev) - 136) * 256 * 1024 + minor(n->rdev);
		ev = json_object_new_object();
		json_object_object_add(ev, "path", json_object_new_string(n->path));
		json_object_object_add(ev, "rdev",
				       json_object_new_string(format_devnum(n->rdev, rdev)));
		json_object_object_add(ev, "index", json_object_new_int64(index));
		json_object_object_add(ev, "console", json_object_new_boolean(console));
		f = findings_add(out, info, console ? SEVERITY_CRITICAL : SEVERITY_WARNING, ev);
		if (!f ||
		    set_printf(&f->summary,
			       "%s is a copy of pty slave %u (character node %s) outside devpts: "
			       "every open of it fails with EIO%s",
			       n->path, index, rdev,
			       console ? ", so nothing can write to the console (container start, "
					 "init and getty on it fail)"
				       : "") < 0 ||
		    set_printf(&f->remedy,
			       "rm %s && touch %s && mount --bind %s/%u %s (bind the slave itself, "
			       "as LXC and nspawn do; runtimes: pass the pty by bind, not as a "
			       "device node)",
			       n->path, n->path, serving ?: "/dev/pts", index, n->path) < 0 ||
		    set_printf(&f->mountpoint, "%s", n->path) < 0)
			return -ENOMEM;
	}
	return 0;
}

const struct check_info check_pty_slave_copy = {
	.id = "pty-slave-copy",
	.severity = SEVERITY_CRITICAL,
	.severity_note = "warning for a copy other than /dev/console",
	.message_id = "1b9ad858806f41c4b9c956da7e16eab0",
	.summary = "a pty slave's device node was copied outside devpts",
	.explanation =
	    "A character node of a pty slave major (136 to 143) sits in /dev on a file system that "
	    "is not devpts: a runtime made a device node of a slave instead of binding it "
	    "(docker-in-docker's /dev/console, --device=/dev/pts/N:/dev/x). Since Linux 4.7 a "
	    "slave can only be opened through its devpts entry: the copy answers every open with "
	    "EIO. For /dev/console that breaks the start of the container, its init and any "
	    "getty on it: critical. A bind mount of the real slave (what LXC and nspawn make of "
	    "/dev/console) is a devpts entry and is not reported.",
	.remedy = "rm /dev/console && touch /dev/console && mount --bind /dev/pts/N /dev/console",
	.run = pty_slave_copy,
};
