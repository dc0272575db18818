/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/path.h"
#include "util/string-util.h"
#include "util/parse.h"

/*
 * /dev/tty, the node through which a process opens its own controlling terminal (ssh's password
 * prompt, sudo, gpg's pinentry, less and vim reading keys while stdin is a pipe). Hand-made /dev
 * trees (WSL1, chroots, build roots, minimal containers) leave it out or make it wrong while ptys
 * still allocate. Judged as a node, never by opening it: a process without a controlling terminal
 * gets ENXIO from any /dev/tty. Its symlink chain is followed as the probe recorded it; a snapshot
 * that recorded no /dev/tty (taken by an older ptsguard) is not judged.
 */

/* The most hops of a /dev/tty symlink chain followed (the probe records as many). */
#define DEV_TTY_HOPS_MAX 8

/* Where the chain from n ends: the last node recorded (a symlink whose next hop the snapshot does
 * not know is returned as is). */
static const struct node *chain_end(const struct snapshot *s, const struct node *n)
{
	for (int hops = 0; n->type == NODE_SYMLINK && n->target && hops < DEV_TTY_HOPS_MAX;
	     hops++) {
		_cleanup_free_ char *next = path_resolve_lexical(n->path, n->target);
		const struct node *m = next ? snapshot_find_node(s, next) : NULL;

		if (!m)
			break;
		n = m;
	}
	return n;
}

static bool is_dev_tty(const struct node *n)
{
	return n->type == NODE_CHAR && major(n->rdev) == DEV_TTY_RDEV_MAJOR &&
	       minor(n->rdev) == DEV_TTY_RDEV_MINOR;
}

static int dev_tty_broken(const struct check_context *ctx, const struct check_info *info,
			  struct findings *out)
{
	const struct node *n = snapshot_find_node(ctx->snap, DEV_TTY_PATH), *fin;
	const char *problem;
	char rdev[24];
	struct finding *f;
	json_object *ev;
	int r;

	if (!n)
		return 0;
	fin = chain_end(ctx->snap, n);
	if (n->type == NODE_MISSING)
		problem = "missing";
	else if (fin->type == NODE_MISSING)
		problem = "dangling";
	else if (!is_dev_tty(fin))
		problem = "not-device";
	else if ((fin->mode & 0006) != 0006)
		problem = "mode";
	else
		return 0;

	ev = json_object_new_object();
	json_object_object_add(ev, "path", json_object_new_string(DEV_TTY_PATH));
	json_object_object_add(ev, "problem", json_object_new_string(problem));
	json_object_object_add(ev, "type", json_object_new_string(node_type_to_string(n->type)));
	json_object_object_add(ev, "target", json_new_string_or_null(n->target));
	json_object_object_add(ev, "resolved", json_object_new_string(fin->path));
	json_object_object_add(ev, "resolved_type",
			       json_object_new_string(node_type_to_string(fin->type)));
	json_object_object_add(ev, "rdev",
			       fin->type == NODE_CHAR ? json_new_devnum(fin->rdev) : NULL);
	json_object_object_add(ev, "mode",
			       fin->type != NODE_MISSING ? json_new_mode(fin->mode) : NULL);
	json_object_object_add(ev, "uid",
			       fin->type != NODE_MISSING ? json_object_new_int64(fin->uid) : NULL);
	json_object_object_add(ev, "gid",
			       fin->type != NODE_MISSING ? json_object_new_int64(fin->gid) : NULL);
	f = findings_add(out, info, info->severity, ev);
	if (!f || set_printf(&f->mountpoint, "%s", DEV_TTY_PATH) < 0)
		return -ENOMEM;

	if (streq(problem, "missing"))
		r = set_printf(&f->summary,
			       "%s does not exist: programs cannot open their controlling terminal "
			       "(ssh, sudo, gpg, less)",
			       DEV_TTY_PATH);
	else if (streq(problem, "mode"))
		r = set_printf(
		    &f->summary,
		    "%s has mode %04o: users outside its owner and group cannot open their "
		    "controlling terminal through it",
		    fin->path, (unsigned)fin->mode);
	else if (streq(problem, "dangling"))
		r = set_printf(&f->summary, "%s is a dangling symlink to %s", DEV_TTY_PATH,
			       n->target ?: "?");
	else if (fin->type == NODE_CHAR)
		r = set_printf(&f->summary,
			       "%s is character device %s, not the controlling terminal device 5:0",
			       fin->path, format_devnum(fin->rdev, rdev));
	else
		r = set_printf(&f->summary, "%s is a %s, not the character device 5:0", fin->path,
			       check_describe_node(fin));
	if (r < 0)
		return -ENOMEM;

	if (streq(problem, "missing"))
		r = set_printf(&f->remedy, "mknod -m 0666 %s c %d %d", DEV_TTY_PATH,
			       DEV_TTY_RDEV_MAJOR, DEV_TTY_RDEV_MINOR);
	else if (streq(problem, "mode"))
		r = set_printf(&f->remedy, "chmod 0666 %s", fin->path);
	else {
		/* Repair never deletes or moves a file: this one is for a person. */
		f->manual = true;
		r = set_printf(&f->remedy, "%s %s%s && mknod -m 0666 %s c %d %d",
			       n->type == NODE_DIR ? "mv" : "rm", DEV_TTY_PATH,
			       n->type == NODE_DIR ? " /dev/tty.broken" : "", DEV_TTY_PATH,
			       DEV_TTY_RDEV_MAJOR, DEV_TTY_RDEV_MINOR);
	}
	return r < 0 ? -ENOMEM : 0;
}

const struct check_info check_dev_tty_broken = {
	.id = "dev-tty-broken",
	.severity = SEVERITY_CRITICAL,
	.message_id = "4e26a26163154388b5412644306a8ddf",
	.summary = "/dev/tty is missing, not the character device 5:0, or not open to every user",
	.explanation =
	    "A process opens its own controlling terminal through /dev/tty, whatever pty that "
	    "is: ssh and sudo read passwords there, gpg's pinentry, less, vim and more read keys "
	    "there while their standard input is a pipe. A /dev made by hand (WSL1, chroots, "
	    "build roots, minimal container images) may lack it, hold a regular file or another "
	    "device there, or give it a mode such as 0600 or 0620. Ptys are still allocated, but "
	    "those programs fail with ENOENT, EACCES or ENXIO in a terminal that works "
	    "otherwise. The node is judged as such (type, device numbers 5:0, a mode that lets "
	    "every user read and write it), never by opening it. Evidence: what the path is "
	    "(\"problem\": missing, dangling, not-device, mode), where its symlink chain ends, its "
	    "device numbers, mode and owner.",
	.remedy = "mknod -m 0666 /dev/tty c 5 0 (or chmod 0666 /dev/tty when only the mode is "
		  "wrong)",
	.repair = REPAIR_DEV_TTY,
	.run = dev_tty_broken,
};
