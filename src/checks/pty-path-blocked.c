/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>

#include "checks/check.h"
#include "util/alloc.h"
#include "util/parse.h"
#include "util/path.h"
#include "util/string-util.h"

/* Does path (or an ancestor) already appear in the list? */
static bool listed(char **dirs, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (streq(dirs[i], path))
			return true;
	return false;
}

/* path and each of its ancestors up to "/", appended once each. */
static int add_with_ancestors(char ***dirs, size_t *n, size_t *allocated, const char *path)
{
	_cleanup_free_ char *cur = strdup(path);

	if (!cur)
		return -ENOMEM;
	for (;;) {
		char *next;

		if (!listed(*dirs, *n, cur)) {
			if (GROW(*dirs, *allocated, *n + 1) < 0)
				return -ENOMEM;
			(*dirs)[(*n)++] = TAKE_PTR(cur);
			cur = strdup((*dirs)[*n - 1]);
			if (!cur)
				return -ENOMEM;
		}
		if (streq(cur, "/"))
			return 0;
		next = path_dirname(cur);
		if (!next)
			return -ENOMEM;
		free(cur);
		cur = next;
	}
}

/* The directories a non-root open walks through: those holding each hop of /dev/ptmx's
 * symlink chain, and /dev/pts where ptsname() names the slaves, with their ancestors. */
static int collect_dirs(const struct analysis *a, char ***dirs, size_t *n)
{
	const struct snapshot *s = a->snap;
	_cleanup_free_ char *cur = strdup(PTMX_PATH), *dir = path_dirname(PTMX_PATH);
	_cleanup_free_ char *pts = dir ? path_join(dir, "pts") : NULL;
	size_t allocated = 0;
	int r;

	if (!cur || !pts)
		return -ENOMEM;
	for (int hops = 0; hops < 8; hops++) {
		_cleanup_free_ char *d = path_dirname(cur);
		const struct node *node = snapshot_find_node(s, cur);
		char *next;

		if (!d)
			return -ENOMEM;
		r = add_with_ancestors(dirs, n, &allocated, d);
		if (r < 0)
			return r;
		if (!node || node->type != NODE_SYMLINK || !node->target)
			break;
		next = path_resolve_lexical(cur, node->target);
		if (!next)
			return -ENOMEM;
		free(cur);
		cur = next;
	}
	return add_with_ancestors(dirs, n, &allocated, pts);
}

/* Append sep and a formatted item to *list (the item alone when *list is NULL). */
_printf_(3, 4) static int append_item(char **list, const char *sep, const char *fmt, ...)
{
	_cleanup_free_ char *item = NULL;
	char *joined;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&item, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	if (asprintf(&joined, "%s%s%s", *list ?: "", *list ? sep : "", item) < 0)
		return -ENOMEM;
	free(*list);
	*list = joined;
	return 0;
}

static int pty_path_blocked(const struct check_context *ctx, const struct check_info *info,
			    struct findings *out)
{
	const struct analysis *a = ctx->a;
	char **dirs = NULL;
	size_t n = 0, n_blocked = 0;
	_cleanup_free_ char *names = NULL, *chmods = NULL;
	json_object *list = NULL, *ev;
	struct finding *f;
	int r;

	r = collect_dirs(a, &dirs, &n);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		const struct node *d = snapshot_find_node(ctx->snap, dirs[i]);
		char mode[8];
		json_object *o;

		if (!d || d->type != NODE_DIR || (d->mode & 0001))
			continue;
		if (!list)
			list = json_object_new_array();
		o = json_object_new_object();
		json_object_object_add(o, "path", json_object_new_string(d->path));
		json_object_object_add(o, "uid", json_object_new_int64(d->uid));
		json_object_object_add(o, "gid", json_object_new_int64(d->gid));
		json_object_object_add(o, "mode", json_new_mode(d->mode));
		json_object_array_add(list, o);
		n_blocked++;
		r = append_item(&names, ", ", "%s (%s)", d->path, format_mode(d->mode, mode));
		if (r >= 0)
			r = append_item(&chmods, " && ", "chmod o+x %s", d->path);
	}
	for (size_t i = 0; i < n; i++)
		free(dirs[i]);
	free(dirs);
	if (r < 0) {
		json_object_put(list);
		return r;
	}
	if (!list)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "directories", list);
	f = findings_add(out, info, info->severity, ev);
	if (!f ||
	    set_printf(&f->summary,
		       "%zu director%s on the way to the ptys den%s search to other users: %s; "
		       "non-root pty allocation or reopening a slave fails with EACCES",
		       n_blocked, n_blocked == 1 ? "y" : "ies", n_blocked == 1 ? "ies" : "y",
		       names) < 0 ||
	    set_printf(&f->remedy, "%s", chmods) < 0 ||
	    set_printf(&f->mountpoint, "%s",
		       json_object_get_string(
			   json_object_object_get(json_object_array_get_idx(list, 0), "path"))) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_pty_path_blocked = {
	.id = "pty-path-blocked",
	.severity = SEVERITY_CRITICAL,
	.message_id = "f13d74bdce284ce6887b684b48846f87",
	.summary = "a directory on the way to /dev/ptmx or the slaves denies search to other users",
	.explanation =
	    "A directory that every pty allocation walks through (/dev, /dev/pts, or one "
	    "that a /dev/ptmx symlink leads through) has no search (x) permission for "
	    "other users. The mounts and nodes may all be right, yet every non-root "
	    "open of /dev/ptmx, or of a slave by the name ptsname() gives, fails with "
	    "EACCES (gVisor#14761).",
	.remedy = "chmod o+x on each listed directory (usually chmod 0755 /dev /dev/pts)",
	.run = pty_path_blocked,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX) |
			       ALLOC_STEP_BIT(ALLOC_STEP_PTSNAME) |
			       ALLOC_STEP_BIT(ALLOC_STEP_OPEN_SLAVE),
		      .errnos = { EACCES } },
};
